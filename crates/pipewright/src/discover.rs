//! Which files a command works on.

use std::path::{Path, PathBuf};

pub const EXTENSIONS: &[&str] = &["yaml", "yml", "json", "toml"];

/// A file to check and whether the user named it (named files are always checked; files
/// found by walking a directory are skipped when they are not workflow documents).
pub struct Input {
    pub path: PathBuf,
    pub explicit: bool,
}

/// Expands directories recursively (sorted, so output is deterministic), skipping VCS and
/// build directories.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<Input>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            out.push(Input {
                path: p.clone(),
                explicit: true,
            });
            continue;
        }
        let meta =
            std::fs::metadata(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
        if meta.is_dir() {
            walk(p, &mut out)
                .map_err(|e| format!("cannot read directory `{}`: {e}", p.display()))?;
        } else {
            out.push(Input {
                path: p.clone(),
                explicit: true,
            });
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<Input>) -> std::io::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    let mut found = Vec::new();
    while let Some(d) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&d)?.filter_map(Result::ok).collect();
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
                found.push(path);
            }
        }
    }
    found.sort();
    out.extend(found.into_iter().map(|path| Input {
        path,
        explicit: false,
    }));
    Ok(())
}

/// Display form of a path: as given, with forward slashes.
pub fn display(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}
