//! The JSON Schema (draft 2020-12) of a state-machine recipe, for editors
//! (`pipewright schema state-machine`, schemas/state-machine.schema.json). Keys, required keys
//! and actions come from the loader's tables in [`crate::ast`]; this module adds each key's
//! value type and description, and panics on a table key it does not describe, so a key added
//! to the loader cannot be missing here (the tests generate the schema).

use crate::ast::{
    ACTIONS, GUARDRAIL_KEYS, INCLUDE_KEY, REQUIRED, ROOT_KEYS, STEP_KEYS, STEP_REQUIRED,
    TRANSITION_KEYS,
};
use pipewright_syntax::json_schema::{closed_object, document, string};
use serde_json::{json, Value};

fn positive(doc: &str) -> Value {
    json!({"type": "integer", "minimum": 1, "description": doc})
}

fn transition() -> Value {
    let mut t = closed_object(
        TRANSITION_KEYS,
        &[],
        "What an outcome does: `{\"nextStep\": STEP}`, `{\"action\": \"exit\", \"reason\": …}` or `{\"action\": \"restart-new-session\", \"recipeId\": …}`.",
        |k| match k {
            "nextStep" => string("The step to go to."),
            "action" => json!({"enum": ACTIONS, "description": "Ends the run or restarts it."}),
            "recipeId" => string("The recipe a `restart-new-session` starts."),
            "reason" => string("Why the run ends, reported to the caller."),
            other => panic!("transition key `{other}` has no schema in schema.rs"),
        },
    );
    t["oneOf"] = json!([
        {"required": ["nextStep"], "not": {"anyOf": [{"required": ["action"]}, {"required": ["recipeId"]}]}},
        {"required": ["action"], "properties": {"action": {"enum": ["exit"]}}, "not": {"required": ["recipeId"]}},
        {"required": ["action", "recipeId"], "properties": {"action": {"enum": ["restart-new-session"]}}},
    ]);
    t
}

fn step() -> Value {
    closed_object(
        STEP_KEYS,
        STEP_REQUIRED,
        "A step: a prompt, the outcomes it may report, and a transition for each.",
        |k| match k {
            "prompt" => string("What the agent is asked to do."),
            "model" => string("The model for this step (overrides the recipe's)."),
            "outcomes" => json!({
                "type": "array",
                "description": "The outcomes the step may report.",
                "items": {"type": "string"},
            }),
            "onOutcome" => json!({
                "type": "object",
                "description": "A transition for each outcome.",
                "additionalProperties": {"$ref": "#/$defs/transition"},
            }),
            other => panic!("step key `{other}` has no schema in schema.rs"),
        },
    )
}

/// The schema of a recipe file.
pub fn json_schema() -> Value {
    let mut root = closed_object(ROOT_KEYS, REQUIRED, "", |k| match k {
        "id" => string("The recipe's id, as other recipes name it."),
        "label" => string("A title for people."),
        "description" => string("What the recipe does."),
        "initialStep" => string("The step the run starts at."),
        "model" => string("The model for every step without its own."),
        "guardrails" => closed_object(GUARDRAIL_KEYS, &[], "Limits on the run.", |k| match k {
            "maxStepVisits" => positive("The most visits to one step (default 3)."),
            "maxTotalSteps" => positive("The most steps in all (default 100)."),
            "exitOnOther" => {
                json!({"type": "boolean", "description": "Ends the run on the outcome `other`."})
            }
            other => panic!("guardrail `{other}` has no schema in schema.rs"),
        }),
        "steps" => json!({
            "type": "object",
            "description": "The steps by name; `$include` adds the steps of other files.",
            "properties": {
                INCLUDE_KEY: {
                    "description": "A step file (or a list of them) whose steps are added here.",
                    "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
                }
            },
            "additionalProperties": {"$ref": "#/$defs/step"},
        }),
        other => panic!("recipe key `{other}` has no schema in schema.rs"),
    });
    root["$defs"] = json!({"step": step(), "transition": transition()});
    document(
        "state-machine",
        "pipewright state-machine recipe",
        "A state-machine recipe (docs/statemachine.md): steps whose reported outcome picks the next step.",
        root,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipewright_syntax::FileId;

    /// The keys rule 7 reports missing from an empty step are the schema's required keys.
    #[test]
    fn required_step_keys_are_the_ones_the_loader_requires() {
        let text = r#"{"steps": {"s": {}}}"#;
        let root = crate::json::parse(FileId(0), text).unwrap_or_else(|e| panic!("{e:?}"));
        let mut diags = Vec::new();
        crate::ast::recipe(&root, &mut diags);
        let mut reported: Vec<&str> = diags
            .iter()
            .filter(|d| d.code == crate::codes::STEP_FIELD_MISSING)
            .filter_map(|d| d.message.split('`').nth(3))
            .collect();
        reported.sort();
        let mut table = STEP_REQUIRED.to_vec();
        table.sort();
        assert_eq!(reported, table);
    }
}
