//! Where each byte of a TOML string's value is written in the source, so an edit of the value
//! (a fix) becomes an edit of the file: `\"` in a basic string is two source bytes for one
//! value byte, a multi-line string drops its first newline, a line-ending backslash drops the
//! whitespace after it.

/// The form a string is written in.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Form {
    Basic,
    MultiBasic,
    Literal,
    MultiLiteral,
}

/// A string node's source text mapped onto its value.
pub(crate) struct Mapped {
    pub form: Form,
    /// `starts[j]`: the source offset (from the start of the node) where value byte `j` is
    /// written; `starts[value.len()]` is where the closing delimiter starts.
    pub starts: Vec<usize>,
}

impl Mapped {
    /// `raw` is the node's source text, `value` its value; `None` when they do not agree.
    pub(crate) fn new(raw: &str, value: &str) -> Option<Mapped> {
        let (form, open) = if raw.starts_with("\"\"\"") {
            (Form::MultiBasic, 3)
        } else if raw.starts_with("'''") {
            (Form::MultiLiteral, 3)
        } else if raw.starts_with('"') {
            (Form::Basic, 1)
        } else if raw.starts_with('\'') {
            (Form::Literal, 1)
        } else {
            return None;
        };
        let body_end = raw.len().checked_sub(open)?;
        let b = raw.as_bytes();
        let mut i = open;
        if open == 3 {
            // A newline right after the opening delimiter is not part of the value.
            if raw[i..].starts_with("\r\n") {
                i += 2;
            } else if raw[i..].starts_with('\n') {
                i += 1;
            }
        }
        let mut out = String::with_capacity(value.len());
        let mut starts = Vec::with_capacity(value.len() + 1);
        let escapes = matches!(form, Form::Basic | Form::MultiBasic);
        while i < body_end {
            if escapes && b[i] == b'\\' {
                let (text, len) = escape(&raw[i..], form)?;
                starts.resize(starts.len() + text.len(), i);
                out.push_str(&text);
                i += len;
                continue;
            }
            let ch = raw[i..].chars().next()?;
            starts.resize(starts.len() + ch.len_utf8(), i);
            out.push(ch);
            i += ch.len_utf8();
        }
        starts.push(body_end);
        (out == value).then_some(Mapped { form, starts })
    }

    /// How `quote` is written inside this string, or `None` if it cannot be without changing
    /// the form (a `'` in a literal string).
    pub(crate) fn write(&self, quote: char) -> Option<&'static str> {
        match (self.form, quote) {
            (Form::Basic | Form::MultiBasic, '"') => Some("\\\""),
            (_, '\'') if matches!(self.form, Form::Literal | Form::MultiLiteral) => None,
            (_, '\'') => Some("'"),
            (_, '"') => Some("\""),
            _ => None,
        }
    }
}

/// The value of the escape at the start of `s` and its source length.
fn escape(s: &str, form: Form) -> Option<(String, usize)> {
    let c = s[1..].chars().next()?;
    let simple = match c {
        'b' => Some('\u{8}'),
        't' => Some('\t'),
        'n' => Some('\n'),
        'f' => Some('\u{c}'),
        'r' => Some('\r'),
        'e' => Some('\u{1b}'),
        '"' => Some('"'),
        '\\' => Some('\\'),
        _ => None,
    };
    if let Some(v) = simple {
        return Some((v.to_string(), 2));
    }
    match c {
        'u' | 'U' | 'x' => {
            let n = match c {
                'u' => 4,
                'U' => 8,
                _ => 2,
            };
            let hex = s.get(2..2 + n)?;
            let v = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
            Some((v.to_string(), 2 + n))
        }
        // A line-ending backslash: the newline and the whitespace after it are dropped.
        c if form == Form::MultiBasic && c.is_whitespace() => {
            let rest = &s[1..];
            let line = rest.find('\n')?;
            if !rest[..line].trim().is_empty() {
                return None;
            }
            let after = &rest[line..];
            let kept = after.trim_start().len();
            Some((String::new(), 1 + line + (after.len() - kept)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str, value: &str) -> Mapped {
        let m = Mapped::new(raw, value).unwrap_or_else(|| panic!("{raw}"));
        assert_eq!(m.starts.len(), value.len() + 1);
        m
    }

    #[test]
    fn every_form_maps_its_value_onto_the_source() {
        let m = check(r#""a\"b""#, "a\"b");
        assert_eq!(m.starts, [1, 2, 4, 5]);
        assert_eq!(m.form, Form::Basic);
        let m = check("'a\"b'", "a\"b");
        assert_eq!(m.starts, [1, 2, 3, 4]);
        let m = check("\"\"\"\nx\\\n   y\"\"\"", "xy");
        assert_eq!(m.starts, [4, 10, 11]);
        let m = check("'''\nq'''", "q");
        assert_eq!(m.starts, [4, 5]);
        check(r#""\u00e9!""#, "é!");
        assert!(Mapped::new(r#""a""#, "b").is_none());
    }

    #[test]
    fn quotes_are_written_in_the_strings_own_way() {
        let basic = check(r#""x""#, "x");
        assert_eq!(basic.write('"'), Some("\\\""));
        assert_eq!(basic.write('\''), Some("'"));
        let lit = check("'x'", "x");
        assert_eq!(lit.write('\''), None);
        assert_eq!(lit.write('"'), Some("\""));
    }
}
