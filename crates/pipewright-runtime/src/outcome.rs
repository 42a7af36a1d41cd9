//! The result of a run and its `--format json` shape:
//! `{"status": "ok"|"failed"|"cancelled", "run_id", "output", "stores", "error"?}`.

use crate::failure::RunError;
use crate::secrets;
use pipewright_r1::Value;
use pipewright_syntax::{Diagnostic, SourceMap};
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Ok,
    Failed,
    Cancelled,
    /// At an approval gate that waits for a decision.
    Paused,
    /// Before an agent call that would go past a budget (resumable with a higher one).
    Stopped,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Paused => "paused",
            RunStatus::Stopped => "stopped",
        }
    }
}

#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub run_id: String,
    /// The final pipe. For a failed or cancelled run: the top-level pipe when the run stopped,
    /// i.e. the result of the last top-level step that completed (null if none did).
    pub output: Value,
    /// The top-level named stores when the run ended: for a failed or cancelled run, the
    /// input plus everything written by the top-level steps that completed.
    pub stores: Value,
    pub error: Option<RunError>,
    /// The step key at which a cancelled run stopped.
    pub cancelled_at: Option<String>,
    /// The run store (its database path) when the run had one.
    pub store: Option<String>,
    /// The store could not be written (the run itself may have succeeded).
    pub store_error: Option<String>,
    /// The signal that cancelled the run (SIGINT, SIGTERM), if one did.
    pub signal: Option<i32>,
    /// For a paused run: the gate and what its approver is asked.
    pub pending: Option<serde_json::Value>,
    /// A MEOW run: each step's status by id (expanded steps under their prefixed ids).
    pub steps: Option<serde_json::Value>,
    /// What the run's agent calls cost, in all and per step, when it made any
    /// (`crate::usage::Meter::report_json`).
    pub usage: Option<serde_json::Value>,
}

impl RunOutcome {
    /// A store failure to say beside the run's own result: not when it already is the run's
    /// error (which stays the diagnostic).
    pub fn unreported_store_error(&self) -> Option<&str> {
        self.store_error.as_deref().filter(|_| {
            self.error
                .as_ref()
                .is_none_or(|e| e.code != crate::codes::STORE)
        })
    }

    pub fn new(status: RunStatus, run_id: String, output: Value, stores: Value) -> RunOutcome {
        RunOutcome {
            status,
            run_id,
            output,
            stores,
            error: None,
            cancelled_at: None,
            store: None,
            store_error: None,
            signal: None,
            pending: None,
            steps: None,
            usage: None,
        }
    }

    /// The run could not be recorded: it fails of that, unless a step's own failure already
    /// is its diagnostic (the report then names the store's failure beside it). `span`: what
    /// the diagnostic points at (the workflow).
    pub fn fail_store(&mut self, msg: String, span: pipewright_syntax::Span) {
        self.store_error.get_or_insert(msg.clone());
        if self.error.is_some() {
            return;
        }
        self.status = RunStatus::Failed;
        self.cancelled_at = None;
        self.pending = None;
        self.error = Some(RunError::new(
            crate::codes::STORE,
            "",
            "run",
            span,
            format!("the run could not be recorded: {msg}"),
        ));
    }

    /// 0 ok, 1 failed, 3 paused at an approval gate, 4 stopped by a budget; cancelled: 128 + the signal (the shell
    /// convention), 130 for SIGINT or a cancel without a signal, 143 for SIGTERM.
    pub fn exit_code(&self) -> i32 {
        match self.status {
            RunStatus::Ok => 0,
            RunStatus::Failed => 1,
            RunStatus::Cancelled => 128 + self.signal.unwrap_or(2),
            RunStatus::Paused => 3,
            RunStatus::Stopped => 4,
        }
    }

    /// The failure as a diagnostic, for the same renderers `check` uses.
    pub fn diagnostic(&self) -> Option<Diagnostic> {
        // Printed to stderr: the message and the notes of values are redacted (crate::secrets).
        self.error.as_ref().map(|e| {
            let mut d = e.diagnostic();
            d.message = secrets::redact(&d.message).into_owned();
            for n in &mut d.notes {
                *n = secrets::redact(n).into_owned();
            }
            d
        })
    }

    pub fn to_json(&self, sources: &SourceMap) -> serde_json::Value {
        let mut o = json!({
            "status": self.status.name(),
            "run_id": self.run_id,
            "output": self.output.to_json(),
            "stores": self.stores.to_json(),
        });
        if let Some(e) = &self.error {
            let span = e.detail_span.unwrap_or(e.span);
            let (file, line, column) = match sources.get(span.file) {
                Some(f) => {
                    let lc = f.line_col(span.start as usize);
                    (json!(f.name), json!(lc.line), json!(lc.col))
                }
                None => (json!(null), json!(null), json!(null)),
            };
            o["error"] = json!({
                "code": e.code,
                "message": e.message,
                "step": e.key,
                "step_kind": e.step_kind,
                "file": file,
                "line": line,
                "column": column,
                "value": e.value.as_ref().map(Value::to_json),
            });
        }
        if let Some(k) = &self.cancelled_at {
            o["cancelled_at"] = json!(k);
        }
        if let Some(p) = &self.pending {
            o["pending"] = p.clone();
        }
        if let Some(s) = &self.steps {
            o["steps"] = s.clone();
        }
        // The report is printed: nothing in it may show a secret (crate::secrets).
        secrets::redact_json(&mut o);
        if let Some(u) = &self.usage {
            o["usage"] = u.clone();
        }
        o
    }
}
