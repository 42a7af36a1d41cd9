//! The R1 parser: logos tokens in, [`Expr`] out, every syntax error of the source reported in
//! one pass.
//!
//! Deep nesting is refused before chumsky runs (see [`MAX_DEPTH`]) so that no input can exhaust
//! the stack; operator chains are folded iteratively and do not count as nesting.

use crate::ast::{BinOp, Combinator, Expr, ExprKind};
use crate::codes;
use crate::error::ParseError;
use crate::lexer::{lex, Spanned, Token};
use chumsky::input::ValueInput;
use chumsky::prelude::*;
use std::fmt;
use std::ops::Range;

/// How deeply brackets and prefix operators may nest.
pub const MAX_DEPTH: usize = 128;

/// A chumsky custom error carrying the pieces of a [`ParseError`].
#[derive(Debug, Clone, PartialEq)]
struct Custom {
    code: &'static str,
    message: String,
    label: String,
    help: Option<String>,
}

impl fmt::Display for Custom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

type CmpRest = Vec<((BinOp, Range<usize>), Expr)>;

type Err<'t> = extra::Err<Rich<'t, Token, SimpleSpan, Custom>>;

fn custom<'t>(
    range: Range<usize>,
    code: &'static str,
    message: impl Into<String>,
    label: impl Into<String>,
    help: Option<String>,
) -> Rich<'t, Token, SimpleSpan, Custom> {
    Rich::custom(
        SimpleSpan::from(range),
        Custom {
            code,
            message: message.into(),
            label: label.into(),
            help,
        },
    )
}

/// Parses one R1 expression.
pub fn parse(src: &str) -> Result<Expr, Vec<ParseError>> {
    if src.trim_matches([' ', '\t', '\r', '\n']).is_empty() {
        return Err(vec![ParseError::new(
            0..src.len(),
            codes::EMPTY,
            "expression source must be a non-empty string",
            "empty expression",
        )
        .with_help("write an expression such as `ctx.name` or `true`")]);
    }
    // The fast path succeeds exactly when lexing reports nothing, nesting is within the limit
    // and chumsky would succeed; anything else is left to the slow path.
    if let Some(e) = crate::fast::parse(src) {
        return Ok(e);
    }
    parse_slow(src)
}

/// The fast path alone: `None` wherever `parse` falls back to the recovering parser; public for
/// the test that well-formed input never does.
#[doc(hidden)]
pub fn parse_fast(src: &str) -> Option<Expr> {
    crate::fast::parse(src)
}

/// The recovering parser alone (the fast path skipped); public for the equivalence test.
#[doc(hidden)]
pub fn parse_slow(src: &str) -> Result<Expr, Vec<ParseError>> {
    let (tokens, mut errors) = lex(src);
    if let Some(e) = check_depth(&tokens) {
        errors.push(e);
        return Err(errors);
    }
    parse_with_chumsky(src, tokens, errors)
}

fn parse_with_chumsky(
    src: &str,
    tokens: Vec<Spanned>,
    mut errors: Vec<ParseError>,
) -> Result<Expr, Vec<ParseError>> {
    let eoi = SimpleSpan::from(src.len()..src.len());
    let tokens: Vec<(Token, SimpleSpan)> = tokens
        .into_iter()
        .map(|(t, r)| (t, SimpleSpan::from(r)))
        .collect();
    let input = tokens.as_slice().map(eoi, |(t, s)| (t, s));
    let (out, errs) = expr_parser()
        .then_ignore(end())
        .parse(input)
        .into_output_errors();
    errors.extend(errs.into_iter().filter_map(convert));
    if errors.is_empty() {
        if let Some(e) = out {
            return Ok(e);
        }
        errors.push(ParseError::new(
            0..src.len(),
            codes::SYNTAX,
            "malformed expression",
            "",
        ));
    }
    errors.sort_by_key(|e| (e.range.start, e.range.end));
    errors.dedup();
    Err(errors)
}

/// Refuses input whose brackets and prefix operators nest more than [`MAX_DEPTH`] deep.
fn check_depth(tokens: &[Spanned]) -> Option<ParseError> {
    let mut depth = Depth::new();
    for (tok, range) in tokens {
        let class = match tok {
            Token::LParen | Token::LBracket | Token::LBrace => Nesting::Open,
            Token::RParen | Token::RBracket | Token::RBrace => Nesting::Close,
            Token::Arrow => Nesting::Arrow,
            Token::Not => Nesting::Not,
            Token::Minus => Nesting::Minus,
            t if t.ends_operand() => Nesting::Operand,
            _ => Nesting::Other,
        };
        if !depth.step(class) {
            return Some(
                ParseError::new(
                    range.clone(),
                    codes::TOO_DEEP,
                    format!("expression nests more than {MAX_DEPTH} levels deep"),
                    "nesting limit reached here",
                )
                .with_help("split the expression into several steps"),
            );
        }
    }
    None
}

/// What a token does to the nesting depth [`Depth`] tracks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nesting {
    Open,
    /// A closing bracket (also an operand end).
    Close,
    Arrow,
    Not,
    /// Prefix or binary, depending on the token before.
    Minus,
    /// Any other token that ends an operand.
    Operand,
    Other,
}

/// The nesting measure behind [`MAX_DEPTH`], one token at a time, so that the fast parser can
/// apply exactly the rule `check_depth` applies while it streams tokens.
pub(crate) struct Depth {
    /// One entry per open bracket: how many prefix operators are pending at that level. The
    /// total bounds both the number of levels and each entry, so a fixed array suffices and
    /// no allocation is needed.
    levels: [u16; MAX_DEPTH + 2],
    open: usize,
    total: usize,
    prev_operand: bool,
}

impl Depth {
    pub(crate) fn new() -> Depth {
        Depth {
            levels: [0; MAX_DEPTH + 2],
            open: 0,
            total: 0,
            prev_operand: false,
        }
    }

    /// Accounts for one token; `false` once the nesting exceeds [`MAX_DEPTH`].
    pub(crate) fn step(&mut self, class: Nesting) -> bool {
        let prefix = class == Nesting::Not || (class == Nesting::Minus && !self.prev_operand);
        let ends_operand = matches!(class, Nesting::Close | Nesting::Operand);
        match class {
            Nesting::Open => {
                self.open += 1;
                match self.levels.get_mut(self.open) {
                    Some(l) => *l = 0,
                    // Unreachable while `total` stays within the limit; refusing is safe.
                    None => return false,
                }
                self.total += 1;
            }
            Nesting::Close if self.open > 0 => {
                let pending = self.levels.get(self.open).map_or(0, |l| usize::from(*l));
                self.open -= 1;
                self.total = self.total.saturating_sub(pending + 1);
            }
            // A lambda body is parsed as a nested expression.
            Nesting::Arrow => return self.push_pending(ends_operand),
            _ if prefix => return self.push_pending(ends_operand),
            _ if ends_operand => {
                // The pending prefixes of this level have their operand now; they are done
                // once the next binary operator at this level is read, which is conservative
                // enough: we release them here.
                if let Some(l) = self.levels.get_mut(self.open) {
                    self.total = self.total.saturating_sub(usize::from(*l));
                    *l = 0;
                }
            }
            _ => {}
        }
        self.prev_operand = ends_operand;
        self.total <= MAX_DEPTH
    }

    fn push_pending(&mut self, ends_operand: bool) -> bool {
        match self.levels.get_mut(self.open) {
            Some(l) => *l = l.saturating_add(1),
            None => return false,
        }
        self.total += 1;
        self.prev_operand = ends_operand;
        self.total <= MAX_DEPTH
    }
}

/// A chumsky error as a [`ParseError`]; `None` for errors about input the lexer already
/// rejected.
fn convert(e: Rich<'_, Token, SimpleSpan, Custom>) -> Option<ParseError> {
    let range = e.span().into_range();
    if e.found() == Some(&Token::Invalid) {
        return None;
    }
    Some(match e.reason() {
        chumsky::error::RichReason::Custom(c) => ParseError {
            range,
            code: c.code,
            message: c.message.clone(),
            label: c.label.clone(),
            help: c.help.clone(),
        },
        chumsky::error::RichReason::ExpectedFound { expected, found } => {
            let mut operator = false;
            let mut names: Vec<String> = Vec::new();
            for p in expected {
                if let chumsky::error::RichPattern::Token(t) = p {
                    if is_operator(t) {
                        operator = true;
                        continue;
                    }
                }
                let n = pattern_name(p);
                if n != "something else" {
                    names.push(n);
                }
            }
            names.sort();
            names.dedup();
            if operator {
                names.push("an operator".to_string());
            }
            let expected = match names.len() {
                0 => "something else".to_string(),
                1 => names.remove(0),
                _ => {
                    let last = names.pop().unwrap_or_default();
                    format!("{} or {last}", names.join(", "))
                }
            };
            let found_text = match found {
                Some(t) => t.to_string(),
                None => "end of input".to_string(),
            };
            let mut err = ParseError::new(
                range,
                codes::SYNTAX,
                format!("expected {expected}, found {found_text}"),
                format!("unexpected {found_text}"),
            );
            if let Some(t) = found.as_deref() {
                err.help = hint_for(t);
            }
            err
        }
    })
}

fn pattern_name(p: &chumsky::error::RichPattern<'_, Token>) -> String {
    use chumsky::error::RichPattern;
    match p {
        RichPattern::Token(t) => t.to_string(),
        RichPattern::Label(l) => l.to_string(),
        RichPattern::Identifier(i) => format!("`{i}`"),
        RichPattern::Any => "any token".to_string(),
        RichPattern::SomethingElse => "something else".to_string(),
        RichPattern::EndOfInput => "end of input".to_string(),
        _ => "something else".to_string(),
    }
}

fn is_operator(t: &Token) -> bool {
    matches!(
        t,
        Token::And
            | Token::Or
            | Token::EqEq
            | Token::Ne
            | Token::Lt
            | Token::Gt
            | Token::Le
            | Token::Ge
            | Token::Plus
            | Token::Minus
            | Token::Star
            | Token::Slash
            | Token::LBracket
            | Token::Dot
    )
}

fn hint_for(found: &Token) -> Option<String> {
    match found {
        Token::Dot => Some(
            "only a name can start a path: read a field of a computed value with `get(value, \"field\")`"
                .to_string(),
        ),
        Token::Arrow => Some(
            "a lambda `x -> …` is only allowed as the second argument of map, filter, all, any or find"
                .to_string(),
        ),
        Token::EqEq | Token::Ne | Token::Lt | Token::Gt | Token::Le | Token::Ge => Some(
            "comparisons do not chain: write `a < b and b < c`".to_string(),
        ),
        _ => None,
    }
}

fn span_of(s: SimpleSpan) -> Range<usize> {
    s.into_range()
}

fn combinators_help(name: &str) -> String {
    let names = Combinator::ALL.map(Combinator::name);
    match pipewright_syntax::suggest::did_you_mean(name, names) {
        Some(c) => format!("did you mean `{c}`?"),
        None => format!(
            "the combinators are {}",
            names.map(|n| format!("`{n}`")).join(", ")
        ),
    }
}

fn expr_parser<'t, I>() -> impl Parser<'t, I, Expr, Err<'t>>
where
    I: ValueInput<'t, Token = Token, Span = SimpleSpan>,
{
    recursive(|expr| {
        let seg_name = select! {
            Token::Ident(s) => s,
            Token::True => "true".to_string(),
            Token::False => "false".to_string(),
            Token::Null => "null".to_string(),
            Token::And => "and".to_string(),
            Token::Or => "or".to_string(),
            Token::Not => "not".to_string(),
        };
        let number_seg = select! {
            Token::Int(n) => n.to_string(),
            Token::Float(x) => x.to_string(),
        }
        .validate(|s: String, e, emitter| {
            emitter.emit(custom(
                span_of(e.span()),
                codes::NO_INDEXING,
                "path segments must be names: R1 has no indexing",
                "not a field name",
                Some(indexing_help()),
            ));
            s
        });
        let segment = just(Token::Dot).ignore_then(
            seg_name
                .or(number_seg)
                .map_with(|s, e| (s, span_of(e.span())))
                .labelled("field name"),
        );

        let literal = select! {
            Token::Int(n) => ExprKind::Int(n),
            Token::Float(x) => ExprKind::Float(x),
            Token::Str(s) => ExprKind::Str(s.into()),
            Token::True => ExprKind::Bool(true),
            Token::False => ExprKind::Bool(false),
            Token::Null => ExprKind::Null,
        }
        .map_with(|k, e| Expr::new(k, span_of(e.span())))
        .labelled("value");

        let param = select! {
            Token::Ident(s) => (s, false),
            Token::True => ("true".to_string(), true),
            Token::False => ("false".to_string(), true),
            Token::Null => ("null".to_string(), true),
            Token::And => ("and".to_string(), true),
            Token::Or => ("or".to_string(), true),
            Token::Not => ("not".to_string(), true),
        }
        .map_with(|p, e| (p, span_of(e.span())));
        let lambda = param
            .then_ignore(just(Token::Arrow))
            .then(expr.clone())
            .validate(
                |(((name, is_kw), pspan), body): (((String, bool), Range<usize>), Expr),
                 _,
                 emitter| {
                    if is_kw {
                        emitter.emit(custom(
                            pspan.clone(),
                            codes::KEYWORD,
                            format!("lambda parameter cannot be keyword `{name}`"),
                            "a keyword",
                            Some("pick another name, such as `x`".to_string()),
                        ));
                    }
                    let span = pspan.start..body.span.range().end;
                    Expr::new(
                        ExprKind::Lambda {
                            param: name.into(),
                            param_span: pspan.into(),
                            body: Box::new(body),
                        },
                        span,
                    )
                },
            );

        let list = expr
            .clone()
            .separated_by(just(Token::Comma))
            .collect::<Vec<_>>()
            .delimited_by(just(Token::LBracket), just(Token::RBracket))
            .map_with(|items, e| Expr::new(ExprKind::List(items), span_of(e.span())));

        let key = select! {
            Token::Ident(s) => s,
            Token::True => "true".to_string(),
            Token::False => "false".to_string(),
            Token::Null => "null".to_string(),
            Token::And => "and".to_string(),
            Token::Or => "or".to_string(),
            Token::Not => "not".to_string(),
        }
        .or(
            select! { Token::Str(s) => s }.validate(|s: String, e, emitter| {
                emitter.emit(custom(
                    span_of(e.span()),
                    codes::SYNTAX,
                    "object keys must be bare names, not quoted strings",
                    "quoted key",
                    Some(format!("write `{s}: …` without quotes")),
                ));
                s
            }),
        )
        .map_with(|k, e| (k, span_of(e.span())))
        .labelled("object key");
        let object = key
            .then_ignore(just(Token::Colon))
            .then(expr.clone())
            .map(|((k, r), v): ((String, Range<usize>), Expr)| (k.into(), r.into(), v))
            .separated_by(just(Token::Comma))
            .collect::<Vec<_>>()
            .delimited_by(just(Token::LBrace), just(Token::RBrace))
            .map_with(|fields, e| Expr::new(ExprKind::Object(fields), span_of(e.span())));

        let arg = lambda.clone().or(expr.clone());
        let call = select! { Token::Ident(s) => s }
            .map_with(|s, e| (s, span_of(e.span())))
            .then(
                arg.separated_by(just(Token::Comma))
                    .collect::<Vec<_>>()
                    .map(Some)
                    .delimited_by(just(Token::LParen), just(Token::RParen))
                    .recover_with(via_parser(nested_delimiters(
                        Token::LParen,
                        Token::RParen,
                        [
                            (Token::LBracket, Token::RBracket),
                            (Token::LBrace, Token::RBrace),
                        ],
                        |_| None,
                    ))),
            )
            .validate(|((name, nspan), args), e, emitter| {
                let span = span_of(e.span());
                match args {
                    Some(args) => build_call(name, nspan, args, span, emitter),
                    None => Expr::new(ExprKind::Error, span),
                }
            });

        let path = select! { Token::Ident(s) => s }
            .map_with(|s, e| (s, span_of(e.span())))
            .then(segment.repeated().collect::<Vec<_>>())
            .map(|((root, rspan), segments)| {
                let end = segments
                    .last()
                    .map_or(rspan.end, |(_, r): &(String, Range<usize>)| r.end);
                Expr::new(
                    ExprKind::Path {
                        root: root.into(),
                        segments: segments
                            .into_iter()
                            .map(|(s, r)| (s.into(), r.into()))
                            .collect(),
                    },
                    rspan.start..end,
                )
            });

        let paren = expr
            .clone()
            .delimited_by(just(Token::LParen), just(Token::RParen))
            .map_with(|inner: Expr, e| Expr::new(take_kind(inner), span_of(e.span())));

        let misplaced_lambda = lambda.validate(|l: Expr, _, emitter| {
            emitter.emit(custom(
                l.span.range(),
                codes::LAMBDA,
                "a lambda is only allowed as the second argument of map, filter, all, any or find",
                "lambda used as a value",
                Some(
                    "lambdas are not values: write e.g. `map(ctx.items, x -> x.name)`".to_string(),
                ),
            ));
            Expr::new(ExprKind::Error, l.span.range())
        });

        let bad_keyword =
            select! { Token::And => "and", Token::Or => "or" }.validate(|k, e, emitter| {
                emitter.emit(custom(
                    span_of(e.span()),
                    codes::KEYWORD,
                    format!("keyword `{k}` used as an expression"),
                    "an operator, not a value",
                    Some(format!("`{k}` needs an operand on each side: `a {k} b`")),
                ));
                Expr::new(ExprKind::Error, span_of(e.span()))
            });

        let base = choice((
            literal,
            paren,
            list,
            object,
            misplaced_lambda,
            call,
            path,
            bad_keyword,
            select! { Token::Invalid => () }
                .map_with(|_, e| Expr::new(ExprKind::Error, span_of(e.span()))),
        ))
        .recover_with(via_parser(nested_delimiters(
            Token::LParen,
            Token::RParen,
            [
                (Token::LBracket, Token::RBracket),
                (Token::LBrace, Token::RBrace),
            ],
            |s| Expr::new(ExprKind::Error, span_of(s)),
        )))
        .recover_with(via_parser(nested_delimiters(
            Token::LBracket,
            Token::RBracket,
            [
                (Token::LParen, Token::RParen),
                (Token::LBrace, Token::RBrace),
            ],
            |s| Expr::new(ExprKind::Error, span_of(s)),
        )))
        .boxed();

        // A lambda (`x -> body`) ends where its body does, so whatever follows a body that
        // failed to continue it (a `[…]`, an operator and its operand) is tried again by the
        // level around the lambda, and again for every enclosing lambda: exponential on bad
        // input. Each such continuation (here and the operator tails below) remembers its
        // failure at a position, so it is parsed once.
        let index = expr
            .clone()
            .delimited_by(just(Token::LBracket), just(Token::RBracket))
            .map_with(|_, e| span_of(e.span()))
            .memoized();
        let primary = base
            .clone()
            .then(index.repeated().collect::<Vec<_>>())
            .validate(|(e, idx): (Expr, Vec<Range<usize>>), _, emitter| {
                for r in idx {
                    emitter.emit(custom(
                        r,
                        codes::NO_INDEXING,
                        "R1 has no indexing; use find(...) or get(...)",
                        "indexing is not supported",
                        Some(indexing_help()),
                    ));
                }
                e
            });

        // `1 == not x`: report it, and parse the operand so the rest of the input still makes sense.
        let not_operand = just(Token::Not)
            .map_with(|_, e| span_of(e.span()))
            .then(primary.clone())
            .validate(|(kw, operand): (Range<usize>, Expr), _, emitter| {
                emitter.emit(custom(
                    kw.clone(),
                    codes::KEYWORD,
                    "keyword `not` used as an operand",
                    "`not` binds more loosely than comparisons and arithmetic",
                    Some("wrap it in parentheses: `(not x)`".to_string()),
                ));
                Expr::new(ExprKind::Error, kw.start..operand.span.range().end)
            });
        let primary = primary.or(not_operand).labelled("expression").boxed();

        let unary = just(Token::Minus)
            .map_with(|_, e| span_of(e.span()))
            .repeated()
            .foldr_with(primary, |op: Range<usize>, e: Expr, _| {
                let span = op.start..e.span.range().end;
                Expr::new(ExprKind::Neg(Box::new(e)), span)
            })
            .labelled("expression")
            .boxed();

        let mul_op = select! { Token::Star => BinOp::Mul, Token::Slash => BinOp::Div };
        let product = unary
            .clone()
            .foldl_with(mul_op.then(unary).memoized().repeated(), |l, (op, r), _| {
                binary(op, l, r)
            })
            .boxed();
        let add_op = select! { Token::Plus => BinOp::Add, Token::Minus => BinOp::Sub };
        let sum = product
            .clone()
            .foldl_with(
                add_op.then(product).memoized().repeated(),
                |l, (op, r), _| binary(op, l, r),
            )
            .boxed();
        let cmp_op = select! {
            Token::EqEq => BinOp::Eq,
            Token::Ne => BinOp::Ne,
            Token::Lt => BinOp::Lt,
            Token::Gt => BinOp::Gt,
            Token::Le => BinOp::Le,
            Token::Ge => BinOp::Ge,
        }
        .map_with(|op, e| (op, span_of(e.span())));
        let comparison = sum
            .clone()
            .then(cmp_op.then(sum).memoized().repeated().collect::<Vec<_>>())
            .validate(|(first, rest): (Expr, CmpRest), _, emitter| {
                let mut acc = first;
                for (i, ((op, op_span), r)) in rest.into_iter().enumerate() {
                    if i == 1 {
                        emitter.emit(custom(
                            op_span,
                            codes::CHAINED_COMPARISON,
                            "comparison operators cannot be chained",
                            "second comparison",
                            Some(
                                "R1 comparisons are non-associative: write `a < b and b < c`"
                                    .to_string(),
                            ),
                        ));
                    }
                    acc = binary(op, acc, r);
                }
                acc
            })
            .boxed();
        let not = just(Token::Not)
            .map_with(|_, e| span_of(e.span()))
            .repeated()
            .foldr_with(comparison, |op: Range<usize>, e: Expr, _| {
                let span = op.start..e.span.range().end;
                Expr::new(ExprKind::Not(Box::new(e)), span)
            })
            .boxed();
        let conj = not
            .clone()
            .foldl_with(
                just(Token::And).ignore_then(not).memoized().repeated(),
                |l, r, _| binary(BinOp::And, l, r),
            )
            .boxed();
        conj.clone()
            .foldl_with(
                just(Token::Or).ignore_then(conj).memoized().repeated(),
                |l, r, _| binary(BinOp::Or, l, r),
            )
            .labelled("expression")
            // A call argument is tried as a lambda, then as an expression, which tries a
            // misplaced lambda: the same body twice per nested call. A failed body is not
            // parsed again.
            .memoized()
    })
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

fn indexing_help() -> String {
    "R1 has no list indexing: use `find(list, x -> …)` to pick an element, or `get(obj, \"a.b\")` \
     for safe field access"
        .to_string()
}

fn build_call(
    name: String,
    name_span: Range<usize>,
    args: Vec<Expr>,
    span: Range<usize>,
    emitter: &mut chumsky::input::Emitter<Rich<'_, Token, SimpleSpan, Custom>>,
) -> Expr {
    let Some(func) = Combinator::from_name(&name) else {
        emitter.emit(custom(
            name_span,
            codes::UNKNOWN_FUNCTION,
            format!("`{name}` is not a combinator"),
            "unknown function",
            Some(format!(
                "{} (arbitrary function calls are not part of R1)",
                combinators_help(&name)
            )),
        ));
        return Expr::new(ExprKind::Error, span);
    };
    let (min, max) = func.arity();
    let mut ok = true;
    if args.len() < min || args.len() > max {
        let expected = if min == max {
            format!("{min}")
        } else {
            format!("{min} or {max}")
        };
        let range = if args.len() > max {
            args[max].span.range().start..args[args.len() - 1].span.range().end
        } else {
            span.clone()
        };
        emitter.emit(custom(
            range,
            codes::ARITY,
            format!(
                "`{}` takes {expected} argument{}, but {} {} given",
                func.name(),
                if max == 1 { "" } else { "s" },
                args.len(),
                if args.len() == 1 { "was" } else { "were" }
            ),
            if args.len() > max {
                "extra arguments"
            } else {
                "missing arguments"
            },
            Some(format!("usage: {}", func.signature())),
        ));
        ok = false;
    }
    for (i, a) in args.iter().enumerate() {
        let is_lambda = matches!(a.kind, ExprKind::Lambda { .. });
        let wants_lambda = func.takes_lambda() && i == 1;
        if is_lambda && !wants_lambda {
            emitter.emit(custom(
                a.span.range(),
                codes::LAMBDA,
                format!("`{}` does not take a lambda here", func.name()),
                "lambda not allowed here",
                Some(format!("usage: {}", func.signature())),
            ));
            ok = false;
        } else if wants_lambda && !is_lambda && !matches!(a.kind, ExprKind::Error) {
            emitter.emit(custom(
                a.span.range(),
                codes::LAMBDA,
                format!("the second argument of `{}` must be a lambda", func.name()),
                "expected `x -> …`",
                Some(format!(
                    "usage: {}; lambdas are written inline, they are not values",
                    func.signature()
                )),
            ));
            ok = false;
        }
    }
    if func == Combinator::Get {
        if let Some(p) = args.get(1) {
            if !matches!(
                p.kind,
                ExprKind::Str(_) | ExprKind::Lambda { .. } | ExprKind::Error
            ) {
                emitter.emit(custom(
                    p.span.range(),
                    codes::GET_PATH,
                    "the path argument of `get` must be a string literal",
                    "not a string literal",
                    Some(
                        "write the dotted path literally: `get(ctx, \"a.b\", default)`".to_string(),
                    ),
                ));
                ok = false;
            }
        }
    }
    if ok {
        Expr::new(ExprKind::Call { func, args }, span)
    } else {
        Expr::new(ExprKind::Error, span)
    }
}

/// A parenthesised expression is the inner expression with the parentheses' span.
fn take_kind(mut inner: Expr) -> ExprKind {
    std::mem::replace(&mut inner.kind, ExprKind::Null)
}
