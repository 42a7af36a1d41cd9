//! One check of the workflow files of a directory, as `pipewright check DIR` would make it:
//! the open documents (their unsaved text) are checked; the other workflow files there and in
//! the project's include directories are read from disk as definitions (so a call into a
//! sibling file resolves); the project's `[check]` rules and inline suppressions apply.

use pipewright_dialect::suppress::{self, FileInput, Syntax};
use pipewright_dialect::{Checker, Context, Dialect, Source, Verb};
use pipewright_project::ProjectConfig;
use pipewright_syntax::{Diagnostic, FileId, SourceMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One open document.
pub struct Input {
    pub path: PathBuf,
    pub text: Arc<str>,
    /// Where the document's dialect keeps what it may reuse at the next check of it (open
    /// documents of the language server).
    pub kept: Option<pipewright_dialect::Kept>,
}

pub struct Analysis {
    pub sources: SourceMap,
    /// The path of every file in `sources`.
    pub paths: Vec<(FileId, PathBuf)>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Analysis {
    pub fn path(&self, file: FileId) -> Option<&Path> {
        self.paths
            .iter()
            .find(|(id, _)| *id == file)
            .map(|(_, p)| p.as_path())
    }
}

/// Sibling files larger than this are not read as definitions: a check after each keystroke
/// must stay fast, and such files are rarely the target of a call.
const MAX_SIBLING_BYTES: u64 = 2 << 20;
/// Files visited in include directories, at most.
const MAX_INCLUDED_FILES: usize = 500;

/// Checks `open` (documents of one directory). `cancelled` is asked between phases: a newer
/// edit makes this result useless, so it stops early and returns `None`.
pub fn analyze(
    open: &[Input],
    known: &dyn Fn(&str) -> bool,
    cancelled: &dyn Fn() -> bool,
) -> Option<Analysis> {
    let mut sources = SourceMap::new();
    let mut paths = Vec::new();
    let mut diags = Vec::new();
    // Only a saved document's directory is looked at: an `untitled:` one has no directory,
    // and the server's own working directory is nobody's project.
    let near = open
        .first()
        .map(|i| i.path.as_path())
        .filter(|p| p.is_absolute());
    let (project, config_path) = project(near, &mut sources, &mut paths, &mut diags);
    if let Some(path) = &config_path {
        pipewright_dialect::project::unknown_codes(
            &project.check,
            path,
            known,
            &mut sources,
            &mut diags,
        );
        if let Some(id) = sources.find(&display(path)) {
            if !paths.iter().any(|(f, _)| *f == id) {
                paths.push((id, path.clone()));
            }
        }
    }
    let config_dir = config_path
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    let canonical_config_dir = config_dir.as_deref().and_then(canonical_dir);
    let mut found: Vec<(&'static dyn Dialect, &Input, FileId)> = Vec::new();
    for input in open {
        let id = sources.add(display(&input.path), input.text.clone());
        paths.push((id, input.path.clone()));
        let src = Source::new(&input.path, &input.text);
        match pipewright_registry::detect(&src) {
            Some(d) if d.supports(Verb::Check) => found.push((d, input, id)),
            Some(_) => {}
            // A YAML file that is no workflow is none of this server's business, unless it is
            // one misspelled key away from being one (the warning `check DIR` gives).
            None => diags.extend(pipewright_registry::near_miss(&src, id).map(|n| n.warning())),
        }
    }
    if cancelled() {
        return None;
    }
    let rules = project.check.clone();
    let include_dirs: Vec<PathBuf> = project
        .include
        .iter()
        .map(|d| config_dir.clone().unwrap_or_default().join(d))
        .collect();
    let ctx = Context {
        project,
        ..Context::default()
    };
    let mut checkers: Vec<(&'static dyn Dialect, Box<dyn Checker>)> = Vec::new();
    for (d, input, id) in &found {
        let i = match checkers.iter().position(|(c, _)| c.name() == d.name()) {
            Some(i) => i,
            None => {
                checkers.push((*d, d.checker(&ctx)));
                checkers.len() - 1
            }
        };
        let checker = &mut checkers[i].1;
        match &input.kept {
            Some(kept) => checker.add_open(
                &input.path,
                *id,
                &input.text,
                &mut sources,
                &mut diags,
                kept,
            ),
            None => checker.add(&input.path, *id, &input.text, &mut sources, &mut diags),
        }
    }
    let dir = near.and_then(Path::parent);
    let mut definitions: Vec<PathBuf> = dir.map(siblings).unwrap_or_default();
    for d in &include_dirs {
        walk(d, &mut definitions);
    }
    for path in definitions {
        if open.iter().any(|i| same_file(&i.path, &path)) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Some(d) = pipewright_registry::detect(&Source::new(&path, &text)) else {
            continue;
        };
        let Some((_, checker)) = checkers.iter_mut().find(|(c, _)| c.name() == d.name()) else {
            continue;
        };
        let id = sources.add(display(&path), text.as_str());
        paths.push((id, path.clone()));
        checker.include(&path, id, &text);
    }
    if cancelled() {
        return None;
    }
    for (_, checker) in checkers {
        diags.extend(checker.finish(&sources));
    }
    let inputs: Vec<FileInput> = found
        .iter()
        .map(|(d, input, id)| FileInput {
            file: *id,
            text: &input.text,
            syntax: Syntax::of(&input.path, *d),
            rel: canonical_config_dir
                .as_deref()
                .and_then(|dir| relative(&input.path, dir)),
        })
        .collect();
    let mut diagnostics = suppress::apply(
        diags,
        &inputs,
        &suppress::Settings {
            rules: &rules,
            cli_ignore: &[],
            known,
        },
    );
    pipewright_syntax::diagnostic::sort(&mut diagnostics);
    diagnostics.dedup();
    Some(Analysis {
        sources,
        paths,
        diagnostics,
    })
}

/// The nearest `pipewright.toml` above the documents' directory (which exists even when a
/// document is not saved yet), loaded as `check` loads it: a broken one is reported in it
/// (PW0008) and the defaults apply; an unreadable one is ignored.
fn project(
    near: Option<&Path>,
    sources: &mut SourceMap,
    paths: &mut Vec<(FileId, PathBuf)>,
    diags: &mut Vec<Diagnostic>,
) -> (ProjectConfig, Option<PathBuf>) {
    let dir = near.and_then(Path::parent);
    let Ok((config, Some(config_dir))) =
        pipewright_dialect::project::load(None, dir, sources, diags)
    else {
        return (ProjectConfig::default(), None);
    };
    let path = config_dir.join(pipewright_project::FILE_NAME);
    if let Some(id) = sources.find(&display(&path)) {
        paths.push((id, path.clone()));
    }
    (config, Some(path))
}

fn is_candidate(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json" | "toml")
    ) && path
        .file_name()
        .is_some_and(|n| n != pipewright_project::FILE_NAME)
        && std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= MAX_SIBLING_BYTES)
}

/// The workflow candidates directly in `dir`, in name order.
fn siblings(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    })
    .into_iter()
    .flatten()
    .filter_map(Result::ok)
    .map(|e| e.path())
    .filter(|p| is_candidate(p))
    .collect();
    out.sort();
    out
}

/// The workflow candidates under `dir`, recursively (hidden directories skipped), bounded.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for p in siblings(&d) {
            if out.len() >= MAX_INCLUDED_FILES {
                return;
            }
            out.push(p);
        }
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let hidden = e.file_name().to_string_lossy().starts_with('.');
            if !hidden && e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

fn display(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

fn canonical_dir(dir: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    })
    .ok()
}

/// `path` relative to the config's directory, `/`-separated (for `[[check.per-path]]`).
fn relative(path: &Path, dir: &Path) -> Option<String> {
    let path = std::fs::canonicalize(path).ok()?;
    Some(display(path.strip_prefix(dir).ok()?))
}
