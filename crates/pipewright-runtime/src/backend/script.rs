//! Replies from a file, for tests and demos (`--backend script --script FILE`). The format is
//! documented for users in docs/run.md ("Backends") and shown by [`EXAMPLE`] in every error
//! about the file's shape.

use super::{AgentBackend, AgentRequest, BackendError, BoxFuture};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A reply file with every field, shown when a file has the wrong shape.
pub const EXAMPLE: &str = r#"replies:                      # tried in order; the first rule that matches answers
  - step: "0"                 # optional: the step's key must equal this
    contains: "Review"        # optional: the prompt must contain this
    reply: {passed: true}     # a string is sent as is, anything else as JSON
  - contains: "retry me"
    replies: ["not json", {ok: true}]   # one per call; the last repeats
  - contains: "broken"
    error: "the agent crashed"          # fail the call with this message
default: "fallback text"      # optional: the reply when no rule matches (else the step fails)"#;

/// An error about the file's shape, with the example.
fn shape_error(name: &str, what: String) -> String {
    format!("{name}: {what}; a reply file looks like this (YAML or JSON):\n{EXAMPLE}")
}

struct Rule {
    step: Option<String>,
    contains: Option<String>,
    replies: Vec<Result<Value, String>>,
    calls: AtomicUsize,
}

pub struct ScriptBackend {
    rules: Vec<Rule>,
    default: Option<Value>,
}

impl ScriptBackend {
    /// Parses a script. YAML is read with pipewright's own loader (JSON is YAML).
    pub fn from_text(name: &str, text: &str) -> Result<ScriptBackend, String> {
        let mut sources = pipewright_syntax::SourceMap::new();
        let file = sources.add(name, text);
        let (docs, diags) = pipewright_yaml::load(file, text, pipewright_yaml::Limits::default());
        if let Some(d) = diags.iter().find(|d| d.is_error()) {
            return Err(format!("{name}: {}", d.message));
        }
        let root = docs
            .first()
            .and_then(|d| d.root.as_ref())
            .map(pipewright_yaml::to_json)
            .unwrap_or(Value::Null);
        Self::from_json(name, &root)
    }

    pub fn from_json(name: &str, root: &Value) -> Result<ScriptBackend, String> {
        let list = root
            .get("replies")
            .and_then(Value::as_array)
            .ok_or_else(|| shape_error(name, "expected a `replies:` list".into()))?;
        let mut rules = Vec::new();
        for (i, r) in list.iter().enumerate() {
            let s = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
            let replies: Vec<Result<Value, String>> = if let Some(e) = s("error") {
                vec![Err(e)]
            } else if let Some(seq) = r.get("replies").and_then(Value::as_array) {
                seq.iter().cloned().map(Ok).collect()
            } else if let Some(v) = r.get("reply") {
                vec![Ok(v.clone())]
            } else {
                return Err(shape_error(
                    name,
                    format!("reply {i} has none of `reply`, `replies`, `error`"),
                ));
            };
            if replies.is_empty() {
                return Err(shape_error(
                    name,
                    format!("reply {i} has an empty `replies` list"),
                ));
            }
            rules.push(Rule {
                step: s("step"),
                contains: s("contains"),
                replies,
                calls: AtomicUsize::new(0),
            });
        }
        Ok(ScriptBackend {
            rules,
            default: root.get("default").cloned(),
        })
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl AgentBackend for ScriptBackend {
    fn name(&self) -> &str {
        "script"
    }

    fn complete<'a>(
        &'a self,
        req: &'a AgentRequest,
    ) -> BoxFuture<'a, Result<String, BackendError>> {
        Box::pin(async move {
            let rule = self.rules.iter().find(|r| {
                r.step.as_deref().is_none_or(|s| s == req.step)
                    && r.contains.as_deref().is_none_or(|c| req.prompt.contains(c))
            });
            match rule {
                Some(r) => {
                    let n = r.calls.fetch_add(1, Ordering::SeqCst);
                    match &r.replies[n.min(r.replies.len() - 1)] {
                        Ok(v) => Ok(text_of(v)),
                        Err(e) => Err(BackendError::new(e.clone())),
                    }
                }
                None => match &self.default {
                    Some(v) => Ok(text_of(v)),
                    None => Err(BackendError::new(format!(
                        "the script has no reply for step {} (prompt: {})",
                        req.step,
                        crate::value::preview(&pipewright_r1::Value::Str(req.prompt.clone()), 200)
                    ))),
                },
            }
        })
    }
}
