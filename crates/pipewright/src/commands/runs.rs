//! `pipewright runs`: the run store seen from the command line.

use crate::cli::{RunFormat, RunsAction, RunsArgs};
use crate::exit::ExitStatus;
use pipewright_runtime::approval::Decision;
use pipewright_runtime::store::{SqliteStore, Store};
use pipewright_runtime::ProjectConfig;
use serde_json::json;
use std::path::{Path, PathBuf};

/// The directory a run store belongs to, found from `start` (a workflow file for `run FILE`,
/// the working directory for every other verb): the directory of the nearest
/// `pipewright.toml`, else the nearest git root (a directory holding `.git`), else `cwd`.
pub(crate) fn project_root(start: &Path, cwd: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(start).unwrap_or_else(|_| cwd.to_path_buf());
    let dir = if abs.is_file() {
        abs.parent().map(Path::to_path_buf).unwrap_or(abs)
    } else {
        abs
    };
    if let Some(root) = ProjectConfig::find(&dir).and_then(|p| p.parent().map(PathBuf::from)) {
        return root;
    }
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map_or_else(|| cwd.to_path_buf(), Path::to_path_buf)
}

/// The run store, as a full path: `PIPEWRIGHT_STORE` when set, else `[store] path` of the
/// project's pipewright.toml, else `.pipewright/runs.db` in the project root
/// ([`project_root`]), so `approve` from a subdirectory finds the runs `run` recorded at the
/// root.
pub(crate) fn store_path(start: &Path, cwd: &Path) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("PIPEWRIGHT_STORE").filter(|p| !p.is_empty()) {
        return Ok(cwd.join(p));
    }
    let root = project_root(start, cwd);
    let cfg = ProjectConfig::load(&root)?;
    Ok(cfg
        .store_path
        .unwrap_or_else(|| root.join(".pipewright").join("runs.db")))
}

/// Where MEOW runs keep their directories (`<dir>/<run-id>/`: the orchestrator socket):
/// `runs/` next to the store, so whoever finds the store finds a live run's socket.
pub(crate) fn runs_dir(store: &Path) -> PathBuf {
    store
        .parent()
        .map_or_else(|| PathBuf::from("runs"), |d| d.join("runs"))
}

/// Opens the store, creating it when needed (a run that records).
pub(crate) fn open_store(path: &Path) -> Result<SqliteStore, String> {
    SqliteStore::open(path)
}

/// Opens a store that must exist already: the verbs that only read or decide never leave an
/// empty store behind.
pub(crate) fn open_existing(path: &Path, what: &str) -> Result<SqliteStore, String> {
    if !path.exists() {
        return Err(format!(
            "{what}: the run store {} does not exist (no run was recorded in this project; `PIPEWRIGHT_STORE` names another store)",
            path.display()
        ));
    }
    SqliteStore::open(path)
}

fn cwd() -> Result<PathBuf, ExitStatus> {
    std::env::current_dir().map_err(|e| {
        errln!("error: no working directory: {e}");
        ExitStatus::COULD_NOT_START
    })
}

pub(crate) fn run(args: &RunsArgs) -> ExitStatus {
    let cwd = match cwd() {
        Ok(d) => d,
        Err(code) => return code,
    };
    match super::engine::chosen(&args.engine, None) {
        Ok(Some(engine)) => return super::engine::runs(args, engine),
        Ok(None) => {}
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    }
    let path = match store_path(&cwd, &cwd) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    // `runs` never creates a store where there is none.
    if !path.exists() {
        return match &args.action {
            None => {
                match args.format {
                    RunFormat::Json => outln!("[]"),
                    RunFormat::Human => errln!("no runs yet ({} does not exist)", path.display()),
                }
                ExitStatus::OK
            }
            Some(RunsAction::Show { id } | RunsAction::Events { id }) => {
                errln!("error: no run {id}: {} does not exist", path.display());
                ExitStatus::FAILED
            }
            Some(RunsAction::Rm { id, .. }) => match id {
                Some(id) => {
                    errln!("error: no run {id}: {} does not exist", path.display());
                    ExitStatus::FAILED
                }
                None => ExitStatus::OK,
            },
        };
    }
    let store = match SqliteStore::open(&path) {
        Ok(s) => s,
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    act(&store, args)
}

/// `runs [show|events|rm]` on `store`.
pub(crate) fn act(store: &dyn Store, args: &RunsArgs) -> ExitStatus {
    let result = match &args.action {
        None => list(store, args.format),
        Some(RunsAction::Show { id }) => store.state(id).map_err(String::from).map(|s| {
            outln!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
        }),
        Some(RunsAction::Events { id }) => store.events(id).map_err(String::from).map(|lines| {
            for l in lines {
                outln!("{l}");
            }
        }),
        Some(RunsAction::Rm { id: Some(id), .. }) => {
            store.remove(id).map_err(String::from).map(|()| {
                errln!("removed run {id}");
            })
        }
        Some(RunsAction::Rm {
            id: None,
            older_than: Some(dur),
        }) => remove_older(store, dur),
        Some(RunsAction::Rm { .. }) => Err("give a run id or --older-than DUR".into()),
    };
    match result {
        Ok(()) => ExitStatus::OK,
        Err(e) => {
            errln!("error: {e}");
            ExitStatus::FAILED
        }
    }
}

fn list(store: &dyn Store, format: RunFormat) -> Result<(), String> {
    let runs = store.list_runs()?;
    match format {
        RunFormat::Json => {
            let v: Vec<serde_json::Value> = runs
                .iter()
                .map(|r| {
                    json!({
                        "run_id": r.run_id,
                        "status": r.status,
                        "file": r.file,
                        "workflow": r.workflow,
                        "created_ms": r.created_ms,
                        "updated_ms": r.updated_ms,
                        "in_progress": r.status == "running" && store.is_owned(&r.run_id),
                        "usage": (r.usage.agent_calls > 0).then(|| r.usage.to_json()),
                    })
                })
                .collect();
            outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
        RunFormat::Human => {
            if runs.is_empty() {
                errln!("no runs yet");
            }
            for r in &runs {
                // A `running` run without a live owner was killed: say so, it needs --resume.
                let status = if r.status == "running" && !store.is_owned(&r.run_id) {
                    "interrupted"
                } else {
                    &r.status
                };
                // What its agent calls cost: `-` none made, `?` none priced.
                let cost = match (r.usage.agent_calls, r.usage.cost_usd) {
                    (0, _) => "-".to_string(),
                    (_, None) => "?".to_string(),
                    (_, Some(c)) => format!("${c:.4}"),
                };
                outln!(
                    "{}  {:<11}  {}  {:>9}  {} ({})",
                    r.run_id,
                    status,
                    utc(r.created_ms),
                    cost,
                    r.file,
                    r.workflow
                );
            }
        }
    }
    Ok(())
}

fn remove_older(store: &dyn Store, dur: &str) -> Result<(), String> {
    let ms = parse_duration_ms(dur)?;
    let cutoff = pipewright_runtime::store::now_ms().saturating_sub(ms);
    let mut removed = 0;
    let mut skipped = Vec::new();
    for r in store.list_runs()? {
        if r.updated_ms >= cutoff {
            continue;
        }
        // A run in progress is refused by `remove` (it is owned); the others still go.
        match store.remove(&r.run_id) {
            Ok(()) => removed += 1,
            Err(e) => skipped.push(e.to_string()),
        }
    }
    errln!(
        "removed {removed} run{} last active more than {dur} ago",
        if removed == 1 { "" } else { "s" }
    );
    if skipped.is_empty() {
        Ok(())
    } else {
        Err(skipped.join("\n"))
    }
}

/// `90s`, `30m`, `12h`, `7d`, `2w` in milliseconds.
pub(crate) fn parse_duration_ms(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let bad = || format!("`{text}` is not a duration (write e.g. 90s, 30m, 12h, 7d, 2w)");
    let split = t.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (n, unit) = t.split_at(split);
    let n: i64 = n.parse().map_err(|_| bad())?;
    let unit_ms: i64 = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 604_800_000,
        _ => return Err(bad()),
    };
    n.checked_mul(unit_ms).ok_or_else(bad)
}

/// `2026-11-25 13:29:47Z` from milliseconds since the epoch.
fn utc(ms: i64) -> String {
    let (y, m, d, hh, mm, ss) = pipewright_runtime::store::utc_parts(ms);
    format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}Z")
}

/// `pipewright approve|deny RUN_ID [--step STEP]`: decides the approval the run waits for,
/// where its dialect keeps it (`Runtime::decide`: a paused recipe run's gate in the store,
/// then `run --resume`; a live MEOW run's approval step over its socket, and it goes on).
pub(crate) fn decide(
    id: &str,
    step: Option<&str>,
    d: &Decision,
    engine: &crate::cli::EngineArgs,
) -> ExitStatus {
    let cwd = match cwd() {
        Ok(d) => d,
        Err(code) => return code,
    };
    match super::engine::chosen(engine, None) {
        Ok(Some(engine)) => return super::engine::decide(id, step, d, engine),
        Ok(None) => {}
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    }
    let path = match store_path(&cwd, &cwd) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    let store = match open_existing(&path, &format!("no run {id}")) {
        Ok(s) => s,
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::FAILED;
        }
    };
    match pipewright_registry::decide_local(&store, &runs_dir(&path), id, step, d) {
        Ok(line) => {
            outln!("{line}");
            ExitStatus::OK
        }
        Err((code, message)) => {
            errln!("error: {message}");
            ExitStatus::of_dialect(code)
        }
    }
}

/// The decision, by the dialect whose run it is, whichever engine keeps it
/// ([`pipewright_registry::decide`], which `pipewright ui` calls too).
pub(crate) fn decide_recorded(
    run: &pipewright_dialect::RecordedRun<'_>,
    step: Option<&str>,
    d: &Decision,
) -> pipewright_dialect::Decided {
    pipewright_registry::decide(run, step, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("90s"), Ok(90_000));
        assert_eq!(parse_duration_ms("7d"), Ok(7 * 86_400_000));
        assert!(parse_duration_ms("7").is_err());
        assert!(parse_duration_ms("d").is_err());
        assert!(parse_duration_ms("3y").is_err());
        assert!(parse_duration_ms("99999999999999999999w").is_err());
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00Z");
        assert_eq!(utc(951_827_696_000), "2000-02-29 12:34:56Z");
        assert_eq!(utc(1_795_000_000_000), "2026-11-18 11:06:40Z");
    }
}
