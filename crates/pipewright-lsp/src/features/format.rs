//! `textDocument/formatting`: the `fmt` engine's canonical text as one whole-document edit.

use super::Doc;
use crate::text::LineIndex;
use lsp_types::TextEdit;
use pipewright_dialect::Verb;
use pipewright_syntax::FileId;

/// `None` when the document is no workflow or cannot be formatted faithfully (the check's
/// diagnostics say why); an empty list when it is already canonical.
pub fn format(doc: &Doc) -> Option<Vec<TextEdit>> {
    let d = doc.dialect().filter(|d| d.supports(Verb::Fmt))?;
    let out = d.format(FileId(0), &doc.text).ok()?;
    if out == *doc.text {
        return Some(Vec::new());
    }
    Some(vec![TextEdit::new(LineIndex::new(&doc.text).whole(), out)])
}
