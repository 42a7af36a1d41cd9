//! Which names an expression reads from its scope.

use crate::ast::{Combinator, Expr, ExprKind};
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

/// Every path whose root is not a lambda parameter, in source order; for `get(p, "x.y", …)`
/// with `p` a free path, also `p.x.y` marked `via_get`.
#[allow(clippy::collapsible_match)]
pub fn free_paths(expr: &Expr) -> Vec<PathRef> {
    let mut out = Vec::new();
    let mut stack: Vec<(&Expr, Rc<Vec<&str>>)> = vec![(expr, Rc::new(Vec::new()))];
    while let Some((e, bound)) = stack.pop() {
        match &e.kind {
            ExprKind::Path { root, segments } => {
                if !bound.contains(&root.as_str()) {
                    out.push(PathRef {
                        root: root.clone(),
                        segments: segments.iter().map(|(s, _)| s.clone()).collect(),
                        range: e.span.clone(),
                        via_get: false,
                    });
                }
            }
            ExprKind::Lambda { param, body, .. } => {
                let mut inner = (*bound).clone();
                inner.push(param);
                stack.push((body, Rc::new(inner)));
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
                        if !bound.contains(&root.as_str()) {
                            out.push(PathRef {
                                root: root.clone(),
                                segments: segments
                                    .iter()
                                    .map(|(s, _)| s.clone())
                                    .chain(p.split('.').map(str::to_string))
                                    .collect(),
                                range: base.span.start..path.span.end,
                                via_get: true,
                            });
                        }
                    }
                }
            }
            _ => {}
        }
        e.for_each_child_rev(|c| stack.push((c, bound.clone())));
    }
    out.sort_by_key(|p| (p.range.start, p.via_get));
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
}
