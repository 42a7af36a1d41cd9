//! Checks shared by the fuzz targets.

use pipewright_syntax::{render, Diagnostic, SourceMap};

/// Every renderer must accept whatever diagnostics a loader produced, and every label must
/// point inside its file on character boundaries: a span that does not would make a renderer
/// slice a `str` mid-character (a panic in the CLI, not a wrong caret).
pub fn render_all(diags: &[Diagnostic], sources: &SourceMap) {
    if diags.is_empty() {
        return;
    }
    for d in diags {
        let labels = std::iter::once(&d.primary).chain(d.secondary.iter());
        for l in labels {
            let Some(file) = sources.get(l.span.file) else {
                panic!("{} points into an unknown file: {d:?}", d.code)
            };
            assert!(
                file.text.get(l.span.range()).is_some(),
                "{} label {:?} is not a range of its {}-byte file on char boundaries: {d:?}",
                d.code,
                l.span.range(),
                file.text.len()
            );
        }
    }
    let _ = render::human(diags, sources, false);
    let _ = render::human(diags, sources, true);
    let _ = render::summary(diags, 1);
    let _ = render::json(diags, sources);
    let _ = render::sarif(diags, sources, "0.0.0", &[]);
    let _ = render::github(diags, sources);
}

/// A formatter refusal is fine; PW0900 says the formatter produced something it could not
/// verify, which its own help calls a formatter bug. `FUZZ_ALLOW_PW0900=1` turns this check
/// off, so a known PW0900 does not stop a campaign from looking for other failures.
pub fn no_internal_error(diags: &[Diagnostic], text: &str, dialect: &str) {
    if pw0900_allowed() {
        return;
    }
    if let Some(d) = diags.iter().find(|d| d.code == "PW0900") {
        panic!(
            "{dialect}: PW0900 on {text:?}: {}; {:?}",
            d.message, d.notes
        );
    }
}

/// Whether `FUZZ_ALLOW_PW0900=1` is set (see [`no_internal_error`]).
pub fn pw0900_allowed() -> bool {
    static ALLOW: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALLOW.get_or_init(|| std::env::var_os("FUZZ_ALLOW_PW0900").is_some_and(|v| v == "1"))
}

/// Every graph exporter must accept a lowered program.
pub fn export_all(program: &pipewright_ir::Program, sources: &SourceMap) {
    use pipewright_ir::export::{dot::dot, json::json, mermaid::mermaid, ExportOptions};
    let opts = ExportOptions::default();
    let _ = dot(program, &opts);
    let _ = mermaid(program, &opts);
    let _ = json(program, sources, &opts);
}
