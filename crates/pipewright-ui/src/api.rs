//! The routes of docs/ui.md: reading runs, deciding approvals, cancelling.

use crate::graphs::FileGraph;
use crate::reduce::{nodes_text, reduce, EventLine, NodeState, RunFacts};
use crate::rows::{self, RunRow};
use crate::security::{self, error};
use crate::App;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use pipewright_dialect::Waiting;
use pipewright_runtime::approval::Decision;
use pipewright_runtime::stop::CancelError;
use pipewright_runtime::store::StoreError;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub(crate) fn router(app: Arc<App>, stop: tokio::sync::watch::Receiver<bool>) -> Router {
    let streams = crate::streams::Streams {
        app: app.clone(),
        stop,
    };
    Router::new()
        .route("/api/runs", get(list))
        .route(
            "/api/runs/stream",
            get(crate::streams::runs).with_state(streams.clone()),
        )
        .route("/api/runs/{id}", get(show))
        .route(
            "/api/runs/{id}/events",
            get(crate::streams::events).with_state(streams),
        )
        .route("/api/runs/{id}/approve", post(approve))
        .route("/api/runs/{id}/deny", post(deny))
        .route("/api/runs/{id}/cancel", post(cancel))
        .route("/api/{*rest}", get(no_such_api).post(no_such_api))
        .fallback(crate::assets::serve)
        .layer(DefaultBodyLimit::max(security::MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            security::guard,
        ))
        .with_state(app)
}

async fn no_such_api() -> Response {
    error(StatusCode::NOT_FOUND, "no such API route")
}

/// Runs blocking work (SQLite, lowering a file, a MEOW run's socket) off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))
}

fn internal(e: String) -> Response {
    error(StatusCode::INTERNAL_SERVER_ERROR, &e)
}

async fn list(State(app): State<Arc<App>>, Query(q): Query<HashMap<String, String>>) -> Response {
    let filter = q.get("status").cloned();
    if let Some(f) = &filter {
        if !rows::FILTERS.contains(&f.as_str()) {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("status is one of {}", rows::FILTERS.join(", ")),
            );
        }
    }
    let runs_app = app.clone();
    match blocking(move || runs_app.runs()).await {
        Ok(Ok(list)) => match filter {
            None => (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                list.all.to_string(),
            )
                .into_response(),
            Some(f) => {
                let mut doc = rows::document(&list.rows, Some(&f));
                crate::engine::annotate_text(&app, &mut doc);
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    doc,
                )
                    .into_response()
            }
        },
        Ok(Err(e)) => internal(e),
        Err(r) => r,
    }
}

/// One run as its page shows it.
pub(crate) struct RunView {
    pub row: RunRow,
    pub graph: Option<Arc<FileGraph>>,
    /// (sequence number, line as `runs events` prints it).
    pub events: Vec<(u64, String)>,
    pub nodes: BTreeMap<String, NodeState>,
    pub pending: Option<Waiting>,
}

pub(crate) fn pending_json(p: &Option<Waiting>) -> Value {
    match p {
        Some(w) => json!({
            "step_key": w.step_key,
            "kind": w.kind,
            "prompt": w.prompt,
            "continues": w.continues,
        }),
        None => Value::Null,
    }
}

/// The run's view now; `None` for a run the store does not hold.
pub(crate) fn run_view(app: &App, run_id: &str) -> Result<Option<RunView>, String> {
    if pipewright_runtime::store::check_run_id(run_id).is_err() {
        return Ok(None);
    }
    let Some(db) = app.db()? else {
        return Ok(None);
    };
    let store = app.store()?;
    let Some(row) = rows::one(&db, store.as_deref(), &app.graphs, app.live(), run_id)? else {
        return Ok(None);
    };
    let events = db.events_after(row.seq, &row.run_id, row.created_ms, 0)?;
    let landings = db.landings(row.seq)?;
    // A paused run waits at a gate (its record says); a live one may wait inside (asked where
    // it runs).
    let mut pending = match &store {
        Some(s) if row.stored_status == "paused" => rows::waiting_of(s, &app.runs_dir, run_id)
            .into_iter()
            .next(),
        Some(s) if row.in_progress => app.live().waiting(s, run_id).into_iter().next(),
        _ => None,
    };
    if let (Some(p), Some(_)) = (&mut pending, &app.engine) {
        p.continues = crate::engine::CONTINUES;
    }
    let graph = app.graphs.of(&row.file);
    let nodes = match graph.as_ref().and_then(|g| g.workflows.get(&row.workflow)) {
        Some(keys) => {
            let parsed: Vec<EventLine> = events
                .iter()
                .filter_map(|(_, l)| EventLine::parse(l))
                .collect();
            let mut nodes = reduce(&RunFacts {
                created_ms: row.created_ms,
                status: &row.stored_status,
                in_progress: row.in_progress,
                events: &parsed,
                landings: &landings,
                keys,
                waiting_at: pending.as_ref().map(|p| p.step_key.as_str()),
            });
            // A failed run's error names the step it failed at, when no event did.
            if row.stored_status == "failed" {
                if let Some(err) = db.run_error(row.seq)? {
                    let at = err["step"]
                        .as_str()
                        .or(err["key"].as_str())
                        .map(str::to_string);
                    if let Some(node) = at.and_then(|k| nodes.get_mut(&k)) {
                        if node.error.is_none() {
                            node.error = err["message"].as_str().map(str::to_string);
                        }
                    }
                }
            }
            nodes
        }
        None => BTreeMap::new(),
    };
    Ok(Some(RunView {
        row,
        graph,
        events,
        nodes,
        pending,
    }))
}

async fn show(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let shown = id.clone();
    let shown_app = app.clone();
    match blocking(move || run_view(&app, &id)).await {
        // Written out, not built as one JSON tree: the graph is already text, and a
        // 5,000-step run's nodes are thousands of small objects.
        Ok(Ok(Some(v))) => {
            let mut doc = format!(
                "{{\"run\":{},\"graph\":{},\"nodes\":{},\"pending\":{},\"events_seq\":{}}}",
                v.row.to_json(),
                v.graph.as_ref().map_or("null", |g| g.graph_text.as_str()),
                nodes_text(&v.nodes),
                pending_json(&v.pending),
                v.events.last().map_or(0, |(n, _)| *n),
            );
            crate::engine::annotate_text(&shown_app, &mut doc);
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                doc,
            )
                .into_response()
        }
        Ok(Ok(None)) => error(StatusCode::NOT_FOUND, &format!("no run {shown}")),
        Ok(Err(e)) => internal(e),
        Err(r) => r,
    }
}

/// A text field of a POST body (absent: empty); `Err` says what is wrong.
fn text_field(body: &Value, name: &str) -> Result<String, String> {
    if !body.is_object() {
        return Err("the body is a JSON object".into());
    }
    match body.get(name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("`{name}` is a string")),
    }
}

/// Whether the store (or an engine's mirror) holds run `id`.
fn holds_run(app: &App, id: &str) -> Result<bool, String> {
    if pipewright_runtime::store::check_run_id(id).is_err() {
        return Ok(false);
    }
    app.db()?.map_or(Ok(false), |db| {
        db.runs(crate::db::Which::Id(id)).map(|r| !r.is_empty())
    })
}

async fn approve(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    match text_field(&body, "message") {
        Ok(message) => decide(app, id, body, Decision::Approve { message }).await,
        Err(e) => error(StatusCode::BAD_REQUEST, &e),
    }
}

async fn deny(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    match text_field(&body, "reason") {
        Ok(reason) => decide(app, id, body, Decision::Deny { reason }).await,
        Err(e) => error(StatusCode::BAD_REQUEST, &e),
    }
}

async fn decide(app: Arc<App>, id: String, body: Value, d: Decision) -> Response {
    let step = match body.get("step") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    let decided = d.past_tense();
    let result = blocking(move || -> Result<Response, String> {
        let Some(store) = app.store()? else {
            return Ok(error(StatusCode::NOT_FOUND, &format!("no run {id}")));
        };
        if !holds_run(&app, &id)? {
            return Ok(error(StatusCode::NOT_FOUND, &format!("no run {id}")));
        }
        if let Some(side) = &app.engine {
            return Ok(crate::engine::decide(&app, side, &id, step.as_deref(), &d));
        }
        let lock = app.decision_lock(&id);
        let _one_at_a_time = lock.lock().unwrap_or_else(|p| p.into_inner());
        let continues = rows::waiting_of(&store, &app.runs_dir, &id)
            .into_iter()
            .find(|w| step.as_deref().is_none_or(|s| s == w.step_key))
            .map_or("none", |w| w.continues);
        Ok(
            match pipewright_registry::decide_local(
                &*store,
                &app.runs_dir,
                &id,
                step.as_deref(),
                &d,
            ) {
                Ok(message) => Json(json!({
                    "decided": decided,
                    "continues": continues,
                    "message": message,
                }))
                .into_response(),
                Err((1, message)) => error(StatusCode::CONFLICT, &message),
                Err((_, message)) => error(StatusCode::BAD_GATEWAY, &message),
            },
        )
    })
    .await;
    match result {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => internal(e),
        Err(r) => r,
    }
}

async fn cancel(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Json(_): Json<Value>,
) -> Response {
    let result = blocking(move || -> Result<Response, String> {
        let Some(store) = app.store()? else {
            return Ok(error(StatusCode::NOT_FOUND, &format!("no run {id}")));
        };
        if let Some(side) = &app.engine {
            if !holds_run(&app, &id)? {
                return Ok(error(StatusCode::NOT_FOUND, &format!("no run {id}")));
            }
            return Ok(crate::engine::cancel(side, &id));
        }
        Ok(match pipewright_runtime::stop::cancel_local(&store, &id) {
            Ok(message) => {
                (StatusCode::ACCEPTED, Json(json!({ "message": message }))).into_response()
            }
            Err(e @ CancelError::NotRunning { .. }) => error(StatusCode::CONFLICT, &e.to_string()),
            Err(CancelError::Store(e @ (StoreError::NoRun { .. } | StoreError::BadRunId(_)))) => {
                error(StatusCode::NOT_FOUND, &e.to_string())
            }
            Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        })
    })
    .await;
    match result {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => internal(e),
        Err(r) => r,
    }
}
