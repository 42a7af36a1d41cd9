//! `pipewright check`.

use crate::cli::{CheckArgs, Deny, Format};
use crate::discover;
use crate::exit::ExitStatus;
use pipewright_dialect::suppress::{self, FileInput, Syntax};
use pipewright_dialect::{Checker, Context, Dialect, Source, Verb};
use pipewright_syntax::{diagnostic, Diagnostic, FileId, SourceMap};
use std::path::{Path, PathBuf};

pipewright_syntax::codes! {
    /// Codes the CLI itself emits.
    pub const CLI_CODES;

    pub const INVALID_JSON_ARGUMENT = "PW0006": "invalid JSON given on the command line";
    pub const UNSUPPORTED_DIALECT = "PW0007": "a dialect this version cannot check yet";
    pub const NEAR_MISS = "PW0010": "a file that is almost a workflow (a misspelled top-level key)";
    pub const EVAL_FAILED = "PW0190": "an R1 expression failed while evaluating";
    pub const BAD_PROJECT_CONFIG = "PW0008": "invalid project config (pipewright.toml)";
    pub const UNUSED_SUPPRESSION = "PW0012": "an inline suppression that suppresses nothing";
    pub const INVALID_SUPPRESSION = "PW0013":
        "an invalid inline suppression (unknown code or malformed comment)";
    pub const WORST_CASE = "PW0014": "the most agent calls a workflow can make (`check --worst-case`)";
}

/// How many times `--fix` fixes and checks again: a fix can uncover the next (a renamed key's
/// value is checked only once the key is known); the loop ends earlier once nothing applies.
const FIX_PASSES: usize = 10;

pub(crate) fn run(args: &CheckArgs) -> ExitStatus {
    let mut a = match analyse(args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let mut fixed = Fixed::default();
    if args.fix {
        for _ in 0..FIX_PASSES {
            let applied = fix_pass(&a, &mut fixed);
            if applied == 0 || fixed.failed {
                break;
            }
            a = match analyse(args) {
                Ok(a) => a,
                Err(code) => return code,
            };
        }
    }
    let Analysis {
        diags,
        sources,
        mut files,
        ..
    } = a;
    let denied = args.deny == Some(Deny::Warnings)
        && diags
            .iter()
            .any(|d| d.severity == pipewright_syntax::Severity::Warning);
    files.warnings_denied = denied;
    if args.statistics {
        crate::output::statistics(args.format, &diags, &sources);
    } else {
        crate::output::print(args.format, &diags, &sources, &files);
    }
    if args.fix {
        let line = fixed.summary();
        // Machine-readable formats keep stdout to themselves.
        if matches!(args.format, Format::Human | Format::Concise) && !args.statistics {
            outln!("{line}");
        } else {
            errln!("{line}");
        }
    }
    let failing = denied || diags.iter().any(Diagnostic::is_error);
    // Nothing could be checked at all: that is an I/O failure of the whole command, though
    // every unreadable path was still reported above.
    let code = if (files.checked == 0 && files.unreadable > 0) || fixed.failed {
        ExitStatus::COULD_NOT_START
    } else if failing {
        ExitStatus::FAILED
    } else {
        ExitStatus::OK
    };
    // The process exits right after this (`run` is only called from `main`): freeing a large
    // file's source and diagnostics one by one only delays that exit.
    std::mem::forget(sources);
    std::mem::forget(diags);
    code
}

/// One check of every input: what `check` prints, and which files `--fix` may rewrite.
struct Analysis {
    diags: Vec<Diagnostic>,
    sources: SourceMap,
    files: Files,
    /// The checked files read from a path (not standard input, not `-I` definitions).
    writable: Vec<(FileId, PathBuf)>,
}

/// What `--fix` did over all its passes.
#[derive(Default)]
struct Fixed {
    applied: usize,
    files: std::collections::BTreeSet<PathBuf>,
    failed: bool,
}

impl Fixed {
    fn summary(&self) -> String {
        let fixes = if self.applied == 1 { "fix" } else { "fixes" };
        let n = self.files.len();
        let files = if n == 1 { "file" } else { "files" };
        format!("applied {} {fixes} in {n} {files}", self.applied)
    }
}

/// Applies the automatic fix of every reported diagnostic of each writable file, writing the
/// files that change; returns how many fixes were applied.
fn fix_pass(a: &Analysis, fixed: &mut Fixed) -> usize {
    let mut total = 0;
    for (id, path) in &a.writable {
        let Some(text) = a.sources.get(*id).map(|f| f.text.clone()) else {
            continue;
        };
        let fixes: Vec<pipewright_syntax::Fix> = a
            .diags
            .iter()
            .filter(|d| d.span().file == *id)
            .filter_map(|d| pipewright_syntax::fix::automatic(d, &text))
            .collect();
        if fixes.is_empty() {
            continue;
        }
        let (out, n) = pipewright_syntax::fix::apply(&text, &fixes);
        if n == 0 || out == *text {
            continue;
        }
        if let Err(e) = crate::commands::fmt::write_atomically(path, &out) {
            errln!("error: cannot write `{}`: {e}", path.display());
            fixed.failed = true;
            continue;
        }
        total += n;
        fixed.applied += n;
        fixed.files.insert(path.clone());
    }
    total
}

fn analyse(args: &CheckArgs) -> Result<Analysis, ExitStatus> {
    let inputs = discover::expand(&args.paths);
    let mut sources = SourceMap::new();
    let mut diags = Vec::new();
    let mut files = Files::default();
    // The files first, then the project config: diagnostics sort by file, and a broken
    // config is reported after the files it applies to.
    let mut found: Vec<(
        &'static dyn Dialect,
        &std::path::Path,
        FileId,
        std::sync::Arc<str>,
    )> = Vec::new();
    for input in &inputs {
        let (id, text) = match crate::read::input(input, &mut sources) {
            Ok(t) => t,
            Err(d) => {
                files.unreadable += 1;
                diags.push(*d);
                continue;
            }
        };
        let src = Source::new(&input.path, &text);
        let Some(d) = args.dialect.or_else(|| pipewright_registry::detect(&src)) else {
            let near = pipewright_registry::near_miss(&src, id);
            if input.explicit {
                files.checked += 1;
                let mut d = pipewright_registry::unrecognised(id, &text);
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
        if d.supports(Verb::Check) {
            found.push((d, &input.path, id, text));
        } else {
            diags.push(crate::dialect::unsupported(id, d, Verb::Check));
        }
    }
    let (project, project_dir) = match pipewright_dialect::project::load(
        args.config.as_deref(),
        args.paths.first().map(PathBuf::as_path),
        &mut sources,
        &mut diags,
    ) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return Err(ExitStatus::COULD_NOT_START);
        }
    };
    let include_dirs: Vec<PathBuf> = args
        .include
        .iter()
        .cloned()
        .chain(
            project
                .include
                .iter()
                .map(|d| project_dir.clone().unwrap_or_default().join(d)),
        )
        .collect();
    let config_path = args.config.clone().or_else(|| {
        project_dir
            .as_ref()
            .map(|d| d.join(pipewright_project::FILE_NAME))
    });
    if let Some(path) = &config_path {
        pipewright_dialect::project::unknown_codes(
            &project.check,
            path,
            &is_known_code,
            &mut sources,
            &mut diags,
        );
    }
    let rules = project.check.clone();
    let config_dir = project_dir.as_deref().and_then(canonical_dir);
    let checked: Vec<(FileId, std::sync::Arc<str>, Syntax, Option<String>)> = found
        .iter()
        .map(|(d, path, id, text)| {
            let rel = config_dir.as_deref().and_then(|dir| relative(path, dir));
            (*id, text.clone(), Syntax::of(path, *d), rel)
        })
        .collect();
    let ctx = Context {
        project,
        inline: args.inline,
        invoker: args.invoker.clone(),
        drawn_only: false,
    };
    let writable: Vec<(FileId, PathBuf)> = found
        .iter()
        .filter(|(_, path, _, _)| path.as_os_str() != "-")
        .map(|(_, path, id, _)| (*id, path.to_path_buf()))
        .collect();
    // What `--worst-case` lowers once the check is done (the check consumes `found`).
    let lowerable: Vec<_> = if args.worst_case {
        found.clone()
    } else {
        Vec::new()
    };
    // One checker per dialect met, in the order met, fed every file of that dialect.
    let mut checkers: Vec<(&'static dyn Dialect, Box<dyn Checker>)> = Vec::new();
    for (d, path, id, text) in found {
        checker_for(&mut checkers, d, &ctx).add(path, id, &text, &mut sources, &mut diags);
    }
    // Definitions that checked files may name (`-I` and the config's `[check] include`), for
    // the dialects being checked; their own problems are not this check's.
    for dir in &include_dirs {
        let found = discover::expand(std::slice::from_ref(dir));
        if let Some(bad) = found.iter().find(|i| i.problem.is_some()) {
            errln!(
                "error: cannot read include directory `{}`: {}",
                bad.path.display(),
                bad.problem.as_deref().unwrap_or_default()
            );
            return Err(ExitStatus::COULD_NOT_START);
        }
        for input in found {
            let Ok(text) = crate::read::text(&input.path) else {
                continue;
            };
            let Some(d) = pipewright_registry::detect(&Source::new(&input.path, &text)) else {
                continue;
            };
            let Some((_, checker)) = checkers.iter_mut().find(|(c, _)| c.name() == d.name()) else {
                continue;
            };
            let id = sources.add(discover::display(&input.path), text.as_str());
            checker.include(&input.path, id, &text);
        }
    }
    for (_, checker) in checkers {
        diags.extend(checker.finish(&sources));
    }
    for (d, path, id, text) in lowerable {
        let clean = !diags.iter().any(|x| x.is_error() && x.span().file == id);
        if clean {
            let mut notes = Vec::new();
            super::worst_case::notes(d, path, id, &text, &mut sources, &ctx, &mut notes);
            diags.extend(notes);
        }
    }
    let texts: Vec<FileInput> = checked
        .iter()
        .map(|(file, text, syntax, rel)| FileInput {
            file: *file,
            text,
            syntax: *syntax,
            rel: rel.clone(),
        })
        .collect();
    let mut diags = suppress::apply(
        diags,
        &texts,
        &suppress::Settings {
            rules: &rules,
            cli_ignore: &args.ignore,
            known: &is_known_code,
        },
    );
    diagnostic::sort(&mut diags);
    diags.dedup();
    Ok(Analysis {
        diags,
        sources,
        files,
        writable,
    })
}

pub(crate) fn is_known_code(code: &str) -> bool {
    crate::output::all_codes().iter().any(|c| c.code == code)
}

/// The config file's directory, absolute, symbolic links resolved (as checked paths will be).
fn canonical_dir(dir: &Path) -> Option<PathBuf> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::canonicalize(dir).ok()
}

/// `path` relative to the config file's directory `dir` (canonical), `/`-separated; `None`
/// outside it.
fn relative(path: &Path, dir: &Path) -> Option<String> {
    let path = std::fs::canonicalize(path).ok()?;
    Some(discover::display(path.strip_prefix(dir).ok()?))
}

fn checker_for<'c>(
    checkers: &'c mut Vec<(&'static dyn Dialect, Box<dyn Checker>)>,
    d: &'static dyn Dialect,
    ctx: &Context,
) -> &'c mut Box<dyn Checker> {
    let i = match checkers.iter().position(|(c, _)| c.name() == d.name()) {
        Some(i) => i,
        None => {
            checkers.push((d, d.checker(ctx)));
            checkers.len() - 1
        }
    };
    &mut checkers[i].1
}

/// What a check run looked at, for the summary line.
#[derive(Default)]
pub(crate) struct Files {
    pub checked: usize,
    /// Files found by walking a directory that are not workflows of any dialect.
    pub skipped: usize,
    pub unreadable: usize,
    /// `--deny warnings` turned warnings into a failure.
    pub warnings_denied: bool,
}
