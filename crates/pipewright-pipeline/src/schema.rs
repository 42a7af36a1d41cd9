//! The JSON Schema (draft 2020-12) of one pipeline-file document, for editors
//! (`pipewright schema pipeline`, schemas/pipeline.schema.json). The keys, the required keys
//! and the enumerations come from the loader's own tables; this module adds only each key's
//! value type and description, and [`json_schema`] panics on a table key it does not describe,
//! so a key added to the loader cannot be missing here (the tests generate the schema).

use crate::load::{PIPELINE_KEYS, STEP_KINDS};
use crate::schema_load::{FIELD_KEYS, FIELD_REQUIRED_KEYS, FIELD_TYPES, SCHEMA_KEYS};
use crate::step_load::{keys_of, STEP_BODY_KEYS, STEP_REQUIRED_KEYS, TARGET_KEYS};
use pipewright_syntax::json_schema::{closed_object, document, string};
use serde_json::{json, Map, Value};

/// What each step kind does (docs/pipeline.md).
fn kind_doc(kind: &str) -> &'static str {
    match kind {
        "transform" => "Computes a value with an R1 expression.",
        "tool" => "Calls a tool (built-in, host or declared in pipewright.toml) with arguments.",
        "shell" => "Runs a command; its standard output is the step's result.",
        "agent" => "Asks a model: a prompt template, optional identity, capabilities and schema.",
        "call" => "Runs another pipeline (by literal name) and takes its result.",
        "match" => "Picks a pipeline to call by the value of an expression.",
        "fold" => "Reduces a list to one value with a body step over each item.",
        "for_each" => "Runs a body step for each item of a list, then a collect step.",
        "parallel" => "Runs named branch steps at once, then a collect step over their results.",
        other => panic!("step kind `{other}` has no description in schema.rs"),
    }
}

fn name(doc: &str) -> Value {
    json!({"type": "string", "pattern": "\\S", "description": doc})
}

fn expr(doc: &str) -> Value {
    json!({"type": "string", "description": format!("{doc} (an R1 expression)")})
}

fn nullable(mut v: Value) -> Value {
    if let Some(t) = v.get("type").and_then(Value::as_str).map(str::to_string) {
        v["type"] = json!([t, "null"]);
    }
    v
}

fn on_error(doc: &str) -> Value {
    json!({
        "description": format!("{doc}: `continue`, `abort` or `retry(N)`"),
        "anyOf": [
            {"enum": ["continue", "abort"]},
            {"type": "string", "pattern": "^retry\\([1-9][0-9]*\\)$"}
        ]
    })
}

fn pass() -> Value {
    json!({
        "description": "The stores the called pipeline sees: a list of store names, or `{NAME: EXPR}`.",
        "anyOf": [
            {"type": "array", "items": {"type": "string", "pattern": "\\S"}},
            {"type": "object", "additionalProperties": {"type": "string"}},
            {"type": "null"}
        ]
    })
}

fn step_ref() -> Value {
    json!({"$ref": "#/$defs/step"})
}

/// The schema of `key` in the body of a `kind` step.
fn step_key(kind: &str, key: &str) -> Value {
    match key {
        "output" if kind == "fold" => name("The store the fold's result is written to."),
        "output" => nullable(name("The store the step's result is written to.")),
        "value" => expr("The value the step computes"),
        "name" => name("The tool to call."),
        "args" => json!({
            "type": ["object", "null"],
            "description": "The tool's arguments: literal YAML values, or `!expr \"…\"` for an R1 expression.",
        }),
        "schema" => name("A `schema:` document the result must match."),
        "on_error" => on_error("What a failure does"),
        "command" => json!({
            "description": "The command: a string or a list of arguments, or `!expr \"…\"`.",
        }),
        "prompt" => string("The prompt, a template: every `{…}` is an R1 expression."),
        "identity" => name("The identity (system prompt) the agent takes."),
        "capabilities" => json!({
            "type": "object",
            "description": "Narrows the tools the agent may use.",
            "properties": {"tools": {"type": "array", "items": {"type": "string", "pattern": "\\S"}}},
            "required": ["tools"],
            "additionalProperties": false,
        }),
        "model" => name("The model to ask."),
        "pipeline" => name("The pipeline to run (a literal name, never an expression)."),
        "pass" => pass(),
        "on" => expr("The value the cases are matched against"),
        "cases" => json!({
            "type": "object",
            "description": "`\"LABEL\": {pipeline: NAME, pass: …}` for each value.",
            "minProperties": 1,
            "additionalProperties": {"$ref": "#/$defs/target"},
        }),
        "default" => json!({
            "description": "The target when no case matches.",
            "anyOf": [{"$ref": "#/$defs/target"}, {"type": "null"}],
        }),
        "over" => json!({
            "type": ["string", "null"],
            "description": "The list to iterate, an R1 expression (absent or null: the pipe).",
        }),
        "items" => json!({
            "type": ["array", "null"],
            "description": "A literal list to iterate (instead of `over`).",
        }),
        "init" => expr("The accumulator's first value"),
        "do" => json!({"$ref": "#/$defs/step", "description": "The step run for each item."}),
        "collect" => {
            json!({"$ref": "#/$defs/step", "description": "The step run over the results."})
        }
        "max_items" | "max_parallel" => json!({
            "type": "integer",
            "minimum": 1,
            "description": if key == "max_items" { "The most items folded." } else { "The most items run at once." },
        }),
        "branches" => json!({
            "type": "object",
            "description": "`NAME: STEP` for each branch.",
            "minProperties": 1,
            "additionalProperties": step_ref(),
        }),
        other => panic!("step key `{kind}.{other}` has no schema in schema.rs"),
    }
}

fn step_body(kind: &str) -> Value {
    let mut body = closed_object(
        keys_of(STEP_BODY_KEYS, kind),
        keys_of(STEP_REQUIRED_KEYS, kind),
        kind_doc(kind),
        |k| step_key(kind, k),
    );
    if keys_of(STEP_BODY_KEYS, kind).contains(&"items") {
        body["not"] = json!({"required": ["over", "items"]});
    }
    body
}

fn field_type() -> Value {
    let variants: Vec<Value> = FIELD_TYPES
        .iter()
        .map(|ty| {
            let mut required = vec!["type"];
            required.extend(keys_of(FIELD_REQUIRED_KEYS, ty));
            closed_object(
                keys_of(FIELD_KEYS, ty),
                &required,
                &format!("A `{ty}` field."),
                |k| match k {
                    "type" => json!({"enum": [ty]}),
                    "required" => json!({"type": "boolean"}),
                    "description" => json!({"type": "string"}),
                    "minimum" | "maximum" => json!({"type": "number"}),
                    "values" => json!({"type": "array", "minItems": 1}),
                    "of" => json!({"$ref": "#/$defs/field"}),
                    "fields" => json!({"$ref": "#/$defs/fields"}),
                    "schema" => json!({"type": "string", "pattern": "\\S"}),
                    other => panic!("field attribute `{other}` has no schema in schema.rs"),
                },
            )
        })
        .collect();
    json!({"oneOf": variants})
}

/// The schema: one YAML document of a pipeline file, a `pipeline:` or a `schema:` document.
pub fn json_schema() -> Value {
    let mut defs = Map::new();
    let kinds: Map<String, Value> = STEP_KINDS
        .iter()
        .map(|k| (k.to_string(), json!({"$ref": format!("#/$defs/{k}")})))
        .collect();
    defs.insert(
        "step".into(),
        json!({
            "type": "object",
            "description": format!("A step: a mapping with one key, its kind ({}).", STEP_KINDS.join(", ")),
            "properties": kinds,
            "minProperties": 1,
            "maxProperties": 1,
            "additionalProperties": false,
        }),
    );
    for k in STEP_KINDS {
        defs.insert(k.to_string(), step_body(k));
    }
    defs.insert(
        "target".into(),
        closed_object(
            TARGET_KEYS,
            &["pipeline"],
            "A pipeline to call, and what it is passed.",
            |k| step_key("call", k),
        ),
    );
    defs.insert("field".into(), field_type());
    defs.insert(
        "fields".into(),
        json!({
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {"$ref": "#/$defs/field"},
        }),
    );
    let pipeline = closed_object(
        PIPELINE_KEYS,
        &["pipeline", "steps"],
        "A pipeline document.",
        |k| match k {
            "pipeline" => json!({
                "type": "string",
                "pattern": "^[^.]*[^.\\s][^.]*$",
                "description": "The pipeline's name (no `.`: it separates namespaces).",
            }),
            "description" => string("What the pipeline does."),
            "steps" => json!({
                "type": "array",
                "description": "The steps, run in order; each one's result is the next one's `pipe`.",
                "minItems": 1,
                "items": step_ref(),
            }),
            other => panic!("pipeline key `{other}` has no schema in schema.rs"),
        },
    );
    defs.insert("pipeline".into(), pipeline);
    let schema = closed_object(
        SCHEMA_KEYS,
        SCHEMA_KEYS,
        "A schema document: the shape of a structured result.",
        |k| match k {
            "schema" => name("The schema's name, as steps' `schema:` refer to it."),
            "fields" => json!({"$ref": "#/$defs/fields"}),
            other => panic!("schema key `{other}` has no schema in schema.rs"),
        },
    );
    defs.insert("schema".into(), schema);
    document(
        "pipeline",
        "pipewright pipeline document",
        "One YAML document of a pipeline file (docs/pipeline.md): a `pipeline:` document or a `schema:` document. Files hold several, separated by `---`.",
        json!({
            "anyOf": [{"$ref": "#/$defs/pipeline"}, {"$ref": "#/$defs/schema"}],
            "$defs": defs,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;
    use pipewright_syntax::FileId;

    /// The codes and `needs `KEY`` messages loading a one-step pipeline reports.
    fn missing_keys(step: &str) -> Vec<String> {
        let src = format!("pipeline: p\nsteps:\n  - {step}\n");
        let mut diags = Vec::new();
        crate::load_source(FileId(0), &src, &mut diags);
        diags
            .iter()
            .filter(|d| d.code == codes::MISSING_KEY)
            .filter_map(|d| {
                let m = &d.message;
                let start = m.find("needs `")? + 7;
                Some(m[start..m.len() - 1].to_string())
            })
            .collect()
    }

    /// The required keys of the schema are the ones the loader reports missing from an empty
    /// body, and none other.
    #[test]
    fn required_keys_are_the_ones_the_loader_requires() {
        for kind in STEP_KINDS {
            let mut reported = missing_keys(&format!("{kind}: {{}}"));
            reported.sort();
            let mut table: Vec<String> = keys_of(STEP_REQUIRED_KEYS, kind)
                .iter()
                .map(|k| k.to_string())
                .collect();
            table.sort();
            assert_eq!(reported, table, "{kind}");
        }
    }

    #[test]
    fn every_kind_and_key_is_described() {
        let s = json_schema();
        for (kind, keys) in STEP_BODY_KEYS {
            assert!(STEP_KINDS.contains(kind));
            for k in *keys {
                assert!(s["$defs"][kind]["properties"][k].is_object(), "{kind}.{k}");
            }
        }
        assert_eq!(STEP_BODY_KEYS.len(), STEP_KINDS.len());
    }
}
