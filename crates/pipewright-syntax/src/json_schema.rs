//! Building blocks of the JSON Schemas each dialect crate generates from its loader's tables
//! (their `schema` modules; docs/schemas.md).

use serde_json::{json, Map, Value};

pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// A string, described.
pub fn string(doc: &str) -> Value {
    json!({"type": "string", "description": doc})
}

/// An object of exactly `keys`, each one's schema given by `value`, of which `required` must be
/// present: `additionalProperties: false`, as the loaders report any other key.
pub fn closed_object(
    keys: &[&str],
    required: &[&str],
    doc: &str,
    value: impl Fn(&str) -> Value,
) -> Value {
    let properties: Map<String, Value> = keys.iter().map(|k| (k.to_string(), value(k))).collect();
    let mut o = json!({
        "type": "object",
        "description": doc,
        "properties": properties,
        "additionalProperties": false,
    });
    // Only when there is one: draft 4 readers (taplo) refuse an empty `required`.
    if !required.is_empty() {
        o["required"] = json!(required);
    }
    o
}

/// A dialect's schema document: `$schema`, `$id` (named after the file under schemas/), `title`
/// and `description` first, then the members of `body` (its own `description` replaced).
pub fn document(dialect: &str, title: &str, description: &str, body: Value) -> Value {
    let mut out = Map::new();
    out.insert("$schema".into(), json!(DRAFT_2020_12));
    out.insert(
        "$id".into(),
        json!(format!(
            "https://pipewright.dev/schemas/{dialect}.schema.json"
        )),
    );
    out.insert("title".into(), json!(title));
    out.insert("description".into(), json!(description));
    if let Value::Object(members) = body {
        for (k, v) in members {
            out.entry(k).or_insert(v);
        }
    }
    Value::Object(out)
}
