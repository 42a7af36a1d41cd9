//! The summary the `recipes` tool returns on completion (notes §5.15): `final_output`, its
//! truncation, and `available_outputs`.

use super::context::RESERVED_META_KEYS;
use super::Context;
use crate::value::Value;

/// Strings longer than this many characters, and lists or mappings whose JSON is longer, are
/// truncated in the summary.
pub const TRUNCATE_CHARS: usize = 10_000;

const PREVIEW_CHARS: usize = 500;
const STRING_TAIL: &str = "\n\n[... truncated, see session for full output]";

#[derive(Debug, Clone, PartialEq)]
pub struct FinalOutput {
    /// Already truncated ([`truncate_output`]).
    pub value: Value,
    /// `final_output_key`: the output name the value came from; `None` when the context had a
    /// `final_output` key.
    pub key: Option<String>,
}

/// The context's `final_output` if that key exists; otherwise the last step's `output`
/// variable (flat: the last step; staged: the last step of the last stage) when the context
/// has it; otherwise nothing.
pub fn final_output(ctx: &Context, last_step_output: Option<&str>) -> Option<FinalOutput> {
    if let Some(v) = ctx.get("final_output") {
        return Some(FinalOutput {
            value: truncate_output(v),
            key: None,
        });
    }
    let key = last_step_output?;
    ctx.get(key).map(|v| FinalOutput {
        value: truncate_output(v),
        key: Some(key.to_owned()),
    })
}

/// Context keys worth showing: not starting with `_` and not `session`, `recipe`, `stage`,
/// `step`; in context order.
pub fn available_outputs(ctx: &Context) -> Vec<String> {
    ctx.keys()
        .filter(|k| !k.starts_with('_') && !RESERVED_META_KEYS.contains(&k.as_str()))
        .cloned()
        .collect()
}

/// A string over [`TRUNCATE_CHARS`] characters keeps that many and gets a note; a list or
/// mapping whose `json.dumps` text is longer becomes `{_truncated: true, _type, _full_size_bytes,
/// _preview, _message}`; everything else is unchanged. Lengths count characters, as Python's
/// `len` does (the JSON text is ASCII, so its characters are its bytes).
pub fn truncate_output(v: &Value) -> Value {
    match v {
        Value::Str(s) => match s.char_indices().nth(TRUNCATE_CHARS) {
            Some((cut, _)) => Value::Str(format!("{}{STRING_TAIL}", &s[..cut])),
            None => v.clone(),
        },
        Value::List(_) | Value::Map(_) => {
            let mut json = String::new();
            v.write_json(&mut json);
            if json.len() <= TRUNCATE_CHARS {
                return v.clone();
            }
            let type_name = if matches!(v, Value::List(_)) {
                "list"
            } else {
                "dict"
            };
            let preview: String = json.chars().take(PREVIEW_CHARS).collect();
            let size = json.len();
            Value::Map(
                [
                    ("_truncated", Value::Bool(true)),
                    ("_type", Value::Str(type_name.into())),
                    (
                        "_full_size_bytes",
                        i64::try_from(size).map_or(Value::BigInt(size.to_string()), Value::Int),
                    ),
                    ("_preview", Value::Str(format!("{preview}..."))),
                    (
                        "_message",
                        Value::Str(format!(
                            "Output truncated ({size} bytes of JSON); see session for full output"
                        )),
                    ),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            )
        }
        other => other.clone(),
    }
}
