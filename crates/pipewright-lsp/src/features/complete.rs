//! Completion: what the document's dialect proposes at the cursor, as the protocol's items.

use super::Doc;
use crate::text::LineIndex;
use lsp_types::{CompletionItem, CompletionItemKind, Documentation, Position};
use pipewright_dialect::editor::{Completion, CompletionKind};

pub(crate) fn complete(doc: &Doc, at: Position) -> Vec<CompletionItem> {
    let Some(editor) = doc.editor() else {
        return Vec::new();
    };
    let offset = LineIndex::new(&doc.text).offset(at);
    editor
        .complete(&doc.as_editor_doc(), offset)
        .into_iter()
        .map(item)
        .collect()
}

fn item(c: Completion) -> CompletionItem {
    CompletionItem {
        label: c.label,
        kind: Some(kind(c.kind)),
        detail: Some(c.detail),
        documentation: c.documentation.map(Documentation::String),
        ..CompletionItem::default()
    }
}

fn kind(k: CompletionKind) -> CompletionItemKind {
    match k {
        CompletionKind::Variable => CompletionItemKind::VARIABLE,
        CompletionKind::Class => CompletionItemKind::CLASS,
        CompletionKind::Property => CompletionItemKind::PROPERTY,
        CompletionKind::Function => CompletionItemKind::FUNCTION,
        CompletionKind::Keyword => CompletionItemKind::KEYWORD,
        CompletionKind::EnumMember => CompletionItemKind::ENUM_MEMBER,
    }
}
