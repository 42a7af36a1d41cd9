//! Where names are defined and used in a document's tree: named stores and recipe variables
//! (`output:`), recipe context variables, pipelines and schemas, state-machine steps.

use pipewright_yaml::{Document, Entry, Node, NodeKind};
use std::ops::Range;

/// Every mapping entry of the tree, depth first.
pub fn entries<'a>(n: &'a Node, f: &mut impl FnMut(&'a Entry)) {
    match &n.kind {
        NodeKind::Scalar(_) => {}
        NodeKind::Seq(items) => items.iter().for_each(|i| entries(i, f)),
        NodeKind::Map(es) => {
            for e in es {
                f(e);
                entries(&e.value, f);
            }
        }
    }
}

fn roots(docs: &[Document]) -> impl Iterator<Item = &Node> {
    docs.iter().filter_map(|d| d.root.as_ref())
}

/// The `output: NAME` values (a store, or a recipe variable) naming `name`.
pub fn outputs(docs: &[Document], name: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    for r in roots(docs) {
        entries(r, &mut |e| {
            if e.key.key_text() == Some("output") && e.value.key_text() == Some(name) {
                out.push(e.value.span.range());
            }
        });
    }
    out
}

/// A recipe's `context:` key `name` with what its default value is ("a string", …).
pub fn context_values(docs: &[Document], name: &str) -> Vec<(Range<usize>, &'static str)> {
    roots(docs)
        .filter_map(|r| r.get("context"))
        .filter_map(|c| c.entry(name))
        .map(|e| (e.key.span.range(), e.value.describe()))
        .collect()
}

/// Where a recipe's `context:` declares `name`.
pub fn context_vars(docs: &[Document], name: &str) -> Vec<Range<usize>> {
    context_values(docs, name)
        .into_iter()
        .map(|(r, _)| r)
        .collect()
}

/// The top-level `KEY: name` of a document (`pipeline: NAME`, `schema: NAME`).
pub fn declared(docs: &[Document], key: &str, name: &str) -> Vec<Range<usize>> {
    roots(docs)
        .filter_map(|r| r.get(key))
        .filter(|v| v.key_text() == Some(name))
        .map(|v| v.span.range())
        .collect()
}

/// A state machine's step `name` (a key of `steps`).
pub fn state_step(docs: &[Document], name: &str) -> Vec<Range<usize>> {
    roots(docs)
        .filter_map(|r| r.get("steps"))
        .filter_map(|s| s.entry(name))
        .map(|e| e.key.span.range())
        .collect()
}

/// Values of `key` anywhere that equal `name` (`nextStep: NAME`, `initialStep: NAME`).
pub fn values_of(docs: &[Document], keys: &[&str], name: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    for r in roots(docs) {
        entries(r, &mut |e| {
            if e.key.key_text().is_some_and(|k| keys.contains(&k))
                && e.value.key_text() == Some(name)
            {
                out.push(e.value.span.range());
            }
        });
    }
    out
}

/// The store a word reads: `ctx.NAME…` gives `NAME`.
pub fn store_read(word: &str) -> Option<&str> {
    let rest = word.strip_prefix("ctx.")?;
    let name = rest.split('.').next()?;
    (!name.is_empty()).then_some(name)
}

/// Whole-word occurrences of `needle` in `text` (not preceded or followed by a name character).
pub fn occurrences(text: &str, needle: &str) -> Vec<Range<usize>> {
    let name_char = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(needle)
        .filter(|(i, _)| {
            let before = text[..*i].chars().next_back();
            let after = text[i + needle.len()..].chars().next();
            !before.is_some_and(|c| name_char(c) || c == '.') && !after.is_some_and(name_char)
        })
        .map(|(i, _)| i..i + needle.len())
        .collect()
}

/// Whether `offset` is inside a `{{ … }}` template of `text` (on its line).
pub fn in_template(text: &str, offset: usize) -> bool {
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..offset];
    before
        .rfind("{{")
        .is_some_and(|open| before.rfind("}}").is_none_or(|close| close < open))
}

/// A template's variable read: `{{plan.items}}` gives `plan`.
pub fn template_var(word: &str) -> &str {
    word.split('.').next().unwrap_or(word)
}
