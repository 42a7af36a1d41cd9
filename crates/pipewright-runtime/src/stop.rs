//! `pipewright cancel RUN_ID` on the local engine, and the UI's cancel: the same as Ctrl-C in
//! the process running the run. That process owns the run's lock file, which holds its pid; it
//! gets SIGINT (not its process group: it stops its own children, as on Ctrl-C), records the
//! run `cancelled` and exits, and `pipewright run --resume RUN_ID` continues it.

use crate::store::{check_run_id, SqliteStore, Store, StoreError};

/// Why a cancel was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CancelError {
    /// No live process runs it (finished, paused, interrupted, or never started here).
    #[error("run {run_id} is not running ({status}): there is nothing to cancel")]
    NotRunning { run_id: String, status: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The owner could not be signalled.
    #[error("cannot signal process {pid}, which runs {run_id}: {reason}")]
    Signal {
        run_id: String,
        pid: u32,
        reason: String,
    },
}

/// Sends SIGINT to the process that owns `run_id` now, after checking that it does hold the
/// run's lock; returns the sentence to print.
pub fn cancel_local(store: &SqliteStore, run_id: &str) -> Result<String, CancelError> {
    check_run_id(run_id)?;
    let Some(pid) = store.owner_pid(run_id)? else {
        let record = store.load_run(run_id)?;
        let status = match record.status.as_str() {
            // Recorded running but owned by nobody: its process was killed.
            "running" => "interrupted".to_string(),
            s => s.to_string(),
        };
        return Err(CancelError::NotRunning {
            run_id: run_id.to_string(),
            status,
        });
    };
    interrupt(pid).map_err(|reason| CancelError::Signal {
        run_id: run_id.to_string(),
        pid,
        reason,
    })?;
    Ok(format!(
        "cancelling run {run_id} (SIGINT to process {pid}, as Ctrl-C there); `pipewright run --resume {run_id}` continues it"
    ))
}

#[cfg(unix)]
fn interrupt(pid: u32) -> Result<(), String> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| "not a process id".to_string())?;
    // SAFETY: kill(2) with a positive pid signals that one process only.
    if unsafe { libc::kill(pid, libc::SIGINT) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

#[cfg(not(unix))]
fn interrupt(_: u32) -> Result<(), String> {
    Err("cancelling a run needs a Unix system".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewRun;

    fn store_with_run() -> (tempfile::TempDir, SqliteStore, String) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let st = SqliteStore::open(&dir.path().join("runs.db")).unwrap_or_else(|e| panic!("{e}"));
        let run_id = crate::store::new_run_id();
        st.create_run(&NewRun {
            run_id: run_id.clone(),
            file: "f.yaml".into(),
            workflow: "w".into(),
            source_hash: String::new(),
            input: serde_json::json!({}),
        })
        .unwrap_or_else(|e| panic!("{e}"));
        (dir, st, run_id)
    }

    #[test]
    fn a_run_nobody_owns_is_not_signalled() {
        let (_d, st, id) = store_with_run();
        // Recorded running, no owner: interrupted.
        let e = cancel_local(&st, &id).err();
        assert_eq!(
            e,
            Some(CancelError::NotRunning {
                run_id: id.clone(),
                status: "interrupted".into()
            })
        );
    }

    #[test]
    fn a_stale_pid_in_a_lock_file_nobody_holds_is_not_signalled() {
        let (d, st, id) = store_with_run();
        let locks = d.path().join("runs.db.locks");
        std::fs::create_dir_all(&locks).unwrap_or_else(|e| panic!("{e}"));
        // pid 1 exists but holds no lock: signalling it would be a disaster.
        std::fs::write(locks.join(&id), "1").unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            cancel_local(&st, &id),
            Err(CancelError::NotRunning { .. })
        ));
    }

    #[test]
    fn the_owner_is_found_only_while_it_holds_the_lock() {
        let (_d, st, id) = store_with_run();
        // This process owns it: its own pid is never returned (it would signal itself).
        let lock = st.lock_run(&id).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(st.owner_pid(&id), Ok(None));
        drop(lock);
        assert_eq!(st.owner_pid(&id), Ok(None));
        assert!(matches!(
            cancel_local(&st, "not/a run"),
            Err(CancelError::Store(StoreError::BadRunId(_)))
        ));
    }
}
