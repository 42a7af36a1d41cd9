//! What PyYAML's `safe_load` (YAML 1.1) makes of an untagged plain scalar, where this crate
//! reads YAML 1.2: the reference runtimes load workflow files with PyYAML, so the formatter
//! quotes what PyYAML would misread and the recipe checks and drawing read values as the runner
//! does. PyYAML's implicit resolvers are regular expressions; these are hand-written matchers of
//! the same patterns, one pass each, without a regex engine.

/// The type PyYAML's implicit resolvers give an untagged plain scalar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plain {
    /// `~`, `null` in three casings, and the empty scalar.
    Null,
    /// `true`/`false`, `yes`/`no` and `on`/`off`, each in lower, capitalised or upper case.
    Bool(bool),
    Int(Radix),
    /// `1.0`, `.5`, `-1.5e+3`, `1:30.5` (sexagesimal), `.inf`, `.nan`; not `1e3`.
    Float,
    /// `2001-12-14`: a `datetime.date`.
    Date,
    /// `2001-12-14t21:59:43.10-05:00`, `2001-12-14 21:59:43.10 -5`: a `datetime.datetime`.
    DateTime,
    /// `<<`, the merge key.
    Merge,
    /// `=`, the value key, which `safe_load` has no constructor for.
    Value,
    Str,
}

/// The form of an integer PyYAML reads: `0b1010`, `0644` (a leading zero is octal), `1_000`,
/// `0x1F`, `190:20:30` (base 60). `0o17` is not one of them: a string to PyYAML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Radix {
    Binary,
    Octal,
    Decimal,
    Hex,
    Sexagesimal,
}

/// How PyYAML resolves the untagged plain scalar `text`.
pub fn resolve(text: &str) -> Plain {
    let bytes = text.as_bytes();
    match bytes.first() {
        None => Plain::Null,
        // Numbers and timestamps start with one of these, keywords never do.
        Some(b'0'..=b'9' | b'+' | b'-' | b'.') => {
            if let Some(radix) = int_radix(bytes) {
                Plain::Int(radix)
            } else if is_float(bytes) {
                Plain::Float
            } else {
                timestamp(bytes).unwrap_or(Plain::Str)
            }
        }
        Some(_) => match text {
            "~" | "null" | "Null" | "NULL" => Plain::Null,
            "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => {
                Plain::Bool(true)
            }
            "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
                Plain::Bool(false)
            }
            "<<" => Plain::Merge,
            "=" => Plain::Value,
            _ => Plain::Str,
        },
    }
}

/// Whether PyYAML reads `text` as a boolean that YAML 1.2 reads as a string: `yes`/`no`/
/// `on`/`off` in PyYAML's three casings. `y`/`n` and mixed cases such as `yES` are strings to
/// PyYAML, although the YAML 1.1 type repository lists them.
pub fn is_bool_word(text: &str) -> bool {
    matches!(
        text,
        "yes" | "Yes" | "YES" | "no" | "No" | "NO" | "on" | "On" | "ON" | "off" | "Off" | "OFF"
    )
}

/// A cursor over the bytes of a scalar, for the hand-written forms of PyYAML's patterns.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, at: 0 }
    }
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }
    /// Takes the next byte if `pred` holds for it.
    fn eat(&mut self, pred: impl Fn(u8) -> bool) -> bool {
        let ok = self.peek().is_some_and(pred);
        self.at += usize::from(ok);
        ok
    }
    /// Takes every next byte `pred` holds for; how many.
    fn eat_all(&mut self, pred: impl Fn(u8) -> bool) -> usize {
        let from = self.at;
        while self.eat(&pred) {}
        self.at - from
    }
    /// Takes between `min` and `max` digits; whether there were at least `min`.
    fn digits(&mut self, min: usize, max: usize) -> bool {
        let from = self.at;
        while self.at - from < max && self.eat(is_digit) {}
        self.at - from >= min
    }
    fn sign(&mut self) {
        self.eat(|c| c == b'+' || c == b'-');
    }
    fn done(&self) -> bool {
        self.at == self.bytes.len()
    }
    fn rest(&self) -> &'a [u8] {
        &self.bytes[self.at..]
    }
    /// `(:[0-5]?[0-9])+`, the base-60 groups; greedy is exact here (a one-digit group followed
    /// by a digit could not be followed by what must come next either).
    fn sexagesimal(&mut self) -> bool {
        let mut groups = 0;
        while self.peek() == Some(b':') {
            let digit_at = |k: usize| {
                self.bytes
                    .get(self.at + k)
                    .copied()
                    .filter(u8::is_ascii_digit)
            };
            match (digit_at(1), digit_at(2)) {
                (Some(tens), Some(_)) if tens <= b'5' => self.at += 3,
                (Some(_), _) => self.at += 2,
                _ => return false,
            }
            groups += 1;
        }
        groups > 0
    }
}

fn is_digit(c: u8) -> bool {
    c.is_ascii_digit()
}

fn is_digit_or_underscore(c: u8) -> bool {
    c.is_ascii_digit() || c == b'_'
}

/// `[-+]?0b[0-1_]+ | [-+]?0[0-7_]+ | [-+]?(0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+ |
/// [-+]?[1-9][0-9_]*(:[0-5]?[0-9])+`: the form of the integer, or `None`.
fn int_radix(bytes: &[u8]) -> Option<Radix> {
    let mut c = Cursor::new(bytes);
    c.sign();
    let body = c.rest();
    let all_after = |prefix: usize, pred: fn(u8) -> bool| {
        body.len() > prefix && body[prefix..].iter().all(|&x| pred(x))
    };
    if body.starts_with(b"0b") {
        return all_after(2, |x| matches!(x, b'0' | b'1' | b'_')).then_some(Radix::Binary);
    }
    if body.starts_with(b"0x") {
        return all_after(2, |x| x.is_ascii_hexdigit() || x == b'_').then_some(Radix::Hex);
    }
    if body == b"0" {
        return Some(Radix::Decimal);
    }
    if body.first() == Some(&b'0') {
        return all_after(1, |x| matches!(x, b'0'..=b'7' | b'_')).then_some(Radix::Octal);
    }
    if !c.eat(|x| matches!(x, b'1'..=b'9')) {
        return None;
    }
    c.eat_all(is_digit_or_underscore);
    if c.done() {
        return Some(Radix::Decimal);
    }
    (c.sexagesimal() && c.done()).then_some(Radix::Sexagesimal)
}

/// `[-+]?[0-9][0-9_]*\.[0-9_]*([eE][-+][0-9]+)? | \.[0-9][0-9_]*([eE][-+][0-9]+)? |
/// [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]* | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)`
fn is_float(bytes: &[u8]) -> bool {
    if matches!(
        bytes,
        b".nan" | b".NaN" | b".NAN" | b".inf" | b".Inf" | b".INF"
    ) {
        return true;
    }
    // The exponent needs its sign: `1.0e3` is a string to PyYAML.
    let exponent = |c: &mut Cursor| {
        if c.eat(|x| x == b'e' || x == b'E') {
            c.eat(|x| x == b'+' || x == b'-') && c.eat_all(is_digit) > 0
        } else {
            true
        }
    };
    let mut c = Cursor::new(bytes);
    // No sign before a leading dot.
    if c.eat(|x| x == b'.') {
        return c.eat(is_digit) && {
            c.eat_all(is_digit_or_underscore);
            exponent(&mut c) && c.done()
        };
    }
    c.sign();
    if matches!(c.rest(), b".inf" | b".Inf" | b".INF") {
        return true;
    }
    if !c.eat(is_digit) {
        return false;
    }
    c.eat_all(is_digit_or_underscore);
    if c.eat(|x| x == b'.') {
        c.eat_all(is_digit_or_underscore);
        return exponent(&mut c) && c.done();
    }
    c.sexagesimal() && c.eat(|x| x == b'.') && {
        c.eat_all(is_digit_or_underscore);
        c.done()
    }
}

/// `[0-9]{4}-[0-9]{2}-[0-9]{2}` (a date) or `[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt]|[ \t]+)
/// [0-9]{1,2}:[0-9]{2}:[0-9]{2}(\.[0-9]*)?([ \t]*(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?` (a date and
/// time). Blanks at the end are accepted too, which a plain scalar never has.
fn timestamp(bytes: &[u8]) -> Option<Plain> {
    let mut c = Cursor::new(bytes);
    if !(c.digits(4, 4) && c.eat(|x| x == b'-')) {
        return None;
    }
    let month = c.at;
    if !(c.digits(1, 2) && c.eat(|x| x == b'-')) {
        return None;
    }
    let day = c.at;
    if !c.digits(1, 2) {
        return None;
    }
    if c.done() {
        // The date alone needs two-digit month and day.
        return (c.at - day == 2 && day - month == 3).then_some(Plain::Date);
    }
    let blanks = |c: &mut Cursor| c.eat_all(|x| x == b' ' || x == b'\t');
    if !(c.eat(|x| x == b'T' || x == b't') || blanks(&mut c) > 0) {
        return None;
    }
    let time = c.digits(1, 2)
        && c.eat(|x| x == b':')
        && c.digits(2, 2)
        && c.eat(|x| x == b':')
        && c.digits(2, 2);
    if !time {
        return None;
    }
    if c.eat(|x| x == b'.') {
        c.eat_all(is_digit);
    }
    blanks(&mut c);
    let zone = if c.done() {
        true
    } else if c.eat(|x| x == b'Z') {
        c.done()
    } else {
        c.eat(|x| x == b'+' || x == b'-')
            && c.digits(1, 2)
            && (c.done() || (c.eat(|x| x == b':') && c.digits(2, 2) && c.done()))
    };
    zone.then_some(Plain::DateTime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_in_pyyaml_s_three_casings_only() {
        for (text, want) in [
            ("", Plain::Null),
            ("~", Plain::Null),
            ("null", Plain::Null),
            ("NULL", Plain::Null),
            ("nULL", Plain::Str),
            ("true", Plain::Bool(true)),
            ("True", Plain::Bool(true)),
            ("yes", Plain::Bool(true)),
            ("ON", Plain::Bool(true)),
            ("False", Plain::Bool(false)),
            ("no", Plain::Bool(false)),
            ("Off", Plain::Bool(false)),
            ("yES", Plain::Str),
            ("y", Plain::Str),
            ("N", Plain::Str),
            ("<<", Plain::Merge),
            ("=", Plain::Value),
            ("<", Plain::Str),
            ("==", Plain::Str),
            ("yes!", Plain::Str),
            ("Y2K", Plain::Str),
            ("v1", Plain::Str),
        ] {
            assert_eq!(resolve(text), want, "{text:?}");
        }
    }

    #[test]
    fn bool_words_are_the_booleans_yaml_1_2_reads_as_strings() {
        for w in ["yes", "No", "ON", "off", "Yes", "NO"] {
            assert!(is_bool_word(w), "{w}");
            assert!(matches!(resolve(w), Plain::Bool(_)), "{w}");
        }
        for w in ["true", "False", "y", "N", "yES", "oN", ""] {
            assert!(!is_bool_word(w), "{w}");
        }
    }

    #[test]
    fn integers_and_their_forms() {
        use Radix::*;
        for (text, radix) in [
            ("0", Decimal),
            ("-0", Decimal),
            ("10", Decimal),
            ("+1", Decimal),
            ("1_000", Decimal),
            ("1__", Decimal),
            ("010", Octal),
            ("0_7", Octal),
            ("-010", Octal),
            ("0b101", Binary),
            ("0b_", Binary),
            ("0x1F", Hex),
            ("-0x1F", Hex),
            ("0x0", Hex),
            ("1:30", Sexagesimal),
            ("190:20:30", Sexagesimal),
            ("12:30:45", Sexagesimal),
            ("1:5", Sexagesimal),
        ] {
            assert_eq!(resolve(text), Plain::Int(radix), "{text:?}");
        }
        // `0o` is YAML 1.2's octal, `08` is not octal, `1:60` has a group past 59.
        for text in [
            "0o17", "0o", "08", "0x", "0b", "0b2", "1:60", "0:30", "1:", "-", "+", "1e3",
        ] {
            assert!(!matches!(resolve(text), Plain::Int(_)), "{text:?}");
        }
    }

    #[test]
    fn floats_need_a_dot_and_a_signed_exponent() {
        for text in [
            "1.0", ".5", "1.", "-1.5e+3", "1.0E-5", "0.0e+5", "7.e+3", "1_0.0_1", "1:30.5",
            "1:30.", ".inf", "-.inf", "+.INF", ".NaN", ".nan",
        ] {
            assert_eq!(resolve(text), Plain::Float, "{text:?}");
        }
        for text in [
            "1e3", "1.5e3", "-.5", "+.5", ".", "..5", "1.2.3", "-.nan", ".Nan", "1.0e+", "1:60.0",
            ".e5",
        ] {
            assert_ne!(resolve(text), Plain::Float, "{text:?}");
        }
    }

    #[test]
    fn dates_and_date_times() {
        for text in ["2001-12-14", "2024-01-01"] {
            assert_eq!(resolve(text), Plain::Date, "{text:?}");
        }
        for text in [
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14T21:59:43Z",
            "2001-12-14 21:59:43.10 -5",
            "2001-1-4 1:59:43Z",
            "2001-12-14\t1:59:43",
            "2001-12-14 21:59:43.",
        ] {
            assert_eq!(resolve(text), Plain::DateTime, "{text:?}");
        }
        for text in [
            "2001-1-14",
            "2001-12-4",
            "12001-12-14",
            "2001-123-1",
            "2001-12-14T",
            "2001-12-14 123:00:00",
            "2001-12-14 1:000:00",
            "2001-12-14 1:00:001",
            "2001-12-14 1:00:00 +5:0",
            "2001-12-14 1:00:00 +123",
            "2001-12-14 1:00:00ZZ",
            "2001-12-14 1:00:00Z+5",
            "2001-12-14x1:00:00",
        ] {
            assert_eq!(resolve(text), Plain::Str, "{text:?}");
        }
    }
}
