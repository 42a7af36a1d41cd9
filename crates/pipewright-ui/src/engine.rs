//! `pipewright ui` on a run engine instead of the local store (the Restate engine,
//! docs/engines.md). What the UI asks of an engine is the trait [`Engine`], which the CLI
//! implements with the code `pipewright runs|approve|deny|cancel --engine restate` runs, so this
//! crate needs no engine client. The reads are served from a mirror of the engine's runs in a
//! private SQLite store (mirror.rs), so every computation of the UI is the local one; decisions
//! and cancels go to the engine (here).

use crate::security::error;
use crate::App;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use pipewright_dialect::Waiting;
use pipewright_runtime::approval::Decision;
use pipewright_runtime::run_kv::{KeptLanding, RunMeta};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A run as the engine's list gives it: its id, and a stamp that differs whenever anything
/// about the run may have changed (status, landings, events, owner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub run_id: String,
    pub stamp: String,
}

/// One run, whole, as the engine holds it.
#[derive(Debug, Clone)]
pub struct EngineRun {
    pub meta: RunMeta,
    pub landings: Vec<(String, KeptLanding)>,
    /// Its event lines as `pipewright runs events` prints them (with `run_id`).
    pub events: Vec<String>,
    /// A worker runs it now.
    pub owned: bool,
}

/// Why the engine did not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The CLI's refusal: decided already, nothing waits, nothing runs the run (409).
    Conflict(String),
    /// The engine has no such run (404).
    NoRun(String),
    /// The engine, or the worker running the run, could not be asked (502).
    Unreachable(String),
}

/// A run engine `pipewright ui` serves. Every method blocks (the routes call them off the
/// async threads).
pub trait Engine: Send + Sync {
    /// Where it is, for a person: `the Restate engine at http://…`.
    fn describe(&self) -> String;
    /// Every run the engine has.
    fn list(&self) -> Result<Vec<Listed>, String>;
    /// One run; `None` when the engine no longer has it.
    fn fetch(&self, run_id: &str) -> Result<Option<EngineRun>, String>;
    /// `pipewright approve|deny RUN_ID` on the engine: the line it prints.
    fn decide(&self, run_id: &str, step: Option<&str>, d: &Decision) -> Result<String, Refusal>;
    /// `pipewright cancel RUN_ID` on the engine: the line it prints.
    fn cancel(&self, run_id: &str) -> Result<String, Refusal>;
    /// The approvals a run a worker runs waits for inside it now (a MEOW approval step, which
    /// waits on the run's orchestrator, where the run is), as that worker finds them.
    fn waiting(&self, _run_id: &str) -> Result<Vec<Waiting>, String> {
        Ok(Vec::new())
    }
}

impl std::fmt::Debug for dyn Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// What `continues` says of a decided approval on the engine: the engine goes on by itself.
pub(crate) const CONTINUES: &str = "engine";

/// How the mirror stands with the engine.
#[derive(Debug, Clone, Default)]
pub(crate) struct Health {
    /// Why the last refresh failed; `None` once one succeeds.
    pub error: Option<String>,
    /// When the mirror last held everything the engine had.
    pub refreshed_ms: Option<i64>,
}

/// The engine side of a server: the engine, and the mirror's state the routes read.
pub(crate) struct EngineSide {
    pub engine: Arc<dyn Engine>,
    pub health: Mutex<Health>,
    /// Asks the mirror to refresh now (after a decision or a cancel), not at its next tick.
    pub nudge: tokio::sync::Notify,
    /// What each run a worker runs waits for inside it, as of the mirror's last refresh.
    pub waiting: Mutex<HashMap<String, Vec<Waiting>>>,
}

impl EngineSide {
    pub(crate) fn new(engine: Arc<dyn Engine>) -> EngineSide {
        EngineSide {
            engine,
            health: Mutex::default(),
            nudge: tokio::sync::Notify::new(),
            waiting: Mutex::default(),
        }
    }

    /// What run `run_id` waits for inside it, as of the mirror's last refresh.
    pub(crate) fn waiting_of(&self, run_id: &str) -> Vec<Waiting> {
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(run_id)
            .cloned()
            .unwrap_or_default()
    }

    pub(crate) fn health(&self) -> Health {
        self.health
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// `{"at", "error", "refreshed_ms"}`: what the pages show about the engine.
    pub(crate) fn to_json(&self) -> Value {
        let h = self.health();
        json!({
            "at": self.engine.describe(),
            "error": h.error,
            "refreshed_ms": h.refreshed_ms,
        })
    }

    /// The refusal to give while the engine cannot be reached (no call would get through).
    fn unreachable(&self) -> Option<Response> {
        self.health()
            .error
            .map(|e| error(StatusCode::BAD_GATEWAY, &e))
    }
}

/// Adds `engine` to a runs document or a run's detail when the server serves an engine.
/// [`annotate`] for a document already written out as text (a JSON object).
pub(crate) fn annotate_text(app: &App, doc: &mut String) {
    if let (Some(side), Some(end)) = (&app.engine, doc.rfind('}')) {
        doc.replace_range(end.., &format!(",\"engine\":{}}}", side.to_json()));
    }
}

pub(crate) fn annotate(app: &App, doc: &mut Value) {
    if let (Some(side), Some(o)) = (&app.engine, doc.as_object_mut()) {
        o.insert("engine".into(), side.to_json());
    }
}

fn refused(r: Refusal) -> Response {
    match r {
        Refusal::Conflict(m) => error(StatusCode::CONFLICT, &m),
        Refusal::NoRun(m) => error(StatusCode::NOT_FOUND, &m),
        Refusal::Unreachable(m) => error(StatusCode::BAD_GATEWAY, &m),
    }
}

/// `approve`/`deny` on the engine (blocking). One decision per run at a time in this server,
/// as for the local store; between servers and the CLI the run's state object on the engine
/// serialises them (a decider claims the run first, and a second claim is refused).
pub(crate) fn decide(
    app: &App,
    side: &EngineSide,
    id: &str,
    step: Option<&str>,
    d: &Decision,
) -> Response {
    if let Some(r) = side.unreachable() {
        return r;
    }
    let lock = app.decision_lock(id);
    let _one_at_a_time = lock.lock().unwrap_or_else(|p| p.into_inner());
    let decided = side.engine.decide(id, step, d);
    side.nudge.notify_one();
    match decided {
        Ok(message) => Json(json!({
            "decided": d.past_tense(),
            "continues": CONTINUES,
            "message": message,
        }))
        .into_response(),
        Err(r) => refused(r),
    }
}

/// `cancel` on the engine (blocking).
pub(crate) fn cancel(side: &EngineSide, id: &str) -> Response {
    if let Some(r) = side.unreachable() {
        return r;
    }
    let cancelled = side.engine.cancel(id);
    side.nudge.notify_one();
    match cancelled {
        Ok(message) => (StatusCode::ACCEPTED, Json(json!({ "message": message }))).into_response(),
        Err(r) => refused(r),
    }
}
