//! The SQLite run store through the interpreter: what a resume may and may not replay, the
//! spawn budget across resumes, the owner lock, and a store that fails to write.

use crate::run::common::*;
use pipewright_runtime::store::{
    self, Landed, NewRun, RunLock, RunRecord, RunSummary, SqliteStore, Store, StoreError, Write,
};
use pipewright_runtime::Caps;
use serde_json::{json, Value as Json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn log_lines(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("log"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

fn resume(dir: &std::path::Path, id: &str) -> pipewright_runtime::RunOptions {
    let mut o = opts(dir);
    o.store = Some(store_at(dir));
    o.resume = Some(id.to_string());
    o
}

/// A retry of a fan-out item runs its whole body again: the steps of a called pipeline that
/// landed in the failed attempt are forgotten, not replayed (so the second attempt cannot
/// reuse a half-done item).
#[test]
fn retry_of_a_fan_out_item_reruns_every_step_under_it() {
    const RETRY: &str = "pipeline: main\nsteps:\n  - for_each:\n      items: [a]\n      on_error: \"retry(1)\"\n      do: {call: {pipeline: item}}\n      collect: {transform: {value: \"pipe\"}}\n---\npipeline: item\nsteps:\n  - shell: {command: \"echo s0 >> log; echo s0\"}\n  - shell: {command: \"echo s1 >> log; test $(grep -c s1 log) -ge 2 && echo ok\", on_error: abort}\n";
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    let v = run_json(RETRY, o);
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(log_lines(d.path()), ["s0", "s1", "s0", "s1"]);
    let (_, s) = only_run(d.path()).unwrap_or_else(|| panic!("no run"));
    assert_eq!(s["completed"]["0.for_each.0.call.1"]["text"], "ok\n", "{s}");
}

/// The per-run agent budget counts every attempt of the run: a resume goes on from the
/// count the store holds instead of starting again at 0.
#[test]
fn the_spawn_count_is_persisted_across_resumes() {
    const AGENTS: &str = "pipeline: p\nsteps:\n  - agent: {prompt: one}\n  - agent: {prompt: two}\n  - agent: {prompt: three}\n";
    let d = tempdir();
    let caps = Caps {
        max_fan_out_depth: 5,
        max_spawns: 2,
        ..Caps::default()
    };
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.caps = caps;
    o.sinks = vec![Arc::new(CancelAt(o.cancel.clone(), "1"))];
    let v = run_json(AGENTS, o);
    assert_eq!(v["status"], "cancelled", "{v}");
    let (id, s) = only_run(d.path()).unwrap_or_else(|| panic!("no run"));
    assert_eq!(s["spawns"], 2, "{s}");
    let mut o = resume(d.path(), &id);
    o.caps = caps;
    let v = run_json(AGENTS, o);
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["error"]["code"], "PW0808", "{v}");
    assert_eq!(v["error"]["step"], "2", "{v}");
}

/// A drop is recorded beside the values, not as a value: an input row that looks like the old
/// `{"__fan_out_dropped__": true}` marker is an ordinary item before and after a resume.
#[test]
fn a_row_shaped_like_a_drop_marker_is_an_ordinary_value_after_resume() {
    const ROWS: &str = "pipeline: rows\nsteps:\n  - for_each:\n      over: ctx.rows\n      max_parallel: 1\n      on_error: continue\n      do: {transform: {value: \"item\"}}\n      collect: {transform: {value: \"pipe\"}}\n      output: out\n  - transform: {value: \"count(ctx.out)\"}\n";
    let rows = json!([{"__fan_out_dropped__": true, "error": "x"}, {"a": 1}, {"b": 2}]);
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.input = json!({ "rows": rows });
    o.sinks = vec![Arc::new(CancelAt(o.cancel.clone(), "0.for_each.1"))];
    let v = run_json(ROWS, o);
    assert_eq!(v["status"], "cancelled", "{v}");
    let (id, s) = only_run(d.path()).unwrap_or_else(|| panic!("no run"));
    assert_eq!(s["completed"]["0.for_each.0"], rows[0], "{s}");
    assert_eq!(s["dropped"], json!({}), "{s}");
    let v = run_json(ROWS, resume(d.path(), &id));
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["stores"]["out"], rows, "{v}");
    assert_eq!(v["output"], 3, "{v}");
}

/// A fan-out member dropped under `continue` stays dropped on resume, with its error, and is
/// listed under `dropped`, not `completed`.
#[test]
fn a_dropped_member_stays_dropped_on_resume() {
    const PAR: &str = "pipeline: par\nsteps:\n  - parallel:\n      on_error: continue\n      branches:\n        good: {shell: {command: \"echo g >> log; echo g\"}}\n        bad: {shell: {command: \"echo b >> log; exit 3\"}}\n      collect: {transform: {value: \"pipe.__branch_errors__\"}}\n  - transform: {value: \"1 / 0\"}\n";
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    let v = run_json(PAR, o);
    assert_eq!(v["status"], "failed", "{v}");
    let (id, s) = only_run(d.path()).unwrap_or_else(|| panic!("no run"));
    assert!(
        s["dropped"]["0.parallel.bad"]
            .as_str()
            .is_some_and(|e| e.contains("exit status 3")),
        "{s}"
    );
    let v = run_json(PAR, resume(d.path(), &id));
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["output"], s["completed"]["0"], "{v}");
    let mut lines = log_lines(d.path());
    lines.sort();
    assert_eq!(lines, ["b", "g"], "nothing ran again");
}

/// A store that fails on a chosen landing, standing in for a full disk.
struct FailingStore {
    inner: SqliteStore,
    fail_key: &'static str,
    failed: AtomicBool,
}

impl Store for FailingStore {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn lock_run(&self, run_id: &str) -> Result<Box<dyn RunLock>, StoreError> {
        self.inner.lock_run(run_id)
    }
    fn is_owned(&self, run_id: &str) -> bool {
        self.inner.is_owned(run_id)
    }
    fn create_run(&self, run: &NewRun) -> Result<(), StoreError> {
        self.inner.create_run(run)
    }
    fn load_run(&self, run_id: &str) -> Result<RunRecord, StoreError> {
        self.inner.load_run(run_id)
    }
    fn record(&self, run_id: &str, writes: &[Write]) -> Result<(), StoreError> {
        let hit = writes
            .iter()
            .any(|w| matches!(w, Write::Land(l) if l.key == self.fail_key));
        if hit && !self.failed.swap(true, Ordering::SeqCst) {
            return Err(StoreError::Unusable(format!(
                "the run store {}: database or disk is full",
                self.describe()
            )));
        }
        self.inner.record(run_id, writes)
    }
    fn list_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.inner.list_runs()
    }
    fn state(&self, run_id: &str) -> Result<Json, StoreError> {
        self.inner.state(run_id)
    }
    fn events(&self, run_id: &str) -> Result<Vec<String>, StoreError> {
        self.inner.events(run_id)
    }
    fn remove(&self, run_id: &str) -> Result<(), StoreError> {
        self.inner.remove(run_id)
    }
}

const SIDE: &str = "pipeline: side\nsteps:\n  - shell: {command: \"echo s0 >> log; echo s0\", output: a}\n  - shell: {command: \"echo s1 >> log; echo s1\", output: b}\n  - shell: {command: \"echo s2 >> log; echo s2\", output: c}\n";

/// A landing the store cannot commit fails the run at once, loudly (exit 1, PW0811 naming the
/// store), and nothing after it runs; the resume replays what was committed and runs again
/// only the step whose landing was lost.
#[test]
fn a_write_error_fails_the_run_and_the_resume_does_not_repeat_a_landed_step() {
    let d = tempdir();
    let failing = Arc::new(FailingStore {
        inner: SqliteStore::open(&db_path(d.path())).unwrap_or_else(|e| panic!("{e}")),
        fail_key: "1",
        failed: AtomicBool::new(false),
    });
    let mut o = opts(d.path());
    o.store = Some(failing);
    let (out, sources) = exec(SIDE, o);
    let v = out.to_json(&sources);
    assert_eq!(out.exit_code(), 1, "{v}");
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["error"]["code"], "PW0811", "{v}");
    assert_eq!(v["error"]["step"], "1", "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains(".pipewright/runs.db") && msg.contains("disk is full"),
        "{msg}"
    );
    assert_eq!(log_lines(d.path()), ["s0", "s1"], "s2 never started");
    let (id, s) = only_run(d.path()).unwrap_or_else(|| panic!("no run"));
    assert_eq!(s["status"], "failed", "{s}");
    assert!(s["completed"].get("1").is_none(), "{s}");
    // The landing and its event commit together: no completion event without its landing.
    let events = store_at(d.path()).events(&id).unwrap_or_default();
    assert!(
        !events
            .iter()
            .any(|e| e.contains("\"step_completed\"") && e.contains("\"key\":\"1\"")),
        "{events:#?}"
    );

    let v = run_json(SIDE, resume(d.path(), &id));
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(log_lines(d.path()), ["s0", "s1", "s1", "s2"]);
}

/// The final status write failing is a failure too, never a silent success.
#[test]
fn a_failed_final_write_fails_an_otherwise_good_run() {
    struct NoFinish(SqliteStore);
    impl Store for NoFinish {
        fn describe(&self) -> String {
            self.0.describe()
        }
        fn lock_run(&self, id: &str) -> Result<Box<dyn RunLock>, StoreError> {
            self.0.lock_run(id)
        }
        fn is_owned(&self, id: &str) -> bool {
            self.0.is_owned(id)
        }
        fn create_run(&self, r: &NewRun) -> Result<(), StoreError> {
            self.0.create_run(r)
        }
        fn load_run(&self, id: &str) -> Result<RunRecord, StoreError> {
            self.0.load_run(id)
        }
        fn record(&self, id: &str, w: &[Write]) -> Result<(), StoreError> {
            if w.iter().any(|w| matches!(w, Write::Finish(_))) {
                return Err(StoreError::Unusable(
                    "the run store x.db: disk I/O error".into(),
                ));
            }
            self.0.record(id, w)
        }
        fn list_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
            self.0.list_runs()
        }
        fn state(&self, id: &str) -> Result<Json, StoreError> {
            self.0.state(id)
        }
        fn events(&self, id: &str) -> Result<Vec<String>, StoreError> {
            self.0.events(id)
        }
        fn remove(&self, id: &str) -> Result<(), StoreError> {
            self.0.remove(id)
        }
    }
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(Arc::new(NoFinish(
        SqliteStore::open(&db_path(d.path())).unwrap_or_else(|e| panic!("{e}")),
    )));
    let (out, sources) = exec(SIDE, o);
    let v = out.to_json(&sources);
    assert_eq!(out.exit_code(), 1, "{v}");
    assert_eq!(v["error"]["code"], "PW0811", "{v}");
    assert!(out.store_error.is_some());
}

/// One owner per run: while a lock is held, a second one (another resume, `runs rm`) is
/// refused with a message naming the owner; dropping it frees the run.
#[test]
fn a_run_has_one_owner_at_a_time() {
    let d = tempdir();
    let st = store_at(d.path());
    let id = store::new_run_id();
    assert!(!st.is_owned(&id));
    let held = st.lock_run(&id).unwrap_or_else(|e| panic!("{e}"));
    assert!(store_at(d.path()).is_owned(&id));
    let second = store_at(d.path()).lock_run(&id);
    let Err(err) = second else {
        panic!("a second owner was let in");
    };
    // Typed, so a caller (a durable engine, a retry) can tell a busy run from a broken store.
    assert!(
        matches!(&err, StoreError::Busy { run_id, by } if *run_id == id && by.contains(&std::process::id().to_string())),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.contains(&format!("run {id} is in progress in another process"))
            && err.contains(&format!("process {}", std::process::id())),
        "{err}"
    );
    st.create_run(&NewRun {
        run_id: id.clone(),
        file: "f.yaml".into(),
        workflow: "w".into(),
        source_hash: "0".into(),
        input: Json::Null,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(st.remove(&id).is_err(), "a run in progress is not removed");
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.resume = Some(id.clone());
    let (p, s) = load("pipeline: w\nsteps:\n  - transform: {value: \"1\"}\n");
    let refused = rt().block_on(pipewright_pipeline::run::run(p, &s, o));
    assert!(
        refused
            .as_ref()
            .err()
            .is_some_and(|e| e.contains("in progress")),
        "{:?}",
        refused.map(|o| o.status)
    );
    let lock_file = d.path().join(".pipewright/runs.db.locks").join(&id);
    assert!(lock_file.is_file());
    drop(held);
    assert!(!lock_file.exists(), "an owner leaves no lock file behind");
    assert!(!st.is_owned(&id));
    assert!(st.lock_run(&id).is_ok(), "released with its owner");
    assert!(st.remove(&id).is_ok());
    assert!(st.load_run(&id).is_err());
}

/// Run ids are UUIDv7: distinct, and in creation order when sorted.
#[test]
fn run_ids_are_unique_and_sort_by_time() {
    let ids: Vec<String> = (0..1000).map(|_| store::new_run_id()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 1000);
    let a = store::new_run_id();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let b = store::new_run_id();
    assert!(a < b, "{a} {b}");
    assert!(store::check_run_id(&a).is_ok());
    assert!(store::check_run_id("../x").is_err());
}

/// The schema is versioned: a new database gets every migration once, reopening applies none,
/// and a database from a newer pipewright is refused rather than misread.
#[test]
fn migrations_are_recorded_and_a_newer_schema_is_refused() {
    let d = tempdir();
    let path = db_path(d.path());
    drop(SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}")));
    drop(SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}")));
    let conn = rusqlite::Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
    let versions: Vec<i64> = conn
        .prepare("SELECT version FROM schema_migrations ORDER BY version")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        versions,
        (1..=store::SCHEMA_VERSION as i64).collect::<Vec<_>>()
    );
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap_or_default();
    assert_eq!(mode, "wal");
    conn.execute(
        "INSERT INTO schema_migrations (version, applied_ms) VALUES (999, 0)",
        [],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let err = SqliteStore::open(&path).err().unwrap_or_default();
    assert!(err.contains("newer pipewright"), "{err}");
}

/// The input is written once, when the run is created: neither the landings nor the final
/// stores copy it again.
#[test]
fn a_big_input_is_written_once() {
    let big = "x".repeat(4 << 20);
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.input = json!({ "big": big });
    let steps: String = (0..10)
        .map(|i| format!("  - transform: {{value: \"{i}\", output: s{i}}}\n"))
        .collect();
    let v = run_json(&format!("pipeline: p\nsteps:\n{steps}"), o);
    assert_eq!(v["status"], "ok");
    let (id, s) = only_run(d.path()).unwrap_or_else(|| panic!("no run"));
    assert_eq!(s["stores"]["big"].as_str().map(str::len), Some(4 << 20));
    assert_eq!(s["stores"]["s9"], 9);
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let db = db_path(d.path());
    let wal = db.with_file_name("runs.db-wal");
    let total = size(&db) + size(&wal);
    // One copy in the WAL plus at most one checkpointed into the database.
    assert!(total < (4 << 20) * 5 / 2, "{total} bytes on disk");
    let rec = store_at(d.path())
        .load_run(&id)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(rec
        .landings
        .iter()
        .all(|l| matches!(&l.landed, Landed::Value(v) if !v.to_string().contains("xxxx"))));
}

/// Nothing is reported done before its commit: when a sink hears `step_completed`, another
/// connection already sees the landing, for steps with side effects (committed at once) and
/// pure steps (staged and committed in batches) alike.
#[test]
fn a_completion_is_reported_only_after_its_landing_committed() {
    struct Check {
        dir: std::path::PathBuf,
        seen: std::sync::Mutex<Vec<(String, bool)>>,
    }
    impl pipewright_runtime::EventSink for Check {
        fn event(&self, e: &pipewright_runtime::Event) {
            if e.kind != pipewright_runtime::EventKind::Completed {
                return;
            }
            let there = SqliteStore::open(&db_path(&self.dir))
                .and_then(|st| {
                    let id = st.list_runs()?.first().map(|r| r.run_id.clone());
                    Ok(st.load_run(&id.unwrap_or_default())?)
                })
                .is_ok_and(|r| r.landings.iter().any(|l| l.key == e.key));
            self.seen
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((e.key.clone(), there));
        }
    }
    const MIXED: &str = "pipeline: mixed\nsteps:\n  - transform: {value: \"[1, 2, 3]\", output: xs}\n  - for_each:\n      over: ctx.xs\n      on_error: abort\n      do: {transform: {value: \"item * 2\"}}\n      collect: {transform: {value: \"pipe\"}}\n  - shell: {command: \"echo hi\"}\n  - transform: {value: \"pipe.text\"}\n";
    let d = tempdir();
    let check = Arc::new(Check {
        dir: d.path().to_path_buf(),
        seen: std::sync::Mutex::new(Vec::new()),
    });
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.sinks = vec![check.clone()];
    let v = run_json(MIXED, o);
    assert_eq!(v["status"], "ok", "{v}");
    let seen = check.seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(seen.len(), 1 + 3 + 1 + 1 + 1 + 1, "{seen:?}");
    assert!(seen.iter().all(|(_, there)| *there), "{seen:?}");
}

/// Pure landings commit in batches in the background; a batch that fails is still loud: the
/// next step with side effects does not start, the run fails with PW0811, the store says
/// `failed`, and a resume computes the lost steps again and runs the side effect once.
#[test]
fn a_failed_background_batch_stops_the_run_before_the_next_side_effect() {
    const PURE_THEN_SHELL: &str = "pipeline: p\nsteps:\n  - transform: {value: \"1\", output: a}\n  - transform: {value: \"2\", output: b}\n  - shell: {command: \"echo s2 >> log; echo s2\"}\n";
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(Arc::new(FailingStore {
        inner: SqliteStore::open(&db_path(d.path())).unwrap_or_else(|e| panic!("{e}")),
        fail_key: "1",
        failed: AtomicBool::new(false),
    }));
    let v = run_json(PURE_THEN_SHELL, o);
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["error"]["code"], "PW0811", "{v}");
    assert!(
        log_lines(d.path()).is_empty(),
        "the shell step never started"
    );
    let (id, s) = only_run(d.path()).unwrap_or_else(|| panic!("no run"));
    assert_eq!(s["status"], "failed", "{s}");
    assert_eq!(s["completed"], json!({}), "{s}");
    let v = run_json(PURE_THEN_SHELL, resume(d.path(), &id));
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(log_lines(d.path()), ["s2"]);

    // The same failure in the last batch, after the last step: the run still fails.
    const PURE: &str =
        "pipeline: p\nsteps:\n  - transform: {value: \"1\"}\n  - transform: {value: \"2\"}\n";
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(Arc::new(FailingStore {
        inner: SqliteStore::open(&db_path(d.path())).unwrap_or_else(|e| panic!("{e}")),
        fail_key: "1",
        failed: AtomicBool::new(false),
    }));
    let (out, sources) = exec(PURE, o);
    let v = out.to_json(&sources);
    assert_eq!(out.exit_code(), 1, "{v}");
    assert_eq!(v["error"]["code"], "PW0811", "{v}");
    let (_, s) = only_run(d.path()).unwrap_or_else(|| panic!("no run"));
    assert_eq!(s["status"], "failed", "{s}");
}

/// The store keeps events without their run id and `runs events` puts it back: the lines read
/// back are exactly what [`Event::to_json`] gives, field order included.
#[test]
fn stored_events_read_back_as_to_json() {
    use pipewright_runtime::{Event, EventKind};
    for (elapsed, error) in [(None, None), (Some(1.5), Some("a \"quoted\", error"))] {
        let e = Event {
            kind: EventKind::Failed,
            key: "0.for_each.1".into(),
            step_kind: "shell",
            workflow: "w\"x".into(),
            at_ms: 12.3456789,
            elapsed_ms: elapsed,
            error: error.map(String::from),
            summary: String::new(),
            usage: None,
            given: None,
        };
        let id = "01a21300-0000-7000-8000-000000000000";
        assert_eq!(
            store::with_run_id(&e.to_stored_line(), id),
            e.to_json(id).to_string()
        );
    }
}

/// Processes that open a new store at the same moment all get it. CI saw "database is
/// locked": switching a new database to WAL mode needs its exclusive lock, and while another
/// connection holds the write lock SQLite answers BUSY at once instead of waiting. Here the
/// other connection is a second opener caught in the middle of its own switch (it holds the
/// write lock for 200 ms); the opener must wait for it, not fail.
#[test]
fn opening_a_new_store_waits_for_another_opener() {
    let d = tempdir();
    let path = d.path().join("runs.db");
    let other = rusqlite::Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
    other
        .execute_batch("BEGIN IMMEDIATE; CREATE TABLE t (x)")
        .unwrap_or_else(|e| panic!("{e}"));
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        other.execute_batch("COMMIT").map_err(|e| e.to_string())
    });
    let opened = SqliteStore::open(&path).map(|_| ());
    assert_eq!(
        release.join().unwrap_or_else(|_| Err("panicked".into())),
        Ok(())
    );
    assert_eq!(opened, Ok(()));
}

/// `approve`/`deny` once wrote `at_ms` in epoch milliseconds; such a record reads on the run's
/// clock, as every event is now written.
#[test]
fn an_old_approval_event_in_epoch_milliseconds_reads_on_the_runs_clock() {
    let d = tempdir();
    let st = store_at(d.path());
    let id = store::new_run_id();
    st.create_run(&NewRun {
        run_id: id.clone(),
        file: "r.yaml".into(),
        workflow: "r".into(),
        source_hash: "h".into(),
        input: Json::Null,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let created = st
        .list_runs()
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .find(|r| r.run_id == id)
        .map(|r| r.created_ms)
        .unwrap_or_else(|| panic!("no run"));
    let old = json!({"event": "approval_decided", "key": "1", "stage": "plan", "decision": "approved", "at_ms": created + 1500});
    let new = json!({"event": "approval_decided", "key": "3", "stage": "b", "decision": "denied", "at_ms": 2500});
    st.record(
        &id,
        &[Write::Event(old.to_string()), Write::Event(new.to_string())],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let events: Vec<Json> = st
        .events(&id)
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or(Json::Null))
        .collect();
    assert_eq!(events[0]["at_ms"], 1500, "{events:?}");
    assert_eq!(events[0]["run_id"], id.as_str(), "{events:?}");
    assert_eq!(events[0]["stage"], "plan", "{events:?}");
    assert_eq!(events[1]["at_ms"], 2500, "{events:?}");
}
