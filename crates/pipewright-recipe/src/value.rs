//! Context values as the reference runner holds them (what Python's `json.loads` and PyYAML
//! produce), and their text in templates.
//!
//! The runner renders a value as Python does: integers of any size exactly, floats with
//! Python's `repr` (`1e-07`, `1.0`, `1e+16`, `inf`), mappings and lists with `json.dumps`
//! defaults (separators `", "` and `": "`, non-ASCII escaped as `\uXXXX`, astral characters as
//! surrogate pairs, `NaN`/`Infinity` for non-finite floats). `serde_json::Value` cannot hold an
//! integer beyond 64 bits, so this module has its own value type and JSON reader.

use indexmap::IndexMap;
use std::fmt::Write;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer outside `i64`, as canonical decimal text (`-` sign, no leading zeros).
    BigInt(String),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    /// Key order as written; a repeated key keeps its first place and its last value, as a
    /// Python dict does.
    Map(IndexMap<String, Value>),
}

/// Nesting limit of [`Value::from_json_text`], so no input can overflow the stack.
pub const MAX_DEPTH: usize = 128;

/// Why [`Value::from_json_text`] stopped, and the byte where it did.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem} at byte {at}")]
pub struct JsonError {
    pub problem: JsonProblem,
    pub at: usize,
}

/// What the JSON reader found wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JsonProblem {
    #[error("nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("a value is missing")]
    MissingValue,
    #[error("expected a string key")]
    ExpectedKey,
    #[error("expected `:`")]
    ExpectedColon,
    #[error("expected `,` or `}}`")]
    ExpectedCommaOrBrace,
    #[error("expected `,` or `]`")]
    ExpectedCommaOrBracket,
    #[error("expected a JSON value")]
    ExpectedValue,
    #[error("malformed number")]
    MalformedNumber,
    #[error("expected four hex digits after `\\u`")]
    ExpectedHex,
    #[error("bad `\\u` escape")]
    BadHex,
    #[error("lone surrogate in a `\\u` escape")]
    LoneSurrogate,
    #[error("invalid escape")]
    InvalidEscape,
    #[error("control character in a string")]
    ControlCharacter,
    #[error("unterminated string")]
    UnterminatedString,
    /// A whole value was read and text follows it (where it starts is the error's byte).
    #[error("extra data after the value")]
    ExtraData,
}

impl From<JsonError> for String {
    fn from(e: JsonError) -> String {
        e.to_string()
    }
}

impl Value {
    /// Reads JSON as Python's `json.loads` does: integers of any size stay exact, `NaN`,
    /// `Infinity` and `-Infinity` are accepted, a float literal too large becomes infinite.
    /// Unlike Python, a lone surrogate escape (`"\ud800"`) is an error: Rust strings cannot
    /// hold one.
    pub fn from_json_text(text: &str) -> Result<Value, JsonError> {
        let mut r = Reader {
            s: text.as_bytes(),
            text,
            pos: 0,
        };
        let v = r.value(0)?;
        r.blanks();
        if r.pos < r.s.len() {
            return Err(r.error(JsonProblem::ExtraData));
        }
        Ok(v)
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) | Value::BigInt(_) | Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::List(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// The text the runner substitutes for `{{x}}`: strings as they are, `true`/`false`,
    /// numbers as Python prints them, lists and mappings as `json.dumps` writes them. Null is
    /// `null` (the runner writes Python's `None`; see docs/recipe.md).
    pub fn render(&self, out: &mut String) {
        match self {
            Value::Str(s) => out.push_str(s),
            // `str(inf)` is `inf`, where `json.dumps` writes `Infinity`.
            Value::Float(f) => python_float_str(*f, out),
            _ => self.write_json(out),
        }
    }

    /// Python's `json.dumps(value)` with its defaults.
    pub fn write_json(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::BigInt(t) => out.push_str(t),
            Value::Float(f) if f.is_nan() => out.push_str("NaN"),
            Value::Float(f) if f.is_infinite() => {
                out.push_str(if *f > 0.0 { "Infinity" } else { "-Infinity" })
            }
            Value::Float(f) => python_float_str(*f, out),
            Value::Str(s) => write_json_string(s, out),
            Value::List(items) => {
                out.push('[');
                for (i, it) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    it.write_json(out);
                }
                out.push(']');
            }
            Value::Map(m) => {
                out.push('{');
                for (i, (k, it)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_json_string(k, out);
                    out.push_str(": ");
                    it.write_json(out);
                }
                out.push('}');
            }
        }
    }
}

impl From<&serde_json::Value> for Value {
    fn from(v: &serde_json::Value) -> Value {
        use serde_json::Value as J;
        match v {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => Value::Int(i),
                (None, Some(u), _) => Value::BigInt(u.to_string()),
                (_, _, Some(f)) => Value::Float(f),
                _ => Value::Null,
            },
            J::String(s) => Value::Str(s.clone()),
            J::Array(items) => Value::List(items.iter().map(Value::from).collect()),
            J::Object(m) => Value::Map(m.iter().map(|(k, v)| (k.clone(), v.into())).collect()),
        }
    }
}

/// `str(f)` (equal to `repr(f)`) in Python 3: the shortest digits that read back as `f`, in
/// positional notation when the decimal exponent is in -4..16, otherwise as `d.ddde±XX`.
pub fn python_float_str(f: f64, out: &mut String) {
    if f.is_nan() {
        out.push_str("nan");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "inf" } else { "-inf" });
        return;
    }
    // Rust's `{:e}` gives the shortest round-trip digits (`-1.2345e-7`), but where two such
    // strings are equally short it may not take the one nearest to `f`, which Python does
    // (ties to even): the correctly rounded decimal with that many digits is Python's choice
    // whenever it reads back as `f`.
    let shortest = format!("{f:e}");
    let n = shortest
        .split('e')
        .next()
        .map_or(1, |m| m.bytes().filter(u8::is_ascii_digit).count());
    let nearest = format!("{f:.prec$e}", prec = n.saturating_sub(1));
    let sci = if nearest.parse::<f64>() == Ok(f) {
        nearest
    } else {
        shortest
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if neg {
        out.push('-');
    }
    // The value is 0.DIGITS × 10^decpt, as CPython's float formatting counts it.
    let decpt = exp + 1;
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..-decpt {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let d = decpt as usize;
        if d < digits.len() {
            out.push_str(&digits[..d]);
            out.push('.');
            out.push_str(&digits[d..]);
        } else {
            out.push_str(&digits);
            for _ in digits.len()..d {
                out.push('0');
            }
            out.push_str(".0");
        }
    }
}

/// A JSON string as `json.dumps` writes it with `ensure_ascii=True`.
fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
}

struct Reader<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Reader<'_> {
    fn error(&self, problem: JsonProblem) -> JsonError {
        JsonError {
            problem,
            at: self.pos,
        }
    }

    fn blanks(&mut self) {
        while matches!(self.s.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.s[self.pos..].starts_with(lit.as_bytes()) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.error(JsonProblem::TooDeep));
        }
        self.blanks();
        let Some(&b) = self.s.get(self.pos) else {
            return Err(self.error(JsonProblem::MissingValue));
        };
        match b {
            b'{' => {
                self.pos += 1;
                let mut m = IndexMap::new();
                self.blanks();
                if self.eat("}") {
                    return Ok(Value::Map(m));
                }
                loop {
                    self.blanks();
                    if self.s.get(self.pos) != Some(&b'"') {
                        return Err(self.error(JsonProblem::ExpectedKey));
                    }
                    let k = self.string()?;
                    self.blanks();
                    if !self.eat(":") {
                        return Err(self.error(JsonProblem::ExpectedColon));
                    }
                    let v = self.value(depth + 1)?;
                    m.insert(k, v);
                    self.blanks();
                    if self.eat("}") {
                        return Ok(Value::Map(m));
                    }
                    if !self.eat(",") {
                        return Err(self.error(JsonProblem::ExpectedCommaOrBrace));
                    }
                }
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                self.blanks();
                if self.eat("]") {
                    return Ok(Value::List(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.blanks();
                    if self.eat("]") {
                        return Ok(Value::List(items));
                    }
                    if !self.eat(",") {
                        return Err(self.error(JsonProblem::ExpectedCommaOrBracket));
                    }
                }
            }
            b'"' => self.string().map(Value::Str),
            _ if self.eat("null") => Ok(Value::Null),
            _ if self.eat("true") => Ok(Value::Bool(true)),
            _ if self.eat("false") => Ok(Value::Bool(false)),
            _ if self.eat("NaN") => Ok(Value::Float(f64::NAN)),
            _ if self.eat("Infinity") => Ok(Value::Float(f64::INFINITY)),
            _ if self.eat("-Infinity") => Ok(Value::Float(f64::NEG_INFINITY)),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.error(JsonProblem::ExpectedValue)),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.s.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.pos;
        self.eat("-");
        let int_start = self.pos;
        let n = self.digits();
        if n == 0 || (n > 1 && self.s[int_start] == b'0') {
            return Err(self.error(JsonProblem::MalformedNumber));
        }
        let mut float = false;
        if self.eat(".") {
            float = true;
            if self.digits() == 0 {
                return Err(self.error(JsonProblem::MalformedNumber));
            }
        }
        if matches!(self.s.get(self.pos), Some(b'e' | b'E')) {
            float = true;
            self.pos += 1;
            if matches!(self.s.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error(JsonProblem::MalformedNumber));
            }
        }
        let t = &self.text[start..self.pos];
        if float {
            return t
                .parse()
                .map(Value::Float)
                .map_err(|_| self.error(JsonProblem::MalformedNumber));
        }
        Ok(match t.parse::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => Value::BigInt(t.to_owned()),
        })
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let h = self
            .text
            .get(self.pos..self.pos + 4)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error(JsonProblem::ExpectedHex))?;
        self.pos += 4;
        u32::from_str_radix(h, 16).map_err(|_| self.error(JsonProblem::BadHex))
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let run = self.pos;
            while self
                .s
                .get(self.pos)
                .is_some_and(|&b| b != b'"' && b != b'\\' && b >= 0x20)
            {
                self.pos += 1;
            }
            out.push_str(&self.text[run..self.pos]);
            match self.s.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let Some(&e) = self.s.get(self.pos) else {
                        return Err(self.error(JsonProblem::UnterminatedString));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) && self.eat("\\u") {
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.error(JsonProblem::LoneSurrogate));
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            let c = char::from_u32(code)
                                .ok_or_else(|| self.error(JsonProblem::LoneSurrogate))?;
                            out.push(c);
                        }
                        _ => return Err(self.error(JsonProblem::InvalidEscape)),
                    }
                }
                Some(_) => return Err(self.error(JsonProblem::ControlCharacter)),
                None => return Err(self.error(JsonProblem::UnterminatedString)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(f: f64) -> String {
        let mut s = String::new();
        python_float_str(f, &mut s);
        s
    }

    fn dumps(text: &str) -> String {
        let mut s = String::new();
        Value::from_json_text(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .write_json(&mut s);
        s
    }

    #[test]
    fn floats_print_as_python_prints_them() {
        for (f, want) in [
            (1e-7, "1e-07"),
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (1e20, "1e+20"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-300, "1.5e-300"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (123.456, "123.456"),
            // Two 17-digit strings read back as this value: Python takes the nearer one.
            (1_159_159_834_861_720.0 + 0.25, "1159159834861720.2"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
        ] {
            assert_eq!(repr(f), want, "{f:e}");
        }
    }

    #[test]
    fn json_dumps_text() {
        assert_eq!(
            dumps(r#"{"a":[1,2.0,"é",null,true],"b":{}}"#),
            r#"{"a": [1, 2.0, "\u00e9", null, true], "b": {}}"#
        );
        assert_eq!(dumps(r#""😀\u007f\"/""#), r#""\ud83d\ude00\u007f\"/""#);
        assert_eq!(
            dumps("[NaN, Infinity, -Infinity, 1e400]"),
            "[NaN, Infinity, -Infinity, Infinity]"
        );
        assert_eq!(dumps(r#""\ud83d\ude00""#), r#""\ud83d\ude00""#);
        // Python keeps the first place and the last value of a repeated key.
        assert_eq!(dumps(r#"{"a": 1, "b": 2, "a": 3}"#), r#"{"a": 3, "b": 2}"#);
    }

    #[test]
    fn integers_stay_exact() {
        for t in [
            "100000000000000000000",
            "-100000000000000000000",
            "18446744073709551616",
            "9223372036854775807",
            "-9223372036854775808",
        ] {
            let mut s = String::new();
            Value::from_json_text(t)
                .unwrap_or(Value::Null)
                .render(&mut s);
            assert_eq!(s, t);
        }
        assert_eq!(Value::from_json_text("-0"), Ok(Value::Int(0)));
        assert_eq!(Value::from_json_text("1e20"), Ok(Value::Float(1e20)));
    }

    #[test]
    fn malformed_json_is_an_error() {
        for t in [
            "",
            "01",
            "1.",
            "-",
            "[1,]",
            "{\"a\" 1}",
            "\"\\ud800\"",
            "\"\\x\"",
            "\"a\nb\"",
            "[1] 2",
            "{'a': 1}",
            "+1",
            ".5",
        ] {
            assert!(Value::from_json_text(t).is_err(), "{t:?}");
        }
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert!(Value::from_json_text(&deep).is_err());
    }

    #[test]
    fn a_json_error_names_the_problem_and_its_byte() {
        let e = Value::from_json_text("[1] 2").unwrap_err();
        assert_eq!(
            e,
            JsonError {
                problem: JsonProblem::ExtraData,
                at: 4
            }
        );
        assert_eq!(e.to_string(), "extra data after the value at byte 4");
        assert_eq!(
            Value::from_json_text(r#""\q""#).unwrap_err().to_string(),
            "invalid escape at byte 3"
        );
        assert_eq!(
            Value::from_json_text(r#""\u12""#).unwrap_err().to_string(),
            "expected four hex digits after `\\u` at byte 3"
        );
        assert_eq!(
            Value::from_json_text(&"[".repeat(MAX_DEPTH + 2))
                .unwrap_err()
                .problem,
            JsonProblem::TooDeep
        );
    }
}
