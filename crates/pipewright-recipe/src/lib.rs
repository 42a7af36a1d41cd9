//! `pipewright check` for Amplifier recipes (schema v1.7, which includes v1.3).
//!
//! Pipeline per file: YAML (`pipewright-yaml`) → typed AST ([`load`]) → structural rules
//! ([`validate`]) → templates, conditions and variable availability ([`variables`]) →
//! sub-recipes ([`subrecipe`]). [`value`] holds context values and their text as the runner
//! renders them.

pub mod ast;
pub mod codes;
pub mod condition;
pub mod dialect;
pub mod dot;
mod editor;
pub mod fmt_rules;
mod issue;
pub mod load;
pub mod lower;
pub mod run;
pub mod runtime;
pub mod schema;
pub mod subrecipe;
pub mod template;
pub mod validate;
pub mod value;
pub mod variables;

pub use codes::CODES;
pub use issue::Issue;

use pipewright_syntax::{Diagnostic, SourceMap};

pub struct RecipeCheck {
    pub diagnostics: Vec<Diagnostic>,
}

/// Checks one recipe file (and, recursively, every sub-recipe it references, each once). Files
/// read are added to `sources` so diagnostics in sub-recipes render; `path` is the display path
/// (and is used to resolve sub-recipe paths).
pub fn check_file(sources: &mut SourceMap, path: &std::path::Path, text: &str) -> Vec<Diagnostic> {
    let mut session = subrecipe::Session::new(sources);
    session.check_root(path, text);
    let mut diags = session.diags;
    pipewright_syntax::diagnostic::sort(&mut diags);
    diags.dedup();
    diags
}

/// The same as [`check_file`], wrapped.
pub fn check(sources: &mut SourceMap, path: &std::path::Path, text: &str) -> RecipeCheck {
    RecipeCheck {
        diagnostics: check_file(sources, path, text),
    }
}

/// True when a YAML document looks like a recipe (mapping with `name` and (`steps` or
/// `stages`)), used for dialect detection.
pub fn looks_like_recipe(root: &pipewright_yaml::Node) -> bool {
    root.as_map().is_some()
        && root.get("name").is_some()
        && (root.get("steps").is_some() || root.get("stages").is_some())
}
