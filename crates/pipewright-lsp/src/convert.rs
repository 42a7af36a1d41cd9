//! pipewright diagnostics as LSP diagnostics: spans to UTF-16 ranges, severity, the code (its
//! explanation is the hover over the diagnostic), secondary labels as related information,
//! notes and help appended to the message, tags, and the did-you-mean fix-its (in `data`, for
//! code actions).

use crate::analysis::Analysis;
use crate::text::LineIndex;
use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, DiagnosticTag, Location, NumberOrString,
    TextEdit, Url,
};
use pipewright_syntax::{Diagnostic, FileId, Severity, Span};
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

/// One replacement a diagnostic suggests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fix {
    pub title: String,
    pub edit: TextEdit,
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
        let fixes: Vec<Fix> = fixes(d, text)
            .into_iter()
            .map(|(span, new_text, title)| Fix {
                title,
                edit: TextEdit::new(idx.range(span.range()), new_text),
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

/// The replacements a diagnostic suggests in its own file: a help or a secondary label reading
/// "did you mean `X`?" (what `pipewright_syntax::suggest` writes) replaces the text it points at
/// when that is a single word on one line; a secondary label reading "replace with `X`"
/// (`pipewright_syntax::suggest::replace_with`) replaces the text it points at by `X`.
pub fn fixes(d: &Diagnostic, text: &str) -> Vec<(Span, String, String)> {
    let mut out = Vec::new();
    let file = d.span().file;
    let mut offer = |span: Span, said: &str| {
        let Some(new) = suggestion(said) else {
            return;
        };
        let Some(old) = text.get(span.range()) else {
            return;
        };
        let word = |s: &str| !s.is_empty() && !s.contains(['\n', ' ', ':', '{', '[', ',']);
        // A quoted scalar's span includes its quotes: replace inside them.
        let (span, old) = match old.as_bytes().first() {
            Some(b'"' | b'\'') if old.len() >= 2 && old.ends_with(&old[..1]) => {
                (span.sub(1..old.len() - 1), &old[1..old.len() - 1])
            }
            _ => (span, old),
        };
        if span.file == file && word(old) && old != new && !out.iter().any(|(s, _, _)| *s == span) {
            out.push((
                span,
                new.to_string(),
                format!("Replace `{old}` with `{new}`"),
            ));
        }
    };
    if let Some(h) = &d.help {
        offer(d.span(), h);
    }
    for l in &d.secondary {
        offer(l.span, &l.message);
    }
    // A label that is an edit of its own span ("replace with `…`").
    for l in &d.secondary {
        let Some(new) = pipewright_syntax::suggest::replacement(&l.message) else {
            continue;
        };
        let Some(old) = text.get(l.span.range()) else {
            continue;
        };
        if l.span.file == file && old != new && !out.iter().any(|(s, _, _)| *s == l.span) {
            out.push((
                l.span,
                new.to_string(),
                format!("Replace `{old}` with `{new}`"),
            ));
        }
    }
    out
}

fn suggestion(said: &str) -> Option<&str> {
    let rest = said.strip_prefix("did you mean `")?;
    let (word, after) = rest.split_once('`')?;
    after.starts_with('?').then_some(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn did_you_mean_becomes_a_replacement_of_the_word_only() {
        let text = "a: \"ctx.nmae\"\nb: setps\n";
        let f = FileId(0);
        let d = Diagnostic::error("PW0000", Span::new(f, 3..13), "x")
            .with_help("did you mean `ctx.name`? Otherwise add it");
        let got = fixes(&d, text);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0.range(), 4..12);
        assert_eq!(got[0].1, "ctx.name");
        let d = Diagnostic::error("PW0000", Span::new(f, 0..1), "x")
            .with_secondary(Span::new(f, 17..22), "did you mean `steps`?");
        assert_eq!(fixes(&d, text)[0].0.range(), 17..22);
        // Not a suggestion, a list, or a span over more than a word: nothing offered.
        for help in ["expected one of: `a`, `b`", "did you mean `x`", "use `y`"] {
            let d = Diagnostic::error("PW0000", Span::new(f, 17..22), "x").with_help(help);
            assert!(fixes(&d, text).is_empty(), "{help}");
        }
        let d =
            Diagnostic::error("PW0000", Span::new(f, 0..13), "x").with_help("did you mean `q`?");
        assert!(fixes(&d, text).is_empty());
    }

    #[test]
    fn a_replacement_label_becomes_an_edit_of_its_span() {
        let text = "command = \"test '{{x}}' = y\"\n";
        let f = FileId(0);
        let d = Diagnostic::warning("PW0633", Span::new(f, 17..22), "x").with_secondary(
            Span::new(f, 16..23),
            pipewright_syntax::suggest::replace_with("{{x}}"),
        );
        let got = fixes(&d, text);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0.range(), 16..23);
        assert_eq!(got[0].1, "{{x}}");
    }
}
