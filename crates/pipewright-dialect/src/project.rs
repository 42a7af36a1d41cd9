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
            let file = sources.add(display(&path), text.as_str());
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

/// Codes the config's `[check]` lists that no version of pipewright this one knows emits: a
/// PW0008 each, at the code in the file (the file parsed, so the rest of it applies).
pub fn unknown_codes(
    rules: &pipewright_project::CheckRules,
    path: &Path,
    known: &dyn Fn(&str) -> bool,
    sources: &mut SourceMap,
    diags: &mut Vec<Diagnostic>,
) {
    let unknown: Vec<&str> = rules.codes().filter(|c| !known(c)).collect();
    if unknown.is_empty() {
        return;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let name = display(path);
    let file = sources
        .find(&name)
        .unwrap_or_else(|| sources.add(name, text.as_str()));
    for code in unknown {
        let quoted = format!("\"{code}\"");
        let span = text
            .find(&quoted)
            .map_or(0..0, |at| at + 1..at + 1 + code.len());
        diags.push(
            Diagnostic::error(
                "PW0008",
                Span::new(file, span),
                format!("invalid project config: `[check]` names `{code}`, which is not a pipewright diagnostic code"),
            )
            .with_label("unknown code")
            .with_help("`pipewright explain --list` lists every code"),
        );
    }
}

/// A path as files are named in diagnostics (`/`-separated).
fn display(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}
