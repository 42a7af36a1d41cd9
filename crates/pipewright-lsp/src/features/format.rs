//! `textDocument/formatting`: the `fmt` engine's canonical text as one whole-document edit,
//! with the `[fmt]` options of the nearest `pipewright.toml` (as `pipewright fmt` finds it).

use super::Doc;
use crate::text::LineIndex;
use lsp_types::TextEdit;
use pipewright_dialect::Verb;
use pipewright_syntax::FileId;

/// `None` when the document is no workflow or cannot be formatted faithfully (the check's
/// diagnostics say why); an empty list when it is already canonical.
pub(crate) fn format(doc: &Doc) -> Option<Vec<TextEdit>> {
    let d = doc.dialect().filter(|d| d.supports(Verb::Fmt))?;
    let out = d.format(FileId(0), &doc.text, options(doc)).ok()?;
    if out == *doc.text {
        return Some(Vec::new());
    }
    Some(vec![TextEdit::new(LineIndex::new(&doc.text).whole(), out)])
}

/// A config that does not parse gives the defaults here; the check publishes its PW0008.
fn options(doc: &Doc) -> pipewright_fmt::Options {
    let dir = doc.dir();
    let mut sources = pipewright_syntax::SourceMap::new();
    let (project, _) =
        pipewright_dialect::project::load(None, Some(&dir), &mut sources, &mut Vec::new())
            .unwrap_or_default();
    pipewright_fmt::Options {
        key_order: project.key_order,
    }
}
