//! What Claude Code prints under `--output-format json` (and Cursor's agent, which prints the
//! same kind of object): one result object, or (§17.2 of the state-machine spec) an array of
//! messages whose last `result` entry is the answer. Both the `command` backend's `claude`
//! profile and the state machine's coding-agent sessions read it here.

use super::BackendError;
use crate::usage::Usage;
use serde_json::Value;

/// The answer, the session it belongs to, and what the turn cost as the CLI reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultObject {
    pub text: String,
    pub session_id: Option<String>,
    pub usage: Usage,
}

fn not_json(e: impl std::fmt::Display) -> BackendError {
    BackendError::new(format!("the agent's output is not the expected JSON ({e})"))
}

pub fn parse(stdout: &str) -> Result<ResultObject, BackendError> {
    let v: Value = serde_json::from_str(stdout.trim()).map_err(not_json)?;
    let r = match &v {
        Value::Array(items) => items
            .iter()
            .rev()
            .find(|i| i.get("type").and_then(Value::as_str) == Some("result"))
            .ok_or_else(|| not_json("no `result` message"))?,
        Value::Object(_) => &v,
        _ => return Err(not_json("neither an object nor an array")),
    };
    let text = match r.get("result") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    if r.get("is_error").and_then(Value::as_bool) == Some(true) {
        return Err(BackendError::new(format!(
            "the agent reported an error: {text}"
        )));
    }
    if r.get("result").is_none() {
        return Err(not_json("no `result` field"));
    }
    let tokens = |k: &str| {
        r.get("usage")
            .and_then(|u| u.get(k))
            .and_then(Value::as_u64)
    };
    Ok(ResultObject {
        text,
        session_id: r
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        usage: Usage {
            input_tokens: tokens("input_tokens"),
            output_tokens: tokens("output_tokens"),
            cache_read_tokens: tokens("cache_read_input_tokens"),
            cache_write_tokens: tokens("cache_creation_input_tokens"),
            cost_usd: r.get("total_cost_usd").and_then(Value::as_f64),
            ..Usage::unknown()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_or_the_last_result_of_an_array() {
        let obj = r#"{"type":"result","is_error":false,"session_id":"s1","result":"done","usage":{"input_tokens":5,"output_tokens":7,"cache_read_input_tokens":100,"cache_creation_input_tokens":20},"total_cost_usd":0.25}"#;
        let r = parse(obj).unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(r.text, "done");
        assert_eq!(r.session_id.as_deref(), Some("s1"));
        assert_eq!(r.usage.input_tokens, Some(5));
        assert_eq!(r.usage.output_tokens, Some(7));
        assert_eq!(r.usage.cache_read_tokens, Some(100));
        assert_eq!(r.usage.cache_write_tokens, Some(20));
        assert_eq!(r.usage.cost_usd, Some(0.25));
        let arr = format!(r#"[{{"type":"system"}},{obj}]"#);
        assert_eq!(parse(&arr).ok(), Some(r));
    }

    #[test]
    fn what_it_does_not_say_stays_unknown() {
        let r =
            parse(r#"{"type":"result","result":"ok"}"#).unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(r.usage, Usage::unknown());
    }

    #[test]
    fn errors_and_other_shapes_are_refused() {
        let e = parse(r#"{"type":"result","is_error":true,"result":"quota"}"#)
            .err()
            .map(|e| e.message);
        assert_eq!(e.as_deref(), Some("the agent reported an error: quota"));
        assert!(parse("not json").is_err());
        assert!(parse(r#"[{"type":"system"}]"#).is_err());
        assert!(parse(r#"{"type":"result"}"#).is_err());
        assert!(parse("3").is_err());
    }
}
