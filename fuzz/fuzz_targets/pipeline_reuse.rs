//! The language server's reuse of a pipeline's previous load: arbitrary bytes are an old text
//! and (after a NUL byte) a new one. When the old text loads without a diagnostic, loading the
//! new one from the old one's AST (`pipewright_pipeline::reuse`) must give exactly what loading
//! it whole gives: the same schemas, pipelines and diagnostics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipewright_pipeline::load_source;
use pipewright_pipeline::reuse::{load_reusing, Kept};
use pipewright_syntax::FileId;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let Some(i) = data.iter().position(|b| *b == 0) else {
        return;
    };
    let (Ok(old), Ok(new)) = (
        std::str::from_utf8(&data[..i]),
        std::str::from_utf8(&data[i + 1..]),
    ) else {
        return;
    };
    let mut diags = Vec::new();
    let previous = load_source(FileId(0), old, &mut diags);
    if !diags.is_empty() {
        return;
    }
    let kept = Kept {
        text: Arc::from(old),
        file: previous,
    };
    let mut whole_diags = Vec::new();
    let whole = load_source(FileId(1), new, &mut whole_diags);
    let mut reused_diags = Vec::new();
    let reused = load_reusing(FileId(1), new, Some(kept), &mut reused_diags);
    assert_eq!(reused.file, whole.file);
    assert!(reused.schemas == whole.schemas, "schemas differ");
    assert!(reused.pipelines == whole.pipelines, "pipelines differ");
    assert_eq!(reused_diags, whole_diags);
});
