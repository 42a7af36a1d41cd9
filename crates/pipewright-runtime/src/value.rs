//! Value helpers the interpreter needs beyond R1's own.

use indexmap::IndexMap;
use pipewright_r1::value::format_float;
use pipewright_r1::Value;

/// Python's `str()` of a value: how the reference turns a `match.on` result into a case label
/// (`True`, `None`, `1.0`, `['a', 1]`). Labels written for the reference must keep matching.
pub fn python_str(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        other => python_repr(other),
    }
}

fn python_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(n) => n.to_string(),
        Value::Float(x) if x.is_nan() => "nan".into(),
        Value::Float(x) if x.is_infinite() => {
            if *x > 0.0 {
                "inf".into()
            } else {
                "-inf".into()
            }
        }
        Value::Float(x) => {
            let s = format_float(*x);
            // Python writes exponents with a sign and at least two digits: 1e+16.
            match s.split_once('e') {
                Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e:0>2}"),
                Some((m, e)) => format!("{m}e-{:0>2}", &e[1..]),
                None => s,
            }
        }
        Value::Str(s) => {
            let q = if s.contains('\'') && !s.contains('"') {
                '"'
            } else {
                '\''
            };
            let mut o = String::new();
            o.push(q);
            for c in s.chars() {
                match c {
                    '\\' => o.push_str("\\\\"),
                    '\n' => o.push_str("\\n"),
                    '\t' => o.push_str("\\t"),
                    '\r' => o.push_str("\\r"),
                    c if c == q => {
                        o.push('\\');
                        o.push(c);
                    }
                    c => o.push(c),
                }
            }
            o.push(q);
            o
        }
        Value::List(l) => format!(
            "[{}]",
            l.iter().map(python_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!(
                    "{}: {}",
                    python_repr(&Value::Str(k.clone())),
                    python_repr(v)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub fn obj(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<IndexMap<_, _>>(),
    )
}

/// A short rendering of a value for a diagnostic: compact JSON cut at `max` characters.
pub fn preview(v: &Value, max: usize) -> String {
    let s = v.to_json_string();
    if s.chars().count() <= max {
        s
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_labels() {
        assert_eq!(python_str(&Value::Bool(true)), "True");
        assert_eq!(python_str(&Value::Null), "None");
        assert_eq!(python_str(&Value::Float(1.0)), "1.0");
        assert_eq!(python_str(&Value::Float(1e16)), "1e+16");
        assert_eq!(
            python_str(&Value::from_json(&serde_json::json!(["a", 1, {"k": null}]))),
            "['a', 1, {'k': None}]"
        );
    }
}
