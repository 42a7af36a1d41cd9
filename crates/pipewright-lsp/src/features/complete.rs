use super::Doc;
use lsp_types::{CompletionItem, Position};

pub fn complete(_doc: &Doc, _at: Position) -> Vec<CompletionItem> {
    Vec::new()
}
