//! Key documentation from each dialect's JSON Schema (the `schema` module of the dialect
//! crate, generated from its loader's tables), for hover over keys.

use serde_json::Value;
use std::sync::OnceLock;

fn schema(dialect: &str) -> Option<&'static Value> {
    static PIPELINE: OnceLock<Value> = OnceLock::new();
    static RECIPE: OnceLock<Value> = OnceLock::new();
    static STATE_MACHINE: OnceLock<Value> = OnceLock::new();
    static MEOW: OnceLock<Value> = OnceLock::new();
    Some(match dialect {
        "pipeline" => PIPELINE.get_or_init(pipewright_pipeline::schema::json_schema),
        "recipe" => RECIPE.get_or_init(pipewright_recipe::schema::json_schema),
        "state-machine" => STATE_MACHINE.get_or_init(pipewright_statemachine::schema::json_schema),
        "meow" => MEOW.get_or_init(pipewright_meow::schema::json_schema),
        _ => return None,
    })
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

/// The schema of the key at the end of `path` (the keys from the root), with the root.
fn property(dialect: &str, path: &[&str]) -> Option<(&'static Value, &'static Value)> {
    let root = schema(dialect)?;
    let (key, parents_path) = path.split_last()?;
    let mut current = Vec::new();
    alternatives(root, root, &mut current, 0);
    for k in parents_path {
        current = child(root, &current, k);
    }
    current
        .iter()
        .find_map(|p| Some((root, resolve(root, p.get("properties")?.get(*key)?))))
}

/// The values the schema enumerates for the key at the end of `path`.
pub fn enum_values(dialect: &str, path: &[&str]) -> Vec<String> {
    property(dialect, path)
        .and_then(|(_, s)| s.get("enum")?.as_array())
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The description (and type) of the key at the end of `path` (the keys from the root).
pub fn describe(dialect: &str, path: &[&str]) -> Option<String> {
    let key = path.last()?;
    let (_, found) = property(dialect, path)?;
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

    #[test]
    fn keys_are_found_through_refs_items_and_alternatives() {
        let d = describe(
            "state-machine",
            &["steps", "a", "onOutcome", "done", "nextStep"],
        );
        assert!(d.is_some_and(|d| d.starts_with("`nextStep`")));
        let d = describe("recipe", &["recursion", "max_depth"]).unwrap_or_default();
        assert!(d.starts_with("`max_depth` (integer): "), "{d}");
        let d = describe("pipeline", &["steps", "call", "pass"]).unwrap_or_default();
        assert!(d.starts_with("`pass`: The stores"), "{d}");
        assert!(describe("recipe", &["nothing_like_this"]).is_none());
        let d = describe("meow", &["main", "steps", "executor"]).unwrap_or_default();
        assert!(d.starts_with("`executor` (string)"), "{d}");
        assert_eq!(enum_values("meow", &["main", "steps", "executor"]).len(), 7);
    }
}
