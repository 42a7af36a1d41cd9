//! How a string scalar is written: plain when YAML reads the plain text back as the same
//! string, otherwise double-quoted — or single-quoted when that avoids escaping `"` or `\`.

use pipewright_yaml::{Scalar, ScalarStyle, ScalarValue};

/// Whether `v` can be written as a plain scalar and read back as the string `v` by this
/// loader. `in_flow` adds the restrictions of `{…}`/`[…]`.
pub fn plain_ok(v: &str, in_flow: bool) -> bool {
    let bytes = v.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    if matches!(first, b' ' | b'\t') || matches!(last, b' ' | b'\t' | b':') {
        return false;
    }
    // A `match`, not `contains` on a byte string: that is a `memchr` call per scalar.
    if matches!(
        first,
        b'?' | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
    ) {
        return false;
    }
    if v.starts_with("---") || v.starts_with("...") {
        return false;
    }
    if first == b'-' {
        // `-x` is a plain scalar, `- x` a sequence entry.
        match bytes.get(1) {
            Some(&c)
                if c != b' ' && !(in_flow && matches!(c, b',' | b'[' | b']' | b'{' | b'}')) => {}
            _ => return false,
        }
    }
    // One pass for what may not occur anywhere: `: `, ` #`, control characters and, in flow
    // style, flow indicators. Non-ASCII text is checked by character afterwards (rare).
    let mut ascii = true;
    let mut prev = 0u8;
    for &b in bytes {
        match b {
            0..=0x1f | 0x7f => return false,
            b' ' if prev == b':' => return false,
            b'#' if prev == b' ' => return false,
            b',' | b'[' | b']' | b'{' | b'}' | b':' if in_flow => return false,
            0x80.. => ascii = false,
            _ => {}
        }
        prev = b;
    }
    if !ascii
        && v.chars().any(|c| {
            c.is_control() || c == '\u{feff}' || c == '\u{2028}' || c == '\u{2029}' || c == '\u{85}'
        })
    {
        return false;
    }
    // Plain scalars that resolve to something other than a string are these keywords or start
    // like a number (`.inf`, `.nan` included); other text is a string, known without copying
    // it into a `Scalar`.
    if !matches!(first, b'0'..=b'9' | b'+' | b'-' | b'.') {
        return !matches!(
            v,
            "~" | "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
        );
    }
    matches!(
        Scalar {
            text: v.to_string(),
            style: ScalarStyle::Plain
        }
        .resolve(),
        ScalarValue::Str(_)
    )
}

/// Text that a YAML 1.1 loader (the reference runtime uses one) would read as something other
/// than a string: numbers with `_` or `:`, dates, `yes`/`no`/`on`/`off`, `=`, `<<`. Such
/// strings are written quoted when the author quoted them, even though this loader would not
/// need it, so the file means the same to both.
pub fn yaml11_special(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null" | "~" | "=" | "<<"
    ) {
        return true;
    }
    let mut chars = v.chars();
    match chars.next() {
        Some(c) if c.is_ascii_digit() => true,
        Some('+' | '-' | '.') => chars.next().is_some_and(|c| c.is_ascii_digit() || c == '.'),
        _ => false,
    }
}

pub fn double(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            '\0' => s.push_str("\\0"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                s.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() || matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}') => {
                s.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

pub fn single(v: &str) -> String {
    format!("'{}'", v.replace('\'', "''"))
}

/// The text of string `v`. `was_plain`: the author wrote it plain, so it stays plain whenever
/// that still reads back the same (YAML 1.1 look-alikes included: quoting them would change
/// what the reference runtime sees).
pub fn render(v: &str, in_flow: bool, was_plain: bool) -> String {
    let mut s = String::new();
    render_into(v, in_flow, was_plain, &mut s);
    s
}

/// [`render`] appended to `out`, so the printer builds its lines without a string per scalar.
pub fn render_into(v: &str, in_flow: bool, was_plain: bool, out: &mut String) {
    if plain_ok(v, in_flow) && (was_plain || !yaml11_special(v)) {
        out.push_str(v);
        return;
    }
    let needs_escape_in_double = v.contains(['"', '\\']);
    let single_ok = !v.contains('\'')
        && !v
            .chars()
            .any(|c| c.is_control() || matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}'));
    if needs_escape_in_double && single_ok {
        out.push_str(&single(v));
    } else {
        out.push_str(&double(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The former multi-pass `plain_ok`, kept as the reference for the one-pass version.
    fn plain_ok_reference(v: &str, in_flow: bool) -> bool {
        let Some(first) = v.chars().next() else {
            return false;
        };
        if v.starts_with([' ', '\t']) || v.ends_with([' ', '\t', ':']) {
            return false;
        }
        if v.chars().any(|c| {
            c.is_control() || c == '\u{feff}' || c == '\u{2028}' || c == '\u{2029}' || c == '\u{85}'
        }) {
            return false;
        }
        if v.contains(": ") || v.contains(" #") || v.starts_with("---") || v.starts_with("...") {
            return false;
        }
        if "?:,[]{}#&*!|>'\"%@`".contains(first) {
            return false;
        }
        if first == '-' {
            match v[1..].chars().next() {
                Some(c) if c != ' ' && !(in_flow && ",[]{}".contains(c)) => {}
                _ => return false,
            }
        }
        if in_flow && v.contains([',', '[', ']', '{', '}', ':']) {
            return false;
        }
        matches!(
            Scalar {
                text: v.to_string(),
                style: ScalarStyle::Plain
            }
            .resolve(),
            ScalarValue::Str(_)
        )
    }

    proptest! {
        #[test]
        fn one_pass_plain_ok_agrees_with_the_reference(
            v in "[ -~\t\n\u{85}\u{a0}\u{feff}\u{2028}é]{0,12}|[-:#. a-z0-9]{0,8}",
            in_flow in any::<bool>(),
        ) {
            prop_assert_eq!(plain_ok(&v, in_flow), plain_ok_reference(&v, in_flow), "{:?}", v);
        }
    }

    #[test]
    fn quoting_choices() {
        assert_eq!(render("hello world", false, false), "hello world");
        assert_eq!(render("true", false, false), "\"true\"");
        assert_eq!(render("0", false, true), "\"0\"");
        assert_eq!(render("a: b", false, false), "\"a: b\"");
        assert_eq!(render("a #b", false, false), "\"a #b\"");
        assert_eq!(render("'x' + y", false, false), "\"'x' + y\"");
        assert_eq!(render("say \"hi\"", false, false), "say \"hi\"");
        assert_eq!(render("\"hi\" said", false, false), "'\"hi\" said'");
        assert_eq!(render("'it's \"x\"", false, false), "\"'it's \\\"x\\\"\"");
        assert_eq!(render("a, b", true, false), "\"a, b\"");
        assert_eq!(render("a, b", false, false), "a, b");
        assert_eq!(render("line\nnext", false, false), "\"line\\nnext\"");
        assert_eq!(render("2024-01-01", false, false), "\"2024-01-01\"");
        assert_eq!(render("yes", false, true), "yes");
        assert_eq!(render("-x", false, false), "-x");
        assert_eq!(render("- x", false, false), "\"- x\"");
        assert_eq!(render("", false, false), "\"\"");
    }
}
