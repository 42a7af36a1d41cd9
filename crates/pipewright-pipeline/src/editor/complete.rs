//! Completion in a pipeline, from the text before the cursor: step kinds at a new list item,
//! the keys of the enclosing step's kind, `on_error` values, named stores after `ctx.`, R1
//! functions and words in expressions.

use super::vocab;
use pipewright_dialect::editor::text::line_start;
use pipewright_dialect::editor::yaml_at;
use pipewright_dialect::editor::{Completion, CompletionKind};
use pipewright_yaml::Document;

pub(super) fn complete(text: &str, offset: usize) -> Vec<Completion> {
    let before = &text[line_start(text, offset)..offset];
    let parsed = yaml_at::parse_while_typing(text, offset);
    let trimmed = before.trim_start();
    // `ctx.` (and a partial name after it): the stores written above the cursor.
    if let Some(dot) = before.rfind("ctx.") {
        let partial = &before[dot + 4..];
        if partial.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Completion::names(
                stores_before(&parsed, offset),
                CompletionKind::Variable,
                "named store",
            );
        }
    }
    // A new list item: a step kind.
    if trimmed.starts_with('-')
        && trimmed[1..]
            .trim()
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_')
    {
        return vocab::STEP_KINDS
            .iter()
            .map(|(k, d)| Completion::new(k, CompletionKind::Class, "step kind", Some(d)))
            .collect();
    }
    if let Some(i) = before.rfind("on_error:") {
        let partial = before[i + "on_error:".len()..].trim_start();
        if partial
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '"' | '\'' | '('))
        {
            return vocab::ON_ERROR
                .iter()
                .map(|v| Completion::new(v, CompletionKind::EnumMember, "on_error", None))
                .collect();
        }
    }
    let in_value = before.contains(':');
    if !in_value || before.trim_end().ends_with('{') || before.trim_end().ends_with(',') {
        if let Some(kind) = enclosing_kind(text, offset) {
            return vocab::keys_of(kind)
                .iter()
                .map(|k| {
                    Completion::new(
                        k,
                        CompletionKind::Property,
                        &format!("{kind} key"),
                        vocab::doc(vocab::STEP_KEYS, k),
                    )
                })
                .collect();
        }
        return Vec::new();
    }
    // In a value: R1 functions and words.
    let mut out: Vec<Completion> = pipewright_r1::ast::Combinator::ALL
        .iter()
        .filter_map(|c| {
            let (sig, what) = vocab::r1_function(c.name())?;
            Some(Completion::new(
                c.name(),
                CompletionKind::Function,
                sig,
                Some(what),
            ))
        })
        .collect();
    out.extend(
        vocab::R1_WORDS
            .iter()
            .map(|(w, d)| Completion::new(w, CompletionKind::Keyword, "R1", Some(d))),
    );
    out
}

/// The store names written by `output:` keys before `offset`, in the document holding it.
fn stores_before(parsed: &[Document], offset: usize) -> Vec<String> {
    let mut out = Vec::new();
    for d in parsed {
        let Some(root) = &d.root else { continue };
        if !(root.span.start as usize <= offset && offset <= root.span.end as usize + 1) {
            continue;
        }
        yaml_at::entries(root, &mut |e| {
            if e.key.key_text() == Some("output") && (e.value.span.start as usize) < offset {
                out.extend(e.value.key_text().map(str::to_string));
            }
        });
    }
    out
}

/// The step kind whose body the cursor is in: the nearest `KIND:` before it on this line (a
/// flow mapping) or on a line above indented less than the cursor's line.
fn enclosing_kind(text: &str, offset: usize) -> Option<&'static str> {
    let line_start = line_start(text, offset);
    let kind_in = |s: &str| -> Option<&'static str> {
        vocab::STEP_KINDS
            .iter()
            .filter_map(|(k, _)| s.rfind(&format!("{k}:")).map(|at| (at, *k)))
            .filter(|(at, k)| {
                // A whole key: not `my_transform:`.
                !s[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_') && !k.is_empty()
            })
            .max_by_key(|(at, _)| *at)
            .map(|(_, k)| k)
    };
    let this_line = &text[line_start..offset];
    if this_line.contains('{') {
        return kind_in(this_line);
    }
    let indent = this_line.len() - this_line.trim_start().len();
    for line in text[..line_start].lines().rev() {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let own = line.len() - t.len();
        if own < indent {
            return kind_in(line);
        }
    }
    None
}
