//! Dialect-specific canonical rules. The printer is shared; a dialect only says, for a node at
//! a given path, in which order its keys go, whether its scalar is an R1 expression and whether
//! a collection should be written in flow style when it fits. The dialect crates hold their
//! rules (`pipewright_pipeline::fmt_rules`, `pipewright_recipe::fmt_rules`).

use pipewright_yaml::Node;

/// One step from a document root to a node. `Doc` is always first and names the kind of
/// document as the dialect classified it (`"pipeline"`, `"schema"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seg<'a> {
    Doc(&'static str),
    Key(&'a str),
    Index(usize),
}

pub type CstPath<'a> = [Seg<'a>];

/// See [`DialectRules::expression_children`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExprChildren {
    /// No child is an expression.
    None,
    /// The values of these keys are.
    Keys(&'static [&'static str]),
    /// Every child is.
    All,
    /// Ask [`DialectRules::is_expression`] for each child.
    Ask,
}

impl ExprChildren {
    /// Whether the child at `seg` is an expression, asking `rules` at `child_path` only when
    /// the answer is [`ExprChildren::Ask`].
    pub fn has(self, key: Option<&str>, ask: impl FnOnce() -> bool) -> bool {
        match self {
            ExprChildren::None => false,
            ExprChildren::Keys(ks) => key.is_some_and(|k| ks.contains(&k)),
            ExprChildren::All => true,
            ExprChildren::Ask => ask(),
        }
    }
}

pub trait DialectRules {
    /// Classifies a document by its root; the answer becomes the path's first segment.
    fn doc_kind(&self, root: &Node) -> &'static str;
    /// The canonical order of known keys of the mapping at `path`; other keys follow in the
    /// author's order. `None` keeps the author's order entirely.
    fn key_order(&self, path: &CstPath) -> Option<&'static [&'static str]>;
    /// Whether the string scalar at `path` is an R1 expression (one tagged `!expr` always is).
    fn is_expression(&self, path: &CstPath) -> bool;
    /// Whether the collection at `path` is written `{…}` when it fits the line and holds no
    /// comment, whatever style the author used. Other collections keep the author's style
    /// (flow falls back to block when it does not fit or holds a comment).
    fn prefer_flow(&self, path: &CstPath) -> bool;
    /// Which children of the collection at `path` are R1 expressions (`seq`: it is a
    /// sequence): the answers of [`DialectRules::is_expression`] for each child's path, given
    /// once per collection for the verifier's walk over every node. The answer must not depend
    /// on the values of `Seg::Index` segments (the verifier asks once per sequence for all its
    /// items).
    fn expression_children(&self, _path: &CstPath, _seq: bool) -> ExprChildren {
        ExprChildren::Ask
    }
    /// Whether the dialect's runtime reads plain `yes`/`no`/`on`/`off` as booleans (YAML 1.1,
    /// as `yaml.safe_load` does), so that strings spelled so must be quoted.
    fn yaml11_bool_words(&self) -> bool {
        true
    }
}

/// A dialect's rules with the author's key order kept everywhere (`[fmt] key_order =
/// "preserve"`); quoting, layout and flow style follow the dialect as before.
pub struct PreserveOrder<'r>(pub &'r dyn DialectRules);

impl DialectRules for PreserveOrder<'_> {
    fn doc_kind(&self, root: &Node) -> &'static str {
        self.0.doc_kind(root)
    }
    fn key_order(&self, _path: &CstPath) -> Option<&'static [&'static str]> {
        None
    }
    fn is_expression(&self, path: &CstPath) -> bool {
        self.0.is_expression(path)
    }
    fn prefer_flow(&self, path: &CstPath) -> bool {
        self.0.prefer_flow(path)
    }
    fn expression_children(&self, path: &CstPath, seq: bool) -> ExprChildren {
        self.0.expression_children(path, seq)
    }
    fn yaml11_bool_words(&self) -> bool {
        self.0.yaml11_bool_words()
    }
}

/// Formatting without dialect knowledge: the author's key order and collection styles.
pub struct GenericRules;

impl DialectRules for GenericRules {
    fn doc_kind(&self, _root: &Node) -> &'static str {
        "yaml"
    }
    fn key_order(&self, _path: &CstPath) -> Option<&'static [&'static str]> {
        None
    }
    fn is_expression(&self, _path: &CstPath) -> bool {
        false
    }
    fn expression_children(&self, _path: &CstPath, _seq: bool) -> ExprChildren {
        ExprChildren::None
    }
    fn prefer_flow(&self, _path: &CstPath) -> bool {
        false
    }
}
