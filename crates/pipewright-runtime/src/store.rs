//! The run store: every run, its input (stored once), its landed steps, its events and its
//! agent spawn count, behind the [`Store`] trait so a second implementation (a server database
//! shared by several machines) can replace [`SqliteStore`] without touching the interpreter.
//!
//! Durability rule: a landing and its `step_completed` event are written in one transaction, and
//! a step is reported done (to event sinks, in the final report) only after it has committed; a
//! step with side effects starts only after everything before it has committed. A kill -9 at any
//! point leaves the database at a committed transaction, so a resume sees a landing together
//! with its event, or neither. (The interpreter's side is `exec::Recorder`.)

use crate::secrets;
use indexmap::IndexMap;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The version of the `runs show` document (`state.json` of the file store was version 1;
/// version 2 moved dropped fan-out members out of `completed` into `dropped`).
pub const STATE_VERSION: u32 = 2;

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
    /// For completed/failed: what the step's agent calls cost, all its attempts together
    /// (`runs events` carries it; boxed, as most events of a big fan-out have none).
    pub usage: Option<Box<crate::usage::Usage>>,
    /// For started: what the step was given — its rendered prompt or command, its input —
    /// bounded and redacted (`runs events` and `pipewright ui` show it; boxed, as most events
    /// have none).
    pub given: Option<Box<crate::given::Given>>,
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
        if let Some(u) = &self.usage {
            o["usage"] = u.to_json();
        }
        for (k, v) in self.given.iter().flat_map(|g| g.fields()) {
            o[k] = v;
        }
        o
    }
}

impl Event {
    /// The event as the store keeps it: [`Event::to_json`] without `run_id`, which the row
    /// already says (a fifth of the bytes of a big fan-out's events); [`with_run_id`] puts it
    /// back.
    pub fn to_stored_line(&self) -> String {
        use std::fmt::Write as _;
        // Written directly (not through a JSON map): a big fan-out stores tens of thousands.
        let text = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let mut line = format!(
            "{{\"event\":\"{}\",\"key\":{},\"step_kind\":\"{}\",\"workflow\":{},\"at_ms\":{}",
            self.kind.name(),
            text(&self.key),
            self.step_kind,
            text(&self.workflow),
            json!(round(self.at_ms))
        );
        if let Some(e) = self.elapsed_ms {
            let _ = write!(line, ",\"elapsed_ms\":{}", json!(round(e)));
        }
        if let Some(e) = &self.error {
            let _ = write!(line, ",\"error\":{}", text(e));
        }
        if let Some(u) = &self.usage {
            let _ = write!(line, ",\"usage\":{}", u.to_json());
        }
        for (k, v) in self.given.iter().flat_map(|g| g.fields()) {
            let _ = write!(line, ",\"{k}\":{v}");
        }
        line.push('}');
        line
    }
}

impl EventKind {
    /// The kind an event line names (`step_started`…), if it is a step's.
    pub fn parse(name: &str) -> Option<EventKind> {
        [
            EventKind::Started,
            EventKind::Completed,
            EventKind::Failed,
            EventKind::Replayed,
            EventKind::Cancelled,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }
}

impl Event {
    /// A step's event back from its stored line ([`Event::to_stored_line`], with or without
    /// `run_id`), for a display that follows a run recorded elsewhere; `None` for a line that
    /// is not a step's event (an approval's). The summary is not stored: it is empty.
    pub fn from_line(line: &str) -> Option<Event> {
        let v: Json = serde_json::from_str(line).ok()?;
        let kind = EventKind::parse(v.get("event")?.as_str()?)?;
        let text = |k: &str| v.get(k).and_then(Json::as_str).map(str::to_string);
        Some(Event {
            kind,
            key: text("key")?,
            step_kind: interned(v.get("step_kind")?.as_str()?),
            workflow: text("workflow").unwrap_or_default(),
            at_ms: v.get("at_ms").and_then(Json::as_f64).unwrap_or(0.0),
            elapsed_ms: v.get("elapsed_ms").and_then(Json::as_f64),
            error: text("error"),
            summary: String::new(),
            usage: v
                .get("usage")
                .and_then(|u| serde_json::from_value(u.clone()).ok())
                .map(Box::new),
            given: crate::given::Given::from_json(&v).map(Box::new),
        })
    }
}

/// A step kind as `&'static str`, as events carry it: each distinct name is kept once (a
/// workflow language has a handful).
fn interned(name: &str) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(n);
    n
}

/// An event line with `at_ms` on the run's clock. `approve` and `deny` wrote epoch
/// milliseconds there before they counted from the run's creation; such a line (a time past
/// the creation itself, which a run-relative one never reaches) is read on the run's clock.
pub fn on_run_clock(line: &str, created_ms: i64) -> String {
    if !line.starts_with("{\"event\":\"approval_decided\"") {
        return line.to_string();
    }
    let Ok(Json::Object(mut o)) = serde_json::from_str::<Json>(line) else {
        return line.to_string();
    };
    match o.get("at_ms").and_then(Json::as_i64) {
        Some(at) if at >= created_ms && created_ms > 0 => {
            o.insert("at_ms".into(), json!(at - created_ms));
            Json::Object(o).to_string()
        }
        _ => line.to_string(),
    }
}

/// A stored event line with its `run_id` back in second place, as [`Event::to_json`] has it.
pub fn with_run_id(line: &str, run_id: &str) -> String {
    let run = format!(",\"run_id\":{}", Json::String(run_id.to_string()));
    // `{"event":"step_…"` never holds a comma: the first one ends the first field.
    match line.find(',') {
        Some(i) => format!("{}{run}{}", &line[..i], &line[i..]),
        None => line.to_string(),
    }
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Receives every event of a run (progress displays, tests).
pub trait EventSink: Send + Sync {
    fn event(&self, e: &Event);
}

/// What a landed step holds: its value, or the error that dropped it from its fan-out under
/// `on_error: continue` (kept apart from values, so no input value can pass for a drop).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Landed {
    Value(Json),
    Dropped(String),
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Landing {
    pub key: String,
    /// The step's content hash: a landing is replayed only into the step it came from.
    pub step_hash: String,
    pub landed: Landed,
}

/// Whether step key `k` is `key` or a key under it (`key.…`).
pub fn is_at_or_under(k: &str, key: &str) -> bool {
    k.strip_prefix(key)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// A run as loaded for `--resume`.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub run_id: String,
    pub status: String,
    /// The file the run started from, as given on the command line.
    pub file: String,
    pub workflow: String,
    pub input: Json,
    pub source_hash: String,
    /// In landing order.
    pub landings: Vec<Landing>,
    /// Agent executions so far, over every attempt of the run.
    pub spawns: u64,
    /// What each agent call cost, by step key, in call order, over every attempt.
    pub usage: Vec<(String, crate::usage::Usage)>,
}

/// A new run, recorded before its first step starts.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NewRun {
    pub run_id: String,
    pub file: String,
    pub workflow: String,
    pub source_hash: String,
    pub input: Json,
}

/// How a run ended.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Finish {
    pub status: String,
    pub output: Json,
    /// The top-level stores when the run stopped, without those still equal to the input's
    /// (see [`stores_delta`]): the input is stored once, at the start.
    pub stores: Json,
    pub error: Option<Json>,
    pub cancelled_at: Option<String>,
}

/// One change to a run. [`Store::record`] applies a batch of them in one transaction.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Write {
    Land(Landing),
    /// Forgets the landing at `key` and every landing under it (`key.…`): a retried fan-out
    /// item runs its whole body again.
    ForgetUnder(String),
    /// One event as a JSON line without its `run_id` ([`Event::to_stored_line`]).
    Event(String),
    /// The spawn count is at least this.
    Spawns(u64),
    /// What one agent call of step `key` cost (each call is kept, so a total counts every
    /// attempt and a replay adds nothing).
    Usage {
        key: String,
        usage: crate::usage::Usage,
    },
    Status(String),
    Finish(Finish),
}

/// A line of `pipewright runs`.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub run_id: String,
    pub status: String,
    pub file: String,
    pub workflow: String,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// What its agent calls cost in all (`agent_calls` 0: it made none).
    pub usage: crate::usage::Usage,
}

/// What a "no run" message adds when the user typed the id.
const RUNS_HINT: &str = " (`pipewright runs` lists the runs)";

/// Why the run store refused. Each says what happened in words for the user, naming the store
/// where it matters; callers that only report it take the message (`String::from`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// Not the shape of a run id (what a path built from it could escape through).
    #[error("`{0}` is not a run id")]
    BadRunId(String),
    /// The store holds no run by that id.
    #[error("no run {run_id} in the run store {store}{hint}")]
    NoRun {
        run_id: String,
        store: String,
        /// Where to look instead, when the message should say it.
        hint: &'static str,
    },
    /// Another live process owns the run.
    #[error("run {run_id} is in progress in another process{by}; a run has one owner at a time, so wait for it to stop (or stop it) and resume again")]
    Busy {
        run_id: String,
        /// ` (process PID)` when the owner wrote its pid.
        by: String,
    },
    /// The store cannot be read or written (I/O, SQLite, damage, a newer schema, a lock file
    /// that cannot be taken); the message says which and names the store.
    #[error("{0}")]
    Unusable(String),
}

impl From<StoreError> for String {
    fn from(e: StoreError) -> String {
        e.to_string()
    }
}

impl From<String> for StoreError {
    fn from(message: String) -> StoreError {
        StoreError::Unusable(message)
    }
}

/// Ownership of a run; dropping it (or the death of the process) releases it.
pub trait RunLock: Send + Sync {}

/// The run store. Every error is a message for the user that names the store.
pub trait Store: Send + Sync {
    /// The store as diagnostics name it (the database path).
    fn describe(&self) -> String;
    /// Takes ownership of a run; refused while another live process owns it.
    fn lock_run(&self, run_id: &str) -> Result<Box<dyn RunLock>, StoreError>;
    /// Whether a live process owns the run now (a `running` run that nobody owns was
    /// interrupted: killed, or its machine went down).
    fn is_owned(&self, run_id: &str) -> bool;
    fn create_run(&self, run: &NewRun) -> Result<(), StoreError>;
    fn load_run(&self, run_id: &str) -> Result<RunRecord, StoreError>;
    /// The run with only the landings at `key` and under it (`key.…`): what a fan-out member
    /// run apart from its run replays. A store that can filter where it keeps the run (an
    /// engine, through its network) does, so a member does not read every item's landings.
    fn load_run_under(&self, run_id: &str, key: &str) -> Result<RunRecord, StoreError> {
        let mut rec = self.load_run(run_id)?;
        rec.landings.retain(|l| is_at_or_under(&l.key, key));
        Ok(rec)
    }
    /// Applies the writes in order, in one transaction: all of them or none.
    fn record(&self, run_id: &str, writes: &[Write]) -> Result<(), StoreError>;
    /// Newest first.
    fn list_runs(&self) -> Result<Vec<RunSummary>, StoreError>;
    /// The run as one JSON document (`pipewright runs show`).
    fn state(&self, run_id: &str) -> Result<Json, StoreError>;
    /// The run's events as JSON lines, in order.
    fn events(&self, run_id: &str) -> Result<Vec<String>, StoreError>;
    /// Deletes a run and everything it recorded; refused while the run is owned.
    fn remove(&self, run_id: &str) -> Result<(), StoreError>;
}

/// How a run ended (or stands), beside its [`RunRecord`]: what `runs show` adds.
#[derive(Debug, Clone, Default)]
pub struct Ended {
    pub output: Option<Json>,
    /// The stores the steps wrote over the input ([`stores_delta`]).
    pub stores: Option<Json>,
    pub error: Option<Json>,
    pub cancelled_at: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

/// The `runs show` document of a run, whichever store keeps it.
pub fn state_document(rec: RunRecord, ended: Ended) -> Json {
    let mut completed = serde_json::Map::new();
    let mut dropped = serde_json::Map::new();
    for l in rec.landings {
        match l.landed {
            Landed::Value(v) => completed.insert(l.key, v),
            Landed::Dropped(e) => dropped.insert(l.key, Json::String(e)),
        };
    }
    let mut o: IndexMap<&str, Json> = IndexMap::new();
    o.insert("version", json!(STATE_VERSION));
    o.insert("run_id", json!(rec.run_id));
    o.insert("status", json!(rec.status));
    o.insert("file", json!(rec.file));
    o.insert("workflow", json!(rec.workflow));
    o.insert("input", rec.input.clone());
    o.insert("source_hash", json!(rec.source_hash));
    o.insert("completed", Json::Object(completed));
    o.insert("dropped", Json::Object(dropped));
    o.insert("spawns", json!(rec.spawns));
    o.insert("created_ms", json!(ended.created_ms));
    o.insert("updated_ms", json!(ended.updated_ms));
    if let Some(out) = ended.output {
        o.insert("output", out);
    }
    if let Some(Json::Object(delta)) = ended.stores {
        let mut all = rec.input.as_object().cloned().unwrap_or_default();
        for (k, v) in delta {
            all.insert(k, v);
        }
        o.insert("stores", Json::Object(all));
    }
    if let Some(e) = ended.error {
        o.insert("error", e);
    }
    if let Some(k) = ended.cancelled_at {
        o.insert("cancelled_at", json!(k));
    }
    if !rec.usage.is_empty() {
        o.insert("usage", crate::usage::report_json(&rec.usage));
    }
    Json::Object(o.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// A new run id: a UUIDv7, 48 bits of milliseconds then 74 random bits, so ids sort by
/// start time and two runs never share one.
pub fn new_run_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Run ids name lock files: anything but hex digits and dashes is refused before it reaches
/// a path.
pub fn check_run_id(run_id: &str) -> Result<(), StoreError> {
    if run_id.is_empty()
        || run_id.len() > 64
        || !run_id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
    {
        return Err(StoreError::BadRunId(run_id.to_string()));
    }
    Ok(())
}

/// A stable hash of texts (FNV-1a): the source hash of a run, the content hash of a step.
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

/// The UTC civil time of milliseconds since the epoch: (year, month, day, hour, minute,
/// second), days to a date after Howard Hinnant's `civil_from_days`.
pub fn utc_parts(ms: i64) -> (i64, i64, i64, i64, i64, i64) {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Schema migrations, applied in order; `schema_migrations` records the applied versions. A
/// database written by a newer pipewright (a version beyond this list) is refused.
const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    "CREATE TABLE runs (
        -- the other tables refer to a run by this integer: short keys, fast lookups
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL,
        file TEXT NOT NULL,
        workflow TEXT NOT NULL,
        source_hash TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        spawns INTEGER NOT NULL DEFAULT 0,
        output TEXT,
        -- the stores the steps wrote over the input (the input itself is in `inputs`)
        stores TEXT,
        error TEXT,
        cancelled_at TEXT
    );
    CREATE INDEX runs_by_time ON runs (created_ms);
    CREATE TABLE inputs (
        run INTEGER PRIMARY KEY REFERENCES runs (seq) ON DELETE CASCADE,
        value TEXT NOT NULL
    );
    CREATE TABLE landings (
        run INTEGER NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
        key TEXT NOT NULL,
        step_hash TEXT NOT NULL,
        value TEXT,
        dropped TEXT,
        PRIMARY KEY (run, key),
        CHECK ((value IS NULL) <> (dropped IS NULL))
    );
    -- one row per transaction: the events it committed, as JSON lines
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        run INTEGER NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
        lines TEXT NOT NULL
    );
    CREATE INDEX events_by_run ON events (run, id);
    CREATE TABLE approvals (
        run INTEGER NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
        key TEXT NOT NULL,
        request TEXT NOT NULL,
        decision TEXT,
        requested_ms INTEGER NOT NULL,
        decided_ms INTEGER,
        PRIMARY KEY (run, key)
    );
    CREATE TABLE sessions (
        run INTEGER NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
        name TEXT NOT NULL,
        state TEXT NOT NULL,
        updated_ms INTEGER NOT NULL,
        PRIMARY KEY (run, name)
    );",
    // 2: what each agent call cost (issue 25), one row per call.
    "CREATE TABLE usage (
        id INTEGER PRIMARY KEY,
        run INTEGER NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL
    );
    CREATE INDEX usage_by_run ON usage (run, id);",
];

pub const SCHEMA_VERSION: usize = MIGRATIONS.len();

/// The default store: one SQLite database (WAL mode) shared by every run of a project.
pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
}

fn guard(m: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    // A panic while holding the connection cannot leave a transaction half applied: an
    // uncommitted transaction is rolled back when it is dropped.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SqliteStore {
    /// Opens (creating it and its directory if needed) and migrates the database.
    pub fn open(path: &Path) -> Result<SqliteStore, String> {
        let shown = path.display().to_string();
        let err = |e: &dyn std::fmt::Display| format!("the run store {shown}: {e}");
        let db_err = |e: rusqlite::Error| {
            if is_damage(&e) {
                damaged(path, &e)
            } else {
                err(&e)
            }
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| err(&e))?;
        }
        let conn = Connection::open(path).map_err(db_err)?;
        // Another process writing (a run next to a `runs rm`) holds the write lock for
        // milliseconds; waiting beats failing.
        conn.busy_timeout(Duration::from_secs(30)).map_err(db_err)?;
        let mode = wal_mode(&conn).map_err(db_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(err(&format!("cannot use WAL mode (got `{mode}`)")));
        }
        // NORMAL in WAL mode: a commit survives the death of the process (kill -9); only a
        // power loss can take back the last commits, never corrupt the database.
        // journal_size_limit: after a checkpoint the WAL shrinks back to 16 MB instead of
        // keeping the size of the biggest transaction (a 100 MB input) on disk.
        conn.execute_batch(
            "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = 16777216;",
        )
            .map_err(db_err)?;
        // The WAL is folded into the database by the automatic checkpoints (every 1000 pages),
        // not at every close: a run's end then costs no extra fsyncs.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(|e| err(&e))?;
        migrate(&conn, path)?;
        Ok(SqliteStore {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn no_run(&self, run_id: &str, hint: &'static str) -> StoreError {
        StoreError::NoRun {
            run_id: run_id.to_string(),
            store: self.path.display().to_string(),
            hint,
        }
    }

    fn err(&self, e: impl std::fmt::Display + 'static) -> StoreError {
        let damage = (&e as &dyn std::any::Any)
            .downcast_ref::<rusqlite::Error>()
            .is_some_and(is_damage);
        if damage {
            return StoreError::Unusable(damaged(&self.path, &e));
        }
        StoreError::Unusable(format!("the run store {}: {e}", self.path.display()))
    }

    /// The process that owns the run now, read from its lock file while the lock is seen held
    /// (`None`: nobody owns it). A pid read from a lock nobody holds is never returned, so a
    /// caller that signals it never reaches a stranger that reused a dead owner's pid.
    pub fn owner_pid(&self, run_id: &str) -> Result<Option<u32>, StoreError> {
        check_run_id(run_id)?;
        let path = self.lock_dir().join(run_id);
        if !self.is_owned(run_id) {
            return Ok(None);
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(None);
        };
        let Ok(pid) = text.trim().parse::<u32>() else {
            return Ok(None);
        };
        // Held a moment ago by someone; the pid must be that someone: it has the very file open.
        Ok(holds_open(pid, &path).then_some(pid))
    }

    fn lock_dir(&self) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".locks");
        self.path.with_file_name(name)
    }

    /// Applies one write other than an event (events go in one row per transaction).
    fn apply(tx: &rusqlite::Transaction<'_>, run: i64, w: &Write) -> rusqlite::Result<()> {
        match w {
            Write::Land(l) => {
                let (value, dropped) = match &l.landed {
                    // Not `to_string`: through `Display` a long run's landings took a third
                    // of the writer's time.
                    Landed::Value(v) => (Some(compact(v)), None),
                    // Messages are redacted here as well as where they were made: this is the
                    // last point before a secret would be on disk (crate::secrets).
                    Landed::Dropped(e) => (None, Some(secrets::redact(e))),
                };
                // REPLACE deletes the old row and inserts a new one: the rowid gives landing
                // order.
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO landings (run, key, step_hash, value, dropped) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?
                .execute(params![run, l.key, l.step_hash, value, dropped])?;
            }
            Write::ForgetUnder(key) => {
                // Keys under `k` are `k.…`; '/' is the character after '.', so the range
                // `[k., k/)` is exactly them and can use the primary key index.
                tx.prepare_cached(
                    "DELETE FROM landings WHERE run = ?1 AND (key = ?2 OR (key >= ?3 AND key < ?4))",
                )?
                .execute(params![run, key, format!("{key}."), format!("{key}/")])?;
            }
            Write::Event(_) => {}
            Write::Usage { key, usage } => {
                let value = serde_json::to_string(usage).unwrap_or_default();
                tx.prepare_cached("INSERT INTO usage (run, key, value) VALUES (?1, ?2, ?3)")?
                    .execute(params![run, key, value])?;
            }
            Write::Spawns(n) => {
                tx.prepare_cached("UPDATE runs SET spawns = MAX(spawns, ?2) WHERE seq = ?1")?
                    .execute(params![run, i64::try_from(*n).unwrap_or(i64::MAX)])?;
            }
            Write::Status(s) => {
                tx.prepare_cached("UPDATE runs SET status = ?2, updated_ms = ?3 WHERE seq = ?1")?
                    .execute(params![run, s, now_ms()])?;
            }
            Write::Finish(f) => {
                tx.prepare_cached(
                    "UPDATE runs SET status = ?2, output = ?3, stores = ?4, error = ?5, cancelled_at = ?6, updated_ms = ?7 WHERE seq = ?1",
                )?
                .execute(params![
                    run,
                    f.status,
                    f.output.to_string(),
                    f.stores.to_string(),
                    f.error
                        .as_ref()
                        .map(|e| secrets::redact(&e.to_string()).into_owned()),
                    f.cancelled_at,
                    now_ms()
                ])?;
            }
        }
        Ok(())
    }

    /// The integer the other tables know a run by.
    fn seq(&self, conn: &Connection, run_id: &str) -> Result<i64, StoreError> {
        check_run_id(run_id)?;
        conn.prepare_cached("SELECT seq FROM runs WHERE id = ?1")
            .and_then(|mut s| s.query_row([run_id], |r| r.get(0)).optional())
            .map_err(|e| self.err(e))?
            .ok_or_else(|| self.no_run(run_id, RUNS_HINT))
    }
}

/// `v` as compact JSON text, written straight into a buffer.
fn compact(v: &Json) -> String {
    // A `Value` always serializes (its keys are strings); `to_string` is the same text.
    serde_json::to_string(v).unwrap_or_else(|_| v.to_string())
}

/// Whether an error means the database holds what pipewright never writes: a damaged file
/// (scribbled over, truncated, not SQLite at all) or values of the wrong type in its rows.
fn is_damage(e: &rusqlite::Error) -> bool {
    use rusqlite::Error as E;
    match e {
        E::FromSqlConversionFailure(..)
        | E::InvalidColumnType(..)
        | E::IntegralValueOutOfRange(..)
        | E::Utf8Error(..) => true,
        E::SqliteFailure(f, _) => matches!(
            f.code,
            rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase
        ),
        _ => false,
    }
}

fn damaged(path: &Path, e: &dyn std::fmt::Display) -> String {
    format!(
        "the run store {} is damaged ({e}); move it away to start a new one, or restore it from a backup",
        path.display()
    )
}

/// The stores a run wrote over its input: a 100 MB input is written once, at the start, not
/// again with the final stores.
pub fn stores_delta(input: &Json, stores: &Json) -> Json {
    let empty = serde_json::Map::new();
    let input = input.as_object().unwrap_or(&empty);
    match stores.as_object() {
        Some(m) => Json::Object(
            m.iter()
                .filter(|(k, v)| input.get(*k) != Some(*v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        None => stores.clone(),
    }
}

/// Switches a database to WAL mode (a no-op once it is). On a new database the switch needs
/// the exclusive lock while other processes opening it at the same moment hold shared ones;
/// SQLite then answers BUSY at once instead of calling the busy handler (it could deadlock),
/// so the wait is here: the same 30 seconds as every other lock.
fn wal_mode(conn: &Connection) -> rusqlite::Result<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)) {
            Err(rusqlite::Error::SqliteFailure(f, _))
                if f.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

/// Every error a full message naming the store at `path`.
fn migrate(conn: &Connection, path: &Path) -> Result<(), String> {
    let e = |e: rusqlite::Error| {
        if is_damage(&e) {
            damaged(path, &e)
        } else {
            format!("the run store {}: {e}", path.display())
        }
    };
    loop {
        // One migration per IMMEDIATE transaction: two processes opening a new database at
        // once apply each migration exactly once. The bookkeeping table is made inside it
        // too: outside, its CREATE would read then write without the write lock, and a
        // concurrent commit in between fails it with BUSY at once.
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
            .map_err(e)?;
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_ms INTEGER NOT NULL)",
        )
        .map_err(e)?;
        let have: i64 = tx
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                [],
                |r| r.get(0),
            )
            .map_err(e)?;
        let have = usize::try_from(have).unwrap_or(0);
        if have > MIGRATIONS.len() {
            return Err(format!(
                "the run store {}: schema version {have} was written by a newer pipewright (this one knows {})",
                path.display(),
                MIGRATIONS.len()
            ));
        }
        let Some(sql) = MIGRATIONS.get(have) else {
            return tx.commit().map_err(e);
        };
        tx.execute_batch(sql).map_err(e)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_ms) VALUES (?1, ?2)",
            params![have as i64 + 1, now_ms()],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
    }
}

struct FileLock {
    path: PathBuf,
    _file: std::fs::File,
}

impl RunLock for FileLock {}

impl Drop for FileLock {
    /// The file goes while still locked, after the owner's last write: a process that opens
    /// the path afterwards creates a new file and may own the run, and one that opened the old
    /// file in between sees, once it holds its lock, that the path no longer leads to it.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// An exclusive `flock` on a per-run file: the kernel releases it when the process dies,
/// however it dies, so a kill -9 never leaves a run owned. The file holds the owner's pid for
/// the refusal message.
fn lock_file(path: &Path, run_id: &str) -> Result<std::fs::File, StoreError> {
    use std::io::{Read, Seek, Write as _};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("cannot open the run lock {}: {e}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        // A dead owner's lock can outlive it by a moment: a child it was forking holds a copy
        // of the descriptor until its exec (or its death from PR_SET_PDEATHSIG), which on a
        // loaded machine can take a while to be scheduled. A live owner holds it far longer.
        let mut tries = 0;
        loop {
            // SAFETY: flock on a file descriptor this function owns.
            let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r == 0 {
                break;
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(format!("cannot lock {}: {e}", path.display()).into());
            }
            tries += 1;
            if tries < 50 {
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
            let mut pid = String::new();
            let _ = f.rewind();
            let _ = f.read_to_string(&mut pid);
            let by = match pid.trim() {
                "" => String::new(),
                pid => format!(" (process {pid})"),
            };
            return Err(StoreError::Busy {
                run_id: run_id.to_string(),
                by,
            });
        }
    }
    let _ = f.set_len(0);
    let _ = f.rewind();
    let _ = write!(f, "{}", std::process::id());
    Ok(f)
}

/// Whether process `pid` has `path` open (Linux: one of `/proc/PID/fd/*` is that file; elsewhere
/// that the process exists).
fn holds_open(pid: u32, path: &Path) -> bool {
    if pid == 0 || pid == std::process::id() {
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(want) = std::fs::metadata(path) else {
            return false;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.filter_map(Result::ok).any(|fd| {
            std::fs::metadata(fd.path())
                .is_ok_and(|m| m.dev() == want.dev() && m.ino() == want.ino())
        })
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        let _ = path;
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists.
        unsafe { libc::kill(pid, 0) == 0 }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

#[cfg(unix)]
fn same_file(f: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (f.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::File, path: &Path) -> bool {
    path.exists()
}

impl Store for SqliteStore {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn lock_run(&self, run_id: &str) -> Result<Box<dyn RunLock>, StoreError> {
        check_run_id(run_id)?;
        let dir = self.lock_dir();
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let path = dir.join(run_id);
        // A lock on a file its owner removed in the meantime is no lock: try again on the
        // file now at the path.
        for _ in 0..100 {
            let file = lock_file(&path, run_id)?;
            if same_file(&file, &path) {
                return Ok(Box::new(FileLock { path, _file: file }));
            }
        }
        Err(format!("cannot lock {}: it keeps being replaced", path.display()).into())
    }

    fn is_owned(&self, run_id: &str) -> bool {
        if check_run_id(run_id).is_err() {
            return false;
        }
        // Probing takes the lock for a moment; an owner starting meanwhile waits for it (see
        // `lock_file`), so the probe cannot make it fail.
        let Ok(f) = std::fs::File::open(self.lock_dir().join(run_id)) else {
            return false;
        };
        #[cfg(unix)]
        {
            use std::os::unix::io::AsRawFd;
            // SAFETY: flock on a file descriptor this function owns; closing it unlocks.
            let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
        }
        #[cfg(not(unix))]
        {
            drop(f);
            false
        }
    }

    fn create_run(&self, run: &NewRun) -> Result<(), StoreError> {
        let mut c = guard(&self.conn);
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        let now = now_ms();
        tx.execute(
            "INSERT INTO runs (id, status, file, workflow, source_hash, created_ms, updated_ms) VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?5)",
            params![run.run_id, run.file, run.workflow, run.source_hash, now],
        )
        .map_err(|e| self.err(e))?;
        tx.execute(
            "INSERT INTO inputs (run, value) VALUES (?1, ?2)",
            params![tx.last_insert_rowid(), run.input.to_string()],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }

    fn load_run(&self, run_id: &str) -> Result<RunRecord, StoreError> {
        check_run_id(run_id)?;
        let c = guard(&self.conn);
        let row = c
            .query_row(
                "SELECT r.status, r.file, r.workflow, r.source_hash, r.spawns, i.value, r.seq FROM runs r LEFT JOIN inputs i ON i.run = r.seq WHERE r.id = ?1",
                [run_id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, Option<String>>(5)?,
                        r.get::<_, i64>(6)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let Some((status, file, workflow, source_hash, spawns, input, seq)) = row else {
            return Err(self.no_run(run_id, RUNS_HINT));
        };
        let input = match input {
            Some(t) => serde_json::from_str(&t)
                .map_err(|e| self.err(format!("the input of run {run_id} is not JSON: {e}")))?,
            None => Json::Null,
        };
        let mut landings = Vec::new();
        let mut stmt = c
            .prepare(
                "SELECT key, step_hash, value, dropped FROM landings WHERE run = ?1 ORDER BY rowid",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([seq], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (key, step_hash, value, dropped) = row.map_err(|e| self.err(e))?;
            let landed = match (value, dropped) {
                (Some(v), _) => Landed::Value(serde_json::from_str(&v).map_err(|e| {
                    self.err(format!(
                        "the landing {key} of run {run_id} is not JSON: {e}"
                    ))
                })?),
                (None, d) => Landed::Dropped(d.unwrap_or_default()),
            };
            landings.push(Landing {
                key,
                step_hash,
                landed,
            });
        }
        let mut usage = Vec::new();
        let mut stmt = c
            .prepare("SELECT key, value FROM usage WHERE run = ?1 ORDER BY id")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([seq], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (key, value) = row.map_err(|e| self.err(e))?;
            let u = serde_json::from_str(&value).map_err(|e| {
                self.err(format!(
                    "a usage of run {run_id} ({key}) is not readable: {e}"
                ))
            })?;
            usage.push((key, u));
        }
        Ok(RunRecord {
            run_id: run_id.to_string(),
            status,
            file,
            workflow,
            input,
            source_hash,
            landings,
            spawns: u64::try_from(spawns).unwrap_or(0),
            usage,
        })
    }

    fn record(&self, run_id: &str, writes: &[Write]) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        let mut c = guard(&self.conn);
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        let run = self.seq(&tx, run_id)?;
        let mut lines = String::new();
        for w in writes {
            if let Write::Event(line) = w {
                lines.push_str(&secrets::redact(line));
                lines.push('\n');
            } else {
                SqliteStore::apply(&tx, run, w).map_err(|e| self.err(e))?;
            }
        }
        if !lines.is_empty() {
            tx.prepare_cached("INSERT INTO events (run, lines) VALUES (?1, ?2)")
                .and_then(|mut s| s.execute(params![run, lines]))
                .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    fn list_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let c = guard(&self.conn);
        // Each run's calls summed in SQL (SUM of nothing but NULLs is NULL: unknown stays so).
        let mut stmt = c
            .prepare(
                "SELECT r.id, r.status, r.file, r.workflow, r.created_ms, r.updated_ms,
                        u.calls, u.input, u.output, u.cost, u.wall
                 FROM runs r LEFT JOIN (
                     SELECT run, COUNT(*) AS calls,
                            SUM(json_extract(value, '$.input_tokens')) AS input,
                            SUM(json_extract(value, '$.output_tokens')) AS output,
                            SUM(json_extract(value, '$.cost_usd')) AS cost,
                            SUM(json_extract(value, '$.wall_ms')) AS wall
                     FROM usage GROUP BY run
                 ) u ON u.run = r.seq
                 ORDER BY r.created_ms DESC, r.id DESC",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunSummary {
                    run_id: r.get(0)?,
                    status: r.get(1)?,
                    file: r.get(2)?,
                    workflow: r.get(3)?,
                    created_ms: r.get(4)?,
                    updated_ms: r.get(5)?,
                    usage: crate::usage::Usage {
                        agent_calls: r.get::<_, Option<i64>>(6)?.map_or(0, |n| n.max(0) as u64),
                        input_tokens: r.get::<_, Option<i64>>(7)?.map(|n| n.max(0) as u64),
                        output_tokens: r.get::<_, Option<i64>>(8)?.map(|n| n.max(0) as u64),
                        cost_usd: r.get(9)?,
                        wall_ms: r.get::<_, Option<f64>>(10)?.unwrap_or(0.0),
                        ..crate::usage::Usage::unknown()
                    },
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    fn state(&self, run_id: &str) -> Result<Json, StoreError> {
        let rec = self.load_run(run_id)?;
        let c = guard(&self.conn);
        let (output, stores, error, cancelled_at, created, updated) = c
            .query_row(
                "SELECT output, stores, error, cancelled_at, created_ms, updated_ms FROM runs WHERE id = ?1",
                [run_id],
                |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, Option<String>>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, i64>(5)?,
                    ))
                },
            )
            .map_err(|e| self.err(e))?;
        let parse = |t: Option<String>| t.and_then(|t| serde_json::from_str::<Json>(&t).ok());
        let ended = Ended {
            output: parse(output),
            stores: parse(stores),
            error: parse(error),
            cancelled_at,
            created_ms: created,
            updated_ms: updated,
        };
        Ok(state_document(rec, ended))
    }

    fn events(&self, run_id: &str) -> Result<Vec<String>, StoreError> {
        let c = guard(&self.conn);
        let run = self.seq(&c, run_id)?;
        let created: i64 = c
            .query_row("SELECT created_ms FROM runs WHERE seq = ?1", [run], |r| {
                r.get(0)
            })
            .map_err(|e| self.err(e))?;
        let mut stmt = c
            .prepare("SELECT lines FROM events WHERE run = ?1 ORDER BY id")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([run], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for chunk in rows {
            let chunk = chunk.map_err(|e| self.err(e))?;
            out.extend(
                chunk
                    .lines()
                    .map(|l| with_run_id(&on_run_clock(l, created), run_id)),
            );
        }
        Ok(out)
    }

    fn remove(&self, run_id: &str) -> Result<(), StoreError> {
        let lock = self.lock_run(run_id)?;
        let n = {
            let c = guard(&self.conn);
            c.execute("DELETE FROM runs WHERE id = ?1", [run_id])
                .map_err(|e| self.err(e))?
        };
        drop(lock);
        if n == 0 {
            return Err(self.no_run(run_id, ""));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored event line reads back as the event it was made from (but its summary).
    #[test]
    fn an_event_line_reads_back() {
        let e = Event {
            kind: EventKind::Failed,
            key: "1.2".into(),
            step_kind: "shell",
            workflow: "w".into(),
            at_ms: 12.5,
            elapsed_ms: Some(3.0),
            error: Some("boom".into()),
            summary: String::new(),
            usage: None,
            given: None,
        };
        let back = Event::from_line(&with_run_id(&e.to_stored_line(), "r"))
            .unwrap_or_else(|| panic!("reads back"));
        assert_eq!(format!("{back:?}"), format!("{e:?}"));
        assert!(Event::from_line("{\"event\":\"approval_decided\",\"key\":\"g\"}").is_none());
    }
}
