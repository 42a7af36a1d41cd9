//! The engine's runs, copied into a private SQLite store with the local store's schema, so the
//! UI reads them with the same set-wide SQL and computes rows and node states with the same
//! code as for a local store. A task refreshes it at most once a second (the page must not
//! make anything poll faster), asking the engine only for the runs whose listed stamp changed,
//! and bumps the change counter the streams wait on (the local store's file watcher is not
//! started). A run a worker owns is held under the mirror store's run lock, so "a live process
//! owns it" (in progress, or else interrupted) reads as for a local run.

use crate::engine::{EngineRun, EngineSide, Listed};
use pipewright_dialect::Waiting;
use pipewright_runtime::store::{RunLock, SqliteStore, Store};
use rusqlite::{params, Connection};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The refresh period: the issue forbids polling faster than once a second.
const EVERY: Duration = Duration::from_secs(1);

/// The mirror's own side: its writer connection and what it copied.
pub(crate) struct Mirror {
    conn: Connection,
    store: SqliteStore,
    /// Each copied run's stamp as the engine listed it then.
    stamps: HashMap<String, String>,
    /// The runs a worker owns, held so that `is_owned` says so.
    held: HashMap<String, Box<dyn RunLock>>,
}

fn err(e: rusqlite::Error) -> String {
    format!("the UI's mirror of the engine: {e}")
}

impl Mirror {
    /// Creates the mirror's store at `path` (the local store's schema, by the local store).
    pub(crate) fn create(path: &Path) -> Result<Mirror, String> {
        let store = SqliteStore::open(path)?;
        let conn = Connection::open(path).map_err(err)?;
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;")
            .map_err(err)?;
        Ok(Mirror {
            conn,
            store,
            stamps: HashMap::new(),
            held: HashMap::new(),
        })
    }

    /// Brings the mirror up to the engine's list; whether anything changed.
    pub(crate) fn refresh(&mut self, side: &EngineSide) -> Result<bool, String> {
        let listed = side.engine.list()?;
        let mut changed = false;
        for Listed { run_id, stamp } in &listed {
            if self.stamps.get(run_id) == Some(stamp) {
                continue;
            }
            match side.engine.fetch(run_id)? {
                Some(run) => self.put(&run)?,
                None => self.forget(run_id)?,
            }
            // The stamp is the list's: a change between the list and the fetch is fetched again
            // at the next refresh.
            self.stamps.insert(run_id.clone(), stamp.clone());
            changed = true;
        }
        let gone: Vec<String> = self
            .stamps
            .keys()
            .filter(|id| !listed.iter().any(|l| &l.run_id == *id))
            .cloned()
            .collect();
        for id in gone {
            self.forget(&id)?;
            changed = true;
        }
        Ok(self.ask_waiting(side) || changed)
    }

    /// Asks the workers what the runs they run wait for inside (at once, one thread a run:
    /// each answer is a round trip through the engine); whether that changed. A run its worker
    /// cannot answer for keeps what it waited for before.
    fn ask_waiting(&self, side: &EngineSide) -> bool {
        let live: Vec<&String> = self.held.keys().collect();
        let answers: Vec<(String, Option<Vec<Waiting>>)> = std::thread::scope(|scope| {
            let asked: Vec<_> = live
                .iter()
                .map(|id| (id, scope.spawn(|| side.engine.waiting(id).ok())))
                .collect();
            asked
                .into_iter()
                .map(|(id, h)| ((*id).clone(), h.join().ok().flatten()))
                .collect()
        });
        let mut waiting = side.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let before = waiting.clone();
        waiting.retain(|id, _| self.held.contains_key(id));
        for (id, answer) in answers {
            match answer {
                Some(w) if w.is_empty() => {
                    waiting.remove(&id);
                }
                Some(w) => {
                    waiting.insert(id, w);
                }
                None => {}
            }
        }
        *waiting != before
    }

    /// Replaces the run's copy with `run`, in one transaction (readers see one or the other).
    fn put(&mut self, run: &EngineRun) -> Result<(), String> {
        let m = &run.meta;
        let text = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string());
        let tx = self.conn.transaction().map_err(err)?;
        tx.execute(
            "INSERT INTO runs (id, status, file, workflow, source_hash, created_ms, updated_ms, spawns, output, stores, error, cancelled_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (id) DO UPDATE SET status = ?2, file = ?3, workflow = ?4, source_hash = ?5,
                 created_ms = ?6, updated_ms = ?7, spawns = ?8, output = ?9, stores = ?10, error = ?11,
                 cancelled_at = ?12",
            params![
                m.run_id,
                m.status,
                m.file,
                m.workflow,
                m.source_hash,
                m.created_ms,
                m.updated_ms,
                i64::try_from(m.spawns).unwrap_or(i64::MAX),
                text(&m.output),
                text(&m.stores),
                text(&m.error),
                m.cancelled_at,
            ],
        )
        .map_err(err)?;
        let seq: i64 = tx
            .query_row("SELECT seq FROM runs WHERE id = ?1", [&m.run_id], |r| {
                r.get(0)
            })
            .map_err(err)?;
        for table in ["inputs", "landings", "events", "usage"] {
            tx.execute(&format!("DELETE FROM {table} WHERE run = ?1"), [seq])
                .map_err(err)?;
        }
        tx.execute(
            "INSERT INTO inputs (run, value) VALUES (?1, ?2)",
            params![seq, m.input.to_string()],
        )
        .map_err(err)?;
        // Inserted in landing order: the rowid is the order the local store reads them in.
        let mut landings: Vec<&(String, pipewright_runtime::run_kv::KeptLanding)> =
            run.landings.iter().collect();
        landings.sort_by_key(|(_, l)| l.order);
        for (key, l) in landings {
            // As `RunMeta::record` reads a landing: a value, else the error that dropped it.
            let (value, dropped) = match &l.value {
                Some(v) => (Some(v.to_string()), None),
                None => (None, Some(l.dropped.clone().unwrap_or_default())),
            };
            tx.execute(
                "INSERT OR REPLACE INTO landings (run, key, step_hash, value, dropped) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![seq, key, l.step_hash, value, dropped],
            )
            .map_err(err)?;
        }
        if !run.events.is_empty() {
            let mut lines = String::new();
            for line in &run.events {
                lines.push_str(&without_run_id(line, &m.run_id));
                lines.push('\n');
            }
            tx.execute(
                "INSERT INTO events (run, lines) VALUES (?1, ?2)",
                params![seq, lines],
            )
            .map_err(err)?;
        }
        for (key, usage) in &m.usage {
            tx.execute(
                "INSERT INTO usage (run, key, value) VALUES (?1, ?2, ?3)",
                params![seq, key, serde_json::to_string(usage).unwrap_or_default()],
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)?;
        self.hold(&m.run_id, run.owned)
    }

    fn forget(&mut self, run_id: &str) -> Result<(), String> {
        self.conn
            .execute("DELETE FROM runs WHERE id = ?1", [run_id])
            .map_err(err)?;
        self.stamps.remove(run_id);
        self.held.remove(run_id);
        Ok(())
    }

    /// Holds the run's lock while a worker owns it, and lets it go when none does.
    fn hold(&mut self, run_id: &str, owned: bool) -> Result<(), String> {
        if !owned {
            self.held.remove(run_id);
        } else if !self.held.contains_key(run_id) {
            let lock = self.store.lock_run(run_id).map_err(|e| e.to_string())?;
            self.held.insert(run_id.to_string(), lock);
        }
        Ok(())
    }

    #[cfg(test)]
    fn run_count(&self) -> i64 {
        self.conn
            .query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))
            .unwrap_or(-1)
    }
}

/// An event line as the store keeps it: without the `run_id` that
/// [`pipewright_runtime::store::with_run_id`] puts back in second place.
fn without_run_id(line: &str, run_id: &str) -> String {
    let run = format!(
        ",\"run_id\":{}",
        serde_json::Value::String(run_id.to_string())
    );
    match line.find(',') {
        Some(i) if line[i..].starts_with(&run) => {
            format!("{}{}", &line[..i], &line[i + run.len()..])
        }
        _ => line.to_string(),
    }
}

/// Refreshes `mirror` every second (or when nudged) until `stop`, bumping `changes` when the
/// mirror or the engine's health changed.
pub(crate) fn start(
    mirror: Mirror,
    side: Arc<EngineSide>,
    changes: watch::Sender<u64>,
    mut stop: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        let mut mirror = Some(mirror);
        loop {
            let (m, s) = (mirror.take(), side.clone());
            let Ok((m, result)) = tokio::task::spawn_blocking(move || {
                let mut m = m?;
                let r = m.refresh(&s);
                Some((m, r))
            })
            .await
            .map(|o| o.unzip()) else {
                return;
            };
            let Some(m) = m else { return };
            mirror = Some(m);
            let result = result.unwrap_or_else(|| Err("the mirror stopped".into()));
            let now = pipewright_runtime::store::now_ms();
            let health_changed = {
                let mut h = side.health.lock().unwrap_or_else(|p| p.into_inner());
                let before = h.error.clone();
                match &result {
                    Ok(_) => {
                        h.error = None;
                        h.refreshed_ms = Some(now);
                    }
                    Err(e) => {
                        h.error = Some(format!("cannot reach {}: {e}", side.engine.describe()))
                    }
                }
                before != h.error
            };
            if health_changed || result.unwrap_or(false) {
                changes.send_modify(|n| *n = n.wrapping_add(1));
            }
            // Never sooner than a second after the last refresh began to end, nudged or not
            // (a nudge waits out the rest of the second).
            let tick = tokio::time::sleep(EVERY);
            tokio::pin!(tick);
            tokio::select! {
                () = &mut tick => {}
                () = side.nudge.notified() => {
                    tokio::select! {
                        () = tick => {}
                        _ = stop.changed() => return,
                    }
                }
                _ = stop.changed() => return,
            }
            if *stop.borrow() {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, Refusal};
    use pipewright_runtime::approval::Decision;
    use pipewright_runtime::run_kv::{KeptLanding, RunMeta};
    use pipewright_runtime::store::NewRun;
    use std::sync::Mutex;

    #[test]
    fn an_event_line_loses_exactly_the_run_id_it_was_given() {
        let stored = r#"{"event":"step_started","key":"0","at_ms":3}"#;
        let shown = pipewright_runtime::store::with_run_id(stored, "ab-12");
        assert_ne!(shown, stored);
        assert_eq!(without_run_id(&shown, "ab-12"), stored);
        // Another run's id, or none, is left alone.
        assert_eq!(without_run_id(&shown, "cd-34"), shown);
        assert_eq!(without_run_id(stored, "ab-12"), stored);
    }

    /// An engine in memory: its runs, and how many times each was fetched.
    #[derive(Default)]
    struct Fake {
        runs: Mutex<Vec<(EngineRun, String)>>,
        fetched: Mutex<Vec<String>>,
        down: Mutex<bool>,
    }

    impl Engine for Fake {
        fn describe(&self) -> String {
            "a fake engine".into()
        }
        fn list(&self) -> Result<Vec<Listed>, String> {
            if *self.down.lock().unwrap_or_else(|p| p.into_inner()) {
                return Err("connection refused".into());
            }
            Ok(self
                .runs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|(r, stamp)| Listed {
                    run_id: r.meta.run_id.clone(),
                    stamp: stamp.clone(),
                })
                .collect())
        }
        fn fetch(&self, run_id: &str) -> Result<Option<EngineRun>, String> {
            self.fetched
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(run_id.into());
            Ok(self
                .runs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .find(|(r, _)| r.meta.run_id == run_id)
                .map(|(r, _)| r.clone()))
        }
        fn decide(&self, _: &str, _: Option<&str>, _: &Decision) -> Result<String, Refusal> {
            Err(Refusal::Conflict("no".into()))
        }
        fn cancel(&self, _: &str) -> Result<String, Refusal> {
            Err(Refusal::Conflict("no".into()))
        }
    }

    fn run(id: &str, status: &str, owned: bool) -> EngineRun {
        let mut meta = RunMeta::new(
            &NewRun {
                run_id: id.into(),
                file: "p.yaml".into(),
                workflow: "main".into(),
                source_hash: "h".into(),
                input: serde_json::json!({"x": 1}),
            },
            1_000,
        );
        meta.status = status.into();
        meta.updated_ms = 2_000;
        EngineRun {
            meta,
            landings: vec![
                (
                    "1".into(),
                    KeptLanding {
                        order: 1,
                        step_hash: "b".into(),
                        value: None,
                        dropped: Some("boom".into()),
                    },
                ),
                (
                    "0".into(),
                    KeptLanding {
                        order: 0,
                        step_hash: "a".into(),
                        value: Some(serde_json::json!({"y": 2})),
                        dropped: None,
                    },
                ),
            ],
            events: vec![pipewright_runtime::store::with_run_id(
                r#"{"event":"step_started","key":"0","at_ms":5}"#,
                id,
            )],
            owned,
        }
    }

    #[test]
    fn the_mirror_holds_what_the_engine_holds_and_fetches_only_what_changed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("mirror.db");
        let mut mirror = Mirror::create(&path).unwrap_or_else(|e| panic!("{e}"));
        let fake = Arc::new(Fake::default());
        let side = EngineSide::new(fake.clone());
        *fake.runs.lock().unwrap_or_else(|p| p.into_inner()) = vec![
            (run("aa-1", "running", true), "s1".into()),
            (run("bb-2", "ok", false), "s1".into()),
        ];
        assert_eq!(mirror.refresh(&side), Ok(true));
        // Read back as the UI reads a local store.
        let local = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(local.is_owned("aa-1"), "a run a worker owns is in progress");
        assert!(!local.is_owned("bb-2"));
        let record = local.load_run("aa-1").unwrap_or_else(|e| panic!("{e}"));
        let keys: Vec<&str> = record.landings.iter().map(|l| l.key.as_str()).collect();
        assert_eq!(keys, ["0", "1"], "landings in the engine's order");
        assert_eq!(
            record.landings[1].landed,
            pipewright_runtime::store::Landed::Dropped("boom".into())
        );
        assert_eq!(record.input, serde_json::json!({"x": 1}));
        assert_eq!(
            local.events("aa-1").unwrap_or_else(|e| panic!("{e}")),
            run("aa-1", "running", true).events,
            "the events read back as the engine gave them"
        );
        let listed = local.list_runs().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(listed.len(), 2);
        assert_eq!(
            listed[0].created_ms, 1_000,
            "the engine's times, not the copy's"
        );
        // Nothing changed: nothing fetched.
        fake.fetched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        assert_eq!(mirror.refresh(&side), Ok(false));
        assert!(fake
            .fetched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty());
        // One run ends (no owner now), the other is removed from the engine.
        *fake.runs.lock().unwrap_or_else(|p| p.into_inner()) =
            vec![(run("aa-1", "ok", false), "s2".into())];
        assert_eq!(mirror.refresh(&side), Ok(true));
        assert_eq!(
            *fake.fetched.lock().unwrap_or_else(|p| p.into_inner()),
            ["aa-1"]
        );
        assert!(!local.is_owned("aa-1"));
        assert_eq!(mirror.run_count(), 1);
        assert_eq!(
            local.load_run("aa-1").map(|r| r.status).ok().as_deref(),
            Some("ok")
        );
        // An engine that cannot be reached is an error, and the copy stays as it was.
        *fake.down.lock().unwrap_or_else(|p| p.into_inner()) = true;
        assert!(mirror.refresh(&side).is_err());
        assert_eq!(mirror.run_count(), 1);
    }
}
