//! `textDocument/codeAction`: a quick fix for each fix of a diagnostic (`pipewright_syntax::fix`,
//! carried in the published diagnostic's `data`).

use crate::convert::Data;
use lsp_types::{CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, WorkspaceEdit};
use std::collections::HashMap;

pub(crate) fn actions(p: &CodeActionParams) -> Vec<CodeActionOrCommand> {
    let mut out = Vec::new();
    for d in &p.context.diagnostics {
        let Some(data) = d
            .data
            .clone()
            .and_then(|v| serde_json::from_value::<Data>(v).ok())
        else {
            continue;
        };
        for fix in data.fixes {
            let changes = HashMap::from([(p.text_document.uri.clone(), fix.edits)]);
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: fix.title,
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![d.clone()]),
                edit: Some(WorkspaceEdit {
                    changes: Some(changes),
                    ..WorkspaceEdit::default()
                }),
                is_preferred: Some(true),
                ..CodeAction::default()
            }));
        }
    }
    out
}
