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

/// Why a reply file cannot be used, naming the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// Not YAML (nor JSON): the loader's first error.
    #[error("{name}: {message}")]
    Load { name: String, message: String },
    /// YAML of another shape; the message shows the format, since that is what was missed.
    #[error("{name}: {shape}; a reply file looks like this (YAML or JSON):\n{example}", example = EXAMPLE)]
    Shape { name: String, shape: Shape },
}

/// What is wrong with the shape of a reply file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Shape {
    #[error("expected a `replies:` list")]
    NoReplies,
    #[error("reply {0} has none of `reply`, `replies`, `error`")]
    NoReply(usize),
    #[error("reply {0} has an empty `replies` list")]
    EmptyReplies(usize),
}

impl From<ScriptError> for String {
    fn from(e: ScriptError) -> String {
        e.to_string()
    }
}

/// One scripted answer: text to send, or the failure the file asks the call to end with (an
/// answer of the script, not an error of reading it).
enum Reply {
    Send(Value),
    Fail(String),
}

struct Rule {
    step: Option<String>,
    contains: Option<String>,
    replies: Vec<Reply>,
    calls: AtomicUsize,
}

pub struct ScriptBackend {
    rules: Vec<Rule>,
    default: Option<Value>,
}

impl ScriptBackend {
    /// Parses a script. YAML is read with pipewright's own loader (JSON is YAML).
    pub fn from_text(name: &str, text: &str) -> Result<ScriptBackend, ScriptError> {
        let mut sources = pipewright_syntax::SourceMap::new();
        let file = sources.add(name, text);
        let (docs, diags) = pipewright_yaml::load(file, text, pipewright_yaml::Limits::default());
        if let Some(d) = diags.iter().find(|d| d.is_error()) {
            return Err(ScriptError::Load {
                name: name.to_string(),
                message: d.message.clone(),
            });
        }
        let root = docs
            .first()
            .and_then(|d| d.root.as_ref())
            .map(pipewright_yaml::to_json)
            .unwrap_or(Value::Null);
        Self::from_json(name, &root)
    }

    pub fn from_json(name: &str, root: &Value) -> Result<ScriptBackend, ScriptError> {
        let shape_error = |shape| ScriptError::Shape {
            name: name.to_string(),
            shape,
        };
        let list = root
            .get("replies")
            .and_then(Value::as_array)
            .ok_or_else(|| shape_error(Shape::NoReplies))?;
        let mut rules = Vec::new();
        for (i, r) in list.iter().enumerate() {
            let s = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
            let replies: Vec<Reply> = if let Some(e) = s("error") {
                vec![Reply::Fail(e)]
            } else if let Some(seq) = r.get("replies").and_then(Value::as_array) {
                seq.iter().cloned().map(Reply::Send).collect()
            } else if let Some(v) = r.get("reply") {
                vec![Reply::Send(v.clone())]
            } else {
                return Err(shape_error(Shape::NoReply(i)));
            };
            if replies.is_empty() {
                return Err(shape_error(Shape::EmptyReplies(i)));
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
                        Reply::Send(v) => Ok(text_of(v)),
                        Reply::Fail(e) => Err(BackendError::new(e.clone())),
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

    fn reply<'a>(
        &'a self,
        req: &'a AgentRequest,
    ) -> BoxFuture<'a, Result<super::Reply, BackendError>> {
        Box::pin(async move {
            let text = self.complete(req).await?;
            let usage = super::counted_usage(&req.prompt, &text);
            Ok(super::Reply {
                text,
                usage,
                model: None,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_file_of_the_wrong_shape_says_which_reply() {
        let shape = |text: &str| match ScriptBackend::from_text("s.yaml", text) {
            Err(ScriptError::Shape { name, shape }) if name == "s.yaml" => Some(shape),
            _ => None,
        };
        assert_eq!(shape("- a list\n"), Some(Shape::NoReplies));
        assert_eq!(
            shape("replies:\n  - reply: x\n  - step: \"1\"\n"),
            Some(Shape::NoReply(1))
        );
        assert_eq!(
            shape("replies:\n  - replies: []\n"),
            Some(Shape::EmptyReplies(0))
        );
        assert!(matches!(
            ScriptBackend::from_text("s.yaml", "replies: [\n"),
            Err(ScriptError::Load { .. })
        ));
        let e = ScriptBackend::from_text("s.yaml", "{}")
            .err()
            .map(String::from);
        assert_eq!(
            e,
            Some(format!(
                "s.yaml: expected a `replies:` list; a reply file looks like this (YAML or JSON):\n{EXAMPLE}"
            ))
        );
    }
}
