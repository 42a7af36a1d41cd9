//! How a string scalar is written: plain when both readers of workflow files read the plain text
//! back as the same string — pipewright (YAML 1.2 core schema) and the reference runtimes
//! (PyYAML, YAML 1.1) — otherwise double-quoted, or single-quoted when that avoids escaping `"`
//! or `\`. Numbers the two read differently (`010`, `0o17`, `1e3`) are respelled so that both
//! read the same number.

use pipewright_yaml::yaml11::{self, Plain, Radix};
use pipewright_yaml::{Scalar, ScalarStyle, ScalarValue};

/// Whether `v` can be written as a plain scalar, read back as the string `v` by this loader, and
/// scanned as one plain scalar by PyYAML (which may still resolve it to something other than a
/// string: see [`yaml11_non_string`]). `in_flow` adds the restrictions of `{…}`/`[…]`.
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
    // Inside `[…]`/`{…}` a `-` after a blank and before the closing indicator reads as a plain
    // scalar starting with `-` followed by that indicator, which the loader rejects.
    if in_flow && v.ends_with(" -") {
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
    // One pass for what may not occur anywhere: `: `, ` #`, control characters (tabs included:
    // PyYAML cannot scan a plain scalar with a tab inside) and, in flow style, flow indicators
    // and `?` (PyYAML ends a plain scalar there; YAML 1.2 does not). Non-ASCII text is checked by
    // character afterwards (rare).
    let mut ascii = true;
    let mut prev = 0u8;
    for &b in bytes {
        match b {
            0..=0x1f | 0x7f => return false,
            b' ' if prev == b':' => return false,
            b'#' if prev == b' ' => return false,
            b',' | b'[' | b']' | b'{' | b'}' | b':' | b'?' if in_flow => return false,
            0x80.. => ascii = false,
            _ => {}
        }
        prev = b;
    }
    if !ascii && v.chars().any(needs_escape) {
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
            text: v.into(),
            style: ScalarStyle::Plain
        }
        .resolve(),
        ScalarValue::Str(_)
    )
}

/// Characters written as escapes in double quotes and never plain: control characters, the
/// byte-order mark, the characters YAML 1.1 takes for line breaks (`\u{85}`, `\u{2028}`,
/// `\u{2029}`: inside a quoted scalar PyYAML would fold them), and the two PyYAML's reader
/// rejects anywhere in a file.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{feff}' | '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}'
        )
}

/// Whether PyYAML's resolver (what `yaml.safe_load` applies to plain scalars) reads the plain
/// scalar `v` as something other than a string: null, a boolean, an integer (`010` is octal,
/// `1_000`, `0b1`, `1:30` sexagesimal), a float (`.5`, `1.0`, `1:30.0`), a date or timestamp,
/// the merge key `<<` or the value key `=`. `bool_words`: `yes`/`no`/`on`/`off` are booleans
/// (the recipe runner; the pipeline runtime turns them off); with it `y`/`n`, the other YAML
/// 1.1 booleans, count too, although PyYAML itself does not implement them.
pub fn yaml11_non_string(v: &str, bool_words: bool) -> bool {
    match yaml11::resolve(v) {
        Plain::Str => bool_words && matches!(v, "y" | "Y" | "n" | "N"),
        Plain::Bool(_) if yaml11::is_bool_word(v) => bool_words,
        _ => true,
    }
}

/// Whether PyYAML reads the plain scalar `v` as a boolean that YAML 1.2 reads as a string:
/// `yes`/`no`/`on`/`off` in PyYAML's three casings (its resolver has no `y`/`n`).
pub use pipewright_yaml::yaml11::is_bool_word as pyyaml_bool_word;

/// Whether PyYAML reads the plain, untagged scalar `sc` (as written in a formatted file) as a
/// different value than YAML 1.2 does: the verifier's check that the printer quoted and
/// respelled everything it had to.
pub fn yaml11_misread(sc: &Scalar, bool_words: bool) -> bool {
    match sc.text.as_bytes().first() {
        Some(b'0'..=b'9' | b'+' | b'-' | b'.') => match sc.resolve() {
            ScalarValue::Str(t) => yaml11_non_string(t, bool_words),
            v => yaml11_number(&sc.text, &v).is_some(),
        },
        // Null and the booleans both read alike; other keywords are strings to YAML 1.2.
        _ => yaml11_non_string(&sc.text, bool_words) && matches!(sc.resolve(), ScalarValue::Str(_)),
    }
}

/// A spelling of the plain number `text` (an integer or float to YAML 1.2) that PyYAML reads as
/// the same number, when the text itself is not one: `010` is 10 to YAML 1.2 but octal 8 to
/// PyYAML, `0o17` and `1e3` are strings to it. `None` keeps the text. Integers too large for
/// pipewright (a float to it) stay as written: PyYAML reads the same number as an integer.
/// `value` is what YAML 1.2 reads in the plain `text`.
pub fn yaml11_number(text: &str, value: &ScalarValue) -> Option<String> {
    match value {
        ScalarValue::Int(i) => {
            let body = text.trim_start_matches(['+', '-']);
            let same = body.starts_with("0x") || body == "0" || !body.starts_with('0');
            (!same).then(|| i.to_string())
        }
        ScalarValue::Float(_) => {
            match yaml11::resolve(text) {
                Plain::Float | Plain::Int(Radix::Decimal) => return None,
                _ => {}
            }
            let (sign, rest) = match text.as_bytes().first() {
                Some(b'+' | b'-') => text.split_at(1),
                _ => ("", text),
            };
            let (mant, exp) = match rest.find(['e', 'E']) {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let mut s = String::with_capacity(text.len() + 3);
            s.push_str(sign);
            if mant.starts_with('.') {
                s.push('0');
            }
            s.push_str(mant);
            if !mant.contains('.') {
                s.push_str(".0");
            }
            if let Some(digits) = exp.get(1..) {
                s.push_str(&exp[..1]);
                if !digits.starts_with(['+', '-']) {
                    s.push('+');
                }
                s.push_str(digits);
            }
            Some(s)
        }
        _ => None,
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
            c if needs_escape(c) => s.push_str(&format!("\\u{:04x}", c as u32)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// The length in characters of the longer of [`double`] and [`single`] of `v`, which bounds
/// however the printer quotes it (plain is shorter than either).
pub fn quoted_len_bound(v: &str) -> usize {
    let (mut d, mut s) = (2usize, 2usize);
    for c in v.chars() {
        d += match c {
            '"' | '\\' | '\n' | '\t' | '\r' | '\0' => 2,
            c if (c as u32) < 0x20 || c as u32 == 0x7f => 4,
            c if needs_escape(c) => 6,
            _ => 1,
        };
        s += if c == '\'' { 2 } else { 1 };
    }
    d.max(s)
}

pub fn single(v: &str) -> String {
    format!("'{}'", v.replace('\'', "''"))
}

/// Text that some YAML 1.1 reader might take for something other than a string: anything that
/// starts like a number, and the 1.1 keywords in any casing. Broader than what PyYAML actually
/// does ([`yaml11_non_string`]): a string the author quoted that looks like this stays quoted
/// (`version: "1.0.0"`), although PyYAML would read it plain as the same string.
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

/// The text of string `v`. `bool_words`: see [`yaml11_non_string`]; `was_plain`: the author
/// wrote it plain.
pub fn render(v: &str, in_flow: bool, bool_words: bool, was_plain: bool) -> String {
    let mut s = String::new();
    render_into(v, in_flow, bool_words, was_plain, &mut s);
    s
}

/// [`render`] appended to `out`, so the printer builds its lines without a string per scalar.
/// Plain only when both YAML 1.2 and PyYAML read the plain text as this string, whatever the
/// author wrote: a plain `yes` is the string "yes" to pipewright but `True` to the recipe
/// runner, so it is written `"yes"`, which both read as the string `check` verified. A quoted
/// string that merely looks like a number ([`yaml11_special`]) keeps its quotes.
pub fn render_into(v: &str, in_flow: bool, bool_words: bool, was_plain: bool, out: &mut String) {
    // A plain `no` is False to the runner and "no" to pipewright: quoting it would change the
    // runner's value, so it stays as written (`check` reports it, PW0541, and `--fix` settles it).
    if was_plain && bool_words && pyyaml_bool_word(v) {
        out.push_str(v);
        return;
    }
    if plain_ok(v, in_flow)
        && !yaml11_non_string(v, bool_words)
        && (was_plain || !yaml11_special(v))
    {
        out.push_str(v);
        return;
    }
    let needs_escape_in_double = v.contains(['"', '\\']);
    let single_ok = !v.contains('\'') && !v.chars().any(needs_escape);
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
            c.is_control()
                || [
                    '\u{feff}', '\u{2028}', '\u{2029}', '\u{85}', '\u{fffe}', '\u{ffff}',
                ]
                .contains(&c)
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
        if in_flow && (v.contains([',', '[', ']', '{', '}', ':', '?']) || v.ends_with(" -")) {
            return false;
        }
        matches!(
            Scalar {
                text: v.into(),
                style: ScalarStyle::Plain
            }
            .resolve(),
            ScalarValue::Str(_)
        )
    }

    proptest! {
        #[test]
        fn one_pass_plain_ok_agrees_with_the_reference(
            v in "[ -~\t\n\u{85}\u{a0}\u{feff}\u{2028}\u{ffff}é]{0,12}|[-:#?. a-z0-9]{0,8}",
            in_flow in any::<bool>(),
        ) {
            prop_assert_eq!(plain_ok(&v, in_flow), plain_ok_reference(&v, in_flow), "{:?}", v);
        }
    }

    #[test]
    fn the_quoted_length_bound_is_the_longer_quoting() {
        for v in ["", "k", "a\tb\"c\\", "it's", "''''", "\u{85}x\u{1}", "é\n"] {
            let longest = double(v).chars().count().max(single(v).chars().count());
            assert_eq!(quoted_len_bound(v), longest, "{v:?}");
        }
    }

    #[test]
    fn quoting_choices() {
        assert_eq!(render("hello world", false, true, false), "hello world");
        assert_eq!(render("true", false, true, false), "\"true\"");
        assert_eq!(render("0", false, true, false), "\"0\"");
        assert_eq!(render("a: b", false, true, false), "\"a: b\"");
        assert_eq!(render("a #b", false, true, false), "\"a #b\"");
        assert_eq!(render("'x' + y", false, true, false), "\"'x' + y\"");
        assert_eq!(render("say \"hi\"", false, true, false), "say \"hi\"");
        assert_eq!(render("\"hi\" said", false, true, false), "'\"hi\" said'");
        assert_eq!(
            render("'it's \"x\"", false, true, false),
            "\"'it's \\\"x\\\"\""
        );
        assert_eq!(render("a, b", true, true, false), "\"a, b\"");
        assert_eq!(render("a, b", false, true, false), "a, b");
        assert_eq!(render("yes -", true, false, false), "\"yes -\"");
        assert_eq!(render("yes -", false, false, false), "yes -");
        assert_eq!(render("line\nnext", false, true, false), "\"line\\nnext\"");
        assert_eq!(render("2024-01-01", false, true, false), "\"2024-01-01\"");
        assert_eq!(render("-x", false, true, false), "-x");
        assert_eq!(render("- x", false, true, false), "\"- x\"");
        assert_eq!(render("", false, true, false), "\"\"");
        assert_eq!(render("1.0.0", false, true, true), "1.0.0");
        assert_eq!(render("1.0.0", false, true, false), "\"1.0.0\"");
    }

    #[test]
    fn what_pyyaml_would_misread_is_quoted() {
        // `?` ends a plain scalar inside PyYAML's flow collections.
        assert_eq!(render("Ship it?", true, true, false), "\"Ship it?\"");
        assert_eq!(render("Ship it?", false, true, false), "Ship it?");
        assert_eq!(render("echo ok?", true, false, false), "\"echo ok?\"");
        // YAML 1.1 booleans: a plain one is False/True to the recipe runner and a string to
        // pipewright, so it stays as written (quoting would change the runner's value; PW0541
        // reports it). `y`/`n` are strings to PyYAML too: quoted for other YAML 1.1 readers.
        // The pipeline runtime reads them all as strings already.
        for w in ["yes", "No", "ON", "off"] {
            assert_eq!(render(w, false, true, true), w);
        }
        for w in ["y", "N"] {
            assert_eq!(render(w, false, true, true), format!("\"{w}\""));
        }
        for w in ["yes", "No", "ON", "off", "y", "N"] {
            assert_eq!(render(w, false, false, true), w);
            // Quoted by the author: kept quoted for YAML 1.1 readers other than PyYAML.
            assert_eq!(render(w, false, false, false), format!("\"{w}\""));
        }
        for v in [
            "010",
            "1_000",
            "1:30",
            "1:30.5",
            "190:20:30",
            "0b101",
            "+1",
            ".5",
            "1.0",
            "-1.5e+3",
            "0x1F",
            "2001-12-14",
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14 21:59:43.10 -5",
            "2001-1-4 1:59:43Z",
            "=",
            "<<",
            "~",
            "-.inf",
            ".NaN",
            "12:30:45",
            "1__",
        ] {
            assert!(yaml11_non_string(v, false), "{v}");
            assert_eq!(render(v, false, false, true), format!("\"{v}\""));
        }
        for v in [
            "1e3",
            "0o",
            "1.5e3",
            "-.5",
            "+.5",
            "1:60",
            "2001-1-14",
            "1.2.3",
            "v1",
            "0x",
            "08",
            "-",
            "yes!",
            "<",
            "==",
            "2001-12-14T",
            "Y2K",
        ] {
            assert!(!yaml11_non_string(v, true), "{v}");
        }
        // A number to YAML 1.2 (though not to PyYAML): quoted for pipewright's sake.
        assert_eq!(render("0o10", false, false, false), "\"0o10\"");
    }

    #[test]
    fn numbers_pyyaml_reads_differently_are_respelled() {
        for (from, to) in [
            ("010", Some("10")),
            ("-010", Some("-10")),
            ("08", Some("8")),
            ("0o17", Some("15")),
            ("1e3", Some("1.0e+3")),
            ("-.5", Some("-0.5")),
            ("+.5E-2", Some("+0.5E-2")),
            ("1.5e3", Some("1.5e+3")),
            ("7.e3", Some("7.e+3")),
            ("10", None),
            ("0", None),
            ("-0x1F", None),
            ("1.5", None),
            (".5", None),
            ("1.0e+3", None),
            ("-.inf", None),
            (".nan", None),
            ("123456789012345678901234", None),
            ("true", None),
            ("abc", None),
        ] {
            let value = Scalar {
                text: from.into(),
                style: ScalarStyle::Plain,
            };
            assert_eq!(
                yaml11_number(from, &value.resolve()).as_deref(),
                to,
                "{from}"
            );
        }
    }
}
