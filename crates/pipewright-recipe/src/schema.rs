//! The JSON Schema (draft 2020-12) of a recipe file, for editors (`pipewright schema recipe`,
//! schemas/recipe.schema.json). The keys come from the loader's tables ([`crate::load`]) and
//! the enumerations from the validator's ([`crate::validate`]); this module adds each key's
//! value type and description, and panics on a table key it does not describe, so a key added
//! to the loader cannot be missing here (the tests generate the schema).
//!
//! A `null` value is accepted wherever the loader reads null as "absent".

use crate::load::{
    APPROVAL_KEYS, BACKOFF_KEYS, PREFERENCE_KEYS, RATE_KEYS, RECURSION_KEYS, RETRY_KEYS,
    STAGE_KEYS, STEP_KEYS, TOP_KEYS,
};
use crate::validate::{
    APPROVAL_DEFAULTS, MODEL_CLASSES, ON_ERROR_VALUES, RETRY_BACKOFFS, SPAWN_MODES, STEP_TYPES,
};
use pipewright_syntax::json_schema::{closed_object, document};
use serde_json::{json, Value};

fn text(doc: &str) -> Value {
    json!({"type": ["string", "null"], "description": doc})
}

fn int(doc: &str) -> Value {
    json!({"type": ["integer", "null"], "description": doc})
}

fn boolean(doc: &str) -> Value {
    json!({"type": ["boolean", "null"], "description": doc})
}

fn one_of(values: &[&str], doc: &str) -> Value {
    let mut v: Vec<Value> = values.iter().map(|s| json!(s)).collect();
    v.push(Value::Null);
    json!({"enum": v, "description": doc})
}

fn mapping(doc: &str) -> Value {
    json!({"type": ["object", "null"], "description": doc})
}

/// `{KEY: string, number or boolean}` (the runner stringifies numbers and booleans).
fn text_entries(doc: &str) -> Value {
    json!({
        "type": ["object", "null"],
        "description": doc,
        "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
    })
}

/// A mapping of exactly `keys` (others are errors or warnings), or null.
fn object(keys: &[&str], doc: &str, value: impl Fn(&str) -> Value) -> Value {
    let mut o = closed_object(keys, &[], doc, value);
    o["type"] = json!(["object", "null"]);
    o
}

fn recursion() -> Value {
    object(
        RECURSION_KEYS,
        "Limits on nested sub-recipes.",
        |k| match k {
            "max_depth" => int("How deep sub-recipes may nest."),
            "max_total_steps" => int("The most steps run in all, sub-recipes included."),
            other => panic!("`recursion.{other}` has no schema in schema.rs"),
        },
    )
}

fn steps() -> Value {
    json!({
        "type": ["array", "null"],
        "description": "The steps, run in order (or by `depends_on`).",
        "items": {"$ref": "#/$defs/step"},
    })
}

fn step_key(k: &str) -> Value {
    match k {
        "id" => text("The step's id: letters, digits, `-` and `_`, at most 50 characters."),
        "type" => one_of(STEP_TYPES, "The step's kind (default `agent`)."),
        "agent" => text("The agent an agent step runs."),
        "mode" => text("The agent's mode."),
        "prompt" => text("The agent's prompt, a template (`{{variable}}`)."),
        "provider" => text("The provider to ask."),
        "model" => text("The model to ask (a glob such as `claude-*` allowed)."),
        "provider_preferences" => json!({
            "type": ["array", "null"],
            "description": "Providers or model classes to try in order.",
            "items": object(PREFERENCE_KEYS, "A `class:` or `provider:` entry.", |k| match k {
                "class" => one_of(MODEL_CLASSES, "A model class."),
                "provider" => text("A provider."),
                "model" => text("A model of that provider."),
                other => panic!("`provider_preferences.{other}` has no schema in schema.rs"),
            }),
        }),
        "model_role" => text("A model role, instead of `provider`/`model`."),
        "spawn_mode" => one_of(SPAWN_MODES, "How the agent is started."),
        "agent_config" => mapping("Configuration passed to the agent."),
        "recipe" => text("The sub-recipe a recipe step runs (a path)."),
        "context" | "step_context" => mapping("Variables passed to the sub-recipe."),
        "recursion" => recursion(),
        "command" => text("The command a bash step runs, a template."),
        "cwd" => text("The bash step's working directory."),
        "env" => text_entries("Environment variables of the bash step."),
        "output_exit_code" => text("The variable that receives the exit code."),
        "condition" => text("Runs the step only when this condition holds."),
        "foreach" => text("A list to run the step over, a template."),
        "as" | "as_var" => text("The loop variable of `foreach` (default `item`)."),
        "collect" => text("The variable that receives the list of results."),
        "parallel" => json!({
            "type": ["boolean", "integer", "null"],
            "description": "Runs `foreach` iterations at once: true, false or a limit.",
        }),
        "max_iterations" => int("The most `foreach` iterations."),
        "checkpoint_iterations" => boolean("Checkpoints after each iteration."),
        "while_condition" => text("Repeats the step while this condition holds."),
        "max_while_iterations" => int("The most `while` iterations."),
        "break_when" => text("Ends a `while` loop when this condition holds."),
        "update_context" => text_entries("Variables set after each `while` iteration."),
        "while_steps" | "steps" => steps(),
        "output" => text("The variable that receives the step's result."),
        "parse_json" => boolean("Parses the result as JSON."),
        "timeout" => int("Seconds before the step is stopped."),
        "retry" => object(RETRY_KEYS, "Retries of a failed step.", |k| match k {
            "max_attempts" => int("Attempts in all."),
            "backoff" => one_of(RETRY_BACKOFFS, "How the delay grows."),
            "initial_delay" => int("Seconds before the first retry."),
            "max_delay" => int("The longest delay, in seconds."),
            other => panic!("`retry.{other}` has no schema in schema.rs"),
        }),
        "on_error" => one_of(ON_ERROR_VALUES, "What a failure does."),
        "depends_on" => json!({
            "type": ["array", "null"],
            "description": "Steps that must finish first.",
            "items": {"type": "string"},
        }),
        other => panic!("step key `{other}` has no schema in schema.rs"),
    }
}

fn top_key(k: &str) -> Value {
    match k {
        "name" => text("The recipe's name: letters, digits, `-` and `_`."),
        "description" => text("What the recipe does."),
        "version" => text("The recipe's version (semver)."),
        "author" | "created" | "updated" => text("Metadata."),
        "tags" => json!({"type": ["array", "null"], "items": {"type": "string"}}),
        "context" => mapping("The recipe's variables and their defaults."),
        "recursion" => recursion(),
        "rate_limiting" => object(RATE_KEYS, "Limits on model calls.", |k| match k {
            "max_concurrent_llm" => int("The most model calls at once."),
            "min_delay_ms" => int("Milliseconds between model calls."),
            "backoff" => object(
                BACKOFF_KEYS,
                "Backing off after rate limits.",
                |k| match k {
                    "enabled" => boolean("Whether to back off."),
                    "initial_delay_ms" | "max_delay_ms" => int("Milliseconds."),
                    "multiplier" => json!({"type": ["number", "null"], "minimum": 1}),
                    "reset_after_success" => int("Successes after which the delay resets."),
                    other => panic!("`backoff.{other}` has no schema in schema.rs"),
                },
            ),
            other => panic!("`rate_limiting.{other}` has no schema in schema.rs"),
        }),
        "steps" => steps(),
        "stages" => json!({
            "type": ["array", "null"],
            "description": "Stages of steps, each optionally behind an approval gate.",
            "items": {"$ref": "#/$defs/stage"},
        }),
        // The runner reads only this one setting (and ignores the rest).
        "orchestrator" => json!({
            "type": ["object", "null"],
            "description": "Orchestrator settings; the runner reads `config.min_delay_between_calls_ms`.",
            "properties": {"config": {
                "type": ["object", "null"],
                "properties": {"min_delay_between_calls_ms": int("Milliseconds between model calls.")},
            }},
        }),
        other => panic!("recipe key `{other}` has no schema in schema.rs"),
    }
}

fn stage() -> Value {
    closed_object(STAGE_KEYS, &[], "A stage.", |k| match k {
        "name" => text("The stage's name."),
        "steps" => steps(),
        "approval" => object(
            APPROVAL_KEYS,
            "An approval gate before the stage.",
            |k| match k {
                "required" => boolean("Whether the gate stops the run."),
                "prompt" => text("What the approver is asked."),
                "timeout" => int("Seconds before `default` applies."),
                "default" => one_of(APPROVAL_DEFAULTS, "The decision on timeout."),
                other => panic!("`approval.{other}` has no schema in schema.rs"),
            },
        ),
        other => panic!("stage key `{other}` has no schema in schema.rs"),
    })
}

/// The schema of a recipe file.
pub fn json_schema() -> Value {
    let mut root = closed_object(TOP_KEYS, &["name", "description", "version"], "", top_key);
    root["$defs"] = json!({
        "step": closed_object(STEP_KEYS, &["id"], "A step.", step_key),
        "stage": stage(),
    });
    document(
        "recipe",
        "pipewright recipe",
        "A recipe (docs/recipe.md): metadata, then `steps` or `stages`.",
        root,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_key_is_described() {
        let s = json_schema();
        for k in STEP_KEYS {
            assert!(s["$defs"]["step"]["properties"][k].is_object(), "{k}");
        }
        for k in TOP_KEYS {
            assert!(s["properties"][k].is_object(), "{k}");
        }
    }
}
