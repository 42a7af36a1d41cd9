//! The orchestrator channel (notes §4.12): a Unix socket in the run's directory (owner-only),
//! one JSON object per line each way. `step_done` goes to the scheduler; events, waits for
//! events and approvals are routed here.
//!
//! Requests: `{"type":"step_done","agent","step","outputs","notes"}`, `{"type":"event",
//! "event_type","agent","data"}`, `{"type":"await_event","event_type","filter","timeout_ms"}`,
//! `{"type":"approval","gate_id","approved","reason"}`, `{"type":"await_approval","gate_id",
//! "step","timeout_ms"}` (`step`: the waiting step), `{"type":"waiting_approvals"}` (answer
//! `{"type":"waiting_approvals","gates":[{"gate","steps"}]}`), `{"type":"get_prompt","agent"}`,
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
//!
//! A request line is at most [`MAX_MESSAGE_BYTES`] (configurable); a failed `accept` (out of
//! descriptors) is waited out, never the end of the socket.

use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};

/// Why the run's socket cannot be opened, or a `meow` command cannot get its answer through
/// it. I/O errors are kept as their text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    #[error("cannot create the directory {}: {error}", .dir.display())]
    CreateDir { dir: PathBuf, error: String },
    #[error("cannot read {}: {error}", .dir.display())]
    ReadDir { dir: PathBuf, error: String },
    /// Another user's, or open to others: a socket there could be reached by them.
    #[error("{} is not a directory only this user can use; the orchestrator socket cannot go there", .0.display())]
    NotPrivate(PathBuf),
    #[error("cannot listen on {} (a socket path may be at most 107 bytes): {error}", .path.display())]
    Listen { path: PathBuf, error: String },
    /// No run listens there (it ended, or never started).
    #[error("cannot reach the orchestrator at {}: {error}", .sock.display())]
    Unreachable { sock: PathBuf, error: String },
    #[error("cannot write to the orchestrator: {0}")]
    Write(String),
    #[error("cannot read the orchestrator's answer: {0}")]
    Read(String),
    #[error("the orchestrator closed the connection")]
    Closed,
    #[error("bad answer: {0}")]
    BadAnswer(String),
}

impl From<ChannelError> for String {
    fn from(e: ChannelError) -> String {
        e.to_string()
    }
}

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

/// A `meow await-approval GATE` waiting; `step` is the step it runs in (its `MEOW_STEP`).
struct ApprovalWait {
    gate: String,
    step: Option<String>,
    tx: oneshot::Sender<(bool, String)>,
}

#[derive(Default)]
struct Router {
    waiters: Vec<Waiter>,
    approvals: Vec<ApprovalWait>,
    /// Approval decisions nobody waited for yet, by gate: (approved, reason).
    decided: HashMap<String, (bool, String)>,
}

impl Router {
    /// Tells every live `await-approval` of `gate` the decision; how many were told.
    fn decide(&mut self, gate: &str, approved: bool, reason: &str) -> usize {
        self.approvals.retain(|w| !w.tx.is_closed());
        let mut told = 0;
        let mut k = 0;
        while k < self.approvals.len() {
            if self.approvals[k].gate == gate {
                let w = self.approvals.swap_remove(k);
                told += usize::from(w.tx.send((approved, reason.to_string())).is_ok());
            } else {
                k += 1;
            }
        }
        told
    }

    /// The gates an `await-approval` waits at now, each with the steps waiting, in the order
    /// the waits began.
    fn waiting(&mut self) -> Vec<Value> {
        self.approvals.retain(|w| !w.tx.is_closed());
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for w in &self.approvals {
            let k = match out.iter().position(|(g, _)| *g == w.gate) {
                Some(k) => k,
                None => {
                    out.push((w.gate.clone(), Vec::new()));
                    out.len() - 1
                }
            };
            if let Some(step) = &w.step {
                if !out[k].1.contains(step) {
                    out[k].1.push(step.clone());
                }
            }
        }
        out.into_iter()
            .map(|(gate, steps)| json!({"gate": gate, "steps": steps}))
            .collect()
    }

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

/// The longest request line the orchestrator takes by default (`[meow] max_message_bytes`):
/// a longer one is answered with an error and read through without being kept, so a few
/// 100 MB events cannot take the orchestrator's memory.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The wait before taking a connection again after `accept` failed, doubled up to the most.
const ACCEPT_PAUSE_MIN: std::time::Duration = std::time::Duration::from_millis(5);
const ACCEPT_PAUSE_MAX: std::time::Duration = std::time::Duration::from_millis(250);

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
    /// `max_message`: the longest request line taken, in bytes (`[meow] max_message_bytes`).
    pub fn open(dir: &Path, max_message: usize) -> Result<Channel, ChannelError> {
        use std::os::unix::fs::PermissionsExt;
        private_dir(dir)?;
        let path = socket_path(dir);
        if let Some(short) = path.parent().filter(|p| *p != dir) {
            private_dir(short)?;
        }
        let _ = std::fs::remove_file(&path);
        let listener = match UnixListener::bind(&path) {
            Ok(listener) => listener,
            Err(e) => {
                return Err(ChannelError::Listen {
                    path,
                    error: e.to_string(),
                })
            }
        };
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        let (tx, rx) = mpsc::channel(64);
        let router = Arc::new(Mutex::new(Router::default()));
        let task = tokio::spawn(async move {
            let mut pause = ACCEPT_PAUSE_MIN;
            loop {
                match listener.accept().await {
                    Ok((conn, _)) => {
                        pause = ACCEPT_PAUSE_MIN;
                        tokio::spawn(serve(conn, tx.clone(), router.clone(), max_message));
                    }
                    // Out of descriptors (EMFILE under a low `ulimit -n`), memory or buffers,
                    // or a connection that went before it was taken: all pass. Ending the loop
                    // here would close the socket for the rest of the run, so wait for
                    // connections to close and take the next one.
                    Err(_) => {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(ACCEPT_PAUSE_MAX);
                    }
                }
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

/// Where the orchestrator of the run whose directory is `dir` listens: `dir/orch.sock`, or,
/// when that path would pass the 107-byte limit of a socket path,
/// `$XDG_RUNTIME_DIR/pw-meow-<uid>/<run-id>.sock` (else the same under the temporary
/// directory). A pure function of `dir`, so `pipewright meow --run` and `pipewright approve`
/// find the socket a run opened.
pub fn socket_path(dir: &Path) -> PathBuf {
    let path = dir.join("orch.sock");
    if path.as_os_str().len() <= 100 {
        return path;
    }
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    // SAFETY: getuid(2) has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    base.join(format!("pw-meow-{uid}"))
        .join(format!("{id}.sock"))
}

impl Drop for Channel {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Creates `dir` owner-only, or checks that an existing one is this user's and owner-only.
fn private_dir(dir: &Path) -> Result<(), ChannelError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| ChannelError::CreateDir {
            dir: dir.to_path_buf(),
            error: e.to_string(),
        })?;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let meta = std::fs::symlink_metadata(dir).map_err(|e| ChannelError::ReadDir {
        dir: dir.to_path_buf(),
        error: e.to_string(),
    })?;
    // SAFETY: getuid(2) has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(ChannelError::NotPrivate(dir.to_path_buf()));
    }
    Ok(())
}

fn lock(r: &Mutex<Router>) -> std::sync::MutexGuard<'_, Router> {
    r.lock().unwrap_or_else(|p| p.into_inner())
}

async fn serve(
    conn: UnixStream,
    tx: mpsc::Sender<Request>,
    router: Arc<Mutex<Router>>,
    max: usize,
) {
    let (r, mut w) = conn.into_split();
    let mut r = BufReader::new(r);
    loop {
        let answer = match read_line(&mut r, max).await {
            Err(_) | Ok(Line::End) => return,
            Ok(Line::TooLong) => error(format!(
                "the message is longer than {max} bytes, the most the orchestrator takes ([meow] max_message_bytes in pipewright.toml)"
            )),
            Ok(Line::Text(bytes)) => {
                let Ok(line) = String::from_utf8(bytes) else {
                    let e = error("not UTF-8 text");
                    if reply(&mut w, &e).await.is_err() {
                        return;
                    }
                    continue;
                };
                if line.trim().is_empty() {
                    continue;
                }
                // A waiter whose asker went away (a branch condition killed at its timeout)
                // stops waiting: its gate is no longer listed as waiting for approval.
                let handled = handle(&line, &tx, &router);
                let fd = std::os::unix::io::AsRawFd::as_raw_fd(r.get_ref().as_ref());
                let gone = async {
                    loop {
                        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                        if hung_up(fd) {
                            return;
                        }
                    }
                };
                tokio::select! {
                    a = handled => a,
                    () = gone => return,
                }
            }
        };
        if reply(&mut w, &answer).await.is_err() {
            return;
        }
    }
}

/// Whether the other end closed the connection for good (POLLHUP: a peer that only shut down
/// its writing, as `nc -U` does after sending, still reads the answer).
fn hung_up(fd: std::os::unix::io::RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one pollfd for a descriptor the connection owns, no waiting.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 1 && p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

async fn reply(w: &mut tokio::net::unix::OwnedWriteHalf, answer: &Value) -> std::io::Result<()> {
    let mut text = answer.to_string();
    text.push('\n');
    w.write_all(text.as_bytes()).await
}

enum Line {
    Text(Vec<u8>),
    /// Longer than the limit: read through its newline, nothing of it kept.
    TooLong,
    End,
}

/// The next line (without its newline; a last line may lack one), holding at most `max` bytes
/// of it in memory.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    max: usize,
) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let mut over = false;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(match (over, buf.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Text(buf),
            });
        }
        let newline = chunk.iter().position(|&b| b == b'\n');
        let take = newline.map_or(chunk.len(), |i| i + 1);
        let part = &chunk[..newline.unwrap_or(take)];
        if !over && buf.len() + part.len() > max {
            over = true;
            buf = Vec::new();
        }
        if !over {
            buf.extend_from_slice(part);
        }
        r.consume(take);
        if newline.is_some() {
            return Ok(if over { Line::TooLong } else { Line::Text(buf) });
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
            {
                let mut r = lock(router);
                // The reference's approvals are these events: `meow event gate-approved
                // gate=G` decides G as `meow approve G` does.
                let gate = data.get("gate").and_then(Value::as_str).map(str::to_string);
                if let (Some(g), "gate-approved" | "gate-rejected") = (gate, ty.as_str()) {
                    let reason = data.get("reason").map(super::subst::to_text);
                    r.decide(&g, ty == "gate-approved", &reason.unwrap_or_default());
                }
                r.route(&ty, &data);
            }
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
            let Some(gate) = s("gate_id").filter(|g| !g.is_empty()) else {
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
            let told = r.decide(&gate, approved, &reason);
            // `meow await-event gate-approved` hears it too, as in the reference.
            let routed = r.route(ty, &data);
            if told == 0 && !routed {
                r.decided.insert(gate, (approved, reason));
            }
            ack()
        }
        Some("waiting_approvals") => {
            json!({"type": "waiting_approvals", "gates": lock(router).waiting()})
        }
        Some("await_approval") => {
            let Some(gate) = s("gate_id").filter(|g| !g.is_empty()) else {
                return error("await_approval needs `gate_id`");
            };
            let (wtx, wrx) = oneshot::channel();
            {
                let mut r = lock(router);
                if let Some((ok, reason)) = r.decided.remove(&gate) {
                    return approval_answer(&gate, ok, &reason);
                }
                r.approvals.push(ApprovalWait {
                    gate: gate.clone(),
                    step: s("step").filter(|x| !x.is_empty()),
                    tx: wtx,
                });
            }
            let timeout = m.get("timeout_ms").and_then(Value::as_u64);
            let got = match timeout {
                Some(ms) => tokio::time::timeout(std::time::Duration::from_millis(ms), wrx)
                    .await
                    .ok(),
                None => Some(wrx.await),
            };
            match got {
                Some(Ok((ok, reason))) => approval_answer(&gate, ok, &reason),
                _ => {
                    json!({"type": "timeout", "message": format!("no decision on gate `{gate}` in time")})
                }
            }
        }
        Some("await_event") => {
            let Some(ty) = s("event_type") else {
                return error("await_event needs `event_type`");
            };
            let timeout = m.get("timeout_ms").and_then(Value::as_u64);
            let (wtx, wrx) = oneshot::channel();
            lock(router).waiters.push(Waiter {
                event_type: ty.clone(),
                filter: obj("filter"),
                tx: wtx,
            });
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

fn approval_answer(gate: &str, approved: bool, reason: &str) -> Value {
    let t = if approved {
        "gate-approved"
    } else {
        "gate-rejected"
    };
    json!({"type": "event_received", "event_type": t, "data": {"gate": gate, "reason": reason}})
}

async fn ask_scheduler(tx: &mpsc::Sender<Request>, query: Query) -> Value {
    let (reply, answer) = oneshot::channel();
    if tx.send(Request::Query { query, reply }).await.is_err() {
        return error("the run is ending");
    }
    answer.await.unwrap_or_else(|_| error("the run is ending"))
}

/// One request and its answer, for the `pipewright meow` commands.
pub async fn ask(sock: &Path, req: &Value) -> Result<Value, ChannelError> {
    let conn = UnixStream::connect(sock)
        .await
        .map_err(|e| ChannelError::Unreachable {
            sock: sock.to_path_buf(),
            error: e.to_string(),
        })?;
    let (r, mut w) = conn.into_split();
    let mut text = req.to_string();
    text.push('\n');
    w.write_all(text.as_bytes())
        .await
        .map_err(|e| ChannelError::Write(e.to_string()))?;
    let mut lines = BufReader::new(r).lines();
    match lines.next_line().await {
        Ok(Some(l)) => serde_json::from_str(&l).map_err(|e| ChannelError::BadAnswer(e.to_string())),
        Ok(None) => Err(ChannelError::Closed),
        Err(e) => Err(ChannelError::Read(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A channel in a fresh directory, and a scheduler stand-in that answers every query with
    /// what it was asked and records the sessions reported.
    async fn channel() -> (tempfile::TempDir, Channel, mpsc::Receiver<Request>) {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut c = Channel::open(&d.path().join("run"), MAX_MESSAGE_BYTES)
            .unwrap_or_else(|e| panic!("{e}"));
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
    async fn a_command_without_a_run_to_ask_cannot_reach_it() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let sock = d.path().join("orch.sock");
        let e = ask(&sock, &json!({"type": "prime"})).await.err();
        assert!(
            matches!(&e, Some(ChannelError::Unreachable { sock: s, .. }) if *s == sock),
            "{e:?}"
        );
        let e = e.map(String::from).unwrap_or_default();
        assert!(e.starts_with("cannot reach the orchestrator at "), "{e}");
        let file = d.path().join("file");
        std::fs::write(&file, "").unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            Channel::open(&file, MAX_MESSAGE_BYTES),
            Err(ChannelError::CreateDir { .. })
        ));
    }

    #[tokio::test]
    async fn a_question_after_the_scheduler_stopped_listening_says_the_run_is_ending() {
        let (_d, c, rx) = channel().await;
        drop(rx);
        let v = ask_ok(&c, json!({"type": "get_step_status", "step_id": "a"})).await;
        assert_eq!(v["message"], "the run is ending");
    }
}
