//! State-machine files are JSON: no comments, so canonical form is serde_json's pretty
//! printing (two-space indentation, keys in the author's order) plus a final newline.

use pipewright_syntax::{Diagnostic, FileId, Span};

pub fn format(file: FileId, text: &str) -> Result<String, Vec<Diagnostic>> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| vec![parse_error(file, text, &e)])?;
    let mut out = serde_json::to_string_pretty(&value)
        .map_err(|e| vec![crate::internal_error(file, e.to_string())])?;
    out.push('\n');
    let again: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| vec![crate::internal_error(file, e.to_string())])?;
    if again != value {
        return Err(vec![crate::internal_error(
            file,
            "the pretty-printed JSON reads back differently",
        )]);
    }
    Ok(out)
}

fn parse_error(file: FileId, text: &str, e: &serde_json::Error) -> Diagnostic {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let at = (line_start + e.column().saturating_sub(1)).min(text.len());
    Diagnostic::error(
        "PW0001",
        Span::new(file, at..at),
        format!("invalid JSON: {e}"),
    )
    .with_label("the JSON parser stopped here")
}
