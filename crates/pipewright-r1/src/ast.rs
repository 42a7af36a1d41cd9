//! The R1 syntax tree. Spans are byte ranges into the expression source.
//!
//! Operator chains (`a + b + c …`) form left-leaning trees whose depth grows with the input, so
//! every pass over the tree (drop included) walks the left spine iteratively instead of
//! recursing on it.

use std::cell::Cell;
use std::ops::Range;

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: ByteRange,
}

/// A byte range in the expression source, in 8 bytes where `Range<usize>` takes 16: a large
/// pipeline holds hundreds of thousands of nodes, each with a span. Sources are never longer
/// than 4 GiB (file spans are `u32` too); a longer offset saturates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ByteRange {
    pub start: u32,
    pub end: u32,
}

impl ByteRange {
    pub fn new(range: Range<usize>) -> ByteRange {
        let at = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        ByteRange {
            start: at(range.start),
            end: at(range.end),
        }
    }

    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }

    /// The same range `offset` bytes further on.
    pub fn shifted(self, offset: usize) -> ByteRange {
        let at = |n: u32| u32::try_from((n as usize).saturating_add(offset)).unwrap_or(u32::MAX);
        ByteRange {
            start: at(self.start),
            end: at(self.end),
        }
    }
}

impl From<Range<usize>> for ByteRange {
    fn from(range: Range<usize>) -> ByteRange {
        ByteRange::new(range)
    }
}

impl From<ByteRange> for Range<usize> {
    fn from(range: ByteRange) -> Range<usize> {
        range.range()
    }
}

/// A path segment: the name and its range (the name only).
pub type Segment = (Box<str>, ByteRange);

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Box<str>),
    List(Vec<Expr>),
    /// Keys in source order with the range of each key; a repeated key keeps its last value.
    Object(Vec<(Box<str>, ByteRange, Expr)>),
    /// `root.seg.seg…`; each segment carries its own range (the name only).
    Path {
        root: Box<str>,
        segments: Box<[Segment]>,
    },
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Call {
        func: Combinator,
        args: Vec<Expr>,
    },
    /// `param -> body`; only ever the second argument of a lambda combinator.
    Lambda {
        param: Box<str>,
        param_span: ByteRange,
        body: Box<Expr>,
    },
    /// Stands in for a part that failed to parse; never present in a tree `parse` returns.
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
}

impl BinOp {
    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Gt => ">",
            BinOp::Le => "<=",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
        }
    }

    /// Binding strength: higher binds tighter. `not` sits between `and` (2) and comparisons (4).
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div => 6,
        }
    }

    pub fn is_comparison(self) -> bool {
        self.precedence() == 4
    }

    pub fn is_arithmetic(self) -> bool {
        self.precedence() >= 5
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Combinator {
    Map,
    Filter,
    All,
    Any,
    Find,
    Count,
    Sum,
    Join,
    Get,
    ParseJson,
    ShellQuote,
}

impl Combinator {
    pub const ALL: [Combinator; 11] = [
        Combinator::Map,
        Combinator::Filter,
        Combinator::All,
        Combinator::Any,
        Combinator::Find,
        Combinator::Count,
        Combinator::Sum,
        Combinator::Join,
        Combinator::Get,
        Combinator::ParseJson,
        Combinator::ShellQuote,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Combinator::Map => "map",
            Combinator::Filter => "filter",
            Combinator::All => "all",
            Combinator::Any => "any",
            Combinator::Find => "find",
            Combinator::Count => "count",
            Combinator::Sum => "sum",
            Combinator::Join => "join",
            Combinator::Get => "get",
            Combinator::ParseJson => "parse_json",
            Combinator::ShellQuote => "shell_quote",
        }
    }

    pub fn from_name(name: &str) -> Option<Combinator> {
        Combinator::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Takes a lambda as its second argument.
    pub fn takes_lambda(self) -> bool {
        matches!(
            self,
            Combinator::Map
                | Combinator::Filter
                | Combinator::All
                | Combinator::Any
                | Combinator::Find
        )
    }

    /// Smallest and largest number of arguments.
    pub fn arity(self) -> (usize, usize) {
        match self {
            Combinator::Count
            | Combinator::Sum
            | Combinator::ParseJson
            | Combinator::ShellQuote => (1, 1),
            Combinator::Get => (2, 3),
            _ => (2, 2),
        }
    }

    pub fn signature(self) -> &'static str {
        match self {
            Combinator::Map => "map(list, x -> expr)",
            Combinator::Filter => "filter(list, x -> expr)",
            Combinator::All => "all(list, x -> expr)",
            Combinator::Any => "any(list, x -> expr)",
            Combinator::Find => "find(list, x -> expr)",
            Combinator::Count => "count(list)",
            Combinator::Sum => "sum(list)",
            Combinator::Join => "join(list, separator)",
            Combinator::Get => "get(base, \"dotted.path\", default?)",
            Combinator::ParseJson => "parse_json(string)",
            Combinator::ShellQuote => "shell_quote(string)",
        }
    }
}

impl Expr {
    pub fn new(kind: ExprKind, span: Range<usize>) -> Expr {
        Expr {
            kind,
            span: ByteRange::new(span),
        }
    }

    /// Structural equality that ignores every span.
    pub fn same_as(&self, other: &Expr) -> bool {
        let mut stack = vec![(self, other)];
        while let Some((a, b)) = stack.pop() {
            match (&a.kind, &b.kind) {
                (ExprKind::Null, ExprKind::Null) | (ExprKind::Error, ExprKind::Error) => {}
                (ExprKind::Bool(x), ExprKind::Bool(y)) if x == y => {}
                (ExprKind::Int(x), ExprKind::Int(y)) if x == y => {}
                (ExprKind::Float(x), ExprKind::Float(y)) if x.to_bits() == y.to_bits() => {}
                (ExprKind::Str(x), ExprKind::Str(y)) if x == y => {}
                (ExprKind::List(x), ExprKind::List(y)) if x.len() == y.len() => {
                    stack.extend(x.iter().zip(y));
                }
                (ExprKind::Object(x), ExprKind::Object(y)) if x.len() == y.len() => {
                    for ((kx, _, vx), (ky, _, vy)) in x.iter().zip(y) {
                        if kx != ky {
                            return false;
                        }
                        stack.push((vx, vy));
                    }
                }
                (
                    ExprKind::Path {
                        root: r1,
                        segments: s1,
                    },
                    ExprKind::Path {
                        root: r2,
                        segments: s2,
                    },
                ) if r1 == r2
                    && s1.len() == s2.len()
                    && s1.iter().zip(s2).all(|(a, b)| a.0 == b.0) => {}
                (ExprKind::Not(x), ExprKind::Not(y)) | (ExprKind::Neg(x), ExprKind::Neg(y)) => {
                    stack.push((x, y));
                }
                (
                    ExprKind::Binary {
                        op: o1,
                        lhs: l1,
                        rhs: r1,
                    },
                    ExprKind::Binary {
                        op: o2,
                        lhs: l2,
                        rhs: r2,
                    },
                ) if o1 == o2 => {
                    stack.push((l1, l2));
                    stack.push((r1, r2));
                }
                (ExprKind::Call { func: f1, args: a1 }, ExprKind::Call { func: f2, args: a2 })
                    if f1 == f2 && a1.len() == a2.len() =>
                {
                    stack.extend(a1.iter().zip(a2));
                }
                (
                    ExprKind::Lambda {
                        param: p1,
                        body: b1,
                        ..
                    },
                    ExprKind::Lambda {
                        param: p2,
                        body: b2,
                        ..
                    },
                ) if p1 == p2 => stack.push((b1, b2)),
                _ => return false,
            }
        }
        true
    }

    /// Calls `f` on every node, parents before children, without recursion.
    pub fn walk<'a>(&'a self, mut f: impl FnMut(&'a Expr)) {
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            f(e);
            e.for_each_child_rev(|c| stack.push(c));
        }
    }

    /// Children in reverse source order (so a stack pops them in source order).
    pub(crate) fn for_each_child_rev<'a>(&'a self, mut f: impl FnMut(&'a Expr)) {
        match &self.kind {
            ExprKind::List(items) | ExprKind::Call { args: items, .. } => {
                items.iter().rev().for_each(f)
            }
            ExprKind::Object(fields) => fields.iter().rev().for_each(|(_, _, v)| f(v)),
            ExprKind::Not(e) | ExprKind::Neg(e) | ExprKind::Lambda { body: e, .. } => f(e),
            ExprKind::Binary { lhs, rhs, .. } => {
                f(rhs);
                f(lhs);
            }
            _ => {}
        }
    }

    /// Adds `offset` to every range in the tree.
    pub fn shift(&mut self, offset: usize) {
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            e.span = e.span.shifted(offset);
            match &mut e.kind {
                ExprKind::List(items) | ExprKind::Call { args: items, .. } => {
                    stack.extend(items.iter_mut())
                }
                ExprKind::Object(fields) => {
                    for (_, r, v) in fields.iter_mut() {
                        *r = r.shifted(offset);
                        stack.push(v);
                    }
                }
                ExprKind::Path { segments, .. } => {
                    for (_, r) in segments.iter_mut() {
                        *r = r.shifted(offset);
                    }
                }
                ExprKind::Lambda {
                    param_span, body, ..
                } => {
                    *param_span = param_span.shifted(offset);
                    stack.push(body);
                }
                ExprKind::Not(x) | ExprKind::Neg(x) => stack.push(x),
                ExprKind::Binary { lhs, rhs, .. } => {
                    stack.push(lhs);
                    stack.push(rhs);
                }
                _ => {}
            }
        }
    }
}

thread_local! {
    /// How many `Expr` drops are under way on this thread's stack.
    static DROP_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Nesting up to which subtrees are dropped recursively: typical trees are shallow, and
/// recursing spares them the work list and its allocation; deeper trees (long operator chains)
/// continue iteratively from there, so the stack stays bounded.
const RECURSIVE_DROP_DEPTH: usize = 64;

impl Drop for Expr {
    // The derived drop would recurse once per operand of a long chain and overflow the stack.
    fn drop(&mut self) {
        if !has_children(&self.kind) {
            return;
        }
        let depth = DROP_DEPTH
            .try_with(Cell::get)
            .unwrap_or(RECURSIVE_DROP_DEPTH);
        if depth < RECURSIVE_DROP_DEPTH {
            let _ = DROP_DEPTH.try_with(|d| d.set(depth + 1));
            drop(std::mem::replace(&mut self.kind, ExprKind::Null));
            let _ = DROP_DEPTH.try_with(|d| d.set(depth));
            return;
        }
        let mut stack: Vec<Expr> = Vec::new();
        take_children(&mut self.kind, &mut stack);
        while let Some(mut e) = stack.pop() {
            take_children(&mut e.kind, &mut stack);
        }
    }
}

// Guards would not make the match clearer: leaves are simply not moved.
#[allow(clippy::collapsible_match)]
fn take_children(kind: &mut ExprKind, out: &mut Vec<Expr>) {
    match kind {
        ExprKind::Binary { lhs, rhs, .. } => {
            if has_children(&lhs.kind) {
                out.push(std::mem::replace(&mut **lhs, Expr::leaf()));
            }
            if has_children(&rhs.kind) {
                out.push(std::mem::replace(&mut **rhs, Expr::leaf()));
            }
        }
        ExprKind::Not(e) | ExprKind::Neg(e) | ExprKind::Lambda { body: e, .. } => {
            if has_children(&e.kind) {
                out.push(std::mem::replace(&mut **e, Expr::leaf()));
            }
        }
        ExprKind::List(items) | ExprKind::Call { args: items, .. } => out.append(items),
        ExprKind::Object(fields) => out.extend(fields.drain(..).map(|(_, _, v)| v)),
        _ => {}
    }
}

fn has_children(kind: &ExprKind) -> bool {
    matches!(
        kind,
        ExprKind::Binary { .. }
            | ExprKind::Not(_)
            | ExprKind::Neg(_)
            | ExprKind::Lambda { .. }
            | ExprKind::List(_)
            | ExprKind::Object(_)
            | ExprKind::Call { .. }
    )
}

impl Expr {
    fn leaf() -> Expr {
        Expr {
            kind: ExprKind::Null,
            span: ByteRange::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large pipeline holds every expression tree until its check ends, so these sizes are
    /// most of its memory (docs/architecture.md, "Memory of a large check"): a change that
    /// grows a node should be a deliberate one.
    #[test]
    fn node_sizes_stay_small() {
        assert!(
            std::mem::size_of::<Expr>() <= 48,
            "{}",
            std::mem::size_of::<Expr>()
        );
        assert!(std::mem::size_of::<ExprKind>() <= 40);
        assert!(std::mem::size_of::<Segment>() <= 24);
        assert!(std::mem::size_of::<crate::TemplatePart>() <= 72);
    }

    #[test]
    fn byte_ranges_convert_shift_and_saturate() {
        assert_eq!(ByteRange::new(3..9).range(), 3..9);
        assert_eq!(ByteRange::new(3..9).shifted(4).range(), 7..13);
        assert_eq!(ByteRange::new(0..usize::MAX).end, u32::MAX);
        assert_eq!(ByteRange::new(1..2).shifted(usize::MAX).start, u32::MAX);
        let e = crate::parse("ctx.a + 1").unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(e.span.range(), 0..9);
    }
}
