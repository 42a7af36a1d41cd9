//! Finding and reading the project config for a command, reporting a broken one as a
//! diagnostic into the file.

use pipewright_project::ProjectConfig;
use pipewright_syntax::{Diagnostic, SourceMap, Span};
use std::path::{Path, PathBuf};

/// The config given with `--config`, else the nearest `pipewright.toml` above `near`, with the
/// directory it is in (relative paths in it are relative to that). A file that cannot be read
/// is an I/O failure (`Err` with the message); one that does not parse is reported as PW0008
/// and the defaults are used, so checking goes on.
pub fn load(
    explicit: Option<&Path>,
    near: Option<&Path>,
    sources: &mut SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> Result<(ProjectConfig, Option<PathBuf>), String> {
    let Some(path) = explicit
        .map(Path::to_path_buf)
        .or_else(|| near.and_then(ProjectConfig::find))
    else {
        return Ok((ProjectConfig::default(), None));
    };
    let dir = path.parent().map(Path::to_path_buf);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    match ProjectConfig::parse(&text) {
        Ok(cfg) => Ok((cfg, dir)),
        Err(message) => {
            let file = sources.add(path.to_string_lossy().replace('\\', "/"), text.as_str());
            diags.push(
                Diagnostic::error(
                    "PW0008",
                    Span::new(file, 0..0),
                    format!("invalid project config: {message}"),
                )
                .with_label("in this file")
                .with_help("see `pipewright explain PW0008` for the file's shape"),
            );
            Ok((ProjectConfig::default(), dir))
        }
    }
}
