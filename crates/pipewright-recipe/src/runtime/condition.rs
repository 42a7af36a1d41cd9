//! The runner's condition evaluator (`evaluate_condition`, notes §3) and the two ways it is
//! reached (§3.6). Variables are pasted into the text first (strings quoted), then the text is
//! tokenized and evaluated; positions in messages count characters, as Python does.

use super::py::{is_py_space, py_float, py_str, py_strip};
use super::render::{render, RenderError};
use super::Context;
use crate::template::{substitute, VarRef};
use crate::value::Value;
use std::fmt;

/// Parentheses and `not` deeper than this are an error (Python's recursion limit would stop
/// it near 1000 with a `RecursionError`; this keeps the stack bounded).
const MAX_DEPTH: usize = 200;

/// Why a condition could not be evaluated. The two kinds matter for `break_when`: an
/// expression error is a warning there and the loop continues, a render error fails the step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConditionError {
    /// The runner's `ExpressionError`: an undefined or null variable pasted by the evaluator
    /// (`Undefined variable: <path>`) or a syntax error (`Invalid expression: <detail>`).
    Expression(String),
    /// The renderer's `ValueError` at a site that renders first (`Undefined variable: {{x}}.
    /// Available variables: …`).
    Render(String),
}

impl ConditionError {
    pub fn message(&self) -> &str {
        match self {
            ConditionError::Expression(m) | ConditionError::Render(m) => m,
        }
    }
}

impl fmt::Display for ConditionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ConditionError {}

impl From<RenderError> for ConditionError {
    fn from(e: RenderError) -> Self {
        ConditionError::Render(e.0)
    }
}

/// A top-level step `condition` (flat or staged): the evaluator pastes values itself, strings
/// inside quotes. The caller reports an error as `Step '<id>': condition error: <msg>`.
pub fn condition_top_level(src: &str, ctx: &Context) -> Result<bool, ConditionError> {
    if py_strip(src).is_empty() {
        return Ok(true);
    }
    let text = substitute(src, |v: &VarRef, out| paste(v, ctx, out))?;
    let text = py_strip(&text);
    if text.is_empty() {
        return Ok(true);
    }
    evaluate(text).map_err(|d| ConditionError::Expression(format!("Invalid expression: {d}")))
}

/// `while_condition`, `break_when` and a condition of a sub-step in a loop body: the template
/// renderer runs first (strings inserted without quotes, null as `None`), then the evaluator.
/// So `'{{s}}' == 'done'` is the way to compare a string there, an empty value makes the whole
/// condition true, and a value containing `'` breaks it.
pub fn condition_rendered(src: &str, ctx: &Context) -> Result<bool, ConditionError> {
    let rendered = render(src, ctx)?;
    condition_top_level(&rendered, ctx)
}

/// What `break_when` decides after an iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BreakWhen {
    Break,
    Continue,
    /// An expression error: the runner emits a progress warning with this message and the
    /// loop continues.
    Warning(String),
}

/// Evaluates `break_when` (rendered site); only a render error (an undefined variable) is an
/// `Err`, which fails the step.
pub fn break_when(src: &str, ctx: &Context) -> Result<BreakWhen, RenderError> {
    match condition_rendered(src, ctx) {
        Ok(true) => Ok(BreakWhen::Break),
        Ok(false) => Ok(BreakWhen::Continue),
        Err(ConditionError::Expression(m)) => Ok(BreakWhen::Warning(m)),
        Err(ConditionError::Render(m)) => Err(RenderError(m)),
    }
}

/// The evaluator's own substitution: through mappings only; missing or null is undefined.
fn paste(v: &VarRef, ctx: &Context, out: &mut String) -> Result<(), ConditionError> {
    let undefined = || ConditionError::Expression(format!("Undefined variable: {}", v.dotted()));
    let (first, rest) = v.path.split_first().ok_or_else(undefined)?;
    let mut cur = ctx.get(first).ok_or_else(undefined)?;
    for part in rest {
        cur = match cur {
            Value::Map(m) => m.get(part).ok_or_else(undefined)?,
            _ => return Err(undefined()),
        };
    }
    match cur {
        Value::Null => return Err(undefined()),
        Value::Str(s) => {
            out.push('\'');
            out.push_str(&s.replace('\\', "\\\\").replace('\'', "\\'"));
            out.push('\'');
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        other => out.push_str(&py_str(other)),
    }
    Ok(())
}

/// Why substituted condition text is not an expression: the detail after `Invalid
/// expression: `, in the runner's words. Positions count characters, or tokens for
/// `UnexpectedToken`, as the runner's do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum SyntaxError {
    #[error("Unterminated string literal starting at position {0}")]
    UnterminatedString(usize),
    #[error("Unexpected character '{found}' at position {at}")]
    UnexpectedCharacter { found: char, at: usize },
    #[error("expression nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("Unexpected end of expression")]
    UnexpectedEnd,
    #[error("Expected ')' to close parenthesized expression")]
    UnclosedParen,
    #[error("Unexpected keyword '{0}' where value expected")]
    KeywordForValue(String),
    #[error("Unexpected operator '{0}' where value expected")]
    OperatorForValue(String),
    /// Text left over after a whole expression.
    #[error("Unexpected token '{token}' at position {at}")]
    UnexpectedToken { token: String, at: usize },
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A quoted literal as written, quotes included.
    Str(String),
    Word(String),
    Op(&'static str),
    LParen,
    RParen,
}

impl Tok {
    fn text(&self) -> &str {
        match self {
            Tok::Str(s) | Tok::Word(s) => s,
            Tok::Op(o) => o,
            Tok::LParen => "(",
            Tok::RParen => ")",
        }
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '.'
}

fn tokenize(text: &str) -> Result<Vec<Tok>, SyntaxError> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if is_py_space(c) {
            i += 1;
        } else if c == '\'' || c == '"' {
            let start = i;
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(SyntaxError::UnterminatedString(start)),
                    Some('\\') => i += 2,
                    Some(&d) if d == c => break,
                    Some(_) => i += 1,
                }
            }
            i += 1;
            toks.push(Tok::Str(chars[start..i].iter().collect()));
        } else if c == '(' {
            toks.push(Tok::LParen);
            i += 1;
        } else if c == ')' {
            toks.push(Tok::RParen);
            i += 1;
        } else if let Some(op) = match (c, next) {
            ('=', Some('=')) => Some("=="),
            ('!', Some('=')) => Some("!="),
            ('>', Some('=')) => Some(">="),
            ('<', Some('=')) => Some("<="),
            _ => None,
        } {
            toks.push(Tok::Op(op));
            i += 2;
        } else if c == '<' || c == '>' {
            toks.push(Tok::Op(if c == '<' { "<" } else { ">" }));
            i += 1;
        } else if is_word_char(c) {
            let start = i;
            while chars.get(i).is_some_and(|&d| is_word_char(d)) {
                i += 1;
            }
            toks.push(Tok::Word(chars[start..i].iter().collect()));
        } else {
            return Err(SyntaxError::UnexpectedCharacter { found: c, at: i });
        }
    }
    Ok(toks)
}

/// An operand reduced to the text it compares as.
fn operand_text(t: &Tok) -> String {
    match t {
        Tok::Str(s) => {
            let inner: String = {
                let mut cs = s.chars();
                cs.next();
                cs.next_back();
                cs.collect()
            };
            inner
                .replace("\\'", "'")
                .replace("\\\"", "\"")
                .replace("\\\\", "\\")
        }
        Tok::Word(w) if w.eq_ignore_ascii_case("true") || w.eq_ignore_ascii_case("false") => {
            w.to_ascii_lowercase()
        }
        other => other.text().to_owned(),
    }
}

const FALSY: &[&str] = &["false", "False", "", "0", "none", "None"];

fn compare(l: &str, op: &str, r: &str) -> bool {
    if let (Some(x), Some(y)) = (py_float(l), py_float(r)) {
        return match op {
            "==" => x == y,
            "!=" => x != y,
            "<" => x < y,
            ">" => x > y,
            "<=" => x <= y,
            _ => x >= y,
        };
    }
    match op {
        "==" => l == r,
        "!=" => l != r,
        "<" => l < r,
        ">" => l > r,
        "<=" => l <= r,
        _ => l >= r,
    }
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek_word(&self, w: &str) -> bool {
        matches!(self.toks.get(self.pos), Some(Tok::Word(x)) if x == w)
    }

    fn descend(&mut self) -> Result<(), SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(SyntaxError::TooDeep);
        }
        Ok(())
    }

    fn or_expr(&mut self) -> Result<bool, SyntaxError> {
        let mut v = self.and_expr()?;
        while self.peek_word("or") {
            self.pos += 1;
            let r = self.and_expr()?;
            v = v || r;
        }
        Ok(v)
    }

    fn and_expr(&mut self) -> Result<bool, SyntaxError> {
        let mut v = self.not_expr()?;
        while self.peek_word("and") {
            self.pos += 1;
            let r = self.not_expr()?;
            v = v && r;
        }
        Ok(v)
    }

    fn not_expr(&mut self) -> Result<bool, SyntaxError> {
        if self.peek_word("not") {
            self.pos += 1;
            self.descend()?;
            let v = self.not_expr()?;
            self.depth -= 1;
            return Ok(!v);
        }
        let left = self.atom()?;
        if let Some(Tok::Op(op)) = self.toks.get(self.pos) {
            let op = *op;
            self.pos += 1;
            let right = self.atom()?;
            return Ok(compare(&left, op, &right));
        }
        Ok(!FALSY.contains(&left.as_str()))
    }

    fn atom(&mut self) -> Result<String, SyntaxError> {
        let Some(t) = self.toks.get(self.pos).cloned() else {
            return Err(SyntaxError::UnexpectedEnd);
        };
        self.pos += 1;
        match t {
            Tok::LParen => {
                self.descend()?;
                let v = self.or_expr()?;
                self.depth -= 1;
                if self.toks.get(self.pos) != Some(&Tok::RParen) {
                    return Err(SyntaxError::UnclosedParen);
                }
                self.pos += 1;
                Ok(if v { "true" } else { "false" }.into())
            }
            Tok::Word(w) if matches!(w.as_str(), "and" | "or" | "not") => {
                Err(SyntaxError::KeywordForValue(w))
            }
            Tok::Op(_) | Tok::RParen => Err(SyntaxError::OperatorForValue(t.text().to_owned())),
            other => Ok(operand_text(&other)),
        }
    }
}

/// Tokenizes and evaluates substituted, stripped, non-empty text; the error is the detail
/// that follows `Invalid expression: `.
fn evaluate(text: &str) -> Result<bool, SyntaxError> {
    let toks = tokenize(text)?;
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
    };
    let v = p.or_expr()?;
    if let Some(t) = p.toks.get(p.pos) {
        return Err(SyntaxError::UnexpectedToken {
            token: t.text().to_owned(),
            at: p.pos,
        });
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_says_what_was_found_where() {
        assert_eq!(
            evaluate("1 < 2 < 3"),
            Err(SyntaxError::UnexpectedToken {
                token: "<".into(),
                at: 3
            })
        );
        assert_eq!(
            evaluate("1 = 1"),
            Err(SyntaxError::UnexpectedCharacter { found: '=', at: 2 })
        );
        let deep = format!(
            "{}a{}",
            "(".repeat(MAX_DEPTH + 1),
            ")".repeat(MAX_DEPTH + 1)
        );
        assert_eq!(evaluate(&deep), Err(SyntaxError::TooDeep));
        assert_eq!(
            SyntaxError::TooDeep.to_string(),
            "expression nested deeper than 200 levels"
        );
    }
}
