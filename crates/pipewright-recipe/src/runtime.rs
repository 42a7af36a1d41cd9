//! The semantic core of running a recipe, as pure functions the executor calls: result
//! processing and JSON extraction, conditions by site, template rendering with the runner's
//! messages, `foreach` lists, `update_context`, `while` loop bookkeeping, sub-recipe context and
//! output, the initial context and the tool result's `final_output`
//! (`specs/notes/recipe-runtime.md` §3, §4, §5).
//!
//! These follow the reference runner, not the checker: a condition is evaluated by pasting
//! values into its text, templates render null as `None`, and every error text is the runner's.
//! Nothing here does I/O, and no input makes a function panic.
//!
//! Values are [`Value`]s. Python floats `nan`, `inf` and `-inf` (from JSON `NaN`, `Infinity`,
//! `-Infinity`) are `Value::Float` holding the IEEE value; they print as Python prints them
//! (`nan`/`inf` as text, `NaN`/`Infinity` inside JSON).

mod condition;
mod context;
mod extract;
mod foreach;
mod output;
mod py;
mod render;
mod while_loop;

pub use condition::{
    break_when, condition_rendered, condition_top_level, BreakWhen, ConditionError,
};
pub use context::{
    apply_update_context, initial_context, recipe_meta, session_meta, stage_meta, step_meta,
    subrecipe_output, RESERVED_META_KEYS,
};
pub use extract::{extract_json, loads, process_result, raw_decode};
pub use foreach::{check_foreach_len, resolve_foreach, ForeachError};
pub use output::{available_outputs, final_output, truncate_output, FinalOutput, TRUNCATE_CHARS};
pub use py::{is_py_space, py_float, py_repr, py_str, py_strip, py_type_name};
pub use render::{render, render_value_text, resolve, substitute_context, RenderError};
pub use while_loop::{AfterBody, WhileLoop, WhileStop};

use crate::value::Value;
use indexmap::IndexMap;

/// A run's variables: the top-level mapping every `{{name}}` is looked up in.
pub type Context = IndexMap<String, Value>;
