//! The result of a state-machine run and its `--format json` report:
//! `{"status", "run_id", "exit_reason", "trace": [{"step", "outcome", "recipe", "session"}],
//! "output", "stores", "error"?}`. `error.code` is a `PW084x` code; `error.spec_code` is the
//! spec's finer exit code (§9) it stands for.

use pipewright_runtime::codes;
use pipewright_runtime::outcome::{RunOutcome, RunStatus};
use pipewright_syntax::SourceMap;
use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct TraceEntry {
    pub step: String,
    /// `None` for a step that reported no usable outcome (an orchestration error).
    pub outcome: Option<String>,
    pub recipe: String,
    pub session: String,
}

impl TraceEntry {
    pub fn to_json(&self) -> Value {
        json!({
            "step": self.step,
            "outcome": self.outcome,
            "recipe": self.recipe,
            "session": self.session,
        })
    }
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub run: RunOutcome,
    /// The exit transition's reason, `max-step-visits-exceeded:<step>`, `max-total-steps`,
    /// `orchestration-error`, `max-restarts`, `backend-error`, or `cancelled`.
    pub exit_reason: String,
    pub trace: Vec<TraceEntry>,
}

/// §9's exit code for a pipewright code.
pub(super) fn spec_code(code: &str) -> Option<u8> {
    match code {
        codes::SM_ORCHESTRATION => Some(2),
        codes::SM_GUARDRAIL => Some(3),
        codes::SM_BACKEND => Some(4),
        codes::SM_CONFIG => Some(5),
        _ => None,
    }
}

impl Outcome {
    /// 0 ok, 1 failed, 130 (128 + the signal) cancelled.
    pub fn exit_code(&self) -> i32 {
        self.run.exit_code()
    }

    pub fn ok(&self) -> bool {
        self.run.status == RunStatus::Ok
    }

    pub fn to_json(&self, sources: &SourceMap) -> Value {
        let base = self.run.to_json(sources);
        let mut o = serde_json::Map::new();
        o.insert("status".into(), base["status"].clone());
        o.insert("run_id".into(), base["run_id"].clone());
        o.insert("exit_reason".into(), json!(self.exit_reason));
        o.insert(
            "trace".into(),
            Value::Array(self.trace.iter().map(TraceEntry::to_json).collect()),
        );
        o.insert("output".into(), base["output"].clone());
        o.insert("stores".into(), base["stores"].clone());
        if let Some(mut e) = base.get("error").cloned() {
            if let Some(n) = self.run.error.as_ref().and_then(|e| spec_code(e.code)) {
                e["spec_code"] = json!(n);
            }
            o.insert("error".into(), e);
        }
        if let Some(k) = base.get("cancelled_at") {
            o.insert("cancelled_at".into(), k.clone());
        }
        if let Some(u) = base.get("usage") {
            o.insert("usage".into(), u.clone());
        }
        let mut v = Value::Object(o);
        // Replies are printed: nothing in them may show a secret (pipewright_runtime::secrets).
        pipewright_runtime::secrets::redact_json(&mut v);
        v
    }
}
