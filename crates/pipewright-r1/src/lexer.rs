//! Tokens of R1. Misspellings borrowed from other languages (`&&`, `!`, `=`, `?`) are lexed as
//! real tokens so the parser can keep going as if the R1 spelling had been used, after the lexer
//! has reported a helpful error.

use crate::codes;
use crate::error::ParseError;
use logos::Logos;
use std::fmt;
use std::ops::Range;

#[derive(Logos, Debug, Clone, Copy, PartialEq)]
#[logos(skip r"[ \t\r\n]+")]
pub(crate) enum Raw {
    #[regex(r"[0-9]+")]
    Int,
    #[regex(r"[0-9]+\.[0-9]+")]
    Float,
    #[regex(r#"'([^'\\]|\\[^\n])*'"#)]
    #[regex(r#""([^"\\]|\\[^\n])*""#)]
    Str,
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*")]
    Ident,
    #[token("->")]
    Arrow,
    #[token(".")]
    Dot,
    #[token("==")]
    EqEq,
    #[token("!=")]
    Ne,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("&&")]
    #[token("&")]
    CAnd,
    #[token("||")]
    #[token("|")]
    COr,
    #[token("!")]
    CNot,
    #[token("=")]
    Assign,
    #[token("?")]
    Question,
}

/// A token with its decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Int(i64),
    Float(f64),
    Str(String),
    Ident(String),
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
    /// Stands for input the lexer rejected (already reported), so the parser does not report
    /// the gap a second time.
    Invalid,
}

impl Token {
    /// Whether a value-producing construct ends with this token (so a following `-` is binary
    /// and a following `[` is an attempt at indexing).
    pub fn ends_operand(&self) -> bool {
        matches!(
            self,
            Token::Int(_)
                | Token::Float(_)
                | Token::Str(_)
                | Token::Ident(_)
                | Token::True
                | Token::False
                | Token::Null
                | Token::RParen
                | Token::RBracket
                | Token::RBrace
        )
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Token::Int(n) => return write!(f, "number `{n}`"),
            Token::Float(x) => return write!(f, "number `{x:?}`"),
            Token::Str(_) => "a string",
            Token::Ident(name) => return write!(f, "name `{name}`"),
            Token::True => "`true`",
            Token::False => "`false`",
            Token::Null => "`null`",
            Token::And => "`and`",
            Token::Or => "`or`",
            Token::Not => "`not`",
            Token::Arrow => "`->`",
            Token::Dot => "`.`",
            Token::EqEq => "`==`",
            Token::Ne => "`!=`",
            Token::Le => "`<=`",
            Token::Ge => "`>=`",
            Token::Lt => "`<`",
            Token::Gt => "`>`",
            Token::LParen => "`(`",
            Token::RParen => "`)`",
            Token::LBracket => "`[`",
            Token::RBracket => "`]`",
            Token::LBrace => "`{`",
            Token::RBrace => "`}`",
            Token::Comma => "`,`",
            Token::Colon => "`:`",
            Token::Plus => "`+`",
            Token::Minus => "`-`",
            Token::Star => "`*`",
            Token::Slash => "`/`",
            Token::Invalid => "invalid input",
        };
        f.write_str(s)
    }
}

pub type Spanned = (Token, Range<usize>);

/// Splits `src` into tokens. Every lexical problem is reported; where the intent is obvious the
/// token is replaced by its R1 spelling so parsing can continue without cascading errors.
pub fn lex(src: &str) -> (Vec<Spanned>, Vec<ParseError>) {
    let mut tokens: Vec<Spanned> = Vec::new();
    let mut errors: Vec<ParseError> = Vec::new();
    // A `?` turns the next `:` at the same bracket depth into `or` (`c ? a : b` ≈ `c and a or b`).
    let mut pending_colon: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut lexer = Raw::lexer(src);
    while let Some(raw) = lexer.next() {
        let range = lexer.span();
        let text = lexer.slice();
        let tok = match raw {
            Ok(raw) => raw,
            Err(()) => {
                let Some(e) = bad_char(src, range.start) else {
                    continue;
                };
                let unterminated = e.code == codes::UNTERMINATED;
                let bad = e.range.clone();
                // Several bad characters in a row are one gap and one error.
                let joined =
                    matches!(tokens.last(), Some((Token::Invalid, r)) if r.end == range.start);
                match errors.last_mut() {
                    Some(last) if joined && last.range.end == range.start => {
                        last.range.end = bad.end
                    }
                    _ => errors.push(e),
                }
                match tokens.last_mut() {
                    Some((Token::Invalid, r)) if joined => r.end = bad.end,
                    _ => tokens.push((Token::Invalid, bad)),
                }
                if unterminated {
                    break;
                }
                continue;
            }
        };
        let token = match tok {
            Raw::Int => match text.parse::<i64>() {
                Ok(n) => Token::Int(n),
                Err(_) => {
                    errors.push(
                        ParseError::new(
                            range.clone(),
                            codes::INT_TOO_LARGE,
                            "integer literal is too large",
                            "does not fit in a 64-bit integer",
                        )
                        .with_help(format!(
                            "R1 integers range from {} to {}; write a float (`{text}.0`) if an approximation is fine",
                            i64::MIN,
                            i64::MAX
                        )),
                    );
                    Token::Int(0)
                }
            },
            Raw::Float => Token::Float(text.parse::<f64>().unwrap_or(f64::NAN)),
            Raw::Str => Token::Str(unescape(text)),
            Raw::Ident => match text {
                "true" => Token::True,
                "false" => Token::False,
                "null" => Token::Null,
                "and" => Token::And,
                "or" => Token::Or,
                "not" => Token::Not,
                _ => Token::Ident(text.to_string()),
            },
            Raw::Arrow => Token::Arrow,
            Raw::Dot => Token::Dot,
            Raw::EqEq => Token::EqEq,
            Raw::Ne => Token::Ne,
            Raw::Le => Token::Le,
            Raw::Ge => Token::Ge,
            Raw::Lt => Token::Lt,
            Raw::Gt => Token::Gt,
            Raw::LParen => Token::LParen,
            Raw::RParen => Token::RParen,
            Raw::LBracket => Token::LBracket,
            Raw::RBracket => Token::RBracket,
            Raw::LBrace => Token::LBrace,
            Raw::RBrace => Token::RBrace,
            Raw::Comma => Token::Comma,
            Raw::Colon => {
                if pending_colon.last() == Some(&depth) {
                    pending_colon.pop();
                    Token::Or
                } else {
                    Token::Colon
                }
            }
            Raw::Plus => Token::Plus,
            Raw::Minus => Token::Minus,
            Raw::Star => Token::Star,
            Raw::Slash => Token::Slash,
            Raw::CAnd => {
                errors.push(foreign(range.clone(), text, "and", "a and b"));
                Token::And
            }
            Raw::COr => {
                errors.push(foreign(range.clone(), text, "or", "a or b"));
                Token::Or
            }
            Raw::CNot => {
                errors.push(foreign(range.clone(), text, "not", "not a"));
                Token::Not
            }
            Raw::Assign => {
                errors.push(
                    ParseError::new(
                        range.clone(),
                        codes::FOREIGN_OPERATOR,
                        "`=` is not an R1 operator",
                        "R1 has no assignment",
                    )
                    .with_help("to compare two values write `==`"),
                );
                Token::EqEq
            }
            Raw::Question => {
                errors.push(
                    ParseError::new(
                        range.clone(),
                        codes::CONDITIONAL,
                        "R1 has no conditional operator `? :`",
                        "conditional expressions are not part of R1",
                    )
                    .with_help(
                        "write `cond and a or b` instead of `cond ? a : b` \
                         (`and`/`or` return one of their operands; this picks `b` when `a` is falsy)",
                    ),
                );
                pending_colon.push(depth);
                Token::And
            }
        };
        match token {
            Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
            Token::RParen | Token::RBracket | Token::RBrace => {
                pending_colon.retain(|d| *d < depth);
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        tokens.push((token, range));
    }
    (tokens, errors)
}

fn foreign(range: Range<usize>, text: &str, r1: &str, example: &str) -> ParseError {
    ParseError::new(
        range,
        codes::FOREIGN_OPERATOR,
        format!("`{text}` is not an R1 operator"),
        format!("use `{r1}` here"),
    )
    .with_help(format!("R1 spells this operator as a word: `{example}`"))
}

/// The error for the character logos could not start a token at (`None` for a continuation of
/// the same bad run, already reported).
fn bad_char(src: &str, at: usize) -> Option<ParseError> {
    let c = src.get(at..)?.chars().next()?;
    if c == '\'' || c == '"' {
        let rest = &src[at + 1..];
        let newline_escape = rest.find("\\\n");
        let closing = rest.find(c);
        let message = match (newline_escape, closing) {
            (Some(n), Some(q)) if n < q => "a backslash cannot be followed by a line break",
            _ => "unterminated string literal",
        };
        return Some(
            ParseError::new(
                at..src.len(),
                codes::UNTERMINATED,
                message,
                "this string is never closed",
            )
            .with_help(format!(
                "close the string with `{c}`; write `\\{c}` for a quote inside it"
            )),
        );
    }
    let label = if c.is_alphabetic() {
        "names must be ASCII letters, digits and `_`".to_string()
    } else {
        "not part of any R1 token".to_string()
    };
    Some(
        ParseError::new(
            at..at + c.len_utf8(),
            codes::BAD_CHAR,
            format!("unexpected character `{}`", c.escape_debug()),
            label,
        )
        .with_help(match c {
            '%' => "R1 has no modulo operator".to_string(),
            '#' => "R1 has no comments".to_string(),
            _ => "R1 uses `and or not == != < > <= >= + - * /`, `( ) [ ] { } , : . ->`, names, numbers and quoted strings".to_string(),
        }),
    )
}

/// Decodes a quoted string literal: `\n`, `\t` are control characters, any other escaped
/// character stands for itself (the reference runtime's rule).
pub(crate) fn unescape(quoted: &str) -> String {
    let inner = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or("");
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Token> {
        lex(src).0.into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn numbers_and_names() {
        assert_eq!(
            toks("007 1.50 1e3"),
            vec![
                Token::Int(7),
                Token::Float(1.5),
                Token::Int(1),
                Token::Ident("e3".into())
            ]
        );
        assert_eq!(
            toks("a->b"),
            vec![
                Token::Ident("a".into()),
                Token::Arrow,
                Token::Ident("b".into())
            ]
        );
    }

    #[test]
    fn escapes_drop_the_backslash() {
        assert_eq!(
            toks(r#"'\r\u0041\n' "it\"s""#),
            vec![Token::Str("ru0041\n".into()), Token::Str("it\"s".into())]
        );
    }

    #[test]
    fn foreign_operators_are_replaced_and_reported() {
        let (t, e) = lex("a && !b");
        assert_eq!(t.len(), 4);
        assert_eq!(toks("1 # 2").len(), 3);
        assert_eq!(t[1].0, Token::And);
        assert_eq!(t[2].0, Token::Not);
        assert_eq!(e.len(), 2);
    }

    #[test]
    fn unterminated_string_stops_lexing() {
        let (_, e) = lex("a + 'abc");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].range, 4..8);
        let (_, e) = lex("'a\\\nb'");
        assert_eq!(
            e[0].message,
            "a backslash cannot be followed by a line break"
        );
    }

    #[test]
    fn huge_integer_is_an_error() {
        let (_, e) = lex("99999999999999999999");
        assert_eq!(e[0].code, codes::INT_TOO_LARGE);
    }
}
