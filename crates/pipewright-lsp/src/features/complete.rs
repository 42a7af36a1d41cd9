//! Completion, from the text before the cursor (the document is often not valid mid-edit):
//! pipeline step kinds at a new list item, the keys of the enclosing step's kind, `on_error`
//! values, named stores after `ctx.`, R1 functions and words in expressions, recipe variables
//! inside `{{…}}`, MEOW executors, state-machine step names (`nextStep`) and outcomes
//! (`onOutcome` keys).

use super::symbols::{self, in_template};
use super::Doc;
use crate::text::LineIndex;
use crate::vocab;
use crate::yaml_at;
use lsp_types::{CompletionItem, CompletionItemKind, Documentation, Position};
use pipewright_yaml::Document;

pub fn complete(doc: &Doc, at: Position) -> Vec<CompletionItem> {
    let text: &str = &doc.text;
    let offset = LineIndex::new(text).offset(at);
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..offset];
    // The document as it stands, else with the line being typed left out (a half-written key
    // often breaks the YAML).
    let parsed = {
        let docs = yaml_at::parse(text);
        if docs.is_empty() {
            let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
            yaml_at::parse(&format!("{}{}", &text[..line_start], &text[end..]))
        } else {
            docs
        }
    };
    match doc.dialect().map(|d| d.name()) {
        Some("pipeline") => pipeline(text, offset, before, &parsed),
        Some("recipe") if in_template(text, offset) => names(
            recipe_vars(&parsed),
            CompletionItemKind::VARIABLE,
            "recipe variable",
        ),
        Some("recipe") => recipe_keys(text, before, line_start),
        Some("meow") if before.trim_start().starts_with("executor") => names(
            crate::schema_docs::enum_values("meow", &["main", "steps", "executor"]),
            CompletionItemKind::ENUM_MEMBER,
            "MEOW executor",
        ),
        Some("state-machine") => state_machine(before, &parsed),
        _ => Vec::new(),
    }
}

fn item(label: &str, kind: CompletionItemKind, detail: &str, doc: Option<&str>) -> CompletionItem {
    CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        detail: Some(detail.to_string()),
        documentation: doc.map(|d| Documentation::String(d.to_string())),
        ..CompletionItem::default()
    }
}

fn names(mut list: Vec<String>, kind: CompletionItemKind, detail: &str) -> Vec<CompletionItem> {
    list.sort();
    list.dedup();
    list.iter().map(|n| item(n, kind, detail, None)).collect()
}

fn pipeline(text: &str, offset: usize, before: &str, parsed: &[Document]) -> Vec<CompletionItem> {
    let trimmed = before.trim_start();
    // `ctx.` (and a partial name after it): the stores written above the cursor.
    if let Some(dot) = before.rfind("ctx.") {
        let partial = &before[dot + 4..];
        if partial.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return names(
                stores_before(parsed, offset),
                CompletionItemKind::VARIABLE,
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
            .map(|(k, d)| item(k, CompletionItemKind::CLASS, "step kind", Some(d)))
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
                .map(|v| item(v, CompletionItemKind::ENUM_MEMBER, "on_error", None))
                .collect();
        }
    }
    let in_value = before.contains(':');
    if !in_value || before.trim_end().ends_with('{') || before.trim_end().ends_with(',') {
        if let Some(kind) = enclosing_kind(text, offset) {
            return vocab::keys_of(kind)
                .iter()
                .map(|k| {
                    item(
                        k,
                        CompletionItemKind::PROPERTY,
                        &format!("{kind} key"),
                        vocab::doc(vocab::STEP_KEYS, k),
                    )
                })
                .collect();
        }
        return Vec::new();
    }
    // In a value: R1 functions and words.
    let mut out: Vec<CompletionItem> = pipewright_r1::ast::Combinator::ALL
        .iter()
        .filter_map(|c| {
            let (sig, what) = vocab::r1_function(c.name())?;
            Some(item(
                c.name(),
                CompletionItemKind::FUNCTION,
                sig,
                Some(what),
            ))
        })
        .collect();
    out.extend(
        vocab::R1_WORDS
            .iter()
            .map(|(w, d)| item(w, CompletionItemKind::KEYWORD, "R1", Some(d))),
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
        symbols::entries(root, &mut |e| {
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
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
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

fn recipe_vars(parsed: &[Document]) -> Vec<String> {
    let mut out = Vec::new();
    for d in parsed {
        let Some(root) = &d.root else { continue };
        if let Some(ctx) = root.get("context").and_then(|c| c.as_map()) {
            out.extend(
                ctx.iter()
                    .filter_map(|e| e.key.key_text().map(str::to_string)),
            );
        }
        symbols::entries(root, &mut |e| {
            if e.key.key_text() == Some("output") {
                out.extend(e.value.key_text().map(str::to_string));
            }
        });
    }
    out
}

fn state_machine(before: &str, parsed: &[Document]) -> Vec<CompletionItem> {
    let steps = || -> Vec<String> {
        parsed
            .iter()
            .filter_map(|d| d.root.as_ref()?.get("steps")?.as_map())
            .flatten()
            .filter_map(|e| e.key.key_text())
            .filter(|k| !k.starts_with('$'))
            .map(str::to_string)
            .collect()
    };
    if before.contains("\"nextStep\"") || before.contains("\"initialStep\"") {
        return names(steps(), CompletionItemKind::ENUM_MEMBER, "step");
    }
    // A key of `onOutcome`: the outcomes the steps declare.
    let mut outcomes = Vec::new();
    for d in parsed {
        let Some(root) = &d.root else { continue };
        symbols::entries(root, &mut |e| {
            if e.key.key_text() == Some("outcomes") {
                for o in e.value.as_seq().unwrap_or(&[]) {
                    outcomes.extend(o.key_text().map(str::to_string));
                }
            }
        });
    }
    if before.trim_start().starts_with('"') && !before.contains(':') {
        return names(outcomes, CompletionItemKind::ENUM_MEMBER, "outcome");
    }
    Vec::new()
}

/// At a key position of a recipe: the keys the loader accepts there (top level, a stage, a
/// step), found from the list the cursor's item belongs to.
fn recipe_keys(text: &str, before: &str, line_start: usize) -> Vec<CompletionItem> {
    let key_part = before.trim_start().trim_start_matches("- ");
    if key_part.contains(':') || !key_part.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Vec::new();
    }
    let indent = before.len() - before.trim_start().len();
    let keys: &[&str] = if indent == 0 {
        pipewright_recipe::load::TOP_KEYS
    } else {
        // The item line (this one when it opens with `- `), then the key holding the list.
        let above: Vec<&str> = text[..line_start].lines().collect();
        let item_indent = if before.trim_start().starts_with('-') {
            Some(indent)
        } else {
            above.iter().rev().find_map(|l| {
                let t = l.trim_start();
                let i = l.len() - t.len();
                (!t.is_empty() && i < indent)
                    .then_some(i)
                    .filter(|_| t.starts_with('-'))
            })
        };
        let list_key = item_indent.and_then(|ii| {
            above
                .iter()
                .rev()
                .map(|l| (l.len() - l.trim_start().len(), l.trim()))
                .find(|(i, t)| {
                    !t.is_empty() && *i < ii || (*i == ii && !t.starts_with('-') && !t.is_empty())
                })
                .map(|(_, t)| t.trim_start_matches("- ").split(':').next().unwrap_or(""))
        });
        match list_key {
            Some("steps") => pipewright_recipe::load::STEP_KEYS,
            Some("stages") => pipewright_recipe::load::STAGE_KEYS,
            _ => return Vec::new(),
        }
    };
    keys.iter()
        .map(|k| item(k, CompletionItemKind::PROPERTY, "recipe key", None))
        .collect()
}
