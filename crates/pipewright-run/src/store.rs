//! The run store: `<root>/<run-id>/state.json` (every landed step's result by recovery key,
//! replaced atomically by write-then-rename) and `events.jsonl`.
//!
//! Landings are recorded in memory and a writer thread persists them. When landings arrive
//! faster than the disk, one write covers several of them, so a 10,000-item fan-out does not
//! rewrite a growing file 10,000 times; a landing that had not reached the disk before a crash
//! is simply re-run on resume.

use indexmap::IndexMap;
use serde_json::{json, Value as Json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub const STATE_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Started,
    Completed,
    Failed,
    /// A landed step replayed from the store on resume.
    Replayed,
    /// A started step that stopped because the run was cancelled (a fan-out whose pending
    /// items were not started).
    Cancelled,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Started => "step_started",
            EventKind::Completed => "step_completed",
            EventKind::Failed => "step_failed",
            EventKind::Replayed => "step_replayed",
            EventKind::Cancelled => "step_cancelled",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Event {
    pub kind: EventKind,
    pub key: String,
    pub step_kind: &'static str,
    pub workflow: String,
    /// Milliseconds since the run started.
    pub at_ms: f64,
    /// For completed/failed: how long the step ran.
    pub elapsed_ms: Option<f64>,
    pub error: Option<String>,
    /// A short text for progress displays (the summary of the node).
    pub summary: String,
}

impl Event {
    pub fn to_json(&self, run_id: &str) -> Json {
        let mut o = json!({
            "event": self.kind.name(),
            "run_id": run_id,
            "key": self.key,
            "step_kind": self.step_kind,
            "workflow": self.workflow,
            "at_ms": round(self.at_ms),
        });
        if let Some(e) = self.elapsed_ms {
            o["elapsed_ms"] = json!(round(e));
        }
        if let Some(e) = &self.error {
            o["error"] = json!(e);
        }
        o
    }
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Receives every event of a run (progress displays, tests, the store).
pub trait EventSink: Send + Sync {
    fn event(&self, e: &Event);
}

/// What `state.json` holds, as loaded for `--resume`.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub run_id: String,
    pub status: String,
    /// The file the run started from, as given on the command line.
    pub file: String,
    pub workflow: String,
    pub input: Json,
    pub source_hash: String,
    pub completed: IndexMap<String, Json>,
}

/// A new run id: the start time (seconds) and a few bits that tell apart runs started in the
/// same second.
pub fn new_run_id() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let salt = (now.subsec_nanos() ^ (std::process::id() << 8)) & 0xffff;
    format!("{}-{salt:04x}", now.as_secs())
}

pub fn run_dir(root: &Path, run_id: &str) -> PathBuf {
    root.join(run_id)
}

/// Loads `state.json` of a run. Errors are messages for the user.
pub fn load_run(root: &Path, run_id: &str) -> Result<RunRecord, String> {
    if run_id.is_empty() || run_id.contains(['/', '\\']) || run_id.starts_with('.') {
        return Err(format!("`{run_id}` is not a run id"));
    }
    let path = run_dir(root, run_id).join("state.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let v: Json = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?;
    let s = |k: &str| {
        v.get(k)
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if v.get("version").and_then(Json::as_u64) != Some(u64::from(STATE_VERSION)) {
        return Err(format!(
            "{} has an unsupported state version",
            path.display()
        ));
    }
    let completed = match v.get("completed") {
        Some(Json::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => IndexMap::new(),
    };
    Ok(RunRecord {
        run_id: s("run_id"),
        status: s("status"),
        file: s("file"),
        workflow: s("workflow"),
        input: v.get("input").cloned().unwrap_or(Json::Null),
        source_hash: s("source_hash"),
        completed,
    })
}

struct Inner {
    meta: IndexMap<String, Json>,
    completed: IndexMap<String, Json>,
    events: Vec<String>,
    generation: u64,
    written: u64,
    closing: bool,
    error: Option<String>,
}

/// The store of one run, shared by every task of the run.
pub struct RunStore {
    dir: PathBuf,
    run_id: String,
    inner: Arc<(Mutex<Inner>, Condvar)>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    started: Instant,
}

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    // A poisoned lock only means a writer panicked mid-update; the data is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl RunStore {
    /// Creates (or, for a resume, reopens) the run directory and starts the writer.
    pub fn open(
        dir: PathBuf,
        run_id: &str,
        meta: IndexMap<String, Json>,
        completed: IndexMap<String, Json>,
    ) -> Result<RunStore, String> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let inner = Arc::new((
            Mutex::new(Inner {
                meta,
                completed,
                events: Vec::new(),
                generation: 1,
                written: 0,
                closing: false,
                error: None,
            }),
            Condvar::new(),
        ));
        let writer = {
            let inner = inner.clone();
            let dir = dir.clone();
            std::thread::Builder::new()
                .name("pipewright-store".into())
                .spawn(move || writer_loop(&dir, &inner))
                .map_err(|e| format!("cannot start the store writer: {e}"))?
        };
        Ok(RunStore {
            dir,
            run_id: run_id.to_string(),
            inner,
            writer: Mutex::new(Some(writer)),
            started: Instant::now(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn elapsed_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }

    /// Records a landed step.
    pub fn land(&self, key: &str, value: Json) {
        let (m, cv) = &*self.inner;
        let mut g = lock(m);
        g.completed.insert(key.to_string(), value);
        g.generation += 1;
        cv.notify_all();
    }

    pub fn set_meta(&self, key: &str, value: Json) {
        let (m, cv) = &*self.inner;
        let mut g = lock(m);
        g.meta.insert(key.to_string(), value);
        g.generation += 1;
        cv.notify_all();
    }

    /// Waits until everything recorded so far is on disk and stops the writer.
    pub fn close(&self) -> Result<(), String> {
        {
            let (m, cv) = &*self.inner;
            let mut g = lock(m);
            g.closing = true;
            g.generation += 1;
            cv.notify_all();
        }
        let handle = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        let (m, _) = &*self.inner;
        match lock(m).error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl EventSink for RunStore {
    fn event(&self, e: &Event) {
        let line = e.to_json(&self.run_id).to_string();
        let (m, cv) = &*self.inner;
        let mut g = lock(m);
        g.events.push(line);
        g.generation += 1;
        cv.notify_all();
    }
}

impl Drop for RunStore {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

fn writer_loop(dir: &Path, inner: &(Mutex<Inner>, Condvar)) {
    let (m, cv) = inner;
    loop {
        let (state, events, generation, closing) = {
            let mut g = lock(m);
            while g.written == g.generation && !g.closing {
                g = cv.wait(g).unwrap_or_else(|p| p.into_inner());
            }
            let mut state = serde_json::Map::new();
            for (k, v) in &g.meta {
                state.insert(k.clone(), v.clone());
            }
            state.insert(
                "completed".into(),
                Json::Object(
                    g.completed
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                ),
            );
            (
                Json::Object(state),
                std::mem::take(&mut g.events),
                g.generation,
                g.closing,
            )
        };
        let result =
            append_events(dir, &events).and_then(|_| write_atomic(&dir.join("state.json"), &state));
        let mut g = lock(m);
        if let Err(e) = result {
            g.error.get_or_insert(e);
        }
        g.written = generation;
        if closing && g.written == g.generation {
            return;
        }
    }
}

fn append_events(dir: &Path, events: &[String]) -> Result<(), String> {
    if events.is_empty() {
        return Ok(());
    }
    let path = dir.join("events.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut buf = String::new();
    for e in events {
        buf.push_str(e);
        buf.push('\n');
    }
    f.write_all(buf.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Write to a temporary file in the same directory, fsync, then rename over the target: a
/// reader (or a resume after kill -9) sees the old or the new state, never a torn one.
pub fn write_atomic(path: &Path, value: &Json) -> Result<(), String> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_vec_pretty(value).map_err(|e| e.to_string())?;
    let mut f =
        std::fs::File::create(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    f.write_all(&text)
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    f.sync_all()
        .map_err(|e| format!("cannot sync {}: {e}", tmp.display()))?;
    drop(f);
    std::fs::rename(&tmp, path)
        .map_err(|e| format!("cannot rename {} to {}: {e}", tmp.display(), path.display()))
}

/// A stable hash of the source texts (FNV-1a), to warn when a resumed run's files changed.
pub fn source_hash<'a>(texts: impl Iterator<Item = &'a str>) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for t in texts {
        for b in t.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    format!("{h:016x}")
}
