//! The condition language of `condition`, `while_condition` and `break_when`
//! (grammar: `grammar/recipe-condition.ebnf`).
//!
//! Unlike the reference runner, which pastes variable values into the text and then tokenizes
//! the result (so a value containing a quote or a bracket breaks the expression at run time),
//! variables here are operands of their own: the expression is parsed once, at check time.
//! [`crate::runtime`] has the runner's own evaluator.
//!
//! Where a condition is written matters for a `{{var}}` inside quotes ([`Site`]): a step's own
//! `condition` is evaluated as written, so the runner pastes a string value with its own quotes
//! (`'{{s}}'` becomes `''done''` and breaks); `while_condition`, `break_when` and the
//! conditions of steps in a loop's `steps:` body are rendered as a template first, so
//! `'{{s}}' == 'done'` is the way to compare a value as text there.

use crate::codes;
use crate::issue::{is_word, lookup, path_len, Issue};
use crate::template::VarRef;
use crate::value::Value;
use std::ops::Range;

/// Nesting limit for parentheses and `not`, so no input can overflow the stack.
pub const MAX_DEPTH: usize = 128;

/// Where a condition is written (notes §3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Site {
    /// A step's own `condition` (flat or staged): a reference inside quotes is reported.
    #[default]
    TopLevel,
    /// `while_condition`, `break_when`, and a `condition` of a step inside a loop's `steps:`
    /// body: the text is rendered first, so a reference inside quotes is the value as text.
    Rendered,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

impl CmpOp {
    pub fn as_str(&self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Gt => ">",
            CmpOp::Le => "<=",
            CmpOp::Ge => ">=",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Var(VarRef),
    Str { value: String, range: Range<usize> },
    Num { text: String, range: Range<usize> },
    Bool { value: bool, range: Range<usize> },
    Not(Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Cmp(Box<Expr>, CmpOp, Box<Expr>),
    Group(Box<Expr>),
}

impl Expr {
    /// Every variable reference, in source order.
    pub fn vars(&self) -> Vec<&VarRef> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            match e {
                Expr::Var(v) => out.push(v),
                Expr::Str { .. } | Expr::Num { .. } | Expr::Bool { .. } => {}
                Expr::Not(x) | Expr::Group(x) => stack.push(x),
                Expr::And(xs) | Expr::Or(xs) => stack.extend(xs.iter().rev()),
                Expr::Cmp(a, _, b) => {
                    stack.push(b);
                    stack.push(a);
                }
            }
        }
        out
    }
}

/// One conjunct of a condition (the condition holds only when every conjunct does), as a
/// canonical text and the variable roots it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conjunct {
    /// Equal for conditions that evaluate alike whatever the variables hold: quotes, blanks,
    /// parentheses, the case of `true`/`false`, operand order of `==`/`!=`, `a > b` vs `b < a`
    /// and the order of `and`/`or` operands do not matter.
    pub canonical: String,
    pub roots: Vec<String>,
}

/// The top-level `and` operands of `e` (through parentheses), canonicalized, sorted, without
/// duplicates.
pub fn conjuncts(e: &Expr) -> Vec<Conjunct> {
    let mut parts = Vec::new();
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        match x {
            Expr::And(xs) => stack.extend(xs.iter()),
            Expr::Group(inner) => stack.push(inner),
            other => parts.push(other),
        }
    }
    let mut out: Vec<Conjunct> = parts
        .into_iter()
        .map(|p| {
            let mut roots: Vec<String> = p.vars().iter().map(|v| v.path[0].clone()).collect();
            roots.sort_unstable();
            roots.dedup();
            Conjunct {
                canonical: canon_truth(p),
                roots,
            }
        })
        .collect();
    out.sort_unstable_by(|a, b| a.canonical.cmp(&b.canonical));
    out.dedup();
    out
}

/// `e` read as a truth value (parentheses are transparent there).
fn canon_truth(e: &Expr) -> String {
    match e {
        Expr::Group(x) => canon_truth(x),
        Expr::Not(x) => format!("not({})", canon_truth(x)),
        Expr::And(_) | Expr::Or(_) => {
            let is_and = matches!(e, Expr::And(_));
            let mut parts = Vec::new();
            let mut stack = vec![e];
            while let Some(x) = stack.pop() {
                match x {
                    Expr::And(xs) if is_and => stack.extend(xs.iter()),
                    Expr::Or(xs) if !is_and => stack.extend(xs.iter()),
                    Expr::Group(inner) => stack.push(inner),
                    other => parts.push(canon_truth(other)),
                }
            }
            parts.sort_unstable();
            parts.dedup();
            format!(
                "{}({})",
                if is_and { "and" } else { "or" },
                parts.join(", ")
            )
        }
        Expr::Cmp(a, op, b) => {
            let (l, r) = (canon_operand(a), canon_operand(b));
            // Both orderings (numeric and text) are total, so `a > b` is `b < a`.
            let (l, op, r) = match op {
                CmpOp::Eq | CmpOp::Ne if r < l => (r, *op, l),
                CmpOp::Gt => (r, CmpOp::Lt, l),
                CmpOp::Ge => (r, CmpOp::Le, l),
                _ => (l, *op, r),
            };
            format!("({l} {} {r})", op.as_str())
        }
        atom => format!("truthy({})", canon_operand(atom)),
    }
}

/// `e` as a comparison operand: literals by the text they compare as, so `true`, `True` and
/// `'true'` are one operand; a parenthesized operand is the truth value of its content.
fn canon_operand(e: &Expr) -> String {
    match e {
        Expr::Var(v) => format!("{{{{{}}}}}", v.dotted()),
        Expr::Str { value, .. } => format!("{value:?}"),
        Expr::Num { text, .. } => format!("{text:?}"),
        Expr::Bool { value, .. } => format!("{:?}", value.to_string()),
        other => format!("bool({})", canon_truth(other)),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Var(VarRef),
    Str(String),
    Num(String),
    Word(String),
    Op(CmpOp),
    LParen,
    RParen,
}

/// Parses a step's own `condition` ([`Site::TopLevel`]).
pub fn parse(src: &str) -> (Option<Expr>, Vec<Issue>) {
    parse_at(src, Site::TopLevel)
}

/// Parses a condition written at `site`. Lexical problems are all reported; parsing stops at
/// the first syntax error. Warnings (a variable written inside quotes at the top level) come
/// back alongside a successful parse. At a rendered site a quoted string that is exactly one
/// reference (`'{{s}}'`) is that variable; other quoted references stay in the text, which is
/// rendered when evaluated.
pub fn parse_at(src: &str, site: Site) -> (Option<Expr>, Vec<Issue>) {
    let (toks, mut issues) = lex(src, site);
    if issues.iter().any(Issue::is_error) {
        return (None, issues);
    }
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        depth: 0,
    };
    if p.toks.is_empty() {
        issues.push(
            Issue::error(codes::CONDITION_SYNTAX, 0..src.len(), "empty condition")
                .label("nothing to evaluate")
                .help("write a comparison such as `{{status}} == 'done'`, or remove the field"),
        );
        return (None, issues);
    }
    match p.or_expr() {
        Ok(e) => {
            if let Some((t, r)) = p.toks.get(p.pos) {
                let msg = match t {
                    Tok::Op(_) => {
                        "comparisons cannot be chained; combine them with `and`".to_string()
                    }
                    _ => format!(
                        "unexpected `{}` after a complete expression",
                        &src[r.clone()]
                    ),
                };
                issues.push(
                    Issue::error(codes::CONDITION_SYNTAX, r.clone(), msg)
                        .label("expected `and`, `or`, `)` or the end here"),
                );
                (None, issues)
            } else {
                (Some(e), issues)
            }
        }
        Err(e) => {
            issues.push(e);
            (None, issues)
        }
    }
}

fn lex(src: &str, site: Site) -> (Vec<(Tok, Range<usize>)>, Vec<Issue>) {
    let mut toks = Vec::new();
    let mut issues = Vec::new();
    let mut chars = src.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let two = src.get(i..i + 2).unwrap_or("");
        match c {
            c if c.is_whitespace() => {}
            '{' if two == "{{" => {
                let inner = &src[i + 2..];
                match path_len(inner).filter(|&n| inner[n..].starts_with("}}")) {
                    Some(n) => {
                        let path_range = i + 2..i + 2 + n;
                        let end = i + 2 + n + 2;
                        toks.push((
                            Tok::Var(VarRef {
                                path: src[path_range.clone()]
                                    .split('.')
                                    .map(str::to_owned)
                                    .collect(),
                                range: i..end,
                                path_range,
                            }),
                            i..end,
                        ));
                        skip_to(&mut chars, end);
                    }
                    None => {
                        let end = inner.find("}}").map_or(src.len(), |k| i + 2 + k + 2);
                        let content = src
                            .get(i + 2..end.saturating_sub(2).max(i + 2))
                            .unwrap_or("")
                            .trim();
                        let mut issue = Issue::error(
                            codes::CONDITION_SYNTAX,
                            i..end,
                            "malformed variable reference",
                        )
                        .label("expected `{{name}}` or `{{name.field}}`");
                        if path_len(content) == Some(content.len()) {
                            issue = issue.help(format!("write `{{{{{content}}}}}` without blanks"));
                        }
                        issues.push(issue);
                        skip_to(&mut chars, end);
                    }
                }
            }
            '\'' | '"' => {
                let mut value = String::new();
                let mut closed = None;
                while let Some((j, d)) = chars.next() {
                    if d == '\\' {
                        if let Some((_, e)) = chars.next() {
                            value.push(e);
                        }
                    } else if d == c {
                        closed = Some(j + 1);
                        break;
                    } else {
                        value.push(d);
                    }
                }
                match closed {
                    Some(end) => {
                        let raw_start = i + c.len_utf8();
                        let raw = &src[raw_start..end - c.len_utf8()];
                        let (tpl, _) = crate::template::parse(raw);
                        match (site, tpl.parts.as_slice()) {
                            (Site::Rendered, [crate::template::Part::Var(v)]) => {
                                let shift =
                                    |r: &Range<usize>| r.start + raw_start..r.end + raw_start;
                                toks.push((
                                    Tok::Var(VarRef {
                                        path: v.path.clone(),
                                        range: shift(&v.range),
                                        path_range: shift(&v.path_range),
                                    }),
                                    i..end,
                                ));
                            }
                            (Site::Rendered, _) => toks.push((Tok::Str(value), i..end)),
                            (Site::TopLevel, _) => {
                                if tpl.vars().next().is_some() {
                                    issues.push(
                                        Issue::warning(codes::QUOTED_VARIABLE, i..end, "variable reference inside a quoted string")
                                            .label("a string value is pasted here with its own quotes (`''done''`), which breaks the condition")
                                            .help("in a step's own `condition`, write the `{{var}}` without quotes; quotes are right only in `while_condition`, `break_when` and loop-body conditions, which are rendered first"),
                                    );
                                }
                                toks.push((Tok::Str(value), i..end));
                            }
                        }
                    }
                    None => issues.push(
                        Issue::error(
                            codes::CONDITION_SYNTAX,
                            i..i + c.len_utf8(),
                            "unterminated string literal",
                        )
                        .label("this quote is never closed"),
                    ),
                }
            }
            '(' => toks.push((Tok::LParen, i..i + 1)),
            ')' => toks.push((Tok::RParen, i..i + 1)),
            '=' | '!' | '<' | '>' => {
                let (op, len) = match two {
                    "==" => (Some(CmpOp::Eq), 2),
                    "!=" => (Some(CmpOp::Ne), 2),
                    "<=" => (Some(CmpOp::Le), 2),
                    ">=" => (Some(CmpOp::Ge), 2),
                    _ if c == '<' => (Some(CmpOp::Lt), 1),
                    _ if c == '>' => (Some(CmpOp::Gt), 1),
                    _ => (None, 1),
                };
                match op {
                    Some(op) => {
                        if len == 2 {
                            chars.next();
                        }
                        // `===`, `!==`, `<>` come from other languages.
                        if matches!(src.get(i + len..i + len + 1), Some("=")) || two == "<>" {
                            let end = i + len + 1;
                            issues.push(
                                Issue::error(
                                    codes::CONDITION_SYNTAX,
                                    i..end,
                                    format!("`{}` is not an operator", &src[i..end]),
                                )
                                .label("unknown operator")
                                .help("the comparison operators are ==, !=, <, >, <=, >="),
                            );
                            skip_to(&mut chars, end);
                        } else {
                            toks.push((Tok::Op(op), i..i + len));
                        }
                    }
                    None => issues.push(bad_char(src, i, c)),
                }
            }
            c if is_word(c) || c == '.' => {
                let mut end = i + c.len_utf8();
                while let Some(&(j, d)) = chars.peek() {
                    if is_word(d) || d == '.' {
                        end = j + d.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                let w = &src[i..end];
                let tok = if is_number(w) {
                    Tok::Num(w.to_owned())
                } else {
                    Tok::Word(w.to_owned())
                };
                toks.push((tok, i..end));
            }
            c if stray(c) => {
                // A run of such characters is one mistake (a pasted symbol, an encoding
                // accident), not one per character.
                let mut end = i + c.len_utf8();
                while let Some(&(j, d)) = chars.peek() {
                    if !stray(d) {
                        break;
                    }
                    end = j + d.len_utf8();
                    chars.next();
                }
                issues.push(stray_run(src, i..end));
            }
            _ => issues.push(bad_char(src, i, c)),
        }
    }
    (toks, issues)
}

/// A character that starts no token and has no advice of its own in [`bad_char`].
fn stray(c: char) -> bool {
    !c.is_whitespace()
        && !is_word(c)
        && !matches!(
            c,
            '.' | '{' | '\'' | '"' | '(' | ')' | '=' | '!' | '<' | '>' | '&' | '|' | '-'
        )
}

fn stray_run(src: &str, range: Range<usize>) -> Issue {
    // Quoted escaped (a control character must not reach the terminal as itself) and cut short.
    let text = &src[range.clone()];
    let mut shown: String = text.chars().take(16).flat_map(char::escape_debug).collect();
    if text.chars().nth(16).is_some() {
        shown.push('…');
    }
    let what = if text.chars().nth(1).is_some() {
        "these characters are"
    } else {
        "this character is"
    };
    Issue::error(
        codes::CONDITION_SYNTAX,
        range,
        format!("unexpected `{shown}` in a condition"),
    )
    .label(format!("{what} not allowed here"))
    .help("conditions contain `{{variables}}`, quoted strings, numbers, comparisons, `and`, `or`, `not` and parentheses")
}

fn skip_to(chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>, end: usize) {
    while chars.peek().is_some_and(|&(j, _)| j < end) {
        chars.next();
    }
}

fn bad_char(src: &str, i: usize, c: char) -> Issue {
    let two = src.get(i..i + 2).unwrap_or("");
    let (len, help) = match (c, two) {
        ('&', "&&") => (2, "write `and`"),
        ('|', "||") => (2, "write `or`"),
        ('!', _) => (1, "write `not` for negation, `!=` for inequality"),
        ('=', _) => (1, "equality is `==`"),
        ('-', _) => (1, "negative numbers and arithmetic are not part of the condition language"),
        _ => (c.len_utf8(), "conditions contain `{{variables}}`, quoted strings, numbers, comparisons, `and`, `or`, `not` and parentheses"),
    };
    Issue::error(
        codes::CONDITION_SYNTAX,
        i..i + len,
        format!("unexpected `{}` in a condition", &src[i..i + len]),
    )
    .label("not allowed here")
    .help(help)
}

/// A decimal number as the spec's grammar writes it (`[0-9]+ ("." [0-9]+)?`).
fn is_number(w: &str) -> bool {
    let (int, frac) = match w.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (w, None),
    };
    !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<(Tok, Range<usize>)>,
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(x)) if x == w)
    }

    fn end_range(&self) -> Range<usize> {
        let n = self.src.len();
        n..n
    }

    fn descend(&mut self) -> Result<(), Issue> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let r = self
                .toks
                .get(self.pos)
                .map_or(self.end_range(), |(_, r)| r.clone());
            return Err(Issue::error(
                codes::CONDITION_SYNTAX,
                r,
                format!("condition nested deeper than {MAX_DEPTH} levels"),
            )
            .label("too deep"));
        }
        Ok(())
    }

    fn or_expr(&mut self) -> Result<Expr, Issue> {
        let mut items = vec![self.and_expr()?];
        while self.is_word("or") {
            self.pos += 1;
            items.push(self.and_expr()?);
        }
        Ok(if items.len() == 1 {
            items.pop().unwrap_or(Expr::Bool {
                value: false,
                range: 0..0,
            })
        } else {
            Expr::Or(items)
        })
    }

    fn and_expr(&mut self) -> Result<Expr, Issue> {
        let mut items = vec![self.not_expr()?];
        while self.is_word("and") {
            self.pos += 1;
            items.push(self.not_expr()?);
        }
        Ok(if items.len() == 1 {
            items.pop().unwrap_or(Expr::Bool {
                value: false,
                range: 0..0,
            })
        } else {
            Expr::And(items)
        })
    }

    fn not_expr(&mut self) -> Result<Expr, Issue> {
        if self.is_word("not") {
            self.pos += 1;
            self.descend()?;
            let e = self.not_expr()?;
            self.depth -= 1;
            return Ok(Expr::Not(Box::new(e)));
        }
        let left = self.operand()?;
        if let Some(Tok::Op(op)) = self.peek().cloned() {
            self.pos += 1;
            let right = self.operand()?;
            return Ok(Expr::Cmp(Box::new(left), op, Box::new(right)));
        }
        Ok(left)
    }

    fn operand(&mut self) -> Result<Expr, Issue> {
        let Some((tok, range)) = self.toks.get(self.pos).cloned() else {
            return Err(Issue::error(
                codes::CONDITION_SYNTAX,
                self.end_range(),
                "the condition ends where a value is expected",
            )
            .label("expected a value here"));
        };
        self.pos += 1;
        match tok {
            Tok::Var(v) => Ok(Expr::Var(v)),
            Tok::Str(value) => Ok(Expr::Str { value, range }),
            Tok::Num(text) => Ok(Expr::Num { text, range }),
            Tok::Word(w) if w.eq_ignore_ascii_case("true") || w.eq_ignore_ascii_case("false") => {
                Ok(Expr::Bool {
                    value: w.eq_ignore_ascii_case("true"),
                    range,
                })
            }
            Tok::Word(w) if matches!(w.as_str(), "and" | "or" | "not") => Err(Issue::error(
                codes::CONDITION_SYNTAX,
                range,
                format!("`{w}` where a value is expected"),
            )
            .label("expected a value before this keyword")),
            Tok::Word(w) => {
                let lower = w.to_ascii_lowercase();
                let help = if matches!(lower.as_str(), "and" | "or" | "not") {
                    format!("keywords are lowercase: write `{lower}`")
                } else if path_len(&w) == Some(w.len()) {
                    format!("write `{{{{{w}}}}}` for a variable or `'{w}'` for text")
                } else {
                    format!("quote it: `'{w}'`")
                };
                Err(Issue::error(
                    codes::CONDITION_SYNTAX,
                    range,
                    format!("bare word `{w}` in a condition"),
                )
                .label("not a variable, string, number or boolean")
                .help(help))
            }
            Tok::LParen => {
                self.descend()?;
                let inner = self.or_expr()?;
                self.depth -= 1;
                match self.toks.get(self.pos) {
                    Some((Tok::RParen, _)) => {
                        self.pos += 1;
                        Ok(Expr::Group(Box::new(inner)))
                    }
                    other => {
                        let r = other.map_or(self.end_range(), |(_, r)| r.clone());
                        Err(Issue::error(codes::CONDITION_SYNTAX, r, "expected `)`")
                            .label("the group is not closed")
                            .help(format!("add `)` to close the `(` at byte {}", range.start)))
                    }
                }
            }
            Tok::Op(op) => Err(Issue::error(
                codes::CONDITION_SYNTAX,
                range,
                format!("`{}` where a value is expected", op.as_str()),
            )
            .label("expected a value before this operator")),
            Tok::RParen => Err(Issue::error(
                codes::CONDITION_SYNTAX,
                range,
                "`)` where a value is expected",
            )
            .label("nothing to close or an empty group")),
        }
    }
}

const FALSY: &[&str] = &["false", "False", "", "0", "none", "None"];

/// The text an operand compares as.
fn operand_text(e: &Expr, ctx: &Value, site: Site) -> Result<String, Issue> {
    Ok(match e {
        Expr::Var(v) => {
            let path: Vec<&str> = v.path.iter().map(String::as_str).collect();
            let value = lookup(ctx, &path).map_err(|m| {
                Issue::error(codes::UNDEFINED_VARIABLE, v.range.clone(), m)
                    .label("cannot be evaluated")
            })?;
            // Rendered first, the runner writes null as `None` (falsy); pasted by the
            // evaluator, null is undefined.
            if site == Site::Rendered {
                let mut s = String::new();
                crate::runtime::render_value_text(value, &mut s);
                return Ok(s);
            }
            if *value == Value::Null {
                return Err(Issue::error(
                    codes::UNDEFINED_VARIABLE,
                    v.range.clone(),
                    format!("`{}` is null", v.dotted()),
                )
                .label("a null value counts as undefined in conditions"));
            }
            let mut s = String::new();
            value.render(&mut s);
            s
        }
        Expr::Str { value, range } if site == Site::Rendered => {
            crate::template::substitute(value, |v, out| {
                let path: Vec<&str> = v.path.iter().map(String::as_str).collect();
                let found = lookup(ctx, &path).map_err(|m| {
                    Issue::error(codes::UNDEFINED_VARIABLE, range.clone(), m)
                        .label("cannot be rendered")
                })?;
                crate::runtime::render_value_text(found, out);
                Ok(())
            })?
        }
        Expr::Str { value, .. } => value.clone(),
        Expr::Num { text, .. } => text.clone(),
        Expr::Bool { value, .. } => value.to_string(),
        other => truth(other, ctx, site)?.to_string(),
    })
}

fn number(s: &str) -> Option<f64> {
    let t = s.trim();
    let ok = !t.is_empty()
        && t.bytes().any(|b| b.is_ascii_digit())
        && t.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if ok {
        t.parse().ok()
    } else {
        None
    }
}

fn truth(e: &Expr, ctx: &Value, site: Site) -> Result<bool, Issue> {
    match e {
        Expr::Not(x) => Ok(!truth(x, ctx, site)?),
        Expr::Group(x) => truth(x, ctx, site),
        // Every operand is evaluated, so an undefined variable is an error whatever the others.
        Expr::And(xs) => xs
            .iter()
            .try_fold(true, |acc, x| Ok(truth(x, ctx, site)? && acc)),
        Expr::Or(xs) => xs
            .iter()
            .try_fold(false, |acc, x| Ok(truth(x, ctx, site)? || acc)),
        Expr::Cmp(a, op, b) => {
            let (l, r) = (operand_text(a, ctx, site)?, operand_text(b, ctx, site)?);
            let ord = match (number(&l), number(&r)) {
                (Some(x), Some(y)) => x.partial_cmp(&y),
                _ => Some(l.cmp(&r)),
            };
            use std::cmp::Ordering::*;
            Ok(match op {
                CmpOp::Eq => ord == Some(Equal),
                CmpOp::Ne => ord != Some(Equal),
                CmpOp::Lt => ord == Some(Less),
                CmpOp::Gt => ord == Some(Greater),
                CmpOp::Le => matches!(ord, Some(Less | Equal)),
                CmpOp::Ge => matches!(ord, Some(Greater | Equal)),
            })
        }
        atom => Ok(!FALSY.contains(&operand_text(atom, ctx, site)?.as_str())),
    }
}

/// Evaluates a step's own condition against a JSON context; the result is a JSON boolean.
pub fn eval(src: &str, ctx: &serde_json::Value) -> Result<serde_json::Value, Issue> {
    eval_at(src, ctx, Site::TopLevel)
}

/// Evaluates a condition written at `site` against a JSON context.
pub fn eval_at(src: &str, ctx: &serde_json::Value, site: Site) -> Result<serde_json::Value, Issue> {
    eval_value_at(src, &Value::from(ctx), site).map(serde_json::Value::Bool)
}

/// Evaluates a step's own condition against a context.
pub fn eval_value(src: &str, ctx: &Value) -> Result<bool, Issue> {
    eval_value_at(src, ctx, Site::TopLevel)
}

/// Evaluates a condition written at `site` against a context.
pub fn eval_value_at(src: &str, ctx: &Value, site: Site) -> Result<bool, Issue> {
    let (expr, issues) = parse_at(src, site);
    match expr {
        Some(e) => truth(&e, ctx, site),
        None => Err(issues.into_iter().find(Issue::is_error).unwrap_or_else(|| {
            Issue::error(codes::CONDITION_SYNTAX, 0..src.len(), "invalid condition")
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(s: &str) -> Result<serde_json::Value, Issue> {
        eval(
            s,
            &json!({"s": "done", "n": "10", "t": true, "z": 0, "l": [], "d": {"k": "v"}, "nul": null}),
        )
    }

    #[test]
    fn semantics() {
        assert_eq!(ev("{{s}} == 'done'").unwrap(), json!(true));
        assert_eq!(ev("{{n}} > 9").unwrap(), json!(true));
        assert_eq!(ev("{{n}} > '9'").unwrap(), json!(true));
        assert_eq!(ev("'b' > 'a' and not {{z}}").unwrap(), json!(true));
        assert_eq!(ev("{{t}} == 'true'").unwrap(), json!(true));
        assert_eq!(
            ev("({{s}} == 'x' or {{t}}) and {{d.k}} == 'v'").unwrap(),
            json!(true)
        );
        assert_eq!(ev("{{l}} != '[]'").unwrap(), json!(false));
        assert_eq!(ev("1 == 1.0").unwrap(), json!(true));
        assert!(ev("{{missing}} or true").is_err());
        assert!(ev("{{nul}}").is_err());
    }

    #[test]
    fn quoted_references_by_site() {
        let ctx = json!({"s": "done", "n": 3, "nul": null});
        let at = |src: &str, site| eval_at(src, &ctx, site);
        assert_eq!(
            at("'{{s}}' == 'done'", Site::Rendered).ok(),
            Some(json!(true))
        );
        assert_eq!(
            at("'{{s}}' == 'done'", Site::TopLevel).ok(),
            Some(json!(false))
        );
        assert_eq!(
            at("'x-{{s}}' == 'x-done'", Site::Rendered).ok(),
            Some(json!(true))
        );
        assert_eq!(at("'{{n}}' < 10", Site::Rendered).ok(), Some(json!(true)));
        assert_eq!(
            at("'{{nul}}' == 'None'", Site::Rendered).ok(),
            Some(json!(true))
        );
        assert!(at("'x-{{nope}}' == 'x'", Site::Rendered).is_err());
        let warned = |site| {
            parse_at("'{{s}}' == 'done'", site)
                .1
                .iter()
                .any(|i| i.code == codes::QUOTED_VARIABLE)
        };
        assert!(warned(Site::TopLevel) && !warned(Site::Rendered));
        let vars = |site| {
            parse_at("'{{s}}' == 'done'", site).0.map(|e| {
                e.vars()
                    .iter()
                    .map(|v| (v.range.start, v.range.end))
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(vars(Site::Rendered), Some(vec![(1, 6)]));
        assert_eq!(vars(Site::TopLevel), Some(vec![]));
    }

    #[test]
    fn syntax_errors_point_at_the_character() {
        for (src, at) in [
            ("{{a}} = 'x'", 6),
            ("{{a}} == 'x", 9),
            ("{{a}} == x", 9),
            ("({{a}}", 6),
            ("{{a}} == 1 == 2", 11),
            ("{{ a }} == 1", 0),
            ("{{a}} && {{b}}", 6),
            ("{{a}} ==", 8),
        ] {
            let e = eval(src, &json!({})).unwrap_err();
            assert_eq!(e.range.start, at, "{src}: {e}");
            assert_eq!(e.code, codes::CONDITION_SYNTAX);
        }
    }

    fn canon(s: &str) -> Vec<String> {
        let e = parse(s).0.unwrap_or_else(|| panic!("{s} parses"));
        conjuncts(&e).into_iter().map(|c| c.canonical).collect()
    }

    #[test]
    fn conjuncts_equal_exactly_for_equivalent_spellings() {
        for (a, b) in [
            ("{{a}} == 'x'", "( \"x\"==  {{a}} )"),
            ("{{a}} > 3", "3 < {{a}}"),
            ("{{a}} >= 3", "(3 <= {{a}})"),
            ("{{t}} == true", "{{t}} == 'true'"),
            ("{{t}} == TRUE", "{{t}} == True"),
            ("{{a}} and ({{b}} or {{c}})", "({{c}} or {{b}}) and {{a}}"),
            ("{{a}} and {{a}}", "{{a}}"),
        ] {
            assert_eq!(canon(a), canon(b), "{a} vs {b}");
        }
        for (a, b) in [
            ("{{a}} == 'x'", "{{a}} != 'x'"),
            ("{{a}} < 3", "{{a}} > 3"),
            ("{{t}} == true", "{{t}} == 'True'"),
            ("{{a}} == 'x'", "{{a}} == 'X'"),
            ("{{a}}", "not {{a}}"),
            ("{{a}} or {{b}}", "{{a}} and {{b}}"),
            // A parenthesized operand compares as its truth value, not as the variable.
            ("({{a}}) == 'x'", "{{a}} == 'x'"),
            ("{{a.b}} == 1", "{{a}} == 1"),
        ] {
            assert_ne!(canon(a), canon(b), "{a} vs {b}");
        }
        assert_eq!(canon("{{a}} and {{b}} == 1").len(), 2);
        let c = conjuncts(
            &parse("{{x.y}} == {{z}} and {{x}}")
                .0
                .unwrap_or_else(|| panic!()),
        );
        let roots: Vec<&[String]> = c.iter().map(|c| c.roots.as_slice()).collect();
        assert!(roots.contains(&&["x".to_string(), "z".to_string()][..]));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let src = "(".repeat(10_000) + "1" + &")".repeat(10_000);
        assert!(parse(&src).0.is_none());
        let src = "not ".repeat(10_000) + "1";
        assert!(parse(&src).0.is_none());
    }
}
