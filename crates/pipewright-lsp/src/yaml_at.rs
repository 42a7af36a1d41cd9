//! Where an offset falls in a document's YAML tree (JSON parses as YAML too): the chain of
//! nodes from the root down, each with the key it sits under, and the word under the cursor.

use pipewright_syntax::FileId;
use pipewright_yaml::{Document, Node, NodeKind};

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

/// The identifier-like word (letters, digits, `_`, `-`, `.`) around `offset`, with its range.
pub fn word_at(text: &str, offset: usize) -> Option<(std::ops::Range<usize>, &str)> {
    let is_word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '$');
    let offset = offset.min(text.len());
    if !text.is_char_boundary(offset) {
        return None;
    }
    let start = text[..offset]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c))
        .last()
        .map_or(offset, |(i, _)| i);
    let end = text[offset..]
        .char_indices()
        .find(|(_, c)| !is_word(*c))
        .map_or(text.len(), |(i, _)| offset + i);
    (start < end).then(|| (start..end, &text[start..end]))
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
            word_at(text, text.find("x,").unwrap_or(0)).map(|w| w.1),
            Some("x")
        );
        assert_eq!(word_at("a ctx.b_c + 1", 7).map(|w| w.1), Some("ctx.b_c"));
        assert_eq!(word_at("a  b", 2), None);
    }
}
