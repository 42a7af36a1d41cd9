//! Helpers shared by the formatter's test binaries.

use std::path::{Path, PathBuf};

/// Every `.yaml`/`.yml` file under `dir`, recursively, in sorted order (a missing directory
/// yields none).
pub(crate) fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(p);
        }
    }
}

/// The dialects these tests format. The formatter knows none of them: each dialect crate gives
/// it a syntax and, for YAML, its canonical rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // pyyaml.rs formats only the YAML dialects
pub(crate) enum Dialect {
    Pipeline,
    Recipe,
    StateMachine,
    Meow,
}

impl Dialect {
    pub(crate) fn syntax(self) -> pipewright_fmt::Syntax<'static> {
        match yaml_rules(self) {
            Some(rules) => pipewright_fmt::Syntax::Yaml(rules),
            None if self == Dialect::StateMachine => pipewright_fmt::Syntax::Json,
            None => pipewright_fmt::Syntax::Toml,
        }
    }
}

/// The canonical rules of a YAML dialect; `None` for the JSON and TOML dialects.
pub(crate) fn yaml_rules(
    dialect: Dialect,
) -> Option<&'static dyn pipewright_fmt::rules::DialectRules> {
    match dialect {
        Dialect::Pipeline => Some(&pipewright_pipeline::fmt_rules::PipelineRules),
        Dialect::Recipe => Some(&pipewright_recipe::fmt_rules::RecipeRules),
        Dialect::StateMachine | Dialect::Meow => None,
    }
}

/// The formatter on one text of `dialect`.
pub(crate) fn format_source(
    file: pipewright_syntax::FileId,
    text: &str,
    dialect: Dialect,
    options: pipewright_fmt::Options,
) -> Result<pipewright_fmt::Formatted, Vec<pipewright_syntax::Diagnostic>> {
    pipewright_fmt::format_source(file, text, dialect.syntax(), options)
}
