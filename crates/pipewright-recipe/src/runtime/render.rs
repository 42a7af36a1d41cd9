//! The runner's template rendering (`substitute_variables`, notes §4): the checker's template
//! parser and substitution pass ([`crate::template::substitute`]) with the runner's lookup,
//! its error texts and its value text (null is `None`).

use super::py::py_strip;
use super::Context;
use crate::issue::path_len;
use crate::template::{substitute, VarRef};
use crate::value::Value;
use std::fmt;

/// The runner's `ValueError` from rendering: an undefined variable or a path through a
/// non-mapping. The message is the runner's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderError(pub String);

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RenderError {}

fn sorted_keys<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    let mut keys: Vec<&str> = keys.map(String::as_str).collect();
    // Python's `sorted` on `str` is code-point order, which is UTF-8 byte order.
    keys.sort_unstable();
    keys.join(", ")
}

/// Looks `path` up as the renderer does: a simple name in the context, a dotted name through
/// mappings only (lists are not indexable).
pub fn resolve<'c>(ctx: &'c Context, path: &[String]) -> Result<&'c Value, RenderError> {
    let dotted = path.join(".");
    let Some((first, rest)) = path.split_first() else {
        return Err(RenderError(format!(
            "Undefined variable: {{{{}}}}. Available variables: {}",
            sorted_keys(ctx.keys())
        )));
    };
    let Some(mut cur) = ctx.get(first) else {
        return Err(RenderError(if rest.is_empty() {
            format!(
                "Undefined variable: {{{{{dotted}}}}}. Available variables: {}",
                sorted_keys(ctx.keys())
            )
        } else {
            format!(
                "Undefined variable: {{{{{dotted}}}}}. Key '{first}' not found. Available keys at 'root': {}",
                sorted_keys(ctx.keys())
            )
        }));
    };
    for (i, part) in rest.iter().enumerate() {
        let parent = path[..=i].join(".");
        match cur {
            Value::Map(m) => match m.get(part) {
                Some(v) => cur = v,
                None => {
                    return Err(RenderError(format!(
                        "Undefined variable: {{{{{dotted}}}}}. Key '{part}' not found. Available keys at '{parent}': {}",
                        sorted_keys(m.keys())
                    )))
                }
            },
            other => {
                return Err(RenderError(format!(
                    "Cannot access '{part}' on {{{{{parent}}}}} - it's a {}, not a dict. Hint: The step producing '{parent}' may have failed to parse JSON. Check that the bash command outputs clean JSON or add 'parse_json: true'.",
                    super::py::py_type_name(other)
                )))
            }
        }
    }
    Ok(cur)
}

/// The text the renderer writes for a value: a string as it is, `true`/`false`, `None`,
/// numbers as Python prints them, lists and mappings as `json.dumps` writes them.
pub fn render_value_text(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("None"),
        other => other.render(out),
    }
}

/// Renders a template as the runner does: every `{{path}}` replaced in one pass, other brace
/// text left as it is.
pub fn render(src: &str, ctx: &Context) -> Result<String, RenderError> {
    substitute(src, |v: &VarRef, out| {
        render_value_text(resolve(ctx, &v.path)?, out);
        Ok(())
    })
}

/// A sub-recipe step's `context:` value with the parent's variables substituted: through
/// mappings and lists; a string that is exactly one reference (blanks around it allowed)
/// becomes the referenced value itself; other strings are rendered; other values are kept.
pub fn substitute_context(v: &Value, ctx: &Context) -> Result<Value, RenderError> {
    substitute_context_at(v, ctx, 0)
}

fn substitute_context_at(v: &Value, ctx: &Context, depth: usize) -> Result<Value, RenderError> {
    if depth > crate::value::MAX_DEPTH * 4 {
        return Ok(v.clone());
    }
    Ok(match v {
        Value::Str(s) => {
            if let Some(path) = whole_reference(s) {
                // An unknown reference falls through to the renderer, whose error says why.
                if let Ok(found) = resolve(ctx, &path) {
                    return Ok(found.clone());
                }
            }
            Value::Str(render(s, ctx)?)
        }
        Value::List(items) => Value::List(
            items
                .iter()
                .map(|x| substitute_context_at(x, ctx, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(m) => Value::Map(
            m.iter()
                .map(|(k, x)| Ok((k.clone(), substitute_context_at(x, ctx, depth + 1)?)))
                .collect::<Result<_, RenderError>>()?,
        ),
        other => other.clone(),
    })
}

/// The path of `s` when it is exactly one `{{path}}` with only blanks around it.
fn whole_reference(s: &str) -> Option<Vec<String>> {
    let inner = py_strip(s).strip_prefix("{{")?.strip_suffix("}}")?;
    (path_len(inner) == Some(inner.len())).then(|| inner.split('.').map(str::to_owned).collect())
}
