//! Approval gates (notes §5.13). A gate lands as its state: `pending` (with what the
//! approver is asked), then `approved` or `denied`, written by `pipewright approve|deny`
//! or by the run itself when it asks on a terminal. A resume replays the decision.

use super::{Ctx, Exec, Frame, Stop};
use crate::runtime as rt;
use crate::value::Value;
use pipewright_ir::{Node, NodeKind};
use pipewright_runtime::codes;
use pipewright_runtime::store::{self, Landed, Landing, Store, StoreError, Write};
use serde_json::json;

pub use pipewright_runtime::approval::Decision;

/// The gate state a landing holds: an object, or its text in runs recorded before.
fn state(landed: &serde_json::Value) -> Option<serde_json::Value> {
    match landed {
        serde_json::Value::String(t) => serde_json::from_str(t).ok(),
        serde_json::Value::Object(_) => Some(landed.clone()),
        _ => None,
    }
}

const GATE_HASH: &str = "gate";

/// Whether a landing with step hash `hash` is a gate's state.
pub(crate) fn is_gate(hash: &str) -> bool {
    hash == GATE_HASH
}

/// Whether the run ever reached an approval gate (a recipe run's, then).
pub fn has_gates(rec: &store::RunRecord) -> bool {
    rec.landings.iter().any(|l| is_gate(&l.step_hash))
}

impl Exec {
    pub(crate) async fn gate(
        &self,
        f: &Frame,
        ctx: &mut Ctx,
        node: &Node,
        key: &str,
    ) -> Result<(), Stop> {
        let NodeKind::Gate(gate) = &node.kind else {
            return Ok(());
        };
        let pipewright_ir::Gate {
            stage,
            prompt,
            timeout_secs,
            default_approve,
        } = &**gate;
        let landed = match self.session.landing(key) {
            Some((_, pipewright_runtime::store::Landed::Value(v))) => state(&v),
            _ => None,
        };
        let mut st = match landed {
            Some(s) => s,
            None => {
                // The prompt is rendered when the gate is reached; an empty one is the
                // runner's default question.
                let text = match prompt {
                    Some(p) => rt::render(&p.src, &ctx.vars).map_err(|e| {
                        self.fail_gate(
                            key,
                            node,
                            format!("approval prompt of stage '{stage}': {}", e.0),
                        )
                    })?,
                    None => String::new(),
                };
                let text = if text.is_empty() {
                    format!("Approve completion of stage '{stage}'?")
                } else {
                    text
                };
                let pending = json!({
                    "status": "pending",
                    "stage": format!("{}{stage}", f.gate_path),
                    "prompt": text,
                    "requested_ms": store::now_ms(),
                    "timeout_secs": timeout_secs,
                    "default": if *default_approve { "approve" } else { "deny" },
                });
                self.land_gate(key, &pending)
                    .map_err(|e| self.fail_gate(key, node, e))?;
                pending
            }
        };
        if st["status"] == "pending" {
            let requested = st["requested_ms"].as_i64().unwrap_or(0);
            let expired = *timeout_secs > 0
                && store::now_ms().saturating_sub(requested) >= (*timeout_secs as i64) * 1000;
            if expired {
                // The default decides the gate for good: landed, so a later `approve|deny`
                // finds nothing pending and a later resume replays the same decision.
                let d = if *default_approve {
                    Decision::Approve {
                        message: String::new(),
                    }
                } else {
                    Decision::Deny {
                        reason: String::new(),
                    }
                };
                st = decided(&st, &d);
                st["timed_out"] = json!(true);
                self.land_gate(key, &st)
                    .map_err(|e| self.fail_gate(key, node, e))?;
            } else if self.interactive {
                let decision = ask_on_terminal(
                    st["prompt"].as_str().unwrap_or(""),
                    st["stage"].as_str().unwrap_or(stage),
                );
                st = decided(&st, &decision);
                self.land_gate(key, &st)
                    .map_err(|e| self.fail_gate(key, node, e))?;
            } else {
                return Err(Stop::Paused(json!({
                    "stage": st["stage"],
                    "prompt": st["prompt"],
                    "timeout_secs": timeout_secs,
                    "default": st["default"],
                    "gate": key,
                })));
            }
        }
        if st["status"] == "denied" && st["timed_out"] == true {
            return Err(self.fail_gate(
                key,
                node,
                format!("Approval for stage '{stage}' timed out and was denied"),
            ));
        }
        if st["status"] == "denied" {
            let mut msg = format!("Execution denied at stage '{stage}'");
            if let Some(r) = st["reason"].as_str().filter(|r| !r.is_empty()) {
                msg.push_str(&format!(": {r}"));
            }
            return Err(self.fail_gate(key, node, msg));
        }
        let message = st["message"].as_str().unwrap_or("").to_string();
        ctx.set("_approval_message", Value::Str(message));
        // The message is part of the gate's landing: nothing else to land.
        ctx.take_delta(Vec::new());
        Ok(())
    }

    fn fail_gate(&self, key: &str, node: &Node, msg: impl Into<String>) -> Stop {
        Stop::Failed(Box::new(pipewright_runtime::failure::RunError::new(
            codes::GATE,
            key,
            node.kind.name(),
            node.span,
            msg,
        )))
    }

    fn land_gate(&self, key: &str, st: &serde_json::Value) -> Result<(), String> {
        self.land_raw(key, GATE_HASH, st.clone(), true)
            .map_err(|e| format!("the run could not be recorded: {e}"))
    }
}

fn decided(pending: &serde_json::Value, d: &Decision) -> serde_json::Value {
    let mut st = pending.clone();
    st["decided_ms"] = json!(store::now_ms());
    match d {
        Decision::Approve { message } => {
            st["status"] = json!("approved");
            st["message"] = json!(message);
        }
        Decision::Deny { reason } => {
            st["status"] = json!("denied");
            st["reason"] = json!(reason);
        }
    }
    st
}

/// Asks on the terminal (stderr, stdin): `y` approves (an optional message follows), anything
/// else denies.
fn ask_on_terminal(prompt: &str, stage: &str) -> Decision {
    use std::io::{BufRead, Write as _};
    let mut err = std::io::stderr();
    let _ = writeln!(err, "\napproval needed for stage '{stage}':\n{prompt}");
    let _ = write!(err, "approve? [y/N] ");
    let _ = err.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    if !matches!(line.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        let _ = write!(err, "reason (optional): ");
        let _ = err.flush();
        let mut reason = String::new();
        let _ = std::io::stdin().lock().read_line(&mut reason);
        return Decision::Deny {
            reason: reason.trim().to_string(),
        };
    }
    let _ = write!(err, "message for the next stage (optional): ");
    let _ = err.flush();
    let mut message = String::new();
    let _ = std::io::stdin().lock().read_line(&mut message);
    Decision::Approve {
        message: message.trim().to_string(),
    }
}

/// Why a decision on a run's gate cannot be recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecideError {
    /// The run cannot be owned or read (no such run, another process runs it, the store).
    #[error("{0}")]
    NotOwned(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("run {run_id} is {status} and waits for no approval")]
    NotWaiting { run_id: String, status: String },
    /// `waiting` lists the stages that do wait (`'a', 'b'`).
    #[error("run {run_id} waits for no approval at '{at}'; it waits at {waiting}")]
    NotWaitingAt {
        run_id: String,
        at: String,
        waiting: String,
    },
    #[error(
        "run {run_id} waits for approval at {count} stages: {waiting}; say which with --step STAGE"
    )]
    Several {
        run_id: String,
        count: usize,
        waiting: String,
    },
}

impl From<DecideError> for String {
    fn from(e: DecideError) -> String {
        e.to_string()
    }
}

/// The gates a run waits at: (key, gate state), newest landing first.
pub fn pending_gates(rec: &store::RunRecord) -> Vec<(String, serde_json::Value)> {
    rec.landings
        .iter()
        .rev()
        .filter(|l| l.step_hash == GATE_HASH)
        .filter_map(|l| match &l.landed {
            Landed::Value(v) => state(v)
                .filter(|s| s["status"] == "pending")
                .map(|s| (l.key.clone(), s)),
            Landed::Dropped(_) => None,
        })
        .collect()
}

/// Records a decision on the pending gate of a paused run (`pipewright approve|deny`); `step`
/// picks the gate by its stage (or key) when more than one waits. Returns the stage decided.
pub fn decide(
    store: &dyn Store,
    run_id: &str,
    step: Option<&str>,
    d: &Decision,
) -> Result<String, DecideError> {
    // Owning the run means no process is running it now.
    let stopped =
        pipewright_runtime::approval::own_stopped(store, run_id).map_err(DecideError::NotOwned)?;
    let mut pending = pending_gates(&stopped.record);
    if pending.is_empty() {
        return Err(DecideError::NotWaiting {
            run_id: run_id.to_string(),
            status: stopped.status,
        });
    }
    let stage_of = |s: &serde_json::Value| s["stage"].as_str().unwrap_or("").to_string();
    let names = |p: &[(String, serde_json::Value)]| {
        p.iter()
            .map(|(_, s)| format!("'{}'", stage_of(s)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(want) = step {
        let all = names(&pending);
        pending.retain(|(k, s)| k == want || stage_of(s) == want);
        if pending.is_empty() {
            return Err(DecideError::NotWaitingAt {
                run_id: run_id.to_string(),
                at: want.to_string(),
                waiting: all,
            });
        }
    }
    // `pending` is not empty here: one gate waits, or several.
    let [(key, st)] = <[_; 1]>::try_from(pending).map_err(|pending| DecideError::Several {
        run_id: run_id.to_string(),
        count: pending.len(),
        waiting: names(&pending),
    })?;
    let stage = st["stage"].as_str().unwrap_or("").to_string();
    let st = decided(&st, d);
    let event = json!({
        "event": "approval_decided",
        "key": key,
        "stage": stage,
        "decision": st["status"],
        // The run's clock, as its steps' events count (not the epoch `decided_ms` holds).
        "at_ms": store::now_ms().saturating_sub(stopped.created_ms),
    });
    store.record(
        run_id,
        &[
            Write::Land(Landing {
                key,
                step_hash: GATE_HASH.into(),
                landed: Landed::Value(st),
            }),
            Write::Event(event.to_string()),
        ],
    )?;
    Ok(stage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipewright_runtime::store::{NewRun, SqliteStore};

    #[test]
    fn a_run_at_no_gate_has_nothing_to_decide() {
        let dir = tempfile::tempdir().unwrap();
        let st = SqliteStore::open(&dir.path().join("runs.db")).unwrap();
        let run_id = store::new_run_id();
        st.create_run(&NewRun {
            run_id: run_id.clone(),
            file: "r.yaml".into(),
            workflow: "r".into(),
            source_hash: String::new(),
            input: json!({}),
        })
        .unwrap();
        let approve = Decision::Approve {
            message: String::new(),
        };
        let e = decide(&st, &run_id, None, &approve).unwrap_err();
        assert!(
            matches!(&e, DecideError::NotWaiting { run_id: id, .. } if *id == run_id),
            "{e}"
        );
        assert!(e.to_string().ends_with(" and waits for no approval"), "{e}");
        assert!(matches!(
            decide(&st, "../x", None, &approve),
            Err(DecideError::NotOwned(_))
        ));
    }
}
