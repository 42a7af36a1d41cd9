//! The canonical text of an expression: single spaces around binary operators, none around
//! dots, `f(a, b)`, `{k: v}`, single-quoted strings unless double quotes avoid escapes, and only
//! the parentheses the grammar needs. Parsing the output gives back the same tree.

use crate::ast::{BinOp, Expr, ExprKind};
use std::fmt::{self, Write};

const PREC_NOT: u8 = 3;
const PREC_NEG: u8 = 7;
const PREC_ATOM: u8 = 8;

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(self, 0, f)
    }
}

fn precedence(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Binary { op, .. } => op.precedence(),
        ExprKind::Not(_) => PREC_NOT,
        ExprKind::Neg(_) => PREC_NEG,
        ExprKind::Lambda { .. } => 0,
        _ => PREC_ATOM,
    }
}

/// Operand requirements of a binary operator: comparisons are non-associative, the others
/// associate to the left.
fn operand_mins(op: BinOp) -> (u8, u8) {
    let p = op.precedence();
    if op.is_comparison() {
        (p + 1, p + 1)
    } else {
        (p, p + 1)
    }
}

/// Writes `e` so that it parses back as an operand needing precedence `min` or higher. The
/// left spine of an operator chain is walked in a loop, not by recursion.
fn write_expr(e: &Expr, min: u8, f: &mut impl Write) -> fmt::Result {
    let mut pending: Vec<(BinOp, &Expr, u8, bool)> = Vec::new();
    let mut cur = e;
    let mut cur_min = min;
    while let ExprKind::Binary { op, lhs, rhs } = &cur.kind {
        let paren = op.precedence() < cur_min;
        if paren {
            f.write_char('(')?;
        }
        let (lmin, rmin) = operand_mins(*op);
        pending.push((*op, rhs, rmin, paren));
        cur = lhs;
        cur_min = lmin;
    }
    write_operand(cur, cur_min, f)?;
    for (op, rhs, rmin, paren) in pending.into_iter().rev() {
        write!(f, " {} ", op.as_str())?;
        write_expr(rhs, rmin, f)?;
        if paren {
            f.write_char(')')?;
        }
    }
    Ok(())
}

fn write_operand(e: &Expr, min: u8, f: &mut impl Write) -> fmt::Result {
    let paren = precedence(e) < min;
    if paren {
        f.write_char('(')?;
    }
    match &e.kind {
        ExprKind::Null => f.write_str("null")?,
        ExprKind::Bool(b) => f.write_str(if *b { "true" } else { "false" })?,
        ExprKind::Int(n) => write!(f, "{n}")?,
        ExprKind::Float(x) => f.write_str(&float_literal(*x))?,
        ExprKind::Str(s) => f.write_str(&quote(s))?,
        ExprKind::List(items) => {
            f.write_char('[')?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_expr(item, 0, f)?;
            }
            f.write_char(']')?;
        }
        ExprKind::Object(fields) => {
            f.write_char('{')?;
            for (i, (k, _, v)) in fields.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{k}: ")?;
                write_expr(v, 0, f)?;
            }
            f.write_char('}')?;
        }
        ExprKind::Path { root, segments } => {
            f.write_str(root)?;
            for (s, _) in segments {
                write!(f, ".{s}")?;
            }
        }
        ExprKind::Not(x) => {
            f.write_str("not ")?;
            write_expr(x, PREC_NOT, f)?;
        }
        ExprKind::Neg(x) => {
            f.write_char('-')?;
            write_expr(x, PREC_NEG, f)?;
        }
        ExprKind::Binary { .. } => write_expr(e, 0, f)?,
        ExprKind::Call { func, args } => {
            write!(f, "{}(", func.name())?;
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_expr(a, 0, f)?;
            }
            f.write_char(')')?;
        }
        ExprKind::Lambda { param, body, .. } => {
            write!(f, "{param} -> ")?;
            write_expr(body, 0, f)?;
        }
        ExprKind::Error => f.write_str("<error>")?,
    }
    if paren {
        f.write_char(')')?;
    }
    Ok(())
}

/// R1 float literals have no exponent, so the plain decimal expansion is used; it is the
/// shortest text that reads back as the same double.
fn float_literal(x: f64) -> String {
    if !x.is_finite() {
        // Not expressible in R1; printed as an expression of the same value.
        return if x.is_nan() {
            "(0.0 / 0.0)".to_string()
        } else if x > 0.0 {
            "(1.0 / 0.0)".to_string()
        } else {
            "(-1.0 / 0.0)".to_string()
        };
    }
    let s = format!("{}", x.abs());
    let s = if s.contains('.') { s } else { format!("{s}.0") };
    if x.is_sign_negative() {
        format!("-{s}")
    } else {
        s
    }
}

/// Quotes a string with single quotes, or double quotes when that avoids escaping.
pub fn quote(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

#[cfg(test)]
mod tests {
    use crate::parse;

    fn canon(src: &str) -> String {
        match parse(src) {
            Ok(e) => e.to_string(),
            Err(e) => panic!("{src}: {e:?}"),
        }
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(canon("a+b"), "a + b");
        assert_eq!(canon("ctx . x"), "ctx.x");
        assert_eq!(canon("count( x )"), "count(x)");
        assert_eq!(canon("join( x ,y)"), "join(x, y)");
        assert_eq!(canon("{a:1,b:[1,2]}"), "{a: 1, b: [1, 2]}");
        assert_eq!(canon("\"it's\""), "\"it's\"");
        assert_eq!(canon("\"plain\""), "'plain'");
        assert_eq!(canon("(a + b) * c"), "(a + b) * c");
        assert_eq!(canon("a + (b * c)"), "a + b * c");
        assert_eq!(canon("a - (b - c)"), "a - (b - c)");
        assert_eq!(canon("(a - b) - c"), "a - b - c");
        assert_eq!(canon("(a < b) == c"), "(a < b) == c");
        assert_eq!(canon("not (a and b)"), "not (a and b)");
        assert_eq!(canon("(not a) == b"), "(not a) == b");
        assert_eq!(canon("- (-1)"), "--1");
        assert_eq!(canon("-(a*b)"), "-(a * b)");
        assert_eq!(canon("map(xs, x->x+1)"), "map(xs, x -> x + 1)");
        assert_eq!(canon("1.50"), "1.5");
    }
}
