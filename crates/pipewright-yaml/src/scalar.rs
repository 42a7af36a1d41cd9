//! Scalars and how their plain text resolves to a typed value.

/// How a scalar was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scalar {
    /// The scalar's content after YAML unescaping and folding.
    pub text: Box<str>,
    pub style: ScalarStyle,
}

/// The value a scalar denotes.
#[derive(Debug, Clone, PartialEq)]
pub enum ScalarValue<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
}

impl Scalar {
    /// Resolves a plain scalar with the YAML 1.2 core schema (the three casings of
    /// `null`/`true`/`false`, `~`, decimal/`0x`/`0o` integers, floats, `.inf`, `.nan`).
    /// Unlike YAML 1.1 loaders, `yes`/`no`/`on`/`off`, dates and `1:30` stay strings, which is
    /// also what the reference pipeline loader does for the first group.
    pub fn resolve(&self) -> ScalarValue<'_> {
        if self.style != ScalarStyle::Plain {
            return ScalarValue::Str(&self.text);
        }
        let t: &str = &self.text;
        match t {
            "" | "~" | "null" | "Null" | "NULL" => return ScalarValue::Null,
            "true" | "True" | "TRUE" => return ScalarValue::Bool(true),
            "false" | "False" | "FALSE" => return ScalarValue::Bool(false),
            ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
                return ScalarValue::Float(f64::INFINITY)
            }
            "-.inf" | "-.Inf" | "-.INF" => return ScalarValue::Float(f64::NEG_INFINITY),
            ".nan" | ".NaN" | ".NAN" => return ScalarValue::Float(f64::NAN),
            _ => {}
        }
        if let Some(v) = parse_int(t) {
            return ScalarValue::Int(v);
        }
        if looks_like_float(t) {
            if let Ok(f) = t.parse::<f64>() {
                return ScalarValue::Float(f);
            }
        }
        ScalarValue::Str(t)
    }
}

fn parse_int(t: &str) -> Option<i64> {
    let (neg, digits) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, body) = if let Some(h) = digits.strip_prefix("0x") {
        (16, h)
    } else if let Some(o) = digits.strip_prefix("0o") {
        (8, o)
    } else {
        (10, digits)
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = i64::from_str_radix(body, radix).ok()?;
    Some(if neg { -v } else { v })
}

fn looks_like_float(t: &str) -> bool {
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    let mut seen_digit = false;
    let mut chars = body.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_digit() {
            seen_digit = true;
            chars.next();
        } else {
            break;
        }
    }
    if chars.peek() == Some(&'.') {
        chars.next();
        while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
            seen_digit = true;
            chars.next();
        }
    }
    if !seen_digit {
        return false;
    }
    if matches!(chars.peek(), Some('e' | 'E')) {
        chars.next();
        if matches!(chars.peek(), Some('+' | '-')) {
            chars.next();
        }
        let mut exp = false;
        while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
            exp = true;
            chars.next();
        }
        if !exp {
            return false;
        }
    }
    chars.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(t: &str) -> Scalar {
        Scalar {
            text: t.into(),
            style: ScalarStyle::Plain,
        }
    }

    #[test]
    fn core_schema_resolution() {
        assert_eq!(plain("true").resolve(), ScalarValue::Bool(true));
        assert_eq!(plain("on").resolve(), ScalarValue::Str("on"));
        assert_eq!(plain("yes").resolve(), ScalarValue::Str("yes"));
        assert_eq!(plain("~").resolve(), ScalarValue::Null);
        assert_eq!(plain("-12").resolve(), ScalarValue::Int(-12));
        assert_eq!(plain("0x10").resolve(), ScalarValue::Int(16));
        assert_eq!(plain("1.5").resolve(), ScalarValue::Float(1.5));
        assert_eq!(plain("1e3").resolve(), ScalarValue::Float(1000.0));
        assert_eq!(plain("1:30").resolve(), ScalarValue::Str("1:30"));
        assert_eq!(
            plain("2024-01-01").resolve(),
            ScalarValue::Str("2024-01-01")
        );
        assert_eq!(plain("ctx.a + 1").resolve(), ScalarValue::Str("ctx.a + 1"));
        assert_eq!(
            plain("99999999999999999999").resolve(),
            ScalarValue::Float(1e20)
        );
        let quoted = Scalar {
            text: "true".into(),
            style: ScalarStyle::DoubleQuoted,
        };
        assert_eq!(quoted.resolve(), ScalarValue::Str("true"));
    }
}
