//! State-machine recipes (../shared/specs/agent-recipes-spec.md): JSON files whose steps
//! report an outcome that picks the next step. `check` (a span-keeping JSON loader, the
//! spec's seven validation rules and what it implies beyond them, `$include`, references
//! between recipes by `id`), the canonical key order for `fmt`, and the lowering for `graph`.

pub mod ast;
pub mod codes;
pub mod dialect;
mod editor;
pub mod fmt;
mod include;
pub mod json;
pub mod lower;
mod rules;
pub mod run;
pub mod schema;
mod set;

pub use codes::CODES;
pub use set::{recipe_id, Checker};

use pipewright_syntax::{Diagnostic, FileId, SourceMap};
use std::path::Path;

/// Checks one file (registered in `sources` under its path), resolving recipe ids against the
/// sibling `*.json` files of its directory.
pub fn check_file(sources: &mut SourceMap, path: &Path, text: &str) -> Vec<Diagnostic> {
    let file = sources.add(path.display().to_string(), text);
    let mut c = Checker::default();
    c.add(sources, path, file, text);
    c.finish()
}

/// Parses and builds one recipe with its includes. `None` when the file is not JSON or not
/// an object; the reasons are in `diags`.
pub fn load(
    sources: &mut SourceMap,
    path: &Path,
    file: FileId,
    text: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<ast::Recipe> {
    load_with(
        &mut include::Cache::default(),
        sources,
        path,
        file,
        text,
        diags,
    )
}

fn load_with(
    cache: &mut include::Cache,
    sources: &mut SourceMap,
    path: &Path,
    file: FileId,
    text: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<ast::Recipe> {
    let root = match json::parse(file, text) {
        Ok(r) => r,
        Err(e) => {
            let d = if e.too_deep {
                Diagnostic::error("PW0003", e.span, e.message).with_label("too deep")
            } else {
                Diagnostic::error("PW0001", e.span, format!("invalid JSON: {}", e.message))
                    .with_label("here")
            };
            diags.push(d);
            return None;
        }
    };
    let mut recipe = ast::recipe(&root, diags)?;
    cache.resolve(&mut recipe, path, sources, diags);
    Some(recipe)
}

/// Checks one file and lowers it for `graph`; `Err` holds the diagnostics when it has errors.
pub fn lower_file(
    sources: &mut SourceMap,
    path: &Path,
    file: FileId,
    text: &str,
) -> Result<pipewright_ir::Program, Vec<Diagnostic>> {
    check_and_lower(sources, path, file, text).map(|(program, _)| program)
}

/// Checks one file and lowers it, keeping the checked recipe (its includes resolved), which
/// `run` executes: the IR has no place for `maxStepVisits` or a step's own model tier.
pub fn check_and_lower(
    sources: &mut SourceMap,
    path: &Path,
    file: FileId,
    text: &str,
) -> Result<(pipewright_ir::Program, ast::Recipe), Vec<Diagnostic>> {
    let mut c = Checker::default();
    c.add(sources, path, file, text);
    let diags = c.finish();
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    let mut sink = Vec::new();
    match load(sources, path, file, text, &mut sink) {
        Some(r) => Ok((lower::program(&r, path), r)),
        None => Err(sink),
    }
}
