//! YAML values → JSON values, for every dialect that hands YAML literals on (tool argument
//! literals, `items`, enum values, a recipe's sub-recipe context).

use crate::{Node, NodeKind, ScalarValue};
use serde_json::Value;

/// Converts without recursion limits of its own: the loader already bounded nesting depth.
/// A non-finite float (`.inf`, `.nan`) has no JSON form and becomes null.
pub fn to_json(node: &Node) -> Value {
    match &node.kind {
        NodeKind::Scalar(s) => match s.resolve() {
            ScalarValue::Null => Value::Null,
            ScalarValue::Bool(b) => Value::Bool(b),
            ScalarValue::Int(i) => Value::from(i),
            ScalarValue::Float(f) => {
                serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
            }
            ScalarValue::Str(t) => Value::String(t.to_string()),
        },
        NodeKind::Seq(items) => Value::Array(items.iter().map(to_json).collect()),
        NodeKind::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|e| {
                    (
                        e.key.key_text().unwrap_or("").to_string(),
                        to_json(&e.value),
                    )
                })
                .collect(),
        ),
    }
}
