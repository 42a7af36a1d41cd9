//! Key documentation from a dialect's JSON Schema (what `pipewright schema` prints, generated
//! from its loader's tables), for hover over keys and for completing enumerated values.

use serde_json::Value;
use std::sync::OnceLock;

/// A dialect's schema, built on first use and kept.
pub struct SchemaDocs {
    schema: OnceLock<Value>,
    build: fn() -> Value,
}

impl SchemaDocs {
    pub const fn new(build: fn() -> Value) -> SchemaDocs {
        SchemaDocs {
            schema: OnceLock::new(),
            build,
        }
    }

    fn root(&self) -> &Value {
        self.schema.get_or_init(self.build)
    }

    /// The schema of the key at the end of `path` (the keys from the root).
    fn property(&self, path: &[&str]) -> Option<&Value> {
        let root = self.root();
        let (key, parents_path) = path.split_last()?;
        let mut current = Vec::new();
        alternatives(root, root, &mut current, 0);
        for k in parents_path {
            current = child(root, &current, k);
        }
        current
            .iter()
            .find_map(|p| Some(resolve(root, p.get("properties")?.get(*key)?)))
    }

    /// The values the schema enumerates for the key at the end of `path`.
    pub fn enum_values(&self, path: &[&str]) -> Vec<String> {
        self.property(path)
            .and_then(|s| s.get("enum")?.as_array())
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    }

    /// The description (and type) of the key at the end of `path` (the keys from the root).
    pub fn describe(&self, path: &[&str]) -> Option<String> {
        let key = path.last()?;
        let found = self.property(path)?;
        let mut text = format!("`{key}`");
        if let Some(t) = type_name(found) {
            text.push_str(&format!(" ({t})"));
        }
        if let Some(d) = found.get("description").and_then(Value::as_str) {
            text.push_str(&format!(": {d}"));
        }
        if let Some(values) = found.get("enum").and_then(Value::as_array) {
            let vs: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
            text.push_str(&format!("\n\nOne of {}.", vs.join(", ")));
        }
        Some(text)
    }
}

/// `#/$defs/NAME` references followed.
fn resolve<'a>(root: &'a Value, s: &'a Value) -> &'a Value {
    let mut s = s;
    for _ in 0..16 {
        let Some(r) = s.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let Some(def) = r
            .strip_prefix("#/$defs/")
            .and_then(|name| root.get("$defs")?.get(name))
        else {
            break;
        };
        s = def;
    }
    s
}

/// Every schema a value may match (through `anyOf`/`oneOf`/`allOf` and array items, which the
/// key path does not name).
fn alternatives<'a>(root: &'a Value, s: &'a Value, out: &mut Vec<&'a Value>, depth: u32) {
    if depth > 16 {
        return;
    }
    let s = resolve(root, s);
    out.push(s);
    for k in ["anyOf", "oneOf", "allOf"] {
        for alt in s.get(k).and_then(Value::as_array).into_iter().flatten() {
            alternatives(root, alt, out, depth + 1);
        }
    }
    if let Some(items) = s.get("items") {
        alternatives(root, items, out, depth + 1);
    }
}

/// The schema of the value under `key` in any of `parents`.
fn child<'a>(root: &'a Value, parents: &[&'a Value], key: &str) -> Vec<&'a Value> {
    let mut out = Vec::new();
    for p in parents {
        let next = p
            .get("properties")
            .and_then(|ps| ps.get(key))
            .or_else(|| p.get("additionalProperties").filter(|a| a.is_object()));
        if let Some(n) = next {
            alternatives(root, n, &mut out, 0);
        }
    }
    out
}

fn type_name(s: &Value) -> Option<String> {
    match s.get("type")? {
        Value::String(t) => Some(t.clone()),
        Value::Array(ts) => Some(
            ts.iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect::<Vec<_>>()
                .join(" or "),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_found_through_refs_items_and_alternatives() {
        static DOCS: SchemaDocs = SchemaDocs::new(|| {
            json!({
                "type": "object",
                "properties": {
                    "steps": {"type": "array", "items": {"$ref": "#/$defs/step"}},
                    "limits": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/limits"}]},
                },
                "$defs": {
                    "step": {
                        "type": "object",
                        "properties": {
                            "kind": {"type": "string", "description": "What runs.", "enum": ["a", "b"]},
                        },
                    },
                    "limits": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {"max": {"type": ["integer", "null"]}},
                        },
                    },
                },
            })
        });
        assert_eq!(
            DOCS.describe(&["steps", "kind"]).as_deref(),
            Some("`kind` (string): What runs.\n\nOne of `\"a\"`, `\"b\"`.")
        );
        assert_eq!(DOCS.enum_values(&["steps", "kind"]), ["a", "b"]);
        assert_eq!(
            DOCS.describe(&["limits", "any", "max"]).as_deref(),
            Some("`max` (integer)")
        );
        assert!(DOCS.describe(&["nothing_like_this"]).is_none());
    }
}
