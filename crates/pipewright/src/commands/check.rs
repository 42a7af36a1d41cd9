//! `pipewright check`.

use crate::cli::{CheckArgs, Deny};
use crate::dialect::{self, Dialect};
use crate::discover;
use pipewright_pipeline::ast::Program;
use pipewright_pipeline::CheckOptions;
use pipewright_syntax::{diagnostic, CodeInfo, Diagnostic, FileId, SourceMap, Span};
use std::path::PathBuf;

/// Codes the CLI itself emits.
pub const CLI_CODES: &[CodeInfo] = &[
    CodeInfo {
        code: "PW0006",
        title: "invalid JSON given on the command line",
        explanation: include_str!("../../explain/PW0006.md"),
    },
    CodeInfo {
        code: "PW0007",
        title: "a dialect this version cannot check yet",
        explanation: include_str!("../../explain/PW0007.md"),
    },
    CodeInfo {
        code: "PW0010",
        title: "a file that is almost a workflow (a misspelled top-level key)",
        explanation: include_str!("../../explain/PW0010.md"),
    },
    CodeInfo {
        code: "PW0190",
        title: "an R1 expression failed while evaluating",
        explanation: include_str!("../../explain/PW0190.md"),
    },
    CodeInfo {
        code: "PW0008",
        title: "invalid project config (pipewright.toml)",
        explanation: include_str!("../../explain/PW0008.md"),
    },
];

pub fn run(args: &CheckArgs) -> u8 {
    let inputs = discover::expand(&args.paths);
    let mut sources = SourceMap::new();
    let mut diags = Vec::new();
    let mut program = Program::default();
    let mut files = Files::default();
    for input in &inputs {
        let (id, text) = match crate::read::input(input, &mut sources) {
            Ok(t) => t,
            Err(d) => {
                files.unreadable += 1;
                diags.push(*d);
                continue;
            }
        };
        let detected = args
            .dialect
            .map(Dialect::from)
            .or_else(|| dialect::detect(&input.path, &text));
        let Some(d) = detected else {
            let near = dialect::near_miss(id, &input.path, &text);
            if input.explicit {
                files.checked += 1;
                let mut d = dialect::unrecognised(id, &text);
                if let Some(n) = near {
                    d = d.with_secondary(n.span, format!("did you mean `{}`?", n.expected));
                }
                diags.push(d);
            } else {
                files.skipped += 1;
                diags.extend(near.map(|n| n.warning()));
            }
            continue;
        };
        files.checked += 1;
        match d {
            Dialect::Pipeline => {
                let file = super::load::pipeline_file(&input.path, id, &text, &mut diags);
                program.files.push(file);
            }
            Dialect::Recipe => diags.extend(pipewright_recipe::check_file(
                &mut sources,
                &input.path,
                &text,
            )),
            Dialect::StateMachine | Dialect::Meow => diags.push(unsupported(id, d)),
        }
    }
    let (project, project_dir) = match crate::project::load(
        args.config.as_deref(),
        args.paths.first().map(PathBuf::as_path),
        &mut sources,
        &mut diags,
    ) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    // Registered pipelines that targets may name (`-I` and the config's `[check] include`);
    // their own problems are not this check's.
    let config_dirs = project
        .include
        .iter()
        .map(|d| project_dir.clone().unwrap_or_default().join(d));
    let include_dirs: Vec<PathBuf> = args.include.iter().cloned().chain(config_dirs).collect();
    let mut included: Vec<FileId> = Vec::new();
    for dir in &include_dirs {
        let found = discover::expand(std::slice::from_ref(dir));
        if let Some(bad) = found.iter().find(|i| i.problem.is_some()) {
            errln!(
                "error: cannot read include directory `{}`: {}",
                bad.path.display(),
                bad.problem.as_deref().unwrap_or_default()
            );
            return 2;
        }
        for input in found {
            let Ok(text) = crate::read::text(&input.path) else {
                continue;
            };
            if dialect::detect(&input.path, &text) != Some(Dialect::Pipeline) {
                continue;
            }
            let id = sources.add(discover::display(&input.path), text.as_str());
            included.push(id);
            let mut ignored = Vec::new();
            let file = super::load::pipeline_file(&input.path, id, &text, &mut ignored);
            program.files.push(file);
        }
    }
    if !program.files.is_empty() {
        let opts = CheckOptions {
            tools: crate::project::catalogue(&project),
            inline: args.inline,
            invoker: args.invoker.clone().or(project.invoker.clone()),
        };
        let found = pipewright_pipeline::check_program(&program, &sources, &opts);
        diags.extend(
            found
                .into_iter()
                .filter(|d| !included.contains(&d.span().file)),
        );
    }
    diagnostic::sort(&mut diags);
    diags.dedup();
    let denied = args.deny == Some(Deny::Warnings)
        && diags
            .iter()
            .any(|d| d.severity == pipewright_syntax::Severity::Warning);
    files.warnings_denied = denied;
    crate::output::print(args.format, &diags, &sources, &files);
    let failing = denied || diags.iter().any(Diagnostic::is_error);
    // Nothing could be checked at all: that is an I/O failure of the whole command, though
    // every unreadable path was still reported above.
    let code = if files.checked == 0 && files.unreadable > 0 {
        2
    } else {
        u8::from(failing)
    };
    // The process exits right after this (`run` is only called from `main`), and freeing the
    // AST of a large file one node at a time only delays that exit, as rustc also found: the
    // OS takes the memory back at once. (The YAML trees are already gone: loading consumes
    // them step by step, which keeps the peak memory down.)
    std::mem::forget(program);
    std::mem::forget(sources);
    std::mem::forget(diags);
    code
}

/// What a check run looked at, for the summary line.
#[derive(Default)]
pub struct Files {
    pub checked: usize,
    /// Files found by walking a directory that are not workflows of any dialect.
    pub skipped: usize,
    pub unreadable: usize,
    /// `--deny warnings` turned warnings into a failure.
    pub warnings_denied: bool,
}

fn unsupported(file: FileId, d: Dialect) -> Diagnostic {
    Diagnostic::error(
        "PW0007",
        Span::new(file, 0..0),
        format!(
            "the {} dialect cannot be checked by this version of pipewright",
            d.name()
        ),
    )
    .with_label("recognised, but not checked yet")
    .with_help("nothing in this file was verified")
}
