//! Hover: what the document's dialect says about the word under the cursor (step kinds and
//! keys, functions, where a name is written), then the explanation of a diagnostic under the
//! cursor or of a code written in a suppression.

use super::Doc;
use crate::text::LineIndex;
use crate::Config;
use lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind, NumberOrString, Position};
use pipewright_dialect::editor::text::word_at;

pub(crate) fn hover(
    doc: &Doc,
    at: Position,
    config: &Config,
    published: &[lsp_types::Diagnostic],
) -> Option<Hover> {
    let idx = LineIndex::new(&doc.text);
    let offset = idx.offset(at);
    let mut parts: Vec<String> = Vec::new();
    let word = word_at(&doc.text, offset);
    // A code written out (in a suppression comment) or a diagnostic covering the cursor.
    let mut codes: Vec<String> = published
        .iter()
        .filter(|d| d.range.start <= at && at <= d.range.end)
        .filter_map(|d| match &d.code {
            Some(NumberOrString::String(c)) => Some(c.clone()),
            _ => None,
        })
        .collect();
    if let Some((_, w)) = &word {
        if w.len() == 6 && w.starts_with("PW") && w[2..].bytes().all(|b| b.is_ascii_digit()) {
            codes.push(w.to_string());
        }
    }
    codes.dedup();
    for code in codes {
        if let Some(info) = config.codes.iter().find(|c| c.code == code) {
            parts.push(format!(
                "**{}**: {}\n\n{}",
                info.code,
                info.title,
                info.explanation.trim_end()
            ));
        }
    }
    if word.is_some() {
        if let Some(s) = doc
            .editor()
            .and_then(|e| e.hover(&doc.as_editor_doc(), offset))
        {
            parts.insert(0, s);
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: parts.join("\n\n---\n\n"),
        }),
        range: None,
    })
}
