//! `pipewright fmt`.

use crate::cli::{FmtArgs, KeyOrderArg};
use crate::discover;
use crate::exit::ExitStatus;
use pipewright_dialect::{Source, Verb};
use pipewright_fmt::{KeyOrder, Options};
use pipewright_syntax::{render, Diagnostic, SourceMap};
use std::path::Path;

pub(crate) fn run(args: &FmtArgs) -> ExitStatus {
    let inputs = discover::expand(&args.paths);
    let mut sources = SourceMap::new();
    let mut diags: Vec<Diagnostic> = Vec::new();
    let options = match options(args, &mut sources, &mut diags) {
        Ok(o) => o,
        Err(e) => {
            if !diags.is_empty() {
                err!(
                    "{}",
                    render::human(&diags, &sources, crate::output::use_color_stderr())
                );
            }
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    let mut would_change = Vec::new();
    let mut io_failed = false;
    for input in &inputs {
        let stdin = input.path.as_os_str() == "-";
        let read = if stdin {
            // Standard input is echoed unchanged when it cannot be formatted, so keep its bytes.
            match crate::read::bytes(&input.path) {
                Ok(bytes) => crate::read::decode("<stdin>".into(), bytes.clone(), &mut sources)
                    .inspect_err(|_| crate::output::write_bytes(&bytes)),
                Err(e) => Err(Box::new(crate::read::failed(
                    "<stdin>",
                    &e.to_string(),
                    &mut sources,
                ))),
            }
        } else {
            crate::read::input(input, &mut sources)
        };
        let (id, text) = match read {
            Ok(t) => t,
            Err(d) => {
                diags.push(*d);
                continue;
            }
        };
        let name = crate::read::display_name(&input.path);
        let detected = args
            .dialect
            .or_else(|| pipewright_registry::detect(&Source::new(&input.path, &text)));
        let Some(d) = detected.filter(|d| d.supports(Verb::Fmt)) else {
            if input.explicit {
                diags.push(match detected {
                    Some(d) => crate::dialect::unsupported(id, d, Verb::Fmt),
                    None => pipewright_registry::unrecognised(id, &text),
                });
            }
            continue;
        };
        let formatted = match d.format(id, &text, options) {
            Ok(output) => Formatted {
                changed: output != *text,
                output,
            },
            Err(mut ds) => {
                // A file that does not parse is left untouched; stdin is echoed unchanged.
                if stdin {
                    out!("{text}");
                }
                diags.append(&mut ds);
                continue;
            }
        };
        if stdin {
            out!("{}", formatted.output);
        } else if args.diff {
            if formatted.changed {
                // `a/` + an absolute path would give `a//tmp/x.yaml`; like `git diff --no-index`,
                // the header names the path without its leading slash.
                let header = name.trim_start_matches('/');
                crate::output::write_diff(header, &text, &formatted.output);
                would_change.push(name);
            }
        } else if args.check {
            if formatted.changed {
                outln!("would reformat {name}");
                would_change.push(name);
            }
        } else if formatted.changed {
            if let Err(e) = write_atomically(&input.path, &formatted.output) {
                errln!("error: cannot write `{}`: {e}", input.path.display());
                io_failed = true;
            }
        }
    }
    if !diags.is_empty() {
        err!(
            "{}",
            render::human(&diags, &sources, crate::output::use_color_stderr())
        );
    }
    // 2: some file could not be read, formatted or written (the others were still done);
    // 1: `--check`/`--diff` found files that would change; 0: nothing to do.
    if io_failed || !diags.is_empty() {
        ExitStatus::COULD_NOT_START
    } else if (args.check || args.diff) && !would_change.is_empty() {
        ExitStatus::FAILED
    } else {
        ExitStatus::OK
    }
}

/// `--key-order`, else `[fmt]` of the project config (`--config`, else the nearest
/// pipewright.toml above the first path; for standard input, above the current directory). A
/// config that does not parse is reported (PW0008) and formatting does not go on: its `[fmt]`
/// might have asked for another order.
fn options(
    args: &FmtArgs,
    sources: &mut SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> Result<Options, String> {
    if let Some(k) = args.key_order {
        return Ok(Options {
            key_order: match k {
                KeyOrderArg::Preserve => KeyOrder::Preserve,
                KeyOrderArg::Canonical => KeyOrder::Canonical,
            },
        });
    }
    let near = args.paths.first().map(|p| {
        if p.as_os_str() == "-" {
            Path::new(".")
        } else {
            p
        }
    });
    let before = diags.len();
    let (project, _) =
        pipewright_dialect::project::load(args.config.as_deref(), near, sources, diags)?;
    if diags.len() > before {
        return Err("the project config is invalid; nothing was formatted".into());
    }
    Ok(Options {
        key_order: project.key_order,
    })
}

struct Formatted {
    output: String,
    changed: bool,
}

/// Writes next to the file then renames, so an interrupted write never truncates a workflow
/// (`fmt` and `check --fix`).
pub(crate) fn write_atomically(path: &std::path::Path, text: &str) -> std::io::Result<()> {
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
