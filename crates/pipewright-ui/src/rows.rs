//! The runs page's rows (`RunRow` of docs/ui.md): `pipewright runs` with what a person scans
//! for, each field computed for the whole list at once (db.rs) or cached per file (graphs.rs).

use crate::db::{Db, RunRecordRow, Tops};
use crate::graphs::{FileGraph, Graphs};
use pipewright_runtime::store::{SqliteStore, Store};
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunRow {
    pub seq: i64,
    pub run_id: String,
    /// As `pipewright runs` shows it: `interrupted` for a `running` run nobody runs.
    pub status: String,
    /// The status the store holds.
    pub stored_status: String,
    pub dialect: Option<&'static str>,
    pub file: String,
    pub workflow: String,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub duration_ms: i64,
    pub steps_done: Option<usize>,
    pub steps_total: Option<usize>,
    pub waiting: bool,
    pub in_progress: bool,
    pub usage: Option<Json>,
}

impl RunRow {
    pub(crate) fn to_json(&self) -> Json {
        json!({
            "run_id": self.run_id,
            "status": self.status,
            "dialect": self.dialect,
            "file": self.file,
            "workflow": self.workflow,
            "created_ms": self.created_ms,
            "updated_ms": self.updated_ms,
            "duration_ms": self.duration_ms,
            "steps_done": self.steps_done,
            "steps_total": self.steps_total,
            "waiting": self.waiting,
            "in_progress": self.in_progress,
            "usage": self.usage,
        })
    }
}

/// The statuses `?status=` filters on; `waiting` means waiting for an approval.
pub(crate) const FILTERS: &[&str] = &[
    "ok",
    "failed",
    "cancelled",
    "stopped",
    "paused",
    "running",
    "interrupted",
    "waiting",
];

pub(crate) fn matches(row: &RunRow, filter: Option<&str>) -> bool {
    match filter {
        None => true,
        Some("waiting") => row.waiting,
        Some(status) => row.status == status,
    }
}

/// What the last list read of each run's landings: (its `updated_ms` then, its tops). A run
/// that is neither running nor paused lands nothing without its `updated_ms` moving, so the
/// next list reads again only the runs that changed (scanning every landing of 10,000 runs
/// is most of a list's cost).
#[derive(Default)]
pub(crate) struct TopsCache(HashMap<i64, (i64, Vec<(String, bool)>)>);

/// The tops of `records`, read again only where they may have changed since `cache` saw them.
fn tops_of(db: &Db, records: &[RunRecordRow], cache: &mut TopsCache) -> Result<Tops, String> {
    let stale: Vec<i64> = records
        .iter()
        .filter(|r| {
            matches!(r.status.as_str(), "running" | "paused")
                || cache.0.get(&r.seq).is_none_or(|(u, _)| *u != r.updated_ms)
        })
        .map(|r| r.seq)
        .collect();
    if !stale.is_empty() {
        // Most runs stale (the first list): one scan of everything beats a long IN list.
        let mut fresh = if stale.len() * 2 > records.len() {
            db.tops(None)?
        } else {
            db.tops(Some(&stale))?
        };
        let updated: HashMap<i64, i64> = records.iter().map(|r| (r.seq, r.updated_ms)).collect();
        for seq in stale {
            let u = updated.get(&seq).copied().unwrap_or_default();
            cache
                .0
                .insert(seq, (u, fresh.remove(&seq).unwrap_or_default()));
        }
    }
    let present: std::collections::HashSet<i64> = records.iter().map(|r| r.seq).collect();
    cache.0.retain(|seq, _| present.contains(seq));
    Ok(cache.0.iter().map(|(k, (_, t))| (*k, t.clone())).collect())
}

/// The rows of every run (or of `only`), newest first; `cache` keeps what the last list read.
pub(crate) fn rows(
    db: &Db,
    store: Option<&SqliteStore>,
    graphs: &Graphs,
    runs_dir: &Path,
    only: Option<&str>,
    cache: &mut TopsCache,
) -> Result<Vec<RunRow>, String> {
    let records = db.runs(only)?;
    let tops = match (only, records.first()) {
        (Some(_), Some(r)) => db.tops(Some(&[r.seq]))?,
        (Some(_), None) => Tops::new(),
        (None, _) => tops_of(db, &records, cache)?,
    };
    let now = pipewright_runtime::store::now_ms();
    // Thousands of runs name a handful of files: each is looked at once per list.
    let mut files: HashMap<String, Option<Arc<FileGraph>>> = HashMap::new();
    Ok(records
        .into_iter()
        .map(|r| {
            let graph = files
                .entry(r.file.clone())
                .or_insert_with(|| graphs.of(&r.file))
                .clone();
            row(r, &tops, store, graph, runs_dir, now)
        })
        .collect())
}

fn row(
    r: RunRecordRow,
    tops: &Tops,
    store: Option<&SqliteStore>,
    graph: Option<Arc<FileGraph>>,
    runs_dir: &Path,
    now: i64,
) -> RunRow {
    // Only a `running` run can be owned: the lock probe is for those few.
    let in_progress = r.status == "running" && store.is_some_and(|s| s.is_owned(&r.run_id));
    let status = if r.status == "running" && !in_progress {
        "interrupted".to_string()
    } else {
        r.status.clone()
    };
    let keys = graph.as_ref().and_then(|g| g.workflows.get(&r.workflow));
    let steps_total = keys.map(|k| k.top.len());
    let steps_done = keys.map(|k| {
        if r.status == "ok" {
            return k.top.len();
        }
        done_of(&k.top, tops.get(&r.seq).map(Vec::as_slice).unwrap_or(&[]))
    });
    // A paused run waits at a gate; a live run may wait for an approval step (its dialect
    // knows: a MEOW run's orchestrator is asked).
    let waiting = r.status == "paused"
        || (in_progress
            && runs_dir.join(&r.run_id).is_dir()
            && store.is_some_and(|s| !waiting_of(s, runs_dir, &r.run_id).is_empty()));
    let end = if in_progress { now } else { r.updated_ms };
    RunRow {
        seq: r.seq,
        run_id: r.run_id,
        status,
        stored_status: r.status,
        dialect: graph.as_ref().map(|g| g.dialect),
        file: r.file,
        workflow: r.workflow,
        created_ms: r.created_ms,
        updated_ms: r.updated_ms,
        duration_ms: end.saturating_sub(r.created_ms).max(0),
        steps_done,
        steps_total,
        waiting,
        in_progress,
        usage: r.usage,
    }
}

/// The top-level steps done: each landed itself, or has landings under it and a later step
/// has begun (a recipe's stage, whose steps land but which does not).
fn done_of(top: &[String], landed: &[(String, bool)]) -> usize {
    let activity: Vec<Option<bool>> = top
        .iter()
        .map(|k| landed.iter().find(|(t, _)| t == k).map(|(_, own)| *own))
        .collect();
    activity
        .iter()
        .enumerate()
        .filter(|(i, a)| match a {
            Some(true) => true,
            Some(false) => activity[i + 1..].iter().any(Option::is_some),
            None => false,
        })
        .count()
}

/// The approvals the run waits for now, by its dialect.
pub(crate) fn waiting_of(
    store: &SqliteStore,
    runs_dir: &Path,
    run_id: &str,
) -> Vec<pipewright_dialect::Waiting> {
    let Ok(record) = store.load_run(run_id) else {
        return Vec::new();
    };
    let run_dir = runs_dir.join(run_id);
    pipewright_registry::waiting(&pipewright_dialect::RecordedRun {
        run_id,
        store,
        record: &record,
        run_dir: &run_dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipewright_runtime::store::{Landed, Landing, NewRun, Write};

    fn land(st: &SqliteStore, id: &str, key: &str) {
        st.record(
            id,
            &[Write::Land(Landing {
                key: key.into(),
                step_hash: "h".into(),
                landed: Landed::Value(serde_json::json!(1)),
            })],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn the_tops_cache_reads_again_what_may_have_landed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("runs.db");
        let st = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let new = |id: &str| {
            st.create_run(&NewRun {
                run_id: id.into(),
                file: "f.yaml".into(),
                workflow: "w".into(),
                source_hash: String::new(),
                input: serde_json::json!({}),
            })
            .unwrap_or_else(|e| panic!("{e}"));
        };
        new("aa");
        land(&st, "aa", "0");
        st.record("aa", &[Write::Status("ok".into())])
            .unwrap_or_else(|e| panic!("{e}"));
        new("bb");
        land(&st, "bb", "0");
        let db = Db::open(&path)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("the store exists"));
        let mut cache = TopsCache::default();
        let tops = |cache: &mut TopsCache| {
            let records = db.runs(None).unwrap_or_else(|e| panic!("{e}"));
            let t = tops_of(&db, &records, cache).unwrap_or_else(|e| panic!("{e}"));
            let mut by_id: Vec<(String, usize)> = records
                .iter()
                .map(|r| (r.run_id.clone(), t.get(&r.seq).map_or(0, Vec::len)))
                .collect();
            by_id.sort();
            by_id
        };
        assert_eq!(tops(&mut cache), vec![("aa".into(), 1), ("bb".into(), 1)]);
        // A running run's landings are read again; a new run's too.
        land(&st, "bb", "1.for_each.0");
        land(&st, "bb", "2");
        new("cc");
        land(&st, "cc", "0");
        assert_eq!(
            tops(&mut cache),
            vec![("aa".into(), 1), ("bb".into(), 3), ("cc".into(), 1)]
        );
        st.remove("cc").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tops(&mut cache), vec![("aa".into(), 1), ("bb".into(), 3)]);
        assert_eq!(cache.0.len(), 2, "a removed run leaves the cache");
    }

    #[test]
    fn steps_done_counts_landed_steps_and_stages_passed() {
        let top: Vec<String> = ["0", "1", "2"].iter().map(|s| s.to_string()).collect();
        let t = |k: &str, own: bool| (k.to_string(), own);
        assert_eq!(done_of(&top, &[t("0", true)]), 1);
        // A stage with landed steps and nothing after it may still run.
        assert_eq!(done_of(&top, &[t("0", false)]), 0);
        assert_eq!(done_of(&top, &[t("0", false), t("1", true)]), 2);
        assert_eq!(done_of(&top, &[t("9", true)]), 0);
    }
}
