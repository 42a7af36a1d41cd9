//! The JSON Schema (draft 2020-12) of a MEOW module (`.meow.toml`), for editors and taplo
//! (`pipewright schema meow`, schemas/meow.schema.json). The executors, the keys each one reads,
//! their required keys and their TOML types are the step rules' own tables ([`crate::steps`]);
//! the workflow and variable keys are the loader's ([`crate::ast`]). This module adds the
//! descriptions, and panics on a type it cannot translate.

use crate::ast::{VAR_DECL_KEYS, VAR_TYPES, WORKFLOW_KEYS};
use crate::steps::{expected, reads, required, AGENT_MODES, COMMON, EXECUTORS, ON_ERROR_VALUES};
use pipewright_syntax::json_schema::{closed_object, document};
use serde_json::{json, Map, Value};

/// What each executor does (docs/meow.md).
fn executor_doc(ex: &str) -> &'static str {
    match ex {
        "shell" => "Runs a shell command.",
        "spawn" => "Starts an agent session.",
        "kill" => "Stops an agent session.",
        "expand" => "Inlines the steps of a template workflow.",
        "branch" => "Runs a condition command and expands a target by its result.",
        "foreach" => "Expands a template once per item of a list.",
        "agent" => "Gives a running agent a prompt and waits for its outputs.",
        other => panic!("executor `{other}` has no description in schema.rs"),
    }
}

/// The schema of a step key's value, from the step rules' type table.
fn key_type(key: &str) -> Value {
    let mut v = match expected(key).map(|(what, _)| what) {
        None if key == "needs" => json!({"type": "array", "items": {"type": "string"}}),
        None => json!({}),
        Some("a string") => json!({"type": "string"}),
        Some("a table") => json!({"type": "object"}),
        Some("a boolean") => json!({"type": "boolean"}),
        Some("a boolean or a string") => json!({"type": ["boolean", "string"]}),
        Some("an integer or a string") => json!({"type": ["integer", "string"]}),
        Some(other) => panic!("step key type `{other}` has no JSON Schema in schema.rs"),
    };
    match key {
        "executor" => v["enum"] = json!(EXECUTORS),
        // `fail`, `continue`, or a recovery template's reference (`steps::on_error_template`).
        "on_error" => {
            v["anyOf"] = json!([
                {"enum": ON_ERROR_VALUES},
                {"pattern": "^\\.|[#/]|\\.toml$", "description": "a recovery template: `.name`, `path#workflow`"},
            ])
        }
        "mode" => v["enum"] = json!(AGENT_MODES),
        _ => {}
    }
    v
}

fn step() -> Value {
    let common: Map<String, Value> = COMMON
        .iter()
        .map(|k| (k.to_string(), key_type(k)))
        .collect();
    let per_executor: Vec<Value> = EXECUTORS
        .iter()
        .map(|ex| {
            let properties: Map<String, Value> = COMMON
                .iter()
                .chain(reads(ex))
                .map(|k| (k.to_string(), json!({})))
                .collect();
            let mut then = json!({
                "description": executor_doc(ex),
                "properties": properties,
                "additionalProperties": false,
            });
            let req = required(ex);
            if !req.is_empty() {
                then["required"] = json!(req);
                // Present and blank counts as missing.
                for k in req {
                    then["properties"][*k] = json!({"pattern": "\\S"});
                }
            }
            json!({
                "if": {"properties": {"executor": {"enum": [ex]}}, "required": ["executor"]},
                "then": then,
            })
        })
        .collect();
    let all: Map<String, Value> = COMMON
        .iter()
        .chain(EXECUTORS.iter().flat_map(|ex| reads(ex)))
        .map(|k| (k.to_string(), key_type(k)))
        .chain(common)
        .collect();
    json!({
        "type": "object",
        "description": "A step: `id`, `executor`, and the keys that executor reads.",
        "properties": all,
        "required": ["id", "executor"],
        "allOf": per_executor,
    })
}

fn workflow() -> Value {
    closed_object(
        &WORKFLOW_KEYS,
        &["steps"],
        "A workflow: a top-level table with `[[NAME.steps]]`.",
        |k| match k {
            "name" => {
                json!({"type": "string", "minLength": 1, "description": "The workflow's name (default: the table's)."})
            }
            "description" => json!({"type": "string"}),
            "internal" => {
                json!({"type": "boolean", "description": "Only for other workflows of the module to expand."})
            }
            "variables" => json!({
                "type": "object",
                "description": "The variables the workflow takes.",
                "additionalProperties": {"$ref": "#/$defs/variable"},
            }),
            "steps" => json!({
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/$defs/step"},
            }),
            k if k.starts_with("cleanup_on_") => {
                json!({"type": "string", "description": "A shell script run when the run ends this way."})
            }
            other => panic!("workflow key `{other}` has no schema in schema.rs"),
        },
    )
}

fn variable() -> Value {
    closed_object(
        &VAR_DECL_KEYS,
        &[],
        "A variable declaration: `{ default = …, required = …, type = …, description = … }`.",
        |k| match k {
            "required" => json!({"type": "boolean"}),
            "default" => json!({}),
            "type" => json!({"enum": VAR_TYPES}),
            "description" => json!({"type": "string"}),
            other => panic!("variable key `{other}` has no schema in schema.rs"),
        },
    )
}

/// The schema of a MEOW module: every top-level table is a workflow.
pub fn json_schema() -> Value {
    document(
        "meow",
        "pipewright MEOW module",
        "A MEOW module (docs/meow.md): each top-level table is a workflow.",
        json!({
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {"$ref": "#/$defs/workflow"},
            "$defs": {"workflow": workflow(), "step": step(), "variable": variable()},
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_an_executor_reads_has_a_type() {
        let s = json_schema();
        for ex in EXECUTORS {
            for k in reads(ex) {
                assert!(s["$defs"]["step"]["properties"][k].is_object(), "{ex}.{k}");
            }
        }
    }
}
