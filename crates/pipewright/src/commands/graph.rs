//! `pipewright graph`.

use crate::cli::{GraphArgs, GraphFormat};
use crate::exit::ExitStatus;
use pipewright_dialect::Verb;
use pipewright_ir::export::{
    dot::write_dot, json::write_pretty, mermaid::write_mermaid, ExportOptions,
};
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
    // The dialect's reference DOT is printed exactly as its own tool writes it (no trailing
    // newline), so the output can be compared byte for byte.
    if let (GraphFormat::Dot, Some(reference), None) = (&args.format, &lowered.dot, root) {
        out!("{reference}");
        return ExitStatus::OK;
    }
    // Every other output is streamed: the text of a large graph is many times the size of its
    // file.
    let mut w = Stdout::new();
    match args.format {
        GraphFormat::Dot => write_dot(&program, &opts, &mut w),
        GraphFormat::Mermaid => write_mermaid(&program, &opts, &mut w),
        GraphFormat::Json => {
            if let Err(e) = write_pretty(&program, &sources, &opts, &mut w.out) {
                w.failed(e.into());
            }
        }
    }
    w.finish();
    ExitStatus::OK
}

/// Standard output as a text writer that ends what it wrote with a line break. Its first
/// failed write is reported once and ends the writing.
struct Stdout {
    out: std::io::BufWriter<std::io::StdoutLock<'static>>,
    last: Option<u8>,
    failed: bool,
}

impl Stdout {
    fn new() -> Stdout {
        Stdout {
            out: std::io::BufWriter::new(std::io::stdout().lock()),
            last: None,
            failed: false,
        }
    }

    fn failed(&mut self, e: std::io::Error) {
        if !self.failed {
            self.failed = true;
            crate::output::write_error(&e, "stdout");
        }
    }

    fn finish(mut self) {
        use std::io::Write as _;
        if self.failed {
            return;
        }
        // JSON is written by serde (not through `write_str`) and never ends with one.
        let newline = if self.last == Some(b'\n') {
            &b""[..]
        } else {
            b"\n"
        };
        if let Err(e) = self.out.write_all(newline).and_then(|()| self.out.flush()) {
            self.failed(e);
        }
    }
}

impl std::fmt::Write for Stdout {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        use std::io::Write as _;
        if self.failed {
            return Err(std::fmt::Error);
        }
        if let Err(e) = self.out.write_all(s.as_bytes()) {
            self.failed(e);
            return Err(std::fmt::Error);
        }
        if let Some(b) = s.bytes().last() {
            self.last = Some(b);
        }
        Ok(())
    }
}
