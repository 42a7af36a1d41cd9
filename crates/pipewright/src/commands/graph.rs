//! `pipewright graph`.

use crate::cli::{GraphArgs, GraphFormat};
use crate::exit::ExitStatus;
use pipewright_dialect::Verb;
use pipewright_ir::export::{dot::dot, json::write_pretty, mermaid::mermaid, ExportOptions};
use pipewright_syntax::SourceMap;

pub(crate) fn run(args: &GraphArgs) -> ExitStatus {
    let mut sources = SourceMap::new();
    let (dialect, lowered) = match super::load::lowered(&args.file, Verb::Graph, &mut sources) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let program = lowered.program;
    let root = match &args.pipeline {
        None => None,
        Some(name) => match program.find(name) {
            Some(id) => Some(id),
            None => {
                let names: Vec<&str> = program.workflows.iter().map(|w| w.name.as_str()).collect();
                errln!(
                    "error: no {} named `{name}` in `{}`",
                    dialect.workflow_noun(),
                    crate::read::display_name(&args.file)
                );
                errln!("help: the file declares: {}", names.join(", "));
                return ExitStatus::COULD_NOT_START;
            }
        },
    };
    let opts = ExportOptions { root };
    let out = match args.format {
        // The dialect's reference DOT is printed exactly as its own tool writes it (no
        // trailing newline), so the output can be compared byte for byte.
        GraphFormat::Dot if lowered.dot.is_some() && root.is_none() => {
            out!("{}", lowered.dot.unwrap_or_default());
            return ExitStatus::OK;
        }
        GraphFormat::Dot => dot(&program, &opts),
        GraphFormat::Mermaid => mermaid(&program, &opts),
        GraphFormat::Json => {
            // Streamed: the document of a large graph is many times the size of its file.
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            let written = write_pretty(&program, &sources, &opts, &mut w)
                .map_err(std::io::Error::from)
                .and_then(|()| std::io::Write::write_all(&mut w, b"\n"))
                .and_then(|()| std::io::Write::flush(&mut w));
            if let Err(e) = written {
                crate::output::write_error(&e, "stdout");
            }
            return ExitStatus::OK;
        }
    };
    if out.ends_with('\n') {
        out!("{out}");
    } else {
        outln!("{out}");
    }
    ExitStatus::OK
}
