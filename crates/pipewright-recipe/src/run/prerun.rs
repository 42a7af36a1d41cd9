//! What a recipe run needs before it starts (`pipewright_runtime::prerun`).

use pipewright_runtime::prerun::{given, needs_message, undeclared_message, Lack};
use serde_json::Value;
use std::collections::HashSet;

/// Names the runner sets itself; an input of one of them is replaced, never read.
const RECIPE_RESERVED: &[&str] = &["recipe", "session", "step", "stage"];

pub fn recipe(w: &pipewright_ir::Workflow, input: &Value) -> Result<(), String> {
    let given = given(input);
    let declared: Vec<&str> = w.params.iter().map(|p| p.name.as_str()).collect();
    let what = format!("recipe `{}`", w.name);
    let mut keys: Vec<&&str> = given.iter().collect();
    keys.sort();
    for k in keys {
        if declared.contains(k) || RECIPE_RESERVED.contains(k) {
            continue;
        }
        return Err(undeclared_message(
            &what,
            "context variable",
            k,
            &declared,
            &format!(
                "declare it under `context:` so the steps can read `{{{{{k}}}}}`: `{k}: \"\"` \
                 (a default that --var replaces), or `{k}: {{type: string, required: true}}` \
                 (a value every run must give)"
            ),
        ));
    }
    let lacks = recipe_lacks(w, &given);
    if lacks.is_empty() {
        Ok(())
    } else {
        Err(needs_message(&what, &lacks))
    }
}

/// The recipe's required context variables (no default) that the input does not give.
pub fn recipe_lacks(w: &pipewright_ir::Workflow, given: &HashSet<&str>) -> Vec<Lack> {
    w.params
        .iter()
        .filter(|p| p.required && !given.contains(p.name.as_str()))
        .map(|p| Lack {
            name: p.name.clone(),
            why: "declared under `context:` with `required: true` and no default".into(),
        })
        .collect()
}
