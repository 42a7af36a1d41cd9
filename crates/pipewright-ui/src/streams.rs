//! The server-sent event streams: the runs list, and one run's log, node states and status.
//! Each connection is a task that recomputes when the store changes (watch.rs), at most every
//! 150 ms (the runs list once a second), and sends only what changed; it ends when the client goes or the server stops.

use crate::api::{pending_json, run_view};
use crate::reduce::NodeState;
use crate::App;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

#[derive(Clone)]
pub(crate) struct Streams {
    pub app: Arc<App>,
    pub stop: watch::Receiver<bool>,
}

fn stream_of(rx: mpsc::Receiver<Event>) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
    )
}

/// Waits for the next store change, then `gap` more (changes come in bursts: a transaction
/// touches the WAL several times); `false` when the stream should end instead.
async fn next_change(
    changes: &mut watch::Receiver<u64>,
    stop: &mut watch::Receiver<bool>,
    tx: &mpsc::Sender<Event>,
    gap: Duration,
) -> bool {
    if *stop.borrow() {
        return false;
    }
    tokio::select! {
        r = changes.changed() => if r.is_err() { return false },
        _ = stop.changed() => return false,
        () = tx.closed() => return false,
    }
    tokio::select! {
        () = tokio::time::sleep(gap) => {}
        _ = stop.changed() => return false,
    }
    changes.borrow_and_update();
    true
}

fn sse(rx: mpsc::Receiver<Event>) -> Response {
    Sse::new(stream_of(rx))
        .keep_alive(KeepAlive::default())
        .into_response()
}

pub(crate) async fn runs(State(s): State<Streams>) -> Response {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let mut changes = s.app.changes.clone();
        let mut stop = s.stop.clone();
        let mut last = String::new();
        loop {
            changes.borrow_and_update();
            let app = s.app.clone();
            if let Ok(Ok(list)) = tokio::task::spawn_blocking(move || app.runs()).await {
                if *list.all != *last {
                    if tx
                        .send(Event::default().event("runs").data(&*list.all))
                        .await
                        .is_err()
                    {
                        return;
                    }
                    last = list.all.to_string();
                }
            }
            // The whole list each time (10,000 runs are megabytes): at most once a second.
            if !next_change(&mut changes, &mut stop, &tx, Duration::from_secs(1)).await {
                return;
            }
        }
    });
    sse(rx)
}

pub(crate) async fn events(
    State(s): State<Streams>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let after: u64 = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .or(q.get("after").map(String::as_str))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let app = s.app.clone();
    let first_id = id.clone();
    let first = tokio::task::spawn_blocking(move || run_view(&app, &first_id)).await;
    let mut view = match first {
        Ok(Ok(Some(v))) => Some(v),
        Ok(Ok(None)) => {
            return crate::security::error(StatusCode::NOT_FOUND, &format!("no run {id}"))
        }
        Ok(Err(e)) => return crate::security::error(StatusCode::INTERNAL_SERVER_ERROR, &e),
        Err(e) => return crate::security::error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(async move {
        let mut changes = s.app.changes.clone();
        let mut stop = s.stop.clone();
        let mut cursor = after;
        let mut sent: BTreeMap<String, NodeState> = BTreeMap::new();
        let mut last_run = String::new();
        loop {
            changes.borrow_and_update();
            let v = match view.take() {
                Some(v) => Some(v),
                None => {
                    let app = s.app.clone();
                    let id = id.clone();
                    tokio::task::spawn_blocking(move || run_view(&app, &id))
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .flatten()
                }
            };
            if let Some(v) = v {
                let mut run = json!({"run": v.row.to_json(), "pending": pending_json(&v.pending)});
                crate::engine::annotate(&s.app, &mut run);
                let run = run.to_string();
                let mut out = Vec::new();
                let from = cursor;
                for (n, line) in v.events.iter().filter(|(n, _)| *n > from) {
                    out.push(Event::default().event("log").id(n.to_string()).data(line));
                    cursor = *n;
                }
                for (key, state) in &v.nodes {
                    if sent.get(key) != Some(state) {
                        let mut data = state.to_json();
                        data["step_key"] = json!(key);
                        out.push(Event::default().event("node").data(data.to_string()));
                    }
                }
                sent = v.nodes;
                // The run's status last: a client that sees the run end has its nodes' ends.
                if run != last_run {
                    out.push(Event::default().event("run").data(&run));
                    last_run = run;
                }
                for e in out {
                    if tx.send(e).await.is_err() {
                        return;
                    }
                }
            }
            if !next_change(&mut changes, &mut stop, &tx, Duration::from_millis(150)).await {
                return;
            }
        }
    });
    sse(rx)
}
