//! Conversions between a recipe's context values (Python-exact: big integers, NaN) and the
//! JSON the run store and the run report hold.

use crate::runtime::Context;
use crate::value::Value;

/// For reports: a value as JSON. A big integer keeps its digits when JSON can hold them;
/// NaN and the infinities, which JSON cannot, become null.
pub(super) fn to_json(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::BigInt(s) => s
            .parse::<serde_json::Number>()
            .map(J::Number)
            .unwrap_or_else(|_| J::String(s.clone())),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        Value::Str(s) => J::String(s.clone()),
        Value::List(items) => J::Array(items.iter().map(to_json).collect()),
        Value::Map(m) => J::Object(m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
    }
}

pub(super) fn context_json(ctx: &Context) -> serde_json::Value {
    serde_json::Value::Object(ctx.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
}

/// For the store: exact text (Python's `json.dumps`), read back with [`from_text`].
pub(super) fn to_text(v: &Value) -> String {
    let mut out = String::new();
    v.write_json(&mut out);
    out
}

pub(super) fn from_text(text: &str) -> Result<Value, crate::value::JsonError> {
    Value::from_json_text(text)
}

/// A landing as the store keeps it: the value as JSON when the store's JSON gives it back
/// exactly (so `runs show` prints it as JSON), else its exact text (big integers, NaN).
pub(super) fn to_landed(v: &Value) -> serde_json::Value {
    let j = to_json(v);
    let back = serde_json::from_str::<serde_json::Value>(&j.to_string()).ok();
    if back.is_some_and(|b| Value::from(&b) == *v) {
        j
    } else {
        serde_json::Value::String(to_text(v))
    }
}

/// A landing read back: JSON, or the exact text every landing of older runs holds. A
/// landing is always a mapping, so a string is always text.
pub(super) fn from_landed(j: &serde_json::Value) -> Option<Value> {
    match j {
        serde_json::Value::String(t) => from_text(t).ok(),
        other => Some(Value::from(other)),
    }
}

/// A JSON object as a context (anything else: empty).
pub(super) fn context_of(v: &serde_json::Value) -> Context {
    match Value::from(v) {
        Value::Map(m) => m,
        _ => Context::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn landings_are_json_where_json_is_exact_and_text_otherwise_and_both_read_back() {
        let plain = from_text(r#"{"a": 1, "b": [1.5, "x", null, true], "c": {"d": 1.0}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let landed = to_landed(&plain);
        assert!(landed.is_object(), "{landed}");
        assert_eq!(from_landed(&landed), Some(plain.clone()));
        // What JSON cannot hold stays exact text.
        for text in [r#"{"n": 123456789012345678901234567890}"#, r#"{"f": NaN}"#] {
            let v = from_text(text).unwrap_or_else(|e| panic!("{e}"));
            let landed = to_landed(&v);
            assert_eq!(landed, serde_json::Value::String(text.into()));
            // NaN is not equal to itself: compare the exact texts.
            assert_eq!(from_landed(&landed).map(|b| to_text(&b)), Some(to_text(&v)));
        }
        // Runs recorded before hold every landing as text: they still read.
        assert_eq!(
            from_landed(&serde_json::Value::String(to_text(&plain))),
            Some(plain)
        );
    }
}
