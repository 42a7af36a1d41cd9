//! Python's text rules the runner relies on: `str.strip()`, `float()`, `str()`/`repr()` of a
//! value and `type(x).__name__`.

use crate::value::{python_float_str, Value};
use std::fmt::Write;

/// `str.isspace()`: Unicode white space plus the four ASCII separators `\x1c`..`\x1f`, which
/// Python counts as blanks and Rust does not. Also `\s` of a `re` pattern on `str`.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `s.strip()` with no arguments.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// `float(s)`: surrounding blanks, a sign, `_` between digits, `inf`/`infinity`/`nan` in any
/// case. Python also accepts non-ASCII decimal digits (`float('٣')`); those are not numbers
/// here.
pub fn py_float(s: &str) -> Option<f64> {
    let t = py_strip(s);
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return t.to_ascii_lowercase().parse().ok();
    }
    let b = body.as_bytes();
    let mut digits = 0usize;
    let mut i = 0usize;
    let mut seen_dot = false;
    let mut seen_exp = false;
    let mut mantissa_digits = 0usize;
    while i < b.len() {
        match b[i] {
            b'0'..=b'9' => {
                digits += 1;
                if !seen_exp {
                    mantissa_digits += 1;
                }
            }
            // Only between two digits.
            b'_' => {
                let prev = i.checked_sub(1).and_then(|j| b.get(j));
                if !prev.is_some_and(u8::is_ascii_digit)
                    || !b.get(i + 1).is_some_and(u8::is_ascii_digit)
                {
                    return None;
                }
            }
            b'.' if !seen_dot && !seen_exp => seen_dot = true,
            b'e' | b'E' if !seen_exp && mantissa_digits > 0 => {
                seen_exp = true;
                digits = 0;
                if matches!(b.get(i + 1), Some(b'+' | b'-')) {
                    i += 1;
                }
            }
            _ => return None,
        }
        i += 1;
    }
    if digits == 0 || mantissa_digits == 0 {
        return None;
    }
    t.replace('_', "").parse().ok()
}

/// `type(v).__name__`.
pub fn py_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::BigInt(_) => "int",
        Value::Float(_) => "float",
        Value::Str(_) => "str",
        Value::List(_) => "list",
        Value::Map(_) => "dict",
    }
}

/// `str(v)`: a string as it is, everything else as [`py_repr`].
pub fn py_str(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        other => py_repr(other),
    }
}

/// `repr(v)`: `None`, `True`, `['a', 1]`, `{'k': 1.0}`, strings quoted as Python chooses.
pub fn py_repr(v: &Value) -> String {
    let mut out = String::new();
    write_repr(v, &mut out, 0);
    out
}

fn write_repr(v: &Value, out: &mut String, depth: usize) {
    // Values come from JSON or YAML readers that already limit nesting; this keeps a value
    // built by hand from overflowing the stack.
    if depth > crate::value::MAX_DEPTH * 4 {
        out.push_str("...");
        return;
    }
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::BigInt(t) => out.push_str(t),
        Value::Float(f) => python_float_str(*f, out),
        Value::Str(s) => repr_str(s, out),
        Value::List(items) => {
            out.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(it, out, depth + 1);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push('{');
            for (i, (k, it)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_str(k, out);
                out.push_str(": ");
                write_repr(it, out, depth + 1);
            }
            out.push('}');
        }
    }
}

/// Python's string repr: single quotes unless the text has `'` and no `"`; non-printable
/// characters escaped. Printability follows `str.isprintable()` for control, separator and
/// the common format characters; unassigned code points are kept as they are.
fn repr_str(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => {
                let n = c as u32;
                let _ = if n < 0x100 {
                    write!(out, "\\x{n:02x}")
                } else if n < 0x10000 {
                    write!(out, "\\u{n:04x}")
                } else {
                    write!(out, "\\U{n:08x}")
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

fn printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || is_py_space(c) {
        return false;
    }
    !matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e000}'..='\u{f8ff}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_python_reads_them() {
        for (s, want) in [
            ("1", Some(1.0)),
            (" 5 ", Some(5.0)),
            ("1_000", Some(1000.0)),
            ("1e3", Some(1000.0)),
            ("-2.5", Some(-2.5)),
            (".5", Some(0.5)),
            ("5.", Some(5.0)),
            ("Infinity", Some(f64::INFINITY)),
            ("-inf", Some(f64::NEG_INFINITY)),
            ("1__0", None),
            ("_1", None),
            ("1_", None),
            ("1_.5", None),
            ("e5", None),
            ("1e", None),
            (".", None),
            ("", None),
            ("abc", None),
            ("0x10", None),
            ("1e1_0", Some(1e10)),
        ] {
            assert_eq!(py_float(s), want, "{s:?}");
        }
        assert!(py_float("nan").is_some_and(f64::is_nan));
        assert!(py_float("-NaN").is_some_and(f64::is_nan));
    }

    #[test]
    fn repr_as_python_writes_it() {
        let v =
            Value::from_json_text(r#"{"k": [1, 2.0, null, true, "it's", "a\"b'c", "\u00a0é\n"]}"#)
                .unwrap_or(Value::Null);
        assert_eq!(
            py_repr(&v),
            r#"{'k': [1, 2.0, None, True, "it's", 'a"b\'c', '\xa0é\n']}"#
        );
        assert_eq!(py_strip("\u{1c} x \u{3000}"), "x");
    }
}
