//! `pipewright approve|deny` on a MEOW run: its approval steps (`meow await-approval`) wait
//! only while the run runs, on its orchestrator socket; the run goes on by itself once one
//! is decided.

use super::channel::{ask, socket_path};
use pipewright_dialect::{Decided, RecordedRun, Waiting};
use pipewright_runtime::approval::Decision;
use serde_json::json;
use std::path::Path;

/// `None` for a run that is not a MEOW run (it keeps no run directory).
pub fn decide(run: &RecordedRun<'_>, step: Option<&str>, d: &Decision) -> Option<Decided> {
    let id = run.run_id;
    let sock = socket_path(run.run_dir);
    let owned = run.store.is_owned(id);
    if owned && sock.exists() {
        return Some(decide_live(id, &sock, step, d));
    }
    if run.run_dir.is_dir() && !owned {
        let status = &run.record.status;
        return Some(Err((
            1,
            format!(
                "run {id} is a MEOW run that is not running ({}); its approval steps wait only while it runs: continue it with `pipewright run --resume {id}`, then decide",
                if status == "running" { "interrupted" } else { status }
            ),
        )));
    }
    None
}

/// The approvals a live MEOW run waits for (its orchestrator says); `None` for a run that is
/// not a live MEOW run.
pub fn waiting(run: &RecordedRun<'_>) -> Option<Vec<Waiting>> {
    let sock = socket_path(run.run_dir);
    if !(run.store.is_owned(run.run_id) && sock.exists()) {
        return None;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let answer = runtime
        .block_on(ask(&sock, &json!({"type": "waiting_approvals"})))
        .ok()?;
    Some(
        gates_of(&answer)
            .into_iter()
            .map(|(gate, steps)| {
                let step_key = steps.first().cloned().unwrap_or_else(|| gate.clone());
                Waiting {
                    prompt: format!("step `{step_key}` waits for approval at gate `{gate}`"),
                    step_key,
                    kind: "approval",
                    continues: "live",
                }
            })
            .collect(),
    )
}

/// The gates of a `waiting_approvals` answer, each with its waiting steps.
fn gates_of(waiting: &serde_json::Value) -> Vec<(String, Vec<String>)> {
    waiting["gates"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|g| {
                    let steps = g["steps"].as_array().map_or_else(Vec::new, |s| {
                        s.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    });
                    (g["gate"].as_str().unwrap_or("").to_string(), steps)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Asks the live run's orchestrator which gates an `await-approval` waits at, picks the one
/// `step` names (a gate or a waiting step) or the only one, and decides it.
fn decide_live(id: &str, sock: &Path, step: Option<&str>, d: &Decision) -> Decided {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| (2, format!("cannot start the runtime: {e}")))?;
    let waiting = runtime
        .block_on(ask(sock, &json!({"type": "waiting_approvals"})))
        .map_err(|e| (2, format!("run {id}: {e}")))?;
    let gates = gates_of(&waiting);
    let describe = |(gate, steps): &(String, Vec<String>)| match steps.as_slice() {
        [] => format!("gate `{gate}`"),
        [s] if s == gate => format!("step `{s}`"),
        s => format!(
            "step {} (gate `{gate}`)",
            s.iter()
                .map(|x| format!("`{x}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let list = |g: &[(String, Vec<String>)]| g.iter().map(describe).collect::<Vec<_>>().join(", ");
    if gates.is_empty() {
        return Err((
            1,
            format!(
                "run {id} is running and no step of it waits for approval (`meow await-approval`)"
            ),
        ));
    }
    let chosen: Vec<&(String, Vec<String>)> = match step {
        Some(want) => gates
            .iter()
            .filter(|(g, s)| g == want || s.iter().any(|x| x == want))
            .collect(),
        None => gates.iter().collect(),
    };
    let (gate, steps) = match chosen.as_slice() {
        [one] => *one,
        [] => {
            return Err((
                1,
                format!(
                    "no approval of run {id} waits at `{}`; waiting: {}",
                    step.unwrap_or(""),
                    list(&gates)
                ),
            ))
        }
        many => {
            let many: Vec<(String, Vec<String>)> = many.iter().map(|g| (*g).clone()).collect();
            return Err((
                1,
                format!(
                    "run {id} waits for approval at {} gates: {}; say which with --step STEP",
                    many.len(),
                    list(&many)
                ),
            ));
        }
    };
    let (approved, reason) = match d {
        Decision::Approve { message } => (true, message.clone()),
        Decision::Deny { reason } => (false, reason.clone()),
    };
    let req = json!({"type": "approval", "gate_id": gate, "approved": approved, "reason": reason});
    match runtime.block_on(ask(sock, &req)) {
        Ok(a) if a["type"] == "ack" => Ok(format!(
            "{} {} of run {id}; the run goes on",
            d.past_tense(),
            describe(&(gate.clone(), steps.clone()))
        )),
        Ok(a) => Err((
            1,
            a["message"]
                .as_str()
                .unwrap_or("the orchestrator refused")
                .to_string(),
        )),
        Err(e) => Err((2, format!("run {id}: {e}"))),
    }
}
