//! Runtime values: JSON with integers and floats kept apart.

use indexmap::IndexMap;
use std::fmt;

#[derive(Debug, Clone, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    Object(IndexMap<String, Value>),
}

impl Value {
    /// The type name used in messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Object(_) => "object",
        }
    }

    /// Falsy: null, false, 0, 0.0, -0.0, "", [], {}; everything else (NaN included) is truthy.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(n) => *n != 0,
            Value::Float(x) => *x != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Object(o) => !o.is_empty(),
        }
    }

    /// Deep equality: numbers compare across int/float, objects ignore key order, a bool never
    /// equals a number.
    pub fn deep_eq(&self, other: &Value) -> bool {
        let mut stack = vec![(self, other)];
        while let Some((a, b)) = stack.pop() {
            let same = match (a, b) {
                (Value::Null, Value::Null) => true,
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::Str(x), Value::Str(y)) => x == y,
                (Value::List(x), Value::List(y)) => {
                    stack.extend(x.iter().zip(y));
                    x.len() == y.len()
                }
                (Value::Object(x), Value::Object(y)) => {
                    for (k, v) in x {
                        match y.get(k) {
                            Some(w) => stack.push((v, w)),
                            None => return false,
                        }
                    }
                    x.len() == y.len()
                }
                _ => match (a.as_number(), b.as_number()) {
                    (Some(x), Some(y)) => num_eq(x, y),
                    _ => false,
                },
            };
            if !same {
                return false;
            }
        }
        true
    }

    /// The value as a number, if it is an int or a float (never a bool).
    pub fn as_number(&self) -> Option<Number> {
        match self {
            Value::Int(n) => Some(Number::Int(*n)),
            Value::Float(x) => Some(Number::Float(*x)),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&IndexMap<String, Value>> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// Converts a JSON value; a JSON number without fraction or exponent that fits in i64 is an
    /// int, anything else numeric is a float.
    pub fn from_json(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::Str(s.clone()),
            serde_json::Value::Array(a) => Value::List(a.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// Converts to JSON. Non-finite floats have no JSON form and become null.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(n) => serde_json::Value::from(*n),
            Value::Float(x) => serde_json::Number::from_f64(*x)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Value::Str(s) => serde_json::Value::String(s.clone()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_json).collect()),
            Value::Object(o) => {
                serde_json::Value::Object(o.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// Compact JSON text; floats always carry a fractional part or exponent (`3.0`), so an int
    /// and a float never print alike.
    pub fn to_json_string(&self) -> String {
        let mut out = String::new();
        write_json(self, &mut out);
        out
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        self.deep_eq(other)
    }
}

impl From<serde_json::Value> for Value {
    fn from(json: serde_json::Value) -> Value {
        Value::from_json(&json)
    }
}

impl From<&Value> for serde_json::Value {
    fn from(v: &Value) -> serde_json::Value {
        v.to_json()
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json_string())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(n) => n as f64,
            Number::Float(x) => x,
        }
    }
}

/// Exact comparison of an int with a float (no rounding of large ints through f64).
pub(crate) fn num_cmp(a: Number, b: Number) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Number::Int(x), Number::Int(y)) => Some(x.cmp(&y)),
        (Number::Float(x), Number::Float(y)) => x.partial_cmp(&y),
        (Number::Int(x), Number::Float(y)) => int_float_cmp(x, y),
        (Number::Float(x), Number::Int(y)) => int_float_cmp(y, x).map(std::cmp::Ordering::reverse),
    }
}

fn int_float_cmp(i: i64, f: f64) -> Option<std::cmp::Ordering> {
    if f.is_nan() {
        return None;
    }
    // 2^63 as f64 is exact; beyond the i64 range the float decides.
    if f >= 9_223_372_036_854_775_808.0 {
        return Some(std::cmp::Ordering::Less);
    }
    if f < -9_223_372_036_854_775_808.0 {
        return Some(std::cmp::Ordering::Greater);
    }
    let t = f.trunc();
    let ti = t as i64;
    match i.cmp(&ti) {
        std::cmp::Ordering::Equal => 0.0f64.partial_cmp(&(f - t)),
        o => Some(o),
    }
}

fn num_eq(a: Number, b: Number) -> bool {
    num_cmp(a, b) == Some(std::cmp::Ordering::Equal)
}

fn write_json(v: &Value, out: &mut String) {
    // An explicit stack: values decoded by parse_json may nest arbitrarily deep.
    enum Item<'a> {
        Val(&'a Value),
        Raw(&'static str),
        Key(&'a str),
    }
    let mut stack = vec![Item::Val(v)];
    while let Some(item) = stack.pop() {
        match item {
            Item::Raw(s) => out.push_str(s),
            Item::Key(k) => {
                push_json_str(k, out);
                out.push(':');
            }
            Item::Val(v) => match v {
                Value::Null => out.push_str("null"),
                Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                Value::Int(n) => out.push_str(&n.to_string()),
                Value::Float(x) => out.push_str(&format_float(*x)),
                Value::Str(s) => push_json_str(s, out),
                Value::List(l) => {
                    out.push('[');
                    stack.push(Item::Raw("]"));
                    for (i, x) in l.iter().enumerate().rev() {
                        stack.push(Item::Val(x));
                        if i > 0 {
                            stack.push(Item::Raw(","));
                        }
                    }
                }
                Value::Object(o) => {
                    out.push('{');
                    stack.push(Item::Raw("}"));
                    for (i, (k, x)) in o.iter().enumerate().rev() {
                        stack.push(Item::Val(x));
                        stack.push(Item::Key(k));
                        if i > 0 {
                            stack.push(Item::Raw(","));
                        }
                    }
                }
            },
        }
    }
}

fn push_json_str(s: &str, out: &mut String) {
    out.push_str(&serde_json::Value::String(s.to_string()).to_string());
}

/// Shortest round-trip text of a float with a guaranteed `.0` when integral; non-finite values
/// (which JSON cannot hold) print as `null`.
pub fn format_float(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_string();
    }
    let s = format!("{x:?}");
    if s.contains(['.', 'e', 'E']) {
        s
    } else {
        format!("{s}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_int_and_float_apart() {
        let v = Value::from_json(&serde_json::json!({"a": 3, "b": 3.0, "c": [1.5, "x", null]}));
        assert_eq!(v.to_json_string(), r#"{"a":3,"b":3.0,"c":[1.5,"x",null]}"#);
        assert!(matches!(
            v.as_object().and_then(|o| o.get("b")),
            Some(Value::Float(_))
        ));
    }

    #[test]
    fn equality_rules() {
        assert_eq!(Value::Int(1), Value::Float(1.0));
        assert_ne!(Value::Bool(true), Value::Int(1));
        assert_ne!(
            Value::Int(i64::MAX),
            Value::Float(9_223_372_036_854_775_807.0)
        );
    }

    #[test]
    fn floats_print_with_fraction() {
        assert_eq!(format_float(3.0), "3.0");
        assert_eq!(format_float(1e16), "1e16");
        assert_eq!(format_float(0.1 + 0.2), "0.30000000000000004");
    }
}
