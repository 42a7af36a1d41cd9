//! `pipewright approve|deny RUN_ID`: the decision, and what every dialect's answer starts
//! from. Where a run waits for approval is the dialect's (a recipe's gate is a landing in the
//! store, a live MEOW run's approval step waits on its orchestrator socket); a run that waits
//! nowhere gets one answer whatever its dialect.

use crate::store::{self, RunLock, RunRecord, Store};

/// A decision on an approval a run waits for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Decision {
    Approve { message: String },
    Deny { reason: String },
}

impl Decision {
    /// "approved" or "denied", as messages say it.
    pub fn past_tense(&self) -> &'static str {
        match self {
            Decision::Approve { .. } => "approved",
            Decision::Deny { .. } => "denied",
        }
    }
}

/// A stopped run, owned by this process for the decision: its lock, its record and its status
/// as `pipewright runs` shows it.
pub struct Stopped {
    pub lock: Box<dyn RunLock>,
    pub record: RunRecord,
    pub status: String,
    pub created_ms: i64,
}

/// Owns the run (no process may be running it meanwhile) and reads it.
pub fn own_stopped(st: &dyn Store, run_id: &str) -> Result<Stopped, String> {
    store::check_run_id(run_id)?;
    let lock = st.lock_run(run_id)?;
    let record = st.load_run(run_id)?;
    let summary = st
        .list_runs()?
        .into_iter()
        .find(|r| r.run_id == run_id)
        .ok_or_else(|| format!("no run {run_id} in the run store {}", st.describe()))?;
    Ok(Stopped {
        lock,
        record,
        status: summary.status,
        created_ms: summary.created_ms,
    })
}

/// The answer for a run no dialect finds waiting.
pub fn nothing_waits(st: &dyn Store, run_id: &str) -> String {
    match own_stopped(st, run_id) {
        Ok(s) => format!("run {run_id} is {} and waits for no approval", s.status),
        Err(e) => e,
    }
}
