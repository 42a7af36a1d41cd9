//! The node tree.

use crate::scalar::{Scalar, ScalarValue};
use pipewright_syntax::Span;

/// A tag written on a node, such as `!expr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// `!` for local tags, `tag:yaml.org,2002:` for `!!` tags.
    pub handle: String,
    pub suffix: String,
}

impl Tag {
    /// The tag as written (`!expr`, `!!str`).
    pub fn display(&self) -> String {
        if self.handle == "tag:yaml.org,2002:" {
            format!("!!{}", self.suffix)
        } else {
            format!("{}{}", self.handle, self.suffix)
        }
    }

    pub fn is_local(&self, name: &str) -> bool {
        self.handle == "!" && self.suffix == name
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: Node,
    pub value: Node,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    Scalar(Scalar),
    Seq(Box<[Node]>),
    Map(Box<[Entry]>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub kind: NodeKind,
    /// From the first character of the node to just after its last one (for a quoted scalar,
    /// the quotes included).
    pub span: Span,
    /// Boxed: few nodes carry a tag, and an inline `Tag` (two strings) doubled the size of every
    /// node of the tree, which is most of the memory a large file's check needs.
    pub tag: Option<Box<Tag>>,
    /// `true` for `{…}` / `[…]` collections.
    pub flow: bool,
}

impl Node {
    pub fn as_scalar(&self) -> Option<&Scalar> {
        match &self.kind {
            NodeKind::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// The text of a string scalar (a quoted or plain scalar that is not null/bool/number).
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Scalar(s) if matches!(s.resolve(), ScalarValue::Str(_)) => Some(&s.text),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[Entry]> {
        match &self.kind {
            NodeKind::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.kind {
            NodeKind::Seq(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(&self.kind, NodeKind::Scalar(s) if s.resolve() == ScalarValue::Null)
    }

    /// The entry whose key is the string `key` (the last one, as YAML loaders do).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.as_map()?
            .iter()
            .rev()
            .find(|e| e.key.key_text() == Some(key))
    }

    /// The text of a key as it would be looked up: the scalar's text whatever its type.
    pub fn key_text(&self) -> Option<&str> {
        self.as_scalar().map(|s| s.text.as_ref())
    }

    /// What kind of YAML value this is, for messages ("a list", "a string", …).
    pub fn describe(&self) -> &'static str {
        match &self.kind {
            NodeKind::Map(_) => "a mapping",
            NodeKind::Seq(_) => "a list",
            NodeKind::Scalar(s) => match s.resolve() {
                ScalarValue::Null => "null",
                ScalarValue::Bool(_) => "a boolean",
                ScalarValue::Int(_) => "an integer",
                ScalarValue::Float(_) => "a number",
                ScalarValue::Str(_) => "a string",
            },
        }
    }

    /// Visits this node and every node under it, without recursion (documents may be deep).
    pub fn walk(&self, mut f: impl FnMut(&Node)) {
        let mut stack = vec![self];
        while let Some(n) = stack.pop() {
            f(n);
            match &n.kind {
                NodeKind::Scalar(_) => {}
                NodeKind::Seq(items) => stack.extend(items.iter().rev()),
                NodeKind::Map(entries) => {
                    for e in entries.iter().rev() {
                        stack.push(&e.value);
                        stack.push(&e.key);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large file's tree is most of the memory `check` and `fmt` need (docs/architecture.md,
    /// "Memory of a large check"): a change that grows a node should be a deliberate one.
    #[test]
    fn node_size_stays_small() {
        assert!(
            std::mem::size_of::<Node>() <= 48,
            "{}",
            std::mem::size_of::<Node>()
        );
    }
}
