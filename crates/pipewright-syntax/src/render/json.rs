//! The `--format json` document. Its schema is public (docs/diagnostics-json.md): within
//! version 1 fields may be added but never removed, renamed or retyped.

use super::{count, locate, Located};
use crate::diagnostic::{Diagnostic, Label};
use crate::source::SourceMap;
use serde_json::{json, Value};

/// Bumped only for incompatible changes to the document's shape.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// Renders every diagnostic as one pretty-printed JSON document (ending in a newline).
pub fn json(diags: &[Diagnostic], sources: &SourceMap) -> String {
    document(diags, sources, None)
}

/// How many files a run checked, skipped (not a workflow of any dialect) and could not read.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileCounts {
    pub checked: usize,
    pub skipped: usize,
    pub unreadable: usize,
}

/// [`json`], with the file counts in the summary (`files_checked`, `files_skipped`,
/// `files_unreadable`).
pub fn json_with_files(diags: &[Diagnostic], sources: &SourceMap, files: FileCounts) -> String {
    document(diags, sources, Some(files))
}

fn document(diags: &[Diagnostic], sources: &SourceMap, files: Option<FileCounts>) -> String {
    let c = count(diags);
    let mut summary = json!({ "errors": c.errors, "warnings": c.warnings, "notes": c.notes });
    if let (Some(f), Some(map)) = (files, summary.as_object_mut()) {
        map.insert("files_checked".into(), f.checked.into());
        map.insert("files_skipped".into(), f.skipped.into());
        map.insert("files_unreadable".into(), f.unreadable.into());
    }
    let doc = json!({
        "version": JSON_SCHEMA_VERSION,
        "diagnostics": diags.iter().map(|d| diagnostic(d, sources)).collect::<Vec<_>>(),
        "summary": summary,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}

fn diagnostic(d: &Diagnostic, sources: &SourceMap) -> Value {
    let at = locate(sources, d.primary.span);
    json!({
        "code": d.code,
        "severity": d.severity.as_str(),
        "message": d.message,
        "file": at.file_name(),
        "span": span(&at),
        "label": non_empty(&d.primary.message),
        "secondary": d.secondary.iter().map(|l| secondary(l, sources)).collect::<Vec<_>>(),
        "notes": d.notes,
        "help": d.help,
    })
}

fn secondary(l: &Label, sources: &SourceMap) -> Value {
    let at = locate(sources, l.span);
    json!({ "file": at.file_name(), "span": span(&at), "message": l.message })
}

fn span(at: &Located) -> Value {
    json!({
        "start": at.start,
        "end": at.end,
        "start_line": at.start_lc.map(|lc| lc.line),
        "start_col": at.start_lc.map(|lc| lc.col),
        "end_line": at.end_lc.map(|lc| lc.line),
        "end_col": at.end_lc.map(|lc| lc.col),
    })
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}
