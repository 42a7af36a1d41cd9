//! A JSON loader that keeps the byte span of every key and value (serde_json keeps none).
//! Objects keep every member in order, duplicates included, so the checker can report them;
//! lookups take the last, as serde_json and JavaScript do. Recursion is capped at
//! [`MAX_DEPTH`], so no input can exhaust the stack; nothing here panics on any input.

use pipewright_syntax::{FileId, Span};

/// Nesting deeper than this is refused (PW0003): a recipe needs five levels.
pub const MAX_DEPTH: usize = 128;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// The literal as written: re-printing a parsed float would change it.
    Number(String),
    String(String),
    Array(Vec<Node>),
    Object(Vec<Member>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub key: String,
    pub key_span: Span,
    pub value: Node,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub span: Span,
    pub message: String,
    pub too_deep: bool,
}

impl Node {
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn members(&self) -> Option<&[Member]> {
        match &self.value {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn elements(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The last member named `key` (an object's duplicates are reported elsewhere).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.member(key).map(|m| &m.value)
    }

    pub fn member(&self, key: &str) -> Option<&Member> {
        self.members()?.iter().rev().find(|m| m.key == key)
    }

    /// What the value is, for "expected a string, found an array" messages.
    pub fn kind(&self) -> &'static str {
        match &self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

pub fn parse(file: FileId, text: &str) -> Result<Node, ParseError> {
    let mut p = Parser {
        file,
        b: text.as_bytes(),
        text,
        i: 0,
    };
    if text.starts_with('\u{feff}') {
        p.i = 3;
    }
    p.ws();
    let node = p.value(0)?;
    p.ws();
    if p.i < p.b.len() {
        return Err(p.err(p.i..p.i + 1, "unexpected text after the JSON value"));
    }
    Ok(node)
}

struct Parser<'a> {
    file: FileId,
    b: &'a [u8],
    text: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn err(&self, at: std::ops::Range<usize>, message: impl Into<String>) -> ParseError {
        let end = at.end.min(self.b.len()).max(at.start.min(self.b.len()));
        let start = at.start.min(end);
        // Never split a UTF-8 character: widen to its end.
        let mut end = end;
        while end < self.b.len() && !self.text.is_char_boundary(end) {
            end += 1;
        }
        ParseError {
            span: Span::new(self.file, start..end),
            message: message.into(),
            too_deep: false,
        }
    }

    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn unexpected(&self, what: &str) -> ParseError {
        match self.b.get(self.i) {
            None => self.err(
                self.i..self.i,
                format!("the file ends where {what} was expected"),
            ),
            Some(_) => {
                let c = self.text[self.i..].chars().next().unwrap_or('?');
                self.err(
                    self.i..self.i + c.len_utf8(),
                    format!("expected {what}, found `{}`", c.escape_debug()),
                )
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, ParseError> {
        let start = self.i;
        let value = match self.b.get(self.i) {
            Some(b'{') | Some(b'[') if depth >= MAX_DEPTH => {
                let mut e = self.err(
                    start..start + 1,
                    format!("nesting deeper than {MAX_DEPTH} levels"),
                );
                e.too_deep = true;
                return Err(e);
            }
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => Value::String(self.string()?),
            Some(b'-' | b'0'..=b'9') => Value::Number(self.number()?),
            Some(b't') => self.keyword("true", Value::Bool(true))?,
            Some(b'f') => self.keyword("false", Value::Bool(false))?,
            Some(b'n') => self.keyword("null", Value::Null)?,
            _ => return Err(self.unexpected("a value")),
        };
        Ok(Node {
            value,
            span: Span::new(self.file, start..self.i),
        })
    }

    fn keyword(&mut self, word: &str, v: Value) -> Result<Value, ParseError> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.unexpected("a value"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.i += 1;
        let mut members = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.unexpected("a key in double quotes"));
            }
            let ks = self.i;
            let key = self.string()?;
            let key_span = Span::new(self.file, ks..self.i);
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.unexpected("`:`"));
            }
            self.i += 1;
            self.ws();
            let value = self.value(depth + 1)?;
            members.push(Member {
                key,
                key_span,
                value,
            });
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.unexpected("`,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.unexpected("`,` or `]`")),
            }
        }
    }

    /// A string literal decoded per RFC 8259 §7 (a lone surrogate is refused: Rust strings
    /// cannot hold one, and serde_json refuses it too).
    fn string(&mut self) -> Result<String, ParseError> {
        let open = self.i;
        self.i += 1;
        let mut out = String::new();
        loop {
            let run = self.i;
            while self.i < self.b.len() && !matches!(self.b[self.i], b'"' | b'\\' | 0..=0x1f) {
                self.i += 1;
            }
            out.push_str(&self.text[run..self.i]);
            match self.b.get(self.i) {
                None => return Err(self.err(open..open + 1, "this string is never closed")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let esc = self.i;
                    self.i += 1;
                    let c = match self.b.get(self.i) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.i += 1;
                            let hi = self.hex4(esc)?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                if !self.b[self.i..].starts_with(b"\\u") {
                                    return Err(self.err(esc..self.i, "a lone UTF-16 surrogate"));
                                }
                                self.i += 2;
                                let lo = self.hex4(esc)?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err(esc..self.i, "a lone UTF-16 surrogate"));
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            match char::from_u32(code) {
                                Some(c) => out.push(c),
                                None => {
                                    return Err(self.err(esc..self.i, "a lone UTF-16 surrogate"))
                                }
                            }
                            continue;
                        }
                        _ => {
                            return Err(self.err(esc..self.i + 1, "an unknown escape sequence"));
                        }
                    };
                    out.push(c);
                    self.i += 1;
                }
                Some(_) => {
                    return Err(self.err(
                        self.i..self.i + 1,
                        "a control character in a string (write it as an escape such as `\\n`)",
                    ))
                }
            }
        }
    }

    fn hex4(&mut self, esc: usize) -> Result<u32, ParseError> {
        let digits = self.b.get(self.i..self.i + 4);
        let v = digits
            .and_then(|d| std::str::from_utf8(d).ok())
            .filter(|s| s.bytes().all(|c| c.is_ascii_hexdigit()))
            .and_then(|s| u32::from_str_radix(s, 16).ok());
        match v {
            Some(v) => {
                self.i += 4;
                Ok(v)
            }
            None => Err(self.err(
                esc..(self.i + 4).min(self.b.len()),
                "`\\u` needs four hex digits",
            )),
        }
    }

    fn number(&mut self) -> Result<String, ParseError> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let s = p.i;
            while p.i < p.b.len() && p.b[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i - s
        };
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let int_start = self.i;
        let n = digits(self);
        if n == 0 {
            return Err(self.unexpected("a digit"));
        }
        if n > 1 && self.b[int_start] == b'0' {
            return Err(self.err(start..self.i, "a number with a leading zero"));
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if digits(self) == 0 {
                return Err(self.unexpected("a digit after `.`"));
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return Err(self.unexpected("a digit in the exponent"));
            }
        }
        Ok(self.text[start..self.i].to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: &str) -> Result<Node, ParseError> {
        parse(FileId(0), t)
    }

    fn to_serde(n: &Node) -> serde_json::Value {
        match &n.value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(s) => serde_json::from_str(s).unwrap_or(serde_json::Value::Null),
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::Array(a) => serde_json::Value::Array(a.iter().map(to_serde).collect()),
            Value::Object(m) => serde_json::Value::Object(
                m.iter()
                    .map(|m| (m.key.clone(), to_serde(&m.value)))
                    .collect(),
            ),
        }
    }

    #[test]
    fn agrees_with_serde_json_on_valid_and_invalid_inputs() {
        let cases = [
            r#"{"a": [1, -2.5e3, true, false, null], "b": {"c": "x\ny\u00e9\ud83d\ude00\/"}}"#,
            "  [] ",
            "{}",
            "\"\\u0041\"",
            "0",
            "01",
            "1.",
            "-",
            "[1,]",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "\"\\ud800\"",
            "\"\\x\"",
            "\"a\tb\"",
            "[1] x",
            "\"open",
            "tru",
            "{'a': 1}",
            "\"é\\u00e9\"",
        ];
        for c in cases {
            let ours = p(c);
            let theirs: Result<serde_json::Value, _> = serde_json::from_str(c);
            assert_eq!(ours.is_ok(), theirs.is_ok(), "{c}");
            if let (Ok(o), Ok(t)) = (ours, theirs) {
                assert_eq!(to_serde(&o), t, "{c}");
            }
        }
    }

    #[test]
    fn keeps_key_and_value_spans_and_duplicates() {
        let t = r#"{"a": 1, "a": "two"}"#;
        let n = p(t).unwrap();
        let m = n.members().unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(&t[m[1].key_span.range()], "\"a\"");
        assert_eq!(&t[m[1].value.span.range()], "\"two\"");
        assert_eq!(n.get("a").and_then(Node::as_str), Some("two"));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let t = "[".repeat(100_000);
        let e = p(&t).unwrap_err();
        assert!(e.too_deep);
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(p(&ok).is_ok());
    }

    #[test]
    fn error_spans_stay_on_char_boundaries() {
        for t in ["{\"a\": é}", "[1, ☃", "\"\\u12\"", "\u{feff}{}"] {
            if let Err(e) = p(t) {
                assert!(t.is_char_boundary(e.span.start as usize), "{t}");
                assert!(t.is_char_boundary(e.span.end as usize), "{t}");
            }
        }
        assert!(p("\u{feff}{}").is_ok());
    }
}
