//! `file__read` and `file__write`, confined to the working directory.

use std::path::{Component, Path, PathBuf};

/// Resolves `path` inside `root`. Refused: absolute paths, `..` that climbs out, and symlinks
/// whose target leaves the root.
pub fn confine(root: &Path, path: &str) -> Result<PathBuf, String> {
    let p = Path::new(path);
    if path.is_empty() {
        return Err("the path is empty".into());
    }
    if p.is_absolute() {
        return Err(format!(
            "path `{path}` is absolute; file tools only reach files under the working directory"
        ));
    }
    let mut depth: i64 = 0;
    for c in p.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            _ => return Err(format!("path `{path}` is not a plain relative path")),
        }
        if depth < 0 {
            return Err(format!("path `{path}` escapes the working directory"));
        }
    }
    let root_real = root
        .canonicalize()
        .map_err(|e| format!("working directory {}: {e}", root.display()))?;
    let joined = root_real.join(p);
    // The deepest existing ancestor must still be inside the root once symlinks resolve.
    let mut probe = joined.clone();
    while !probe.exists() {
        if !probe.pop() {
            break;
        }
    }
    let real = probe
        .canonicalize()
        .map_err(|e| format!("{}: {e}", probe.display()))?;
    if !real.starts_with(&root_real) {
        return Err(format!(
            "path `{path}` escapes the working directory through a symlink"
        ));
    }
    Ok(joined)
}

pub async fn read(root: &Path, path: &str) -> Result<String, String> {
    let full = confine(root, path)?;
    let meta = tokio::fs::metadata(&full)
        .await
        .map_err(|e| format!("cannot read `{path}`: {e}"))?;
    if meta.len() > super::process::MAX_OUTPUT {
        return Err(format!(
            "`{path}` is larger than {} bytes",
            super::process::MAX_OUTPUT
        ));
    }
    tokio::fs::read_to_string(&full)
        .await
        .map_err(|e| format!("cannot read `{path}`: {e}"))
}

pub async fn write(root: &Path, path: &str, content: &str) -> Result<usize, String> {
    let full = confine(root, path)?;
    if let Some(parent) = full.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| format!("cannot create the directory of `{path}`: {e}"))?;
    }
    tokio::fs::write(&full, content)
        .await
        .map_err(|e| format!("cannot write `{path}`: {e}"))?;
    Ok(content.len())
}
