//! The runs page's rows (`RunRow` of docs/ui.md): `pipewright runs` with what a person scans
//! for, each field computed for the whole list at once (db.rs) or cached per file (graphs.rs).

use crate::db::{Db, RunRecordRow, Tops, Which};
use crate::engine::EngineSide;
use crate::graphs::{FileGraph, Graphs};
use pipewright_dialect::Waiting;
use pipewright_runtime::store::{SqliteStore, Store};
use serde_json::{json, Value as Json};
use std::collections::{HashMap, HashSet};
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

/// A row of the list with its JSON text, as sent.
pub(crate) struct ListedRow {
    pub row: RunRow,
    pub json: String,
}

/// What the last list computed of each run, so the next computes only the rows that may have
/// changed. A run that is not running changes nothing its row shows without its stamp moving:
/// its status and `updated_ms`, or its last event (a paused run's gate decided lands with an
/// event); its file's graph (the dialect, the steps) is compared by identity, since a changed
/// file is lowered again. Reading every landing of 10,000 runs, and building and serializing
/// their rows, is most of a list's cost.
#[derive(Default)]
pub(crate) struct RowsCache(HashMap<i64, CachedRow>);

struct CachedRow {
    updated_ms: i64,
    status: String,
    last_event: Option<i64>,
    graph: Option<Arc<FileGraph>>,
    listed: Arc<ListedRow>,
}

/// A running run's row changes without its stamp: whether a process owns it, its duration so
/// far, an approval it waits for.
fn live(status: &str) -> bool {
    status == "running"
}

fn same_graph(a: &Option<Arc<FileGraph>>, b: &Option<Arc<FileGraph>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// Every run's row, newest first; `cache` keeps what this list computed for the next.
pub(crate) fn all(
    db: &Db,
    store: Option<&SqliteStore>,
    graphs: &Graphs,
    asked: Live<'_>,
    cache: &mut RowsCache,
) -> Result<Vec<Arc<ListedRow>>, String> {
    let (stamps, fresh, tops) = db.snapshot(|db| {
        let stamps = db.stamps()?;
        // Thousands of runs name a handful of files: each is looked at once per list.
        let mut files: HashMap<String, Option<Arc<FileGraph>>> = HashMap::new();
        let mut graph_of = |file: &str| {
            files
                .entry(file.to_string())
                .or_insert_with(|| graphs.of(file))
                .clone()
        };
        let stale: Vec<i64> = stamps
            .iter()
            .filter(|s| {
                live(&s.status)
                    || cache.0.get(&s.seq).is_none_or(|c| {
                        c.updated_ms != s.updated_ms
                            || c.status != s.status
                            || c.last_event != s.last_event
                            || !same_graph(&c.graph, &graph_of(&s.file))
                    })
            })
            .map(|s| s.seq)
            .collect();
        if stale.is_empty() {
            return Ok((stamps, Vec::new(), Tops::new()));
        }
        // Most runs stale (the first list): one scan of everything beats a long IN list.
        let which = if stale.len() * 2 > stamps.len() {
            Which::All
        } else {
            Which::Seqs(&stale)
        };
        let stale: HashSet<i64> = stale.iter().copied().collect();
        let fresh: Vec<(RunRecordRow, Option<Arc<FileGraph>>)> = db
            .runs(which)?
            .into_iter()
            .filter(|r| stale.contains(&r.seq))
            .map(|r| {
                let g = graph_of(&r.file);
                (r, g)
            })
            .collect();
        let seqs: Vec<i64> = fresh.iter().map(|(r, _)| r.seq).collect();
        let tops = db.tops(match which {
            Which::All => None,
            _ => Some(&seqs),
        })?;
        Ok((stamps, fresh, tops))
    })?;
    let now = pipewright_runtime::store::now_ms();
    let last_events: HashMap<i64, Option<i64>> = match fresh.len() {
        0 => HashMap::new(),
        _ => stamps.iter().map(|s| (s.seq, s.last_event)).collect(),
    };
    for (r, graph) in fresh {
        let (seq, updated_ms, status) = (r.seq, r.updated_ms, r.status.clone());
        let row = row(r, &tops, store, graph.clone(), asked, now);
        let json = row.to_json().to_string();
        cache.0.insert(
            seq,
            CachedRow {
                updated_ms,
                status,
                last_event: last_events.get(&seq).copied().flatten(),
                graph,
                listed: Arc::new(ListedRow { row, json }),
            },
        );
    }
    let present: HashSet<i64> = stamps.iter().map(|s| s.seq).collect();
    cache.0.retain(|seq, _| present.contains(seq));
    Ok(stamps
        .iter()
        .filter_map(|s| cache.0.get(&s.seq).map(|c| c.listed.clone()))
        .collect())
}

/// The row of one run, computed now; `None` for a run the store does not hold.
pub(crate) fn one(
    db: &Db,
    store: Option<&SqliteStore>,
    graphs: &Graphs,
    asked: Live<'_>,
    run_id: &str,
) -> Result<Option<RunRow>, String> {
    let Some(r) = db.runs(Which::Id(run_id))?.into_iter().next() else {
        return Ok(None);
    };
    let tops = db.tops(Some(&[r.seq]))?;
    let graph = graphs.of(&r.file);
    let now = pipewright_runtime::store::now_ms();
    Ok(Some(row(r, &tops, store, graph, asked, now)))
}

/// `{"runs": […]}` of the rows `filter` keeps, written from each row's text.
pub(crate) fn document(rows: &[Arc<ListedRow>], filter: Option<&str>) -> String {
    let kept: Vec<&str> = rows
        .iter()
        .filter(|r| matches(&r.row, filter))
        .map(|r| r.json.as_str())
        .collect();
    let mut out = String::with_capacity(kept.iter().map(|j| j.len() + 1).sum::<usize>() + 12);
    out.push_str("{\"runs\":[");
    for (i, j) in kept.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(j);
    }
    out.push_str("]}");
    out
}

fn row(
    r: RunRecordRow,
    tops: &Tops,
    store: Option<&SqliteStore>,
    graph: Option<Arc<FileGraph>>,
    asked: Live<'_>,
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
        || (in_progress && store.is_some_and(|s| !asked.waiting(s, &r.run_id).is_empty()));
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

/// Where what a live run waits for inside it is asked: its run directory here (a MEOW run's
/// orchestrator socket), or, for an engine's runs, what their workers said at the mirror's
/// last refresh (the socket is on the worker's host).
#[derive(Clone, Copy)]
pub(crate) enum Live<'a> {
    Here(&'a Path),
    Engine(&'a EngineSide),
}

impl Live<'_> {
    /// The approvals run `run_id`, which a process runs now, waits for.
    pub(crate) fn waiting(&self, store: &SqliteStore, run_id: &str) -> Vec<Waiting> {
        match self {
            // Only a run with a run directory can wait inside (asking loads its record).
            Live::Here(runs_dir) if runs_dir.join(run_id).is_dir() => {
                waiting_of(store, runs_dir, run_id)
            }
            Live::Here(_) => Vec::new(),
            Live::Engine(side) => side.waiting_of(run_id),
        }
    }
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
    fn the_rows_cache_computes_again_what_may_have_changed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let steps = |n: usize| {
            let body: String = (0..n)
                .map(|i| format!("  - transform: {{value: \"{i}\"}}\n"))
                .collect();
            std::fs::write(
                dir.path().join("f.yaml"),
                format!("pipeline: p\nsteps:\n{body}"),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        };
        steps(3);
        let path = dir.path().join("runs.db");
        let st = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let new = |id: &str| {
            st.create_run(&NewRun {
                run_id: id.into(),
                file: "f.yaml".into(),
                workflow: "p".into(),
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
        let graphs = Graphs::new(dir.path().to_path_buf());
        let mut cache = RowsCache::default();
        let list = |cache: &mut RowsCache| {
            all(&db, Some(&st), &graphs, Live::Here(dir.path()), cache)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let by_id = |rows: &[Arc<ListedRow>]| {
            let mut v: Vec<(String, String, Option<usize>, Option<usize>)> = rows
                .iter()
                .map(|r| {
                    let r = &r.row;
                    (
                        r.run_id.clone(),
                        r.status.clone(),
                        r.steps_done,
                        r.steps_total,
                    )
                })
                .collect();
            v.sort();
            v
        };
        let row = |id: &str, status: &str, done: usize, total: usize| {
            (id.to_string(), status.to_string(), Some(done), Some(total))
        };
        let first = list(&mut cache);
        assert_eq!(
            by_id(&first),
            vec![row("aa", "ok", 3, 3), row("bb", "interrupted", 1, 3)]
        );
        // A running run's landings are read again; a new run is read; a finished run that
        // did not change keeps its row.
        land(&st, "bb", "1.for_each.0");
        land(&st, "bb", "2");
        new("cc");
        land(&st, "cc", "0");
        let second = list(&mut cache);
        assert_eq!(
            by_id(&second),
            vec![
                row("aa", "ok", 3, 3),
                row("bb", "interrupted", 3, 3),
                row("cc", "interrupted", 1, 3)
            ]
        );
        let aa = |rows: &[Arc<ListedRow>]| {
            rows.iter()
                .find(|r| r.row.run_id == "aa")
                .cloned()
                .unwrap_or_else(|| panic!("aa listed"))
        };
        assert!(
            Arc::ptr_eq(&aa(&first), &aa(&second)),
            "aa is not computed again"
        );
        assert_eq!(second[0].row.run_id, "cc", "newest first");
        // A finished run whose status changes is computed again.
        st.record("aa", &[Write::Status("failed".into())])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(by_id(&list(&mut cache))[0], row("aa", "failed", 1, 3));
        // So is every run of a file that changed.
        steps(4);
        assert_eq!(by_id(&list(&mut cache))[0], row("aa", "failed", 1, 4));
        st.remove("cc").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(list(&mut cache).len(), 2);
        assert_eq!(cache.0.len(), 2, "a removed run leaves the cache");
        // A paused run's gate decided changes neither its status nor its time: its event does.
        new("dd");
        land(&st, "dd", "0");
        let gate = |status: &str, event: Option<&str>| {
            let mut w = vec![Write::Land(Landing {
                key: "1".into(),
                step_hash: "gate".into(),
                landed: Landed::Value(serde_json::json!({ "status": status })),
            })];
            w.extend(event.map(|e| Write::Event(e.to_string())));
            st.record("dd", &w).unwrap_or_else(|e| panic!("{e}"));
        };
        gate("pending", None);
        st.record("dd", &[Write::Status("paused".into())])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(by_id(&list(&mut cache))[2], row("dd", "paused", 1, 4));
        gate(
            "approved",
            Some(r#"{"event":"approval_decided","key":"1","decision":"approved","at_ms":5}"#),
        );
        assert_eq!(by_id(&list(&mut cache))[2], row("dd", "paused", 2, 4));
        st.remove("dd").unwrap_or_else(|e| panic!("{e}"));
        // The list's document is each row's JSON, in order.
        let rows = list(&mut cache);
        let doc: serde_json::Value =
            serde_json::from_str(&document(&rows, None)).unwrap_or_else(|e| panic!("{e}"));
        let expected: Vec<serde_json::Value> = rows.iter().map(|r| r.row.to_json()).collect();
        assert_eq!(doc, serde_json::json!({ "runs": expected }));
        let failed: serde_json::Value = serde_json::from_str(&document(&rows, Some("failed")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(failed["runs"].as_array().map(Vec::len), Some(1));
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
