//! What a step's raw result becomes in the context (`_process_step_result`, notes §5.3) and
//! the aggressive JSON extraction of `parse_json: true` (§5.4), with Python's `json` rules:
//! any JSON value, scalars included; `NaN`, `Infinity`, `-Infinity` (as `Value::Float`);
//! repeated keys keep the last value; integers of any size.
//!
//! Known differences from Python's `json`: a lone surrogate escape (`"\ud800"`) does not
//! decode, nesting deeper than [`crate::value::MAX_DEPTH`] does not decode (Python fails near
//! 1000 levels with a `RecursionError`), and an integer of more than 4300 digits decodes here
//! where Python 3.11+ raises `ValueError`.

use super::py::{is_py_space, py_strip};
use crate::value::{JsonError, JsonProblem, Value};

/// `json.loads(s)`: one JSON value, JSON blanks around it allowed.
pub fn loads(s: &str) -> Option<Value> {
    Value::from_json_text(s).ok()
}

/// `JSONDecoder().raw_decode(s)`: the JSON value that starts exactly at the beginning of `s`
/// (no blanks skipped), whatever follows it.
pub fn raw_decode(s: &str) -> Option<Value> {
    let first = s.chars().next()?;
    if matches!(first, ' ' | '\t' | '\n' | '\r') {
        return None;
    }
    // Python matches a number with `-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?` and stops where
    // the pattern does, so `01` is 0 and `1.` is 1; the value reader would reject both.
    if first == '-' || first.is_ascii_digit() {
        if let Some(n) = number_len(s.as_bytes()) {
            return loads(&s[..n]);
        }
    }
    match Value::from_json_text(s) {
        Ok(v) => Some(v),
        // Trailing text starts at the error's byte; the value is everything before it.
        Err(JsonError {
            problem: JsonProblem::ExtraData,
            at,
        }) => loads(s.get(..at)?),
        Err(_) => None,
    }
}

/// Length of Python's JSON number pattern at the start of `b`, if it matches.
fn number_len(b: &[u8]) -> Option<usize> {
    let digits = |mut i: usize| {
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        (i, i - start)
    };
    let mut i = usize::from(b.first() == Some(&b'-'));
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(i).0,
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let (j, n) = digits(i + 1);
        if n > 0 {
            i = j;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        let (j, n) = digits(i + 1 + sign);
        if n > 0 {
            i = j;
        }
    }
    Some(i)
}

fn trivial(v: &Value) -> bool {
    match v {
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        _ => false,
    }
}

/// The aggressive extraction of `parse_json: true`, in the runner's order: the whole stripped
/// text as JSON; the first fenced block (```` ``` ```` then optionally `json`, then blanks; other
/// language tags stay in the content) decoded from its start; then each `[` or `{` in order;
/// an empty `{}`/`[]` only when nothing else decodes; else the original, unstripped text.
pub fn extract_json(output: &str) -> Value {
    let s = py_strip(output);
    if s.is_empty() {
        return Value::Str(output.to_owned());
    }
    if let Some(v) = loads(s) {
        return v;
    }
    if let Some(v) = fenced(s).filter(|v| !trivial(v)) {
        return v;
    }
    let mut first = None;
    for (i, c) in s.char_indices() {
        if c != '[' && c != '{' {
            continue;
        }
        if let Some(v) = raw_decode(&s[i..]) {
            if !trivial(&v) {
                return v;
            }
            first.get_or_insert(v);
        }
    }
    first.unwrap_or_else(|| Value::Str(output.to_owned()))
}

/// The value at the start of the first fenced block (`re.search(r"```(?:json)?\s*")` up to the
/// next ```` ``` ````, stripped).
fn fenced(s: &str) -> Option<Value> {
    let open = s.find("```")?;
    let mut start = open + 3;
    if s[start..].starts_with("json") {
        start += 4;
    }
    start += s[start..].len() - s[start..].trim_start_matches(is_py_space).len();
    let end = start + s[start..].find("```")?;
    let content = py_strip(&s[start..end]);
    if content.is_empty() {
        return None;
    }
    raw_decode(content)
}

/// What a step's result becomes before it is stored in `output`: a mapping with an `output`
/// key is replaced by that value (the spawn envelope, and a sub-recipe whose delta has an
/// `output` key); a string is then extracted (`parse_json`), or read as JSON when it is some,
/// and for a bash step extracted when it is not; otherwise the value is kept as it is, a
/// string unstripped (bash stdout keeps its final newline).
pub fn process_result(result: Value, is_bash: bool, parse_json: bool) -> Value {
    let result = match result {
        Value::Map(mut m) if m.contains_key("output") => {
            m.shift_remove("output").unwrap_or(Value::Null)
        }
        other => other,
    };
    let Value::Str(s) = result else {
        return result;
    };
    if parse_json {
        return extract_json(&s);
    }
    let stripped = py_strip(&s);
    if stripped.is_empty() {
        return Value::Str(s);
    }
    if let Some(v) = loads(stripped) {
        return v;
    }
    if is_bash {
        let v = extract_json(&s);
        if !matches!(&v, Value::Str(t) if *t == s) {
            return v;
        }
    }
    Value::Str(s)
}
