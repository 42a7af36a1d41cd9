//! What the UI reads from the run store, in a few set-wide queries: the runs page of 10,000
//! runs is three statements, never a query per run. It reads through a connection of its own
//! and writes nothing (decisions and cancels go through `SqliteStore` and the shared code).

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// One run as the store has it, with its usage summed.
#[derive(Debug, Clone)]
pub(crate) struct RunRecordRow {
    pub seq: i64,
    pub run_id: String,
    pub status: String,
    pub file: String,
    pub workflow: String,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub usage: Option<Json>,
}

/// What tells whether a run's row may have changed since the last list.
#[derive(Debug, Clone)]
pub(crate) struct RunStamp {
    pub seq: i64,
    pub status: String,
    pub updated_ms: i64,
    pub file: String,
    /// Its last transaction's events (a paused run's gate decided changes neither its status
    /// nor its `updated_ms`, but records an event with its landing).
    pub last_event: Option<i64>,
}

/// Which runs a read is of.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Which<'a> {
    All,
    /// The run with this id.
    Id(&'a str),
    /// The runs with these sequence numbers.
    Seqs(&'a [i64]),
}

/// Per run, the first segment of each landed key (`2` of `2.for_each.0`), and whether the key
/// itself landed (`own`): what "steps done" is computed from. A state machine's turns count
/// for the step they ran (`state.step` of the turn's landing).
pub(crate) type Tops = HashMap<i64, Vec<(String, bool)>>;

pub(crate) struct Db {
    conn: Connection,
}

fn err(e: rusqlite::Error) -> String {
    format!("the run store: {e}")
}

impl Db {
    /// Opens the store for reading; `None` while it does not exist yet (no run was recorded).
    pub(crate) fn open(path: &Path) -> Result<Option<Db>, String> {
        if !path.exists() {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(err)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(err)?;
        Ok(Some(Db { conn }))
    }

    /// A store written by a pipewright older than the usage table is read without usage.
    fn has_usage(&self) -> bool {
        self.conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'usage'",
                [],
                |_| Ok(()),
            )
            .optional()
            .ok()
            .flatten()
            .is_some()
    }

    /// Runs `f` on one snapshot of the store (a read transaction), so what it reads in
    /// several statements agrees.
    pub(crate) fn snapshot<T>(
        &self,
        f: impl FnOnce(&Db) -> Result<T, String>,
    ) -> Result<T, String> {
        self.conn.execute_batch("BEGIN").map_err(err)?;
        let out = f(self);
        // A read transaction: ending it cannot lose anything.
        let _ = self.conn.execute_batch("COMMIT");
        out
    }

    /// Every run's stamp, newest first: what tells a run whose row may have changed.
    pub(crate) fn stamps(&self) -> Result<Vec<RunStamp>, String> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, status, updated_ms, file,
                        (SELECT MAX(e.id) FROM events e WHERE e.run = r.seq)
                 FROM runs r ORDER BY created_ms DESC, id DESC",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunStamp {
                    seq: r.get(0)?,
                    status: r.get(1)?,
                    updated_ms: r.get(2)?,
                    file: r.get(3)?,
                    last_event: r.get(4)?,
                })
            })
            .map_err(err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(err)
    }

    /// The runs `which` names, newest first.
    pub(crate) fn runs(&self, which: Which<'_>) -> Result<Vec<RunRecordRow>, String> {
        // Integers only, so a list of them is written into the statement as it is.
        let seqs = |col: &str, seqs: &[i64]| {
            let list: Vec<String> = seqs.iter().map(i64::to_string).collect();
            format!("WHERE {col} IN ({})", list.join(","))
        };
        let usage_filter = match which {
            Which::Seqs(s) => seqs("run", s),
            _ => String::new(),
        };
        let usage = if self.has_usage() {
            format!(
                "LEFT JOIN (
                     SELECT run, COUNT(*) AS calls,
                            SUM(json_extract(value, '$.input_tokens')) AS input,
                            SUM(json_extract(value, '$.output_tokens')) AS output,
                            SUM(json_extract(value, '$.cost_usd')) AS cost,
                            SUM(json_extract(value, '$.wall_ms')) AS wall
                     FROM usage {usage_filter} GROUP BY run
                 ) u ON u.run = r.seq"
            )
        } else {
            "LEFT JOIN (SELECT NULL AS run, NULL AS calls, NULL AS input, NULL AS output, NULL AS cost, NULL AS wall) u ON 0".into()
        };
        let filter = match which {
            Which::All => String::new(),
            Which::Id(_) => "WHERE r.id = ?1".into(),
            Which::Seqs(s) => seqs("r.seq", s),
        };
        let sql = format!(
            "SELECT r.seq, r.id, r.status, r.file, r.workflow, r.created_ms, r.updated_ms,
                    u.calls, u.input, u.output, u.cost, u.wall
             FROM runs r {usage} {filter}
             ORDER BY r.created_ms DESC, r.id DESC"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(err)?;
        let map = |r: &rusqlite::Row<'_>| {
            let calls: Option<i64> = r.get(7)?;
            let usage = calls.filter(|n| *n > 0).map(|n| {
                serde_json::json!({
                    "input_tokens": r.get::<_, Option<i64>>(8).ok().flatten(),
                    "output_tokens": r.get::<_, Option<i64>>(9).ok().flatten(),
                    "cost_usd": r.get::<_, Option<f64>>(10).ok().flatten(),
                    "agent_calls": n,
                    "wall_ms": r.get::<_, Option<f64>>(11).ok().flatten().unwrap_or(0.0),
                })
            });
            Ok(RunRecordRow {
                seq: r.get(0)?,
                run_id: r.get(1)?,
                status: r.get(2)?,
                file: r.get(3)?,
                workflow: r.get(4)?,
                created_ms: r.get(5)?,
                updated_ms: r.get(6)?,
                usage,
            })
        };
        let rows = match which {
            Which::Id(id) => stmt.query_map([id], map),
            _ => stmt.query_map([], map),
        }
        .map_err(err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(err)
    }

    /// The landed keys' first segments of every run (`only`: of those runs), in one scan.
    pub(crate) fn tops(&self, only: Option<&[i64]>) -> Result<Tops, String> {
        // Integers only, so the list is written into the statement as it is.
        let filter = match only {
            Some(seqs) => format!(
                "AND run IN ({})",
                seqs.iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            None => String::new(),
        };
        let sql = format!(
            "SELECT run, top, MAX(own) FROM (
                 SELECT run,
                        CASE WHEN instr(key, '.') > 0 THEN substr(key, 1, instr(key, '.') - 1)
                             ELSE key END AS top,
                        -- a gate that still waits has landed its request, not its passing
                        instr(key, '.') = 0
                            AND NOT (step_hash = 'gate' AND json_extract(value, '$.status') = 'pending') AS own
                 FROM landings WHERE key NOT LIKE 'turn.%' {filter}
                 UNION ALL
                 SELECT run, json_extract(value, '$.state.step'), 1
                 FROM landings WHERE key LIKE 'turn.%' AND json_valid(value) {filter}
             ) WHERE top IS NOT NULL GROUP BY run, top"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, bool>(2)?,
                ))
            })
            .map_err(err)?;
        let mut out: Tops = HashMap::new();
        for row in rows {
            let (run, top, own) = row.map_err(err)?;
            out.entry(run).or_default().push((top, own));
        }
        Ok(out)
    }

    /// The run's event lines past the first `after` (each line's sequence number is its
    /// 1-based position in the run's log), with `run_id` back in, as `runs events` prints them.
    pub(crate) fn events_after(
        &self,
        seq: i64,
        run_id: &str,
        created_ms: i64,
        after: u64,
    ) -> Result<Vec<(u64, String)>, String> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT lines FROM events WHERE run = ?1 ORDER BY id")
            .map_err(err)?;
        let rows = stmt
            .query_map([seq], |r| r.get::<_, String>(0))
            .map_err(err)?;
        let mut n = 0u64;
        let mut out = Vec::new();
        for chunk in rows {
            let chunk = chunk.map_err(err)?;
            for line in chunk.lines() {
                n += 1;
                if n > after {
                    let line = pipewright_runtime::store::on_run_clock(line, created_ms);
                    out.push((n, pipewright_runtime::store::with_run_id(&line, run_id)));
                }
            }
        }
        Ok(out)
    }

    /// The run's landings: key → (value, or the error that dropped it).
    pub(crate) fn landings(&self, seq: i64) -> Result<Vec<(String, Json, Option<String>)>, String> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT key, value, dropped FROM landings WHERE run = ?1 ORDER BY rowid",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([seq], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                ))
            })
            .map_err(err)?;
        let mut out = Vec::new();
        for row in rows {
            let (key, value, dropped) = row.map_err(err)?;
            let value = value
                .and_then(|v| serde_json::from_str(&v).ok())
                .unwrap_or(Json::Null);
            out.push((key, value, dropped));
        }
        Ok(out)
    }

    /// The run's error (how it failed), if it recorded one.
    pub(crate) fn run_error(&self, seq: i64) -> Result<Option<Json>, String> {
        self.conn
            .query_row("SELECT error FROM runs WHERE seq = ?1", [seq], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()
            .map_err(err)
            .map(|e| e.flatten().and_then(|t| serde_json::from_str(&t).ok()))
    }
}
