//! pipewright diagnostics as LSP diagnostics: spans to UTF-16 ranges, severity, the code (its
//! explanation is the hover over the diagnostic), secondary labels as related information,
//! notes and help appended to the message, tags, and the diagnostic's fixes (in `data`, for
//! code actions).

use crate::analysis::Analysis;
use crate::text::LineIndex;
use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, DiagnosticTag, Location, NumberOrString,
    TextEdit, Url,
};
use pipewright_syntax::{Diagnostic, FileId, Severity};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;

/// Codes whose finding is text that does nothing (shown faded by editors).
const UNNECESSARY: &[&str] = &[
    "PW0012", "PW0218", "PW0259", "PW0503", "PW0516", "PW0603", "PW0610", "PW0702", "PW0721",
    "PW0727",
];
/// Codes whose finding is a form that is going away (shown struck through).
const DEPRECATED: &[&str] = &["PW0600"];

/// One fix of a diagnostic (`pipewright_syntax::fix`), in LSP positions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fix {
    pub title: String,
    pub edits: Vec<TextEdit>,
}

/// What a published diagnostic carries for the code actions asked of it later.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Data {
    pub fixes: Vec<Fix>,
}

/// The LSP diagnostics of every file of the analysis, by path. Files with none are present
/// too (with an empty list), so a fixed document is cleared.
pub fn by_file(a: &Analysis) -> HashMap<PathBuf, Vec<lsp_types::Diagnostic>> {
    let mut indexes: HashMap<FileId, LineIndex> = HashMap::new();
    for f in a.sources.files() {
        indexes.insert(f.id, LineIndex::new(&f.text));
    }
    let mut out: HashMap<PathBuf, Vec<lsp_types::Diagnostic>> = a
        .paths
        .iter()
        .map(|(_, p)| (p.clone(), Vec::new()))
        .collect();
    for d in &a.diagnostics {
        let Some(path) = a.path(d.span().file) else {
            continue;
        };
        let Some(idx) = indexes.get(&d.span().file) else {
            continue;
        };
        let text = a.sources.get(d.span().file).map_or("", |f| f.text.as_ref());
        let related = d
            .secondary
            .iter()
            .filter_map(|l| {
                let uri = Url::from_file_path(a.path(l.span.file)?).ok()?;
                let range = indexes.get(&l.span.file)?.range(l.span.range());
                Some(DiagnosticRelatedInformation {
                    location: Location::new(uri, range),
                    message: if l.message.is_empty() {
                        "related".to_string()
                    } else {
                        l.message.clone()
                    },
                })
            })
            .collect::<Vec<_>>();
        let fixes: Vec<Fix> = pipewright_syntax::fix::fixes(d, text)
            .into_iter()
            .map(|f| Fix {
                title: f.title,
                edits: f
                    .edits
                    .into_iter()
                    .map(|e| TextEdit::new(idx.range(e.span.range()), e.text))
                    .collect(),
            })
            .collect();
        let data = (!fixes.is_empty())
            .then(|| serde_json::to_value(Data { fixes }).ok())
            .flatten();
        let mut tags = Vec::new();
        if UNNECESSARY.contains(&d.code) {
            tags.push(DiagnosticTag::UNNECESSARY);
        }
        if DEPRECATED.contains(&d.code) {
            tags.push(DiagnosticTag::DEPRECATED);
        }
        out.entry(path.to_path_buf())
            .or_default()
            .push(lsp_types::Diagnostic {
                range: idx.range(d.span().range()),
                severity: Some(severity(d.severity)),
                code: Some(NumberOrString::String(d.code.to_string())),
                code_description: None,
                source: Some("pipewright".to_string()),
                message: message(d),
                related_information: (!related.is_empty()).then_some(related),
                tags: (!tags.is_empty()).then_some(tags),
                data,
            });
    }
    out
}

pub fn severity(s: Severity) -> DiagnosticSeverity {
    match s {
        Severity::Error => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Note => DiagnosticSeverity::INFORMATION,
    }
}

/// The message with what the terminal shows under it: the primary label, notes and help.
fn message(d: &Diagnostic) -> String {
    let mut m = d.message.clone();
    if !d.primary.message.is_empty() {
        m.push_str(&format!(" ({})", d.primary.message));
    }
    for n in &d.notes {
        m.push_str(&format!("\nnote: {n}"));
    }
    if let Some(h) = &d.help {
        m.push_str(&format!("\nhelp: {h}"));
    }
    m
}
