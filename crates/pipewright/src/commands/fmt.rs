//! `pipewright fmt`.

use crate::cli::FmtArgs;
use crate::dialect::{self, Dialect};
use crate::discover;
use pipewright_fmt::{format_source, unified_diff, Dialect as FmtDialect};
use pipewright_syntax::{render, Diagnostic, SourceMap};

pub fn run(args: &FmtArgs) -> u8 {
    let inputs = match discover::expand(&args.paths) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let mut sources = SourceMap::new();
    let mut diags: Vec<Diagnostic> = Vec::new();
    let mut would_change = Vec::new();
    let mut io_failed = false;
    for input in &inputs {
        let stdin = input.path.as_os_str() == "-";
        let text = match super::check::read(&input.path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read `{}`: {e}", input.path.display());
                io_failed = true;
                continue;
            }
        };
        let name = if stdin {
            "<stdin>".to_string()
        } else {
            discover::display(&input.path)
        };
        let detected = args
            .dialect
            .map(Dialect::from)
            .or_else(|| dialect::detect(&input.path, &text));
        let id = sources.add(name.clone(), text.as_str());
        let Some(d) = detected else {
            if input.explicit {
                diags.push(dialect::unrecognised(id, &text));
            }
            continue;
        };
        let d = match d {
            Dialect::Pipeline => FmtDialect::Pipeline,
            Dialect::Recipe => FmtDialect::Recipe,
            Dialect::StateMachine => FmtDialect::StateMachine,
            Dialect::Meow => FmtDialect::Meow,
        };
        let formatted = match format_source(id, &text, d) {
            Ok(f) => f,
            Err(mut ds) => {
                // A file that does not parse is left untouched; stdin is echoed unchanged.
                if stdin {
                    print!("{text}");
                }
                diags.append(&mut ds);
                continue;
            }
        };
        if stdin {
            print!("{}", formatted.output);
        } else if args.diff {
            if formatted.changed {
                print!("{}", unified_diff(&name, &text, &formatted.output));
                would_change.push(name);
            }
        } else if args.check {
            if formatted.changed {
                println!("would reformat {name}");
                would_change.push(name);
            }
        } else if formatted.changed {
            if let Err(e) = write_atomically(&input.path, &formatted.output) {
                eprintln!("error: cannot write `{}`: {e}", input.path.display());
                io_failed = true;
            }
        }
    }
    if !diags.is_empty() {
        eprint!(
            "{}",
            render::human(&diags, &sources, crate::output::use_color_stderr())
        );
    }
    if io_failed {
        2
    } else if !diags.is_empty() || ((args.check || args.diff) && !would_change.is_empty()) {
        1
    } else {
        0
    }
}

/// Writes next to the file then renames, so an interrupted write never truncates a workflow.
fn write_atomically(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.pipewright-fmt.tmp"));
    std::fs::write(&tmp, text)?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path)
}
