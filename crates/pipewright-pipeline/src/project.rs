//! The project config file, `pipewright.toml`, as far as checking needs it: the tools a project
//! declares (`[tools.NAME]`) and the default invoker identity (`[check] invoker`).

use crate::catalogue::ToolCatalogue;
use pipewright_syntax::{Diagnostic, FileId, SourceMap, Span};
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "pipewright.toml";

#[derive(Debug, Clone, Default)]
pub struct Project {
    /// The config file, when one was found.
    pub path: Option<PathBuf>,
    pub tools: Vec<(String, Span)>,
    pub invoker: Option<String>,
}

impl Project {
    /// The nearest `pipewright.toml` in `start` or above it.
    pub fn find(start: &Path) -> Option<PathBuf> {
        let abs = std::fs::canonicalize(start).ok()?;
        let dir = if abs.is_file() { abs.parent()? } else { &abs };
        dir.ancestors()
            .map(|d| d.join(FILE_NAME))
            .find(|p| p.is_file())
    }

    /// Reads and validates a config file; problems are diagnostics into it.
    pub fn load(
        path: &Path,
        sources: &mut SourceMap,
        diags: &mut Vec<Diagnostic>,
    ) -> Result<Project, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        let file = sources.add(path.to_string_lossy().to_string(), text.as_str());
        Ok(parse(file, &text, diags, Some(path.to_path_buf())))
    }

    pub fn catalogue(&self) -> ToolCatalogue {
        let mut c = ToolCatalogue::default();
        for (name, span) in &self.tools {
            c.add_project_tool(name.clone(), Some(*span));
        }
        c
    }
}

pub fn parse(
    file: FileId,
    text: &str,
    diags: &mut Vec<Diagnostic>,
    path: Option<PathBuf>,
) -> Project {
    let mut project = Project {
        path,
        ..Project::default()
    };
    let doc = match text.parse::<toml_edit::Document<String>>() {
        Ok(d) => d,
        Err(e) => {
            let span = e
                .span()
                .map_or(Span::new(file, 0..0), |r| Span::new(file, r));
            diags.push(
                Diagnostic::error("PW0001", span, format!("invalid TOML: {}", e.message()))
                    .with_label("the TOML parser stopped here"),
            );
            return project;
        }
    };
    let root = doc.as_table();
    let span_of = |item: &toml_edit::Item| {
        item.span()
            .map_or(Span::new(file, 0..0), |r| Span::new(file, r))
    };
    if let Some(tools) = root.get("tools") {
        match tools.as_table_like() {
            Some(t) => {
                for (name, item) in t.iter() {
                    let key_span = t
                        .key(name)
                        .and_then(|k| k.span())
                        .map_or_else(|| span_of(item), |r| Span::new(file, r));
                    project.tools.push((name.to_string(), key_span));
                }
            }
            None => diags.push(
                Diagnostic::error(
                    "PW0008",
                    span_of(tools),
                    "`tools` must be a table of tool declarations",
                )
                .with_label("expected `[tools.NAME]` tables")
                .with_help(
                    "declare each tool as `[tools.NAME]` with `command = [\"prog\", \"arg\"]`",
                ),
            ),
        }
    }
    if let Some(check) = root.get("check").and_then(|c| c.as_table_like()) {
        if let Some(inv) = check.get("invoker") {
            match inv.as_str() {
                Some(s) => project.invoker = Some(s.to_string()),
                None => diags.push(
                    Diagnostic::error("PW0008", span_of(inv), "`check.invoker` must be a string")
                        .with_label("expected an identity name"),
                ),
            }
        }
    }
    project
}
