//! The orchestrator channel (notes §4.12): a Unix socket in the run's directory (owner-only),
//! one JSON object per line each way. `step_done` goes to the scheduler; events, waits for
//! events and approvals are routed here.
//!
//! Requests: `{"type":"step_done","agent","step","outputs","notes"}`, `{"type":"event",
//! "event_type","agent","data"}`, `{"type":"await_event","event_type","filter","timeout_ms"}`,
//! `{"type":"approval","gate_id","approved","reason"}`, `{"type":"get_prompt","agent"}`,
//! `{"type":"get_step_status","step_id","step"}` (`step`: the asking step, for the nearest-scope
//! lookup), `{"type":"get_session_id","agent"}`. Answers: `{"type":"ack","success":true}`,
//! `{"type":"error","message"}`, `{"type":"event_received","event_type","data"}`,
//! `{"type":"timeout","message"}`, `{"type":"prompt","content","step","mode"}`,
//! `{"type":"step_status","step_id","status"}`, `{"type":"session_id","session_id"}`.
//!
//! Events are not kept for later waiters (as in the reference), except approvals: a decision
//! made before `await-approval` starts waiting is still seen by it. An agent's event that
//! carries `session_id` also tells the scheduler which session the agent runs (a hook such as
//! Claude Code's SessionStart reports it so).

use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};

/// What the scheduler is asked.
pub enum Request {
    StepDone {
        agent: Option<String>,
        step: Option<String>,
        outputs: Map<String, Value>,
        notes: Option<String>,
        reply: oneshot::Sender<Result<(), String>>,
    },
    /// A question about the run; the scheduler's answer goes back to the asker as it is.
    Query {
        query: Query,
        reply: oneshot::Sender<Value>,
    },
    /// An agent said which session it runs (no answer is awaited).
    Session { agent: String, session_id: String },
}

pub enum Query {
    /// The prompt of the agent's running step (`meow prime`).
    Prompt { agent: String },
    /// A step's status; `asker` is the asking step, whose scopes are looked in first.
    StepStatus { step: String, asker: Option<String> },
    /// The agent's session id (`meow session-id`).
    SessionId { agent: String },
}

struct Waiter {
    event_type: String,
    filter: Map<String, Value>,
    tx: oneshot::Sender<Value>,
}

#[derive(Default)]
struct Router {
    waiters: Vec<Waiter>,
    /// Approval decisions by gate: (approved, reason).
    decided: HashMap<String, (bool, String)>,
}

impl Router {
    /// Hands an event to the first live waiter it matches; `false`: nobody waited.
    fn route(&mut self, event_type: &str, data: &Map<String, Value>) -> bool {
        let mut k = 0;
        while k < self.waiters.len() {
            let w = &self.waiters[k];
            if w.tx.is_closed() {
                self.waiters.swap_remove(k);
                continue;
            }
            if w.event_type == event_type && matches(&w.filter, data) {
                let w = self.waiters.swap_remove(k);
                let msg = json!({"type": "event_received", "event_type": event_type, "data": data});
                if w.tx.send(msg).is_ok() {
                    return true;
                }
                continue;
            }
            k += 1;
        }
        false
    }
}

fn matches(filter: &Map<String, Value>, data: &Map<String, Value>) -> bool {
    filter.iter().all(|(k, v)| {
        data.get(k)
            .is_some_and(|d| super::subst::to_text(d) == super::subst::to_text(v))
    })
}

pub struct Channel {
    path: PathBuf,
    rx: Option<mpsc::Receiver<Request>>,
    task: tokio::task::JoinHandle<()>,
}

impl Channel {
    /// Creates the run's directory (mode 0700) and listens on `orch.sock` in it.
    /// A socket path is at most 107 bytes; under a deeper project directory the socket goes to
    /// `$XDG_RUNTIME_DIR` (else the temporary directory) in `pw-meow-<uid>/<run-id>.sock`, a
    /// directory that must be this user's and owner-only.
    pub fn open(dir: &Path) -> Result<Channel, String> {
        use std::os::unix::fs::PermissionsExt;
        private_dir(dir)?;
        let mut path = dir.join("orch.sock");
        if path.as_os_str().len() > 100 {
            let base = std::env::var_os("XDG_RUNTIME_DIR")
                .map(PathBuf::from)
                .filter(|p| p.is_dir())
                .unwrap_or_else(std::env::temp_dir);
            // SAFETY: getuid(2) has no preconditions and cannot fail.
            let uid = unsafe { libc::getuid() };
            let short = base.join(format!("pw-meow-{uid}"));
            private_dir(&short)?;
            let id = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            path = short.join(format!("{id}.sock"));
        }
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).map_err(|e| {
            format!(
                "cannot listen on {} (a socket path may be at most 107 bytes): {e}",
                path.display()
            )
        })?;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        let (tx, rx) = mpsc::channel(64);
        let router = Arc::new(Mutex::new(Router::default()));
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(serve(conn, tx.clone(), router.clone()));
            }
        });
        Ok(Channel {
            path,
            rx: Some(rx),
            task,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn take_receiver(&mut self) -> mpsc::Receiver<Request> {
        self.rx.take().unwrap_or_else(|| mpsc::channel(1).1)
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Creates `dir` owner-only, or checks that an existing one is this user's and owner-only.
fn private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create the directory {}: {e}", dir.display()))?;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    // SAFETY: getuid(2) has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(format!(
            "{} is not a directory only this user can use; the orchestrator socket cannot go there",
            dir.display()
        ));
    }
    Ok(())
}

fn lock(r: &Mutex<Router>) -> std::sync::MutexGuard<'_, Router> {
    r.lock().unwrap_or_else(|p| p.into_inner())
}

async fn serve(conn: UnixStream, tx: mpsc::Sender<Request>, router: Arc<Mutex<Router>>) {
    let (r, mut w) = conn.into_split();
    let mut lines = BufReader::new(r).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let answer = handle(&line, &tx, &router).await;
        let mut text = answer.to_string();
        text.push('\n');
        if w.write_all(text.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn error(msg: impl Into<String>) -> Value {
    json!({"type": "error", "message": msg.into()})
}

fn ack() -> Value {
    json!({"type": "ack", "success": true})
}

async fn handle(line: &str, tx: &mpsc::Sender<Request>, router: &Mutex<Router>) -> Value {
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(line) else {
        return error("not a JSON object");
    };
    let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
    let obj = |k: &str| {
        m.get(k)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    match s("type").as_deref() {
        Some("step_done") => {
            let (reply, answer) = oneshot::channel();
            let req = Request::StepDone {
                agent: s("agent"),
                step: s("step"),
                outputs: obj("outputs"),
                notes: s("notes").filter(|n| !n.is_empty()),
                reply,
            };
            if tx.send(req).await.is_err() {
                return error("the run is ending");
            }
            match answer.await {
                Ok(Ok(())) => ack(),
                Ok(Err(e)) => error(e),
                Err(_) => error("the run is ending"),
            }
        }
        Some("event") => {
            let Some(ty) = s("event_type") else {
                return error("an event needs `event_type`");
            };
            let mut data = obj("data");
            for k in ["agent", "workflow"] {
                if let Some(v) = s(k) {
                    data.entry(k.to_string()).or_insert(Value::String(v));
                }
            }
            lock(router).route(&ty, &data);
            let reported = (data.get("agent").and_then(Value::as_str))
                .zip(data.get("session_id").and_then(Value::as_str))
                .filter(|(a, id)| !a.is_empty() && !id.trim().is_empty());
            if let Some((agent, id)) = reported {
                let req = Request::Session {
                    agent: agent.to_string(),
                    session_id: id.trim().to_string(),
                };
                let _ = tx.send(req).await;
            }
            ack()
        }
        Some("get_prompt") | Some("get_session_id") => {
            let Some(agent) = s("agent") else {
                return error(
                    "no agent: give `--agent`, or run inside an agent session (`MEOW_AGENT`)",
                );
            };
            let query = if s("type").as_deref() == Some("get_prompt") {
                Query::Prompt { agent }
            } else {
                Query::SessionId { agent }
            };
            ask_scheduler(tx, query).await
        }
        Some("get_step_status") => {
            let Some(step) = s("step_id").filter(|x| !x.is_empty()) else {
                return error("get_step_status needs `step_id`");
            };
            let asker = s("step").filter(|x| !x.is_empty());
            ask_scheduler(tx, Query::StepStatus { step, asker }).await
        }
        Some("approval") => {
            let Some(gate) = s("gate_id") else {
                return error("an approval needs `gate_id`");
            };
            let approved = m.get("approved").and_then(Value::as_bool).unwrap_or(false);
            let reason = s("reason").or_else(|| s("notes")).unwrap_or_default();
            let ty = if approved {
                "gate-approved"
            } else {
                "gate-rejected"
            };
            let mut data = Map::new();
            data.insert("gate".into(), Value::String(gate.clone()));
            data.insert("reason".into(), Value::String(reason.clone()));
            let mut r = lock(router);
            if !r.route(ty, &data) {
                r.decided.insert(gate, (approved, reason));
            }
            ack()
        }
        Some("await_event") | Some("await_approval") => {
            let approval = s("type").as_deref() == Some("await_approval");
            let (ty, filter) = if approval {
                let Some(gate) = s("gate_id") else {
                    return error("await_approval needs `gate_id`");
                };
                if let Some((ok, reason)) = lock(router).decided.remove(&gate) {
                    let t = if ok { "gate-approved" } else { "gate-rejected" };
                    return json!({"type": "event_received", "event_type": t, "data": {"gate": gate, "reason": reason}});
                }
                let mut f = Map::new();
                f.insert("gate".into(), Value::String(gate));
                ("gate-*".to_string(), f)
            } else {
                match s("event_type") {
                    Some(t) => (t, obj("filter")),
                    None => return error("await_event needs `event_type`"),
                }
            };
            let timeout = m.get("timeout_ms").and_then(Value::as_u64);
            let (wtx, wrx) = oneshot::channel();
            {
                let mut r = lock(router);
                if approval {
                    // Either decision ends the wait: two waiters share one answer.
                    let (a, b) = (oneshot::channel(), oneshot::channel());
                    r.waiters.push(Waiter {
                        event_type: "gate-approved".into(),
                        filter: filter.clone(),
                        tx: a.0,
                    });
                    r.waiters.push(Waiter {
                        event_type: "gate-rejected".into(),
                        filter,
                        tx: b.0,
                    });
                    tokio::spawn(async move {
                        let v = tokio::select! {
                            Ok(v) = a.1 => v,
                            Ok(v) = b.1 => v,
                            else => return,
                        };
                        let _ = wtx.send(v);
                    });
                } else {
                    r.waiters.push(Waiter {
                        event_type: ty.clone(),
                        filter,
                        tx: wtx,
                    });
                }
            }
            let got = match timeout {
                Some(ms) => tokio::time::timeout(std::time::Duration::from_millis(ms), wrx)
                    .await
                    .ok(),
                None => Some(wrx.await),
            };
            match got {
                Some(Ok(v)) => v,
                _ => {
                    json!({"type": "timeout", "message": format!("no matching `{ty}` event in time")})
                }
            }
        }
        Some(other) => error(format!("unknown request type `{other}`")),
        None => error("a request needs `type`"),
    }
}

async fn ask_scheduler(tx: &mpsc::Sender<Request>, query: Query) -> Value {
    let (reply, answer) = oneshot::channel();
    if tx.send(Request::Query { query, reply }).await.is_err() {
        return error("the run is ending");
    }
    answer.await.unwrap_or_else(|_| error("the run is ending"))
}

/// One request and its answer, for the `pipewright meow` commands.
pub async fn ask(sock: &Path, req: &Value) -> Result<Value, String> {
    let conn = UnixStream::connect(sock)
        .await
        .map_err(|e| format!("cannot reach the orchestrator at {}: {e}", sock.display()))?;
    let (r, mut w) = conn.into_split();
    let mut text = req.to_string();
    text.push('\n');
    w.write_all(text.as_bytes())
        .await
        .map_err(|e| format!("cannot write to the orchestrator: {e}"))?;
    let mut lines = BufReader::new(r).lines();
    match lines.next_line().await {
        Ok(Some(l)) => serde_json::from_str(&l).map_err(|e| format!("bad answer: {e}")),
        Ok(None) => Err("the orchestrator closed the connection".into()),
        Err(e) => Err(format!("cannot read the orchestrator's answer: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A channel in a fresh directory, and a scheduler stand-in that answers every query with
    /// what it was asked and records the sessions reported.
    async fn channel() -> (tempfile::TempDir, Channel, mpsc::Receiver<Request>) {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut c = Channel::open(&d.path().join("run")).unwrap_or_else(|e| panic!("{e}"));
        let rx = c.take_receiver();
        (d, c, rx)
    }

    fn echo(mut rx: mpsc::Receiver<Request>) -> tokio::task::JoinHandle<Vec<(String, String)>> {
        tokio::spawn(async move {
            let mut sessions = Vec::new();
            while let Some(r) = rx.recv().await {
                match r {
                    Request::Query { query, reply } => {
                        let v = match query {
                            Query::Prompt { agent } => json!({"type": "prompt", "agent": agent}),
                            Query::SessionId { agent } => {
                                json!({"type": "session_id", "agent": agent})
                            }
                            Query::StepStatus { step, asker } => {
                                json!({"type": "step_status", "step_id": step, "asker": asker})
                            }
                        };
                        let _ = reply.send(v);
                    }
                    Request::Session { agent, session_id } => sessions.push((agent, session_id)),
                    Request::StepDone { notes, reply, .. } => {
                        let _ = reply.send(Err(format!("notes {notes:?}")));
                    }
                }
            }
            sessions
        })
    }

    async fn ask_ok(c: &Channel, req: Value) -> Value {
        ask(c.path(), &req).await.unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn the_agent_side_questions_reach_the_scheduler_and_its_answers_come_back() {
        let (_d, c, rx) = channel().await;
        let task = echo(rx);
        let v = ask_ok(&c, json!({"type": "get_prompt", "agent": "w"})).await;
        assert_eq!(v, json!({"type": "prompt", "agent": "w"}));
        let v = ask_ok(&c, json!({"type": "get_session_id", "agent": "w"})).await;
        assert_eq!(v, json!({"type": "session_id", "agent": "w"}));
        let v = ask_ok(
            &c,
            json!({"type": "get_step_status", "workflow": "r", "step_id": "build", "step": "F.0.x"}),
        )
        .await;
        assert_eq!(
            v,
            json!({"type": "step_status", "step_id": "build", "asker": "F.0.x"})
        );
        // `meow done --notes` travels with the report.
        let v = ask_ok(
            &c,
            json!({"type": "step_done", "agent": "w", "outputs": {}, "notes": "handoff"}),
        )
        .await;
        assert_eq!(v["message"], "notes Some(\"handoff\")");
        // An agent's event with `session_id` tells the scheduler; one without does not.
        let v = ask_ok(
            &c,
            json!({"type": "event", "agent": "w", "event_type": "session-started", "data": {"session_id": "s-1"}}),
        )
        .await;
        assert_eq!(v["type"], "ack");
        ask_ok(
            &c,
            json!({"type": "event", "agent": "w", "event_type": "x", "data": {}}),
        )
        .await;
        ask_ok(
            &c,
            json!({"type": "event", "event_type": "x", "data": {"session_id": "no agent"}}),
        )
        .await;
        drop(c);
        let sessions = task.await.unwrap_or_default();
        assert_eq!(sessions, [("w".to_string(), "s-1".to_string())]);
    }

    #[tokio::test]
    async fn questions_without_what_they_are_about_are_refused_clearly() {
        let (_d, c, rx) = channel().await;
        let _task = echo(rx);
        for (req, want) in [
            (json!({"type": "get_prompt"}), "no agent"),
            (json!({"type": "get_session_id"}), "no agent"),
            (json!({"type": "get_step_status"}), "needs `step_id`"),
            (
                json!({"type": "get_step_status", "step_id": ""}),
                "needs `step_id`",
            ),
        ] {
            let v = ask_ok(&c, req.clone()).await;
            assert_eq!(v["type"], "error", "{req}");
            assert!(
                v["message"].as_str().unwrap_or("").contains(want),
                "{req}: {v}"
            );
        }
    }

    #[tokio::test]
    async fn a_question_after_the_scheduler_stopped_listening_says_the_run_is_ending() {
        let (_d, c, rx) = channel().await;
        drop(rx);
        let v = ask_ok(&c, json!({"type": "get_step_status", "step_id": "a"})).await;
        assert_eq!(v["message"], "the run is ending");
    }
}
