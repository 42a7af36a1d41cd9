//! A plain recursive-descent parser for well-formed input, several times faster than the
//! chumsky parser. It gives up (returns `None`) at the first irregularity, and `parse` then runs
//! the chumsky parser, which owns error reporting and recovery. Both must build the same tree
//! with the same spans; a property test checks it. Nesting depth is bounded by `check_depth`
//! before either runs.

use crate::ast::{BinOp, Combinator, Expr, ExprKind};
use crate::lexer::{Spanned, Token};
use std::ops::Range;

/// Names and strings are moved out of `tokens`, which must be re-lexed if this fails.
pub(crate) fn parse(tokens: &mut [Spanned]) -> Option<Expr> {
    let mut p = Fast {
        toks: tokens,
        pos: 0,
    };
    let e = p.expr()?;
    (p.pos == tokens.len()).then_some(e)
}

struct Fast<'t> {
    toks: &'t mut [Spanned],
    pos: usize,
}

fn binary(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
    let span = lhs.span.start..rhs.span.end;
    Expr::new(
        ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
        span,
    )
}

fn keyword_name(t: &Token) -> Option<&'static str> {
    Some(match t {
        Token::True => "true",
        Token::False => "false",
        Token::Null => "null",
        Token::And => "and",
        Token::Or => "or",
        Token::Not => "not",
        _ => return None,
    })
}

impl Fast<'_> {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn peek_at(&self, n: usize) -> Option<&Token> {
        self.toks.get(self.pos + n).map(|(t, _)| t)
    }

    /// Consumes the next token, moving its string out.
    fn next(&mut self) -> Option<(Token, Range<usize>)> {
        let (t, r) = self.toks.get_mut(self.pos)?;
        self.pos += 1;
        let tok = match t {
            Token::Ident(s) => Token::Ident(std::mem::take(s)),
            Token::Str(s) => Token::Str(std::mem::take(s)),
            other => other.clone(),
        };
        Some((tok, r.clone()))
    }

    fn eat(&mut self, tok: &Token) -> Option<Range<usize>> {
        match self.toks.get(self.pos) {
            Some((t, r)) if t == tok => {
                self.pos += 1;
                Some(r.clone())
            }
            _ => None,
        }
    }

    fn expr(&mut self) -> Option<Expr> {
        let mut acc = self.conj()?;
        while self.eat(&Token::Or).is_some() {
            let r = self.conj()?;
            acc = binary(BinOp::Or, acc, r);
        }
        Some(acc)
    }

    fn conj(&mut self) -> Option<Expr> {
        let mut acc = self.not()?;
        while self.eat(&Token::And).is_some() {
            let r = self.not()?;
            acc = binary(BinOp::And, acc, r);
        }
        Some(acc)
    }

    fn not(&mut self) -> Option<Expr> {
        let mut ops = Vec::new();
        while let Some(r) = self.eat(&Token::Not) {
            ops.push(r);
        }
        let mut e = self.comparison()?;
        for op in ops.into_iter().rev() {
            let span = op.start..e.span.end;
            e = Expr::new(ExprKind::Not(Box::new(e)), span);
        }
        Some(e)
    }

    fn cmp_op(&self) -> Option<BinOp> {
        Some(match self.peek()? {
            Token::EqEq => BinOp::Eq,
            Token::Ne => BinOp::Ne,
            Token::Lt => BinOp::Lt,
            Token::Gt => BinOp::Gt,
            Token::Le => BinOp::Le,
            Token::Ge => BinOp::Ge,
            _ => return None,
        })
    }

    fn comparison(&mut self) -> Option<Expr> {
        let l = self.sum()?;
        let Some(op) = self.cmp_op() else {
            return Some(l);
        };
        self.pos += 1;
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
                Some(Token::Plus) => BinOp::Add,
                Some(Token::Minus) => BinOp::Sub,
                _ => return Some(acc),
            };
            self.pos += 1;
            let r = self.product()?;
            acc = binary(op, acc, r);
        }
    }

    fn product(&mut self) -> Option<Expr> {
        let mut acc = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Token::Star) => BinOp::Mul,
                Some(Token::Slash) => BinOp::Div,
                _ => return Some(acc),
            };
            self.pos += 1;
            let r = self.unary()?;
            acc = binary(op, acc, r);
        }
    }

    fn unary(&mut self) -> Option<Expr> {
        let mut ops = Vec::new();
        while let Some(r) = self.eat(&Token::Minus) {
            ops.push(r);
        }
        let mut e = self.primary()?;
        if self.peek() == Some(&Token::LBracket) {
            return None;
        }
        for op in ops.into_iter().rev() {
            let span = op.start..e.span.end;
            e = Expr::new(ExprKind::Neg(Box::new(e)), span);
        }
        Some(e)
    }

    fn primary(&mut self) -> Option<Expr> {
        let (tok, range) = self.next()?;
        let kind = match tok {
            Token::Int(n) => ExprKind::Int(n),
            Token::Float(x) => ExprKind::Float(x),
            Token::Str(s) => ExprKind::Str(s),
            Token::True => ExprKind::Bool(true),
            Token::False => ExprKind::Bool(false),
            Token::Null => ExprKind::Null,
            Token::LParen => {
                let mut inner = self.expr()?;
                let close = self.eat(&Token::RParen)?;
                let kind = std::mem::replace(&mut inner.kind, ExprKind::Null);
                return Some(Expr::new(kind, range.start..close.end));
            }
            Token::LBracket => {
                let mut items = Vec::new();
                if self.peek() != Some(&Token::RBracket) {
                    loop {
                        items.push(self.expr()?);
                        if self.eat(&Token::Comma).is_none() {
                            break;
                        }
                    }
                }
                let close = self.eat(&Token::RBracket)?;
                return Some(Expr::new(ExprKind::List(items), range.start..close.end));
            }
            Token::LBrace => {
                let mut fields = Vec::new();
                if self.peek() != Some(&Token::RBrace) {
                    loop {
                        let (kt, kr) = self.next()?;
                        let key = match kt {
                            Token::Ident(s) => s,
                            t => keyword_name(&t)?.to_string(),
                        };
                        self.eat(&Token::Colon)?;
                        let v = self.expr()?;
                        fields.push((key, kr, v));
                        if self.eat(&Token::Comma).is_none() {
                            break;
                        }
                    }
                }
                let close = self.eat(&Token::RBrace)?;
                return Some(Expr::new(ExprKind::Object(fields), range.start..close.end));
            }
            Token::Ident(name) => match self.peek() {
                Some(Token::Arrow) => return None,
                Some(Token::LParen) => return self.call(&name, &range),
                _ => return self.path(name, &range),
            },
            _ => return None,
        };
        Some(Expr::new(kind, range))
    }

    fn path(&mut self, root: String, range: &Range<usize>) -> Option<Expr> {
        let mut segments = Vec::new();
        while self.eat(&Token::Dot).is_some() {
            let (t, r) = self.next()?;
            let name = match t {
                Token::Ident(s) => s,
                t => keyword_name(&t)?.to_string(),
            };
            segments.push((name, r));
        }
        let end = segments.last().map_or(range.end, |(_, r)| r.end);
        Some(Expr::new(
            ExprKind::Path { root, segments },
            range.start..end,
        ))
    }

    fn call(&mut self, name: &str, range: &Range<usize>) -> Option<Expr> {
        let func = Combinator::from_name(name)?;
        self.pos += 1;
        let mut args = Vec::new();
        if self.peek() != Some(&Token::RParen) {
            loop {
                let arg = match (self.peek(), self.peek_at(1)) {
                    (Some(Token::Ident(_)), Some(Token::Arrow)) => {
                        let (Token::Ident(param), pr) = self.next()? else {
                            return None;
                        };
                        self.pos += 1;
                        let body = self.expr()?;
                        let span = pr.start..body.span.end;
                        Expr::new(
                            ExprKind::Lambda {
                                param,
                                param_span: pr,
                                body: Box::new(body),
                            },
                            span,
                        )
                    }
                    _ => self.expr()?,
                };
                args.push(arg);
                if self.eat(&Token::Comma).is_none() {
                    break;
                }
            }
        }
        let close = self.eat(&Token::RParen)?;
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
        Some(Expr::new(
            ExprKind::Call { func, args },
            range.start..close.end,
        ))
    }
}
