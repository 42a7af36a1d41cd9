//! Which names an expression reads from its scope.

use crate::ast::{BinOp, Combinator, Expr, ExprKind, Segment};
use std::ops::Range;
use std::rc::Rc;

/// One read of a scope name: `ctx.a.b` is root `ctx`, segments `["a", "b"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRef {
    pub root: String,
    pub segments: Vec<String>,
    pub range: Range<usize>,
    /// Read through `get(base, "literal.path", …)`: absence is not an error there.
    pub via_get: bool,
}

/// One read of a scope name, borrowed from the tree: what [`PathRef`] holds, without a copy of
/// any name. The type pass runs [`free_path_views`] once per expression in a pipeline, and
/// copying every name there was a large share of checking one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathView<'e> {
    pub root: &'e str,
    /// The path's own segments.
    pub segments: &'e [Segment],
    /// For `get(p, "x.y", …)`: the literal path, whose `.`-separated parts follow `segments`.
    pub get_path: Option<&'e str>,
    pub range: Range<usize>,
}

impl<'e> PathView<'e> {
    /// Read through `get`: absence is not an error there.
    pub fn via_get(&self) -> bool {
        self.get_path.is_some()
    }

    /// Every segment in order, the `get` literal's parts included.
    pub fn segment_names(&self) -> impl Iterator<Item = &'e str> + 'e {
        self.segments
            .iter()
            .map(|(s, _)| &**s)
            .chain(self.get_path.into_iter().flat_map(|p| p.split('.')))
    }

    pub fn first_segment(&self) -> Option<&'e str> {
        self.segment_names().next()
    }

    pub fn to_owned_ref(&self) -> PathRef {
        PathRef {
            root: self.root.to_string(),
            segments: self.segment_names().map(str::to_string).collect(),
            range: self.range.clone(),
            via_get: self.via_get(),
        }
    }
}

/// Every path whose root is not a lambda parameter, in source order; for `get(p, "x.y", …)`
/// with `p` a free path, also `p.x.y` marked `via_get`.
pub fn free_paths(expr: &Expr) -> Vec<PathRef> {
    free_path_views(expr)
        .iter()
        .map(PathView::to_owned_ref)
        .collect()
}

/// [`free_paths`] borrowing from the tree.
#[allow(clippy::collapsible_match)]
pub fn free_path_views(expr: &Expr) -> Vec<PathView<'_>> {
    let mut out = Vec::new();
    // The lambda parameters bound at each node; `None` (no lambda around it, the common case)
    // costs no allocation.
    let mut stack: Vec<(&Expr, Option<Rc<Vec<&str>>>)> = vec![(expr, None)];
    let is_bound = |bound: &Option<Rc<Vec<&str>>>, name: &str| {
        bound.as_ref().is_some_and(|b| b.contains(&name))
    };
    while let Some((e, bound)) = stack.pop() {
        match &e.kind {
            ExprKind::Path { root, segments } => {
                if !is_bound(&bound, root) {
                    out.push(PathView {
                        root,
                        segments,
                        get_path: None,
                        range: e.span.range(),
                    });
                }
            }
            ExprKind::Lambda { param, body, .. } => {
                let mut inner = bound.as_deref().cloned().unwrap_or_default();
                inner.push(param);
                stack.push((body, Some(Rc::new(inner))));
                continue;
            }
            ExprKind::Call {
                func: Combinator::Get,
                args,
            } => {
                if let (Some(base), Some(path)) = (args.first(), args.get(1)) {
                    if let (ExprKind::Path { root, segments }, ExprKind::Str(p)) =
                        (&base.kind, &path.kind)
                    {
                        if !is_bound(&bound, root) {
                            out.push(PathView {
                                root,
                                segments,
                                get_path: Some(p),
                                range: base.span.range().start..path.span.range().end,
                            });
                        }
                    }
                }
            }
            _ => {}
        }
        e.for_each_child_rev(|c| stack.push((c, bound.clone())));
    }
    out.sort_by_key(|p| (p.range.start, p.via_get()));
    out
}

/// The free paths that every evaluation of `expr` reads (unless it fails before reaching
/// them): [`free_path_views`] without the reads that may be skipped, i.e. those right of an
/// `and`/`or` (short-circuit) and those inside a lambda (the list may be empty). A path read
/// through `get(ctx, "name", …)` is not a read of `ctx.name`; `get`'s base itself is strict.
/// `run` refuses to start when such a read names a store nothing gives (docs/run.md).
pub fn certain_path_views(expr: &Expr) -> Vec<PathView<'_>> {
    let mut out = Vec::new();
    let mut stack: Vec<&Expr> = vec![expr];
    while let Some(e) = stack.pop() {
        match &e.kind {
            ExprKind::Path { root, segments } => out.push(PathView {
                root,
                segments,
                get_path: None,
                range: e.span.range(),
            }),
            ExprKind::Lambda { .. } => {}
            ExprKind::Binary {
                op: BinOp::And | BinOp::Or,
                lhs,
                ..
            } => stack.push(lhs),
            _ => e.for_each_child_rev(|c| stack.push(c)),
        }
    }
    out.sort_by_key(|p| p.range.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    #[test]
    fn lambda_params_are_bound() {
        let e = parse("map(ctx.xs, x -> x.a + item.b) and get(ctx, 'r.s', 1)")
            .unwrap_or_else(|e| panic!("{e:?}"));
        let refs: Vec<String> = free_paths(&e)
            .iter()
            .map(|p| {
                format!(
                    "{}.{}{}",
                    p.root,
                    p.segments.join("."),
                    if p.via_get { " (get)" } else { "" }
                )
            })
            .collect();
        assert_eq!(
            refs,
            ["ctx.xs", "item.b", "ctx. ", "ctx.r.s (get)"].map(|s| s.replace(". ", "."))
        );
    }

    #[test]
    fn certain_reads_skip_short_circuits_and_lambdas() {
        let e = parse("ctx.a + count(map(ctx.xs, x -> ctx.b)) + (ctx.c and ctx.d) + get(ctx, 'e', ctx.f) + (ctx.g or ctx.h)")
            .unwrap_or_else(|e| panic!("{e:?}"));
        let reads: Vec<String> = certain_path_views(&e)
            .iter()
            .map(|p| {
                std::iter::once(p.root)
                    .chain(p.segment_names())
                    .collect::<Vec<_>>()
                    .join(".")
            })
            .collect();
        assert_eq!(reads, ["ctx.a", "ctx.xs", "ctx.c", "ctx", "ctx.f", "ctx.g"]);
    }
}
