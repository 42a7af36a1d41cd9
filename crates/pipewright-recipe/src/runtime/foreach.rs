//! Resolving a `foreach` list (notes §5.7). The field is resolved, not rendered: it must start
//! with one `{{path}}` (after blanks); text after the reference is ignored.

use super::py::{py_strip, py_type_name};
use super::Context;
use crate::issue::path_len;
use crate::value::Value;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForeachError {
    /// `Invalid foreach syntax: <foreach>`
    Syntax(String),
    /// `Undefined variable in foreach: <foreach>`
    Undefined(String),
    /// `Step '<id>': foreach variable must be a list, got <pytype>`
    NotAList {
        step: String,
        type_name: &'static str,
    },
    /// `Step '<id>': foreach exceeds max_iterations (<n> > <max>)`
    TooMany { step: String, len: usize, max: u64 },
}

impl fmt::Display for ForeachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForeachError::Syntax(s) => write!(f, "Invalid foreach syntax: {s}"),
            ForeachError::Undefined(s) => write!(f, "Undefined variable in foreach: {s}"),
            ForeachError::NotAList { step, type_name } => write!(
                f,
                "Step '{step}': foreach variable must be a list, got {type_name}"
            ),
            ForeachError::TooMany { step, len, max } => write!(
                f,
                "Step '{step}': foreach exceeds max_iterations ({len} > {max})"
            ),
        }
    }
}

impl std::error::Error for ForeachError {}

/// The items of `foreach` (the field as written) for step `step_id`. The path goes through
/// mappings only; a null value is present (and not a list).
pub fn resolve_foreach<'c>(
    foreach: &str,
    ctx: &'c Context,
    step_id: &str,
) -> Result<&'c [Value], ForeachError> {
    let path = py_strip(foreach)
        .strip_prefix("{{")
        .and_then(|rest| {
            let n = path_len(rest)?;
            rest[n..].starts_with("}}").then(|| &rest[..n])
        })
        .ok_or_else(|| ForeachError::Syntax(foreach.to_owned()))?;
    let undefined = || ForeachError::Undefined(foreach.to_owned());
    let mut parts = path.split('.');
    let mut cur = parts
        .next()
        .and_then(|p| ctx.get(p))
        .ok_or_else(undefined)?;
    for part in parts {
        cur = match cur {
            Value::Map(m) => m.get(part).ok_or_else(undefined)?,
            _ => return Err(undefined()),
        };
    }
    match cur {
        Value::List(items) => Ok(items),
        other => Err(ForeachError::NotAList {
            step: step_id.to_owned(),
            type_name: py_type_name(other),
        }),
    }
}

/// The `max_iterations` bound of a foreach (checked after an empty list is handled).
pub fn check_foreach_len(
    step_id: &str,
    len: usize,
    max_iterations: u64,
) -> Result<(), ForeachError> {
    if len as u64 > max_iterations {
        return Err(ForeachError::TooMany {
            step: step_id.to_owned(),
            len,
            max: max_iterations,
        });
    }
    Ok(())
}
