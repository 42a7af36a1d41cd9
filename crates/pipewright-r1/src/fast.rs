//! A plain recursive-descent parser for well-formed input, several times faster than the
//! chumsky parser. It gives up (returns `None`) at the first irregularity, and `parse` then runs
//! the full lexer and the chumsky parser, which own error reporting and recovery. Both must
//! build the same tree with the same spans; a property test checks it.
//!
//! Tokens are pulled from logos one at a time (at most two ahead) rather than collected, and
//! names and strings stay slices of the source until they become part of the tree, so the only
//! allocations are the tree's own. The nesting limit is applied token by token with the same
//! [`Depth`] rule `check_depth` uses; any lexical problem or excess nesting means "give up",
//! and the slow path then reports it.

use crate::ast::{BinOp, Combinator, Expr, ExprKind};
use crate::lexer::{unescape, Raw};
use crate::parser::{Depth, Nesting};
use logos::Logos;
use std::ops::Range;

#[cfg(test)]
thread_local! {
    /// How many times this thread's fast path gave up, for tests that must not fall back.
    pub(crate) static GAVE_UP: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The tree for `src`, or `None` if it is not well-formed (or nests too deeply).
pub(crate) fn parse(src: &str) -> Option<Expr> {
    let mut p = Fast {
        src,
        lexer: Raw::lexer(src),
        ahead: [None, None],
        buffered: 0,
        failed: false,
        depth: Depth::new(),
    };
    let e = p.expr();
    let done = e.is_some() && p.peek().is_none() && !p.failed;
    #[cfg(test)]
    if !done {
        GAVE_UP.with(|g| g.set(g.get() + 1));
    }
    e.filter(|_| done)
}

/// A token without its text; names and strings are read back from the source by span.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok {
    Int(i64),
    Float(f64),
    Str,
    Ident,
    True,
    False,
    Null,
    And,
    Or,
    Not,
    Arrow,
    Dot,
    EqEq,
    Ne,
    Le,
    Ge,
    Lt,
    Gt,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Colon,
    Plus,
    Minus,
    Star,
    Slash,
}

type Span = (usize, usize);

struct Fast<'s> {
    src: &'s str,
    lexer: logos::Lexer<'s, Raw>,
    /// Lexed but not yet consumed tokens; `None` is the end of input (or a lexical problem).
    ahead: [Option<(Tok, Span)>; 2],
    buffered: usize,
    /// Set at the first lexical problem or excess nesting; the parse then cannot succeed.
    failed: bool,
    depth: Depth,
}

fn binary(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
    let span = lhs.span.range().start..rhs.span.range().end;
    Expr::new(
        ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
        span,
    )
}

fn keyword_name(t: Tok) -> Option<&'static str> {
    Some(match t {
        Tok::True => "true",
        Tok::False => "false",
        Tok::Null => "null",
        Tok::And => "and",
        Tok::Or => "or",
        Tok::Not => "not",
        _ => return None,
    })
}

fn range((start, end): Span) -> Range<usize> {
    start..end
}

impl<'s> Fast<'s> {
    /// The next token from logos, decoded as `lexer::lex` would; `None` at the end and at
    /// anything `lex` would report as an error.
    fn pull(&mut self) -> Option<(Tok, Span)> {
        if self.failed {
            return None;
        }
        self.decode()
    }

    fn decode(&mut self) -> Option<(Tok, Span)> {
        let raw = match self.lexer.next()? {
            Ok(raw) => raw,
            Err(()) => {
                self.failed = true;
                return None;
            }
        };
        let text = self.lexer.slice();
        let tok = match raw {
            Raw::Int => match text.parse::<i64>() {
                Ok(n) => Tok::Int(n),
                Err(_) => {
                    self.failed = true;
                    return None;
                }
            },
            Raw::Float => Tok::Float(text.parse::<f64>().unwrap_or(f64::NAN)),
            Raw::Str => Tok::Str,
            Raw::Ident => match text {
                "true" => Tok::True,
                "false" => Tok::False,
                "null" => Tok::Null,
                "and" => Tok::And,
                "or" => Tok::Or,
                "not" => Tok::Not,
                _ => Tok::Ident,
            },
            Raw::Arrow => Tok::Arrow,
            Raw::Dot => Tok::Dot,
            Raw::EqEq => Tok::EqEq,
            Raw::Ne => Tok::Ne,
            Raw::Le => Tok::Le,
            Raw::Ge => Tok::Ge,
            Raw::Lt => Tok::Lt,
            Raw::Gt => Tok::Gt,
            Raw::LParen => Tok::LParen,
            Raw::RParen => Tok::RParen,
            Raw::LBracket => Tok::LBracket,
            Raw::RBracket => Tok::RBracket,
            Raw::LBrace => Tok::LBrace,
            Raw::RBrace => Tok::RBrace,
            Raw::Comma => Tok::Comma,
            // Only a preceding `?` makes `:` anything else, and `?` is an error.
            Raw::Colon => Tok::Colon,
            Raw::Plus => Tok::Plus,
            Raw::Minus => Tok::Minus,
            Raw::Star => Tok::Star,
            Raw::Slash => Tok::Slash,
            Raw::CAnd | Raw::COr | Raw::CNot | Raw::Assign | Raw::Question => {
                self.failed = true;
                return None;
            }
        };
        let nesting = match tok {
            Tok::LParen | Tok::LBracket | Tok::LBrace => Nesting::Open,
            Tok::RParen | Tok::RBracket | Tok::RBrace => Nesting::Close,
            Tok::Arrow => Nesting::Arrow,
            Tok::Not => Nesting::Not,
            Tok::Minus => Nesting::Minus,
            Tok::Int(_)
            | Tok::Float(_)
            | Tok::Str
            | Tok::Ident
            | Tok::True
            | Tok::False
            | Tok::Null => Nesting::Operand,
            _ => Nesting::Other,
        };
        if !self.depth.step(nesting) {
            self.failed = true;
            return None;
        }
        let span = self.lexer.span();
        Some((tok, (span.start, span.end)))
    }

    fn fill(&mut self, n: usize) {
        while self.buffered < n {
            let t = self.pull();
            if let Some(slot) = self.ahead.get_mut(self.buffered) {
                *slot = t;
            }
            self.buffered += 1;
        }
    }

    fn peek(&mut self) -> Option<Tok> {
        self.fill(1);
        self.ahead[0].map(|(t, _)| t)
    }

    fn peek_at_1(&mut self) -> Option<Tok> {
        self.fill(2);
        self.ahead[1].map(|(t, _)| t)
    }

    fn next(&mut self) -> Option<(Tok, Span)> {
        self.fill(1);
        let t = self.ahead[0].take();
        self.ahead[0] = self.ahead[1].take();
        self.buffered -= 1;
        t
    }

    fn eat(&mut self, tok: Tok) -> Option<Span> {
        if self.peek() != Some(tok) {
            return None;
        }
        self.next().map(|(_, s)| s)
    }

    fn text(&self, (start, end): Span) -> &'s str {
        self.src.get(start..end).unwrap_or("")
    }

    /// A name token's text, keywords included (they are valid field names).
    fn name(&mut self) -> Option<(Box<str>, Span)> {
        let (t, s) = self.next()?;
        let name = match t {
            Tok::Ident => self.text(s),
            t => keyword_name(t)?,
        };
        Some((name.into(), s))
    }

    fn expr(&mut self) -> Option<Expr> {
        let mut acc = self.conj()?;
        while self.eat(Tok::Or).is_some() {
            let r = self.conj()?;
            acc = binary(BinOp::Or, acc, r);
        }
        Some(acc)
    }

    fn conj(&mut self) -> Option<Expr> {
        let mut acc = self.not()?;
        while self.eat(Tok::And).is_some() {
            let r = self.not()?;
            acc = binary(BinOp::And, acc, r);
        }
        Some(acc)
    }

    fn not(&mut self) -> Option<Expr> {
        let mut ops = Vec::new();
        while let Some(r) = self.eat(Tok::Not) {
            ops.push(r);
        }
        let mut e = self.comparison()?;
        for op in ops.into_iter().rev() {
            let span = op.0..e.span.range().end;
            e = Expr::new(ExprKind::Not(Box::new(e)), span);
        }
        Some(e)
    }

    fn cmp_op(&mut self) -> Option<BinOp> {
        Some(match self.peek()? {
            Tok::EqEq => BinOp::Eq,
            Tok::Ne => BinOp::Ne,
            Tok::Lt => BinOp::Lt,
            Tok::Gt => BinOp::Gt,
            Tok::Le => BinOp::Le,
            Tok::Ge => BinOp::Ge,
            _ => return None,
        })
    }

    fn comparison(&mut self) -> Option<Expr> {
        let l = self.sum()?;
        let Some(op) = self.cmp_op() else {
            return Some(l);
        };
        self.next();
        let r = self.sum()?;
        if self.cmp_op().is_some() {
            return None;
        }
        Some(binary(op, l, r))
    }

    fn sum(&mut self) -> Option<Expr> {
        let mut acc = self.product()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Plus) => BinOp::Add,
                Some(Tok::Minus) => BinOp::Sub,
                _ => return Some(acc),
            };
            self.next();
            let r = self.product()?;
            acc = binary(op, acc, r);
        }
    }

    fn product(&mut self) -> Option<Expr> {
        let mut acc = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Star) => BinOp::Mul,
                Some(Tok::Slash) => BinOp::Div,
                _ => return Some(acc),
            };
            self.next();
            let r = self.unary()?;
            acc = binary(op, acc, r);
        }
    }

    fn unary(&mut self) -> Option<Expr> {
        let mut ops = Vec::new();
        while let Some(r) = self.eat(Tok::Minus) {
            ops.push(r);
        }
        let mut e = self.primary()?;
        if self.peek() == Some(Tok::LBracket) {
            return None;
        }
        for op in ops.into_iter().rev() {
            let span = op.0..e.span.range().end;
            e = Expr::new(ExprKind::Neg(Box::new(e)), span);
        }
        Some(e)
    }

    fn primary(&mut self) -> Option<Expr> {
        let (tok, span) = self.next()?;
        let kind = match tok {
            Tok::Int(n) => ExprKind::Int(n),
            Tok::Float(x) => ExprKind::Float(x),
            Tok::Str => ExprKind::Str(unescape(self.text(span)).into()),
            Tok::True => ExprKind::Bool(true),
            Tok::False => ExprKind::Bool(false),
            Tok::Null => ExprKind::Null,
            Tok::LParen => {
                let mut inner = self.expr()?;
                let close = self.eat(Tok::RParen)?;
                let kind = std::mem::replace(&mut inner.kind, ExprKind::Null);
                return Some(Expr::new(kind, span.0..close.1));
            }
            Tok::LBracket => {
                let mut items = Vec::new();
                if self.peek() != Some(Tok::RBracket) {
                    loop {
                        items.push(self.expr()?);
                        if self.eat(Tok::Comma).is_none() {
                            break;
                        }
                    }
                }
                let close = self.eat(Tok::RBracket)?;
                items.shrink_to_fit();
                return Some(Expr::new(ExprKind::List(items), span.0..close.1));
            }
            Tok::LBrace => {
                let mut fields = Vec::new();
                if self.peek() != Some(Tok::RBrace) {
                    loop {
                        let (key, kr) = self.name()?;
                        self.eat(Tok::Colon)?;
                        let v = self.expr()?;
                        fields.push((key, range(kr).into(), v));
                        if self.eat(Tok::Comma).is_none() {
                            break;
                        }
                    }
                }
                let close = self.eat(Tok::RBrace)?;
                fields.shrink_to_fit();
                return Some(Expr::new(ExprKind::Object(fields), span.0..close.1));
            }
            Tok::Ident => match self.peek() {
                Some(Tok::Arrow) => return None,
                Some(Tok::LParen) => return self.call(self.text(span), span),
                _ => return self.path(self.text(span).into(), span),
            },
            _ => return None,
        };
        Some(Expr::new(kind, range(span)))
    }

    fn path(&mut self, root: Box<str>, span: Span) -> Option<Expr> {
        let mut segments = Vec::new();
        let mut end = span.1;
        while self.eat(Tok::Dot).is_some() {
            let (name, r) = self.name()?;
            end = r.1;
            segments.push((name, range(r).into()));
        }
        Some(Expr::new(
            ExprKind::Path {
                root,
                segments: segments.into_boxed_slice(),
            },
            span.0..end,
        ))
    }

    fn call(&mut self, name: &str, span: Span) -> Option<Expr> {
        let func = Combinator::from_name(name)?;
        self.next();
        let mut args = Vec::new();
        if self.peek() != Some(Tok::RParen) {
            loop {
                let lambda =
                    self.peek() == Some(Tok::Ident) && self.peek_at_1() == Some(Tok::Arrow);
                let arg = if lambda {
                    let (_, pr) = self.next()?;
                    self.next();
                    let body = self.expr()?;
                    let span = pr.0..body.span.range().end;
                    Expr::new(
                        ExprKind::Lambda {
                            param: self.text(pr).into(),
                            param_span: range(pr).into(),
                            body: Box::new(body),
                        },
                        span,
                    )
                } else {
                    self.expr()?
                };
                args.push(arg);
                if self.eat(Tok::Comma).is_none() {
                    break;
                }
            }
        }
        let close = self.eat(Tok::RParen)?;
        let (min, max) = func.arity();
        if args.len() < min || args.len() > max {
            return None;
        }
        for (i, a) in args.iter().enumerate() {
            let is_lambda = matches!(a.kind, ExprKind::Lambda { .. });
            if is_lambda != (func.takes_lambda() && i == 1) {
                return None;
            }
        }
        if func == Combinator::Get
            && !matches!(args.get(1).map(|a| &a.kind), Some(ExprKind::Str(_)))
        {
            return None;
        }
        // Kept until the check ends: no spare capacity (a push leaves room for four).
        args.shrink_to_fit();
        Some(Expr::new(ExprKind::Call { func, args }, span.0..close.1))
    }
}

#[cfg(test)]
mod tests {
    use super::GAVE_UP;
    use crate::parser::{parse, parse_slow};

    fn gave_up() -> usize {
        GAVE_UP.with(|g| g.get())
    }

    #[test]
    fn well_formed_input_never_falls_back() {
        let before = gave_up();
        for src in [
            "all(ctx.reviews, r -> r.passed) and count(ctx.reviews) > 2",
            "not not -1 + 2.5 * -(x - 3) / y.z",
            "a == b or c != d and e <= f",
            "[1, 'two', \"thr\\\"ee\", [], {}]",
            "{a: 1, true: null, not: ctx.and.or} == {}",
            "map(filter(l, x -> x.ok), y -> {n: y.name}) + []",
            "get(ctx, 'a.b', 0) >= sum(ctx.list)",
            "find(ctx.l, x -> any(x.m, y -> y > 1))",
            "join(ctx.names, ', ') < parse_json('\"x\"')",
            "  ( ( 1 ) )\n",
        ] {
            let fast = parse(src);
            assert!(fast.is_ok(), "{src}: {fast:?}");
            assert_eq!(fast, parse_slow(src), "{src}");
        }
        assert_eq!(gave_up(), before);
    }

    #[test]
    fn malformed_input_falls_back() {
        for src in [
            "a +",
            "a && b",
            "a ? b : c",
            "1 < 2 < 3",
            "x -> x",
            "f(1)",
            "a[0]",
            "'open",
            "99999999999999999999",
            "get(a, b)",
        ] {
            let before = gave_up();
            let _ = parse(src);
            assert_eq!(gave_up(), before + 1, "{src}");
        }
    }
}
