//! The run's context: how it starts (notes §5.1), `update_context` (§4, §5.8) and what a
//! sub-recipe hands back (§5.12).

use super::py::py_str;
use super::render::{render, RenderError};
use super::Context;
use crate::value::Value;

/// Keys the runner sets itself and keeps out of outputs.
pub const RESERVED_META_KEYS: [&str; 4] = ["recipe", "session", "step", "stage"];

fn map<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

fn int(n: usize) -> Value {
    i64::try_from(n).map_or_else(|_| Value::BigInt(n.to_string()), Value::Int)
}

/// `recipe = {name, version, description}`.
pub fn recipe_meta(name: &str, version: &str, description: &str) -> Value {
    map([
        ("name", Value::Str(name.to_owned())),
        ("version", Value::Str(version.to_owned())),
        ("description", Value::Str(description.to_owned())),
    ])
}

/// `session = {id, started, project}`: `started` is the ISO local time the run started
/// (Python's `datetime.now().isoformat()`), `project` the absolute resolved project path.
pub fn session_meta(id: &str, started: &str, project: &str) -> Value {
    map([
        ("id", Value::Str(id.to_owned())),
        ("started", Value::Str(started.to_owned())),
        ("project", Value::Str(project.to_owned())),
    ])
}

/// `step = {id, index}`, plus `stage: <name>` in staged mode; set before each step's condition.
/// `index` is the step's position in its list (flat steps, or the stage's steps).
pub fn step_meta(id: &str, index: usize, stage: Option<&str>) -> Value {
    let mut m = match map([("id", Value::Str(id.to_owned())), ("index", int(index))]) {
        Value::Map(m) => m,
        _ => Default::default(),
    };
    if let Some(s) = stage {
        m.insert("stage".into(), Value::Str(s.to_owned()));
    }
    Value::Map(m)
}

/// `stage = {name, index}` (staged mode).
pub fn stage_meta(name: &str, index: usize) -> Value {
    map([("name", Value::Str(name.to_owned())), ("index", int(index))])
}

/// `{**recipe.context, **caller_context}` (the caller wins), then `recipe` and `session`.
pub fn initial_context(
    recipe_context: &Context,
    caller_context: &Context,
    recipe: Value,
    session: Value,
) -> Context {
    let mut ctx = recipe_context.clone();
    for (k, v) in caller_context {
        ctx.insert(k.clone(), v.clone());
    }
    ctx.insert("recipe".into(), recipe);
    ctx.insert("session".into(), session);
    ctx
}

/// Applies a loop's `update_context` in mapping order: each value is rendered against the
/// context as updated so far and stored as a string; missing keys are created. A value that
/// is not a string in the YAML is first turned into text with Python's `str()` (`5` → `"5"`,
/// `true` → `"True"`), then rendered.
pub fn apply_update_context(
    ctx: &mut Context,
    updates: &[(String, Value)],
) -> Result<(), RenderError> {
    for (key, value) in updates {
        let rendered = render(&py_str(value), ctx)?;
        ctx.insert(key.clone(), Value::Str(rendered));
    }
    Ok(())
}

/// A sub-recipe step's result: every key of the child's final context except the keys the
/// step passed in `context:`, the runner's metadata (`recipe`, `session`, `step`, `stage`),
/// `_skipped_steps` and `_child_session_*`. The step's result then goes through
/// [`super::process_result`] (an `output` key unwraps it).
pub fn subrecipe_output(child_final: &Context, passed_keys: &[&str]) -> Value {
    Value::Map(
        child_final
            .iter()
            .filter(|(k, _)| {
                !passed_keys.contains(&k.as_str())
                    && !RESERVED_META_KEYS.contains(&k.as_str())
                    && k.as_str() != "_skipped_steps"
                    && !k.starts_with("_child_session_")
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}
