//! Conversions between a recipe's context values (Python-exact: big integers, NaN) and the
//! JSON the run store and the run report hold.

use pipewright_recipe::runtime::Context;
use pipewright_recipe::value::Value;

/// For reports: a value as JSON. A big integer keeps its digits when JSON can hold them;
/// NaN and the infinities, which JSON cannot, become null.
pub fn to_json(v: &Value) -> serde_json::Value {
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

pub fn context_json(ctx: &Context) -> serde_json::Value {
    serde_json::Value::Object(ctx.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
}

/// For the store: exact text (Python's `json.dumps`), read back with [`from_text`].
pub fn to_text(v: &Value) -> String {
    let mut out = String::new();
    v.write_json(&mut out);
    out
}

pub fn from_text(text: &str) -> Result<Value, String> {
    Value::from_json_text(text)
}

/// A JSON object as a context (anything else: empty).
pub fn context_of(v: &serde_json::Value) -> Context {
    match Value::from(v) {
        Value::Map(m) => m,
        _ => Context::new(),
    }
}
