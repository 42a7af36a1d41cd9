//! The pipeline dialect: YAML documents with `pipeline:` and `schema:` (see
//! docs/pipeline.md). [`load_source`] turns text into the typed AST, [`check_program`] runs
//! every static check over a set of files.

pub mod ast;
pub mod catalogue;
pub mod check;
pub mod codes;
pub mod dialect;
mod editor;
pub mod fmt_rules;
pub mod literal;
mod load;
pub mod lower;
pub mod reuse;
pub mod run;
pub mod schema;
mod schema_load;
mod step_load;

pub use check::{check_program, CheckOptions};
pub use load::STEP_KINDS;
pub use step_load::STEP_BODY_KEYS;

use pipewright_syntax::{Diagnostic, FileId};

/// Loads one file's text into the AST. The YAML layer's and the document grammar's
/// diagnostics are appended to `diags`.
pub fn load_source(file: FileId, text: &str, diags: &mut Vec<Diagnostic>) -> ast::PipelineFile {
    let (docs, yaml_diags) = pipewright_yaml::load(file, text, pipewright_yaml::Limits::default());
    diags.extend(yaml_diags);
    load_documents(file, text, docs, diags)
}

/// [`load_source`] after the YAML layer has run (its diagnostics already in `diags`); public so
/// the phase-timing example can measure the AST build apart from YAML parsing. The tree is
/// consumed as the AST is built.
#[doc(hidden)]
pub fn load_documents(
    file: FileId,
    text: &str,
    docs: Vec<pipewright_yaml::Document>,
    diags: &mut Vec<Diagnostic>,
) -> ast::PipelineFile {
    let any_docs = !docs.is_empty();
    let first_root = docs
        .first()
        .and_then(|d| d.root.as_ref())
        .map(|r| r.span.sub(0..0));
    let mut out = load::load_file(file, text, docs, diags);
    if out.pipelines.is_empty() && any_docs && !diags.iter().any(|d| d.is_error()) {
        let span = first_root.unwrap_or(pipewright_syntax::Span::new(file, 0..0));
        diags.push(
            Diagnostic::error(codes::NO_PIPELINE, span, "this file declares no pipeline")
                .with_label("only schema documents here")
                .with_help("add a `---`-separated document with `pipeline: NAME` and `steps:`"),
        );
    }
    out.namespace = None;
    out
}

/// True when a YAML document looks like a pipeline document set (a `pipeline:` or `schema:` key).
pub fn looks_like_pipeline(root: &pipewright_yaml::Node) -> bool {
    root.entry("pipeline").is_some()
        || (root.entry("schema").is_some() && root.entry("fields").is_some())
}
