//! Which files a command works on.

use std::path::{Path, PathBuf};

pub(crate) const EXTENSIONS: &[&str] = &["yaml", "yml", "json", "toml"];

/// A file to check and whether the user named it (named files are always checked; files
/// found by walking a directory are skipped when they are not workflow documents).
pub(crate) struct Input {
    pub path: PathBuf,
    pub explicit: bool,
    /// Why this path could not be listed (a missing path, an unreadable directory). Such an
    /// input is reported on its own path and the others are still worked on.
    pub problem: Option<String>,
}

impl Input {
    fn file(path: PathBuf, explicit: bool) -> Input {
        Input {
            path,
            explicit,
            problem: None,
        }
    }
}

/// Expands directories recursively (sorted, so output is deterministic), skipping VCS and
/// build directories. Paths that cannot be read come back as inputs with a `problem`, in
/// their place, so that one bad path never hides the results of the others.
pub(crate) fn expand(paths: &[PathBuf]) -> Vec<Input> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            out.push(Input::file(p.clone(), true));
            continue;
        }
        match std::fs::metadata(p) {
            Ok(meta) if meta.is_dir() => walk(p, &mut out),
            Ok(_) => out.push(Input::file(p.clone(), true)),
            Err(e) => out.push(Input {
                path: p.clone(),
                explicit: true,
                problem: Some(e.to_string()),
            }),
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<Input>) {
    let mut stack = vec![dir.to_path_buf()];
    let mut found = Vec::new();
    while let Some(d) = stack.pop() {
        let listing = match std::fs::read_dir(&d) {
            Ok(l) => l,
            Err(e) => {
                found.push(Input {
                    path: d,
                    explicit: true,
                    problem: Some(format!("cannot read this directory: {e}")),
                });
                continue;
            }
        };
        let mut entries: Vec<_> = listing.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                if !matches!(
                    name.as_ref(),
                    ".git" | "target" | "node_modules" | ".pipewright"
                ) {
                    stack.push(path);
                }
            } else if path
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| EXTENSIONS.contains(&x))
            {
                found.push(Input::file(path, false));
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    out.extend(found);
}

/// Display form of a path: as given, with forward slashes.
pub(crate) fn display(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}
