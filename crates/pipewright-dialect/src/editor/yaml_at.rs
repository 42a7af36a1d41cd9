//! Where an offset falls in a document's YAML tree (JSON parses as YAML too): the chain of
//! nodes from the root down, each with the key it sits under; and the mapping entries of a
//! tree, for finding where a name is written.

use pipewright_syntax::FileId;
use pipewright_yaml::{Document, Entry, Node, NodeKind};
use std::ops::Range;

/// One node of the chain (root first).
pub struct Frame<'a> {
    /// The key of the mapping entry this node is the value (or the key) of.
    pub key: Option<&'a str>,
}

pub struct At<'a> {
    /// Root first; the last frame is the innermost node holding the offset.
    pub chain: Vec<Frame<'a>>,
    /// The offset is on a mapping key (the last frame is then that key's node).
    pub on_key: bool,
}

impl At<'_> {
    /// The keys from the root down to the innermost node (sequence items add nothing).
    pub fn keys(&self) -> Vec<&str> {
        self.chain.iter().filter_map(|f| f.key).collect()
    }
}

pub fn parse(text: &str) -> Vec<Document> {
    pipewright_yaml::load(FileId(0), text, pipewright_yaml::Limits::default()).0
}

/// The document as it stands, else with the line holding `offset` left out (a half-written
/// key often breaks the YAML).
pub fn parse_while_typing(text: &str, offset: usize) -> Vec<Document> {
    let docs = parse(text);
    if !docs.is_empty() {
        return docs;
    }
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    parse(&format!("{}{}", &text[..line_start], &text[end..]))
}

pub fn locate(docs: &[Document], offset: usize) -> Option<At<'_>> {
    let root = docs
        .iter()
        .filter_map(|d| d.root.as_ref())
        .find(|r| contains(r, offset))?;
    let mut at = At {
        chain: vec![Frame { key: None }],
        on_key: false,
    };
    let mut node = root;
    loop {
        let next = match &node.kind {
            NodeKind::Scalar(_) => None,
            NodeKind::Seq(items) => items
                .iter()
                .find(|n| contains(n, offset))
                .map(|n| (None, n, false)),
            NodeKind::Map(entries) => entries.iter().find_map(|e| {
                let k = e.key.key_text();
                if contains(&e.key, offset) {
                    Some((k, &e.key, true))
                } else if contains(&e.value, offset) {
                    Some((k, &e.value, false))
                } else {
                    None
                }
            }),
        };
        let Some((key, n, on_key)) = next else {
            return Some(at);
        };
        at.chain.push(Frame { key });
        at.on_key = on_key;
        if on_key {
            return Some(at);
        }
        node = n;
    }
}

fn contains(n: &Node, offset: usize) -> bool {
    n.span.range().contains(&offset) || n.span.range().end == offset
}

/// The documents' roots.
pub fn roots(docs: &[Document]) -> impl Iterator<Item = &Node> {
    docs.iter().filter_map(|d| d.root.as_ref())
}

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

/// Values of any of `keys`, anywhere, that equal `name` (`output: NAME`, `nextStep: NAME`).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_names_the_keys_down_to_the_cursor() {
        let text = "pipeline: p\nsteps:\n  - call: {pipeline: x, output: y}\n";
        let docs = parse(text);
        let at = locate(&docs, text.find("x,").unwrap_or(0)).expect("inside");
        assert_eq!(at.keys(), ["steps", "call", "pipeline"]);
        assert!(!at.on_key);
        let at = locate(&docs, text.find("output").unwrap_or(0) + 2).expect("inside");
        assert_eq!(at.keys(), ["steps", "call", "output"]);
        assert!(at.on_key);
        assert_eq!(
            crate::editor::text::word_at(text, text.find("x,").unwrap_or(0)).map(|w| w.1),
            Some("x")
        );
    }
}
