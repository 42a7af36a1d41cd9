//! What a run of every dialect shares, whatever executes its steps: the options it starts
//! with, the checks a resume must pass, the run's lock, and the recorder that lands step
//! results and events in the run store. Each dialect's runtime drives these with its own
//! semantics; a second durable engine (issue 24) plugs in under the same calls: `Store`
//! (lock, create, load, record) and the [`Recorder`] that batches landings.

use crate::backend::{mock::MockBackend, AgentBackend};
use crate::cancel::CancelToken;
use crate::codes;
use crate::config::ProjectConfig;
use crate::failure::RunError;
use crate::outcome::RunOutcome;
use crate::outcome::RunStatus;
use crate::store::{self, Event, EventSink, RunLock, Store, StoreError, Write};
use crate::tools::Tools;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Operator caps (`[safety.spawn]`); 0 means unlimited.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub max_fan_out_depth: u64,
    pub max_spawns: u64,
    /// `[run] max_call_depth`: how many `call`/`match` frames may nest (default 64).
    pub max_call_depth: u64,
    /// `[run] max_eval_steps` / `max_eval_bytes`: the budget of each expression evaluation.
    pub eval: pipewright_r1::Limits,
}

impl Default for Caps {
    fn default() -> Caps {
        Caps {
            max_fan_out_depth: 5,
            max_spawns: 100,
            max_call_depth: pipewright_project::DEFAULT_MAX_CALL_DEPTH,
            eval: pipewright_r1::Limits::default(),
        }
    }
}

pub struct RunOptions {
    /// The workflow to run; `None`: the first pipeline of the first file.
    pub workflow: Option<String>,
    /// The initial named stores: a JSON object, or null for none.
    pub input: serde_json::Value,
    pub backend: Arc<dyn AgentBackend>,
    pub tools: Tools,
    pub caps: Caps,
    /// Where runs are recorded; `None` runs without a store (no resume).
    pub store: Option<Arc<dyn Store>>,
    /// Resume this run from `store`: its input is reused and landed steps are replayed.
    pub resume: Option<String>,
    /// Resume even though the source changed since the run started: a landing is replayed only
    /// into a step with the same key and the same content hash.
    pub force: bool,
    /// The file name recorded with the run (what `--resume` reloads).
    pub file_label: String,
    pub cancel: CancelToken,
    pub sinks: Vec<Arc<dyn EventSink>>,
    /// The invoker's identity, used by agent steps without `identity:`.
    pub identity: String,
    /// The invoker's tool envelope; agent capabilities are narrowed to it. `None`: every tool.
    pub envelope: Option<Vec<String>>,
    /// `for_each` concurrency when `max_parallel` is omitted (capped by the item count).
    pub default_max_parallel: usize,
    /// The workflow file: a recipe's sub-recipe paths are relative to its directory.
    pub source_path: Option<PathBuf>,
    /// Approval gates ask on the terminal (stdin and stderr are one) instead of pausing.
    pub interactive: bool,
    /// The project's `pipewright.toml` (the defaults when there is none): a dialect's runtime
    /// reads its own section from it (MEOW's `[meow]` limits).
    pub config: Arc<ProjectConfig>,
    /// The run may listen on a socket in its run directory for its steps to report over (a
    /// MEOW run's orchestrator socket).
    pub channel: bool,
    /// The `pipewright` executable, for steps that call back into it: it answers `meow …` (the
    /// MEOW reference's command name) when called `meow`. `None`: only `pipewright meow` works
    /// there.
    pub self_exe: Option<PathBuf>,
    /// Where a MEOW run keeps its directory (`<runs_dir>/<run-id>/`: the orchestrator socket,
    /// the `meow` link). The CLI puts it next to the run store, so every command that finds
    /// the store finds a run's socket; `None`: `<workdir>/.pipewright/runs`.
    pub runs_dir: Option<PathBuf>,
}

impl RunOptions {
    /// Defaults: mock backend, built-in tools in `workdir`, default caps, no store.
    pub fn new(workdir: PathBuf) -> RunOptions {
        RunOptions {
            workflow: None,
            input: serde_json::Value::Null,
            backend: Arc::new(MockBackend),
            tools: Tools::new(workdir),
            caps: Caps::default(),
            store: None,
            resume: None,
            force: false,
            file_label: String::new(),
            cancel: CancelToken::new(),
            sinks: Vec::new(),
            identity: "pipewright".into(),
            envelope: None,
            default_max_parallel: 8,
            source_path: None,
            interactive: false,
            config: Arc::new(ProjectConfig::default()),
            channel: false,
            self_exe: None,
            runs_dir: None,
        }
    }
}

/// The run's connection to its store.
///
/// The landing of a step with side effects (shell, tool, agent) commits at once, with everything
/// staged before it, and a step with side effects starts only after everything before it has
/// committed. The landings of pure steps (transforms, and the results of calls, matches and
/// fan-outs, whose inner steps land on their own) are staged and handed to a writer thread in
/// batches of at most `MAX_STAGED` writes or `MAX_STAGE_DELAY` old, which commits them while the
/// run goes on: losing one to a crash only means computing it again, and a 10,000-item transform
/// fan-out is a few transactions instead of 10,000. Either way a landing and its
/// `step_completed` commit together, and the writer reports the completion to the event sinks
/// only after that commit. Batches commit in the order they were staged; once one fails, every
/// later one fails with it, and the run stops at its next step with side effects (or its end).
pub struct Recorder {
    store: Arc<dyn Store>,
    staged: Mutex<Staged>,
    /// The first failed commit, as the writer saw it.
    failed: Arc<Mutex<Option<String>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Held for the whole run: a second process cannot resume it meanwhile.
    _lock: Box<dyn RunLock>,
}

struct Staged {
    writes: Vec<Write>,
    /// Completions to report once their landings have committed.
    done: Vec<Event>,
    since: Option<Instant>,
    /// To the writer; `None` once closed.
    jobs: Option<std::sync::mpsc::Sender<Job>>,
}

struct Job {
    writes: Vec<Write>,
    done: Vec<Event>,
    reply: Option<std::sync::mpsc::SyncSender<Result<(), String>>>,
    /// Committed even after a failed commit: the run's final status.
    last: bool,
}

const MAX_STAGED: usize = 4096;
const MAX_STAGE_DELAY: std::time::Duration = std::time::Duration::from_millis(250);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Recorder {
    pub fn new(
        store: Arc<dyn Store>,
        run_id: String,
        lock_: Box<dyn RunLock>,
        sinks: Arc<Vec<Arc<dyn EventSink>>>,
    ) -> Result<Recorder, String> {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let failed = Arc::new(Mutex::new(None));
        let writer = {
            let store = store.clone();
            let failed = failed.clone();
            std::thread::Builder::new()
                .name("pipewright-store".into())
                .spawn(move || writer_loop(&*store, &run_id, &rx, &sinks, &failed))
                .map_err(|e| format!("cannot start the store writer: {e}"))?
        };
        Ok(Recorder {
            store,
            staged: Mutex::new(Staged {
                writes: Vec::new(),
                done: Vec::new(),
                since: None,
                jobs: Some(tx),
            }),
            failed,
            writer: Mutex::new(Some(writer)),
            _lock: lock_,
        })
    }

    /// Stages an event that reports nothing landed (started, failed, replayed, cancelled).
    pub fn stage_event(&self, line: String) {
        let mut st = lock(&self.staged);
        st.writes.push(Write::Event(line));
        st.since.get_or_insert_with(Instant::now);
    }

    /// Stages `writes` (and the completion they report). With `now`, commits everything staged
    /// and waits for the commit (and for the completions to be reported); otherwise hands a
    /// full or old batch to the writer without waiting.
    pub fn stage(&self, writes: Vec<Write>, done: Option<Event>, now: bool) -> Result<(), String> {
        self.send(writes, done, now, false)
    }

    /// Commits the run's final status. After a failed commit this is still tried (with the
    /// events staged since), so the store says `failed` when it can.
    pub fn finish(&self, fin: store::Finish) -> Result<(), String> {
        self.send(vec![Write::Finish(fin)], None, true, true)
    }

    fn send(
        &self,
        writes: Vec<Write>,
        done: Option<Event>,
        now: bool,
        last: bool,
    ) -> Result<(), String> {
        if !last {
            if let Some(e) = lock(&self.failed).clone() {
                return Err(e);
            }
        }
        let mut st = lock(&self.staged);
        st.writes.extend(writes);
        st.done.extend(done);
        let since = *st.since.get_or_insert_with(Instant::now);
        if !(now || st.writes.len() >= MAX_STAGED || since.elapsed() >= MAX_STAGE_DELAY) {
            return Ok(());
        }
        let (reply, answer) = if now {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let job = Job {
            writes: std::mem::take(&mut st.writes),
            done: std::mem::take(&mut st.done),
            reply,
            last,
        };
        st.since = None;
        // Sent under the lock: batches reach the writer in the order they were staged.
        let sent = st.jobs.as_ref().is_some_and(|tx| tx.send(job).is_ok());
        drop(st);
        if !sent {
            return Err(format!(
                "the run store {}: its writer stopped",
                self.store.describe()
            ));
        }
        match answer {
            Some(rx) => rx.recv().unwrap_or_else(|_| {
                Err(format!(
                    "the run store {}: its writer stopped",
                    self.store.describe()
                ))
            }),
            None => Ok(()),
        }
    }

    /// Commits whatever is staged (nothing to do when nothing is).
    pub fn flush(&self) -> Result<(), String> {
        if lock(&self.staged).writes.is_empty() {
            return lock(&self.failed).clone().map_or(Ok(()), Err);
        }
        self.send(Vec::new(), None, true, false)
    }

    /// The store, as messages name it.
    pub fn describe(&self) -> String {
        self.store.describe()
    }

    /// The first commit that failed, if one did.
    pub fn failed(&self) -> Option<String> {
        lock(&self.failed).clone()
    }

    /// Stops the writer once it has committed everything handed to it.
    pub fn close(&self) {
        lock(&self.staged).jobs = None;
        if let Some(h) = lock(&self.writer).take() {
            let _ = h.join();
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.close();
    }
}

fn writer_loop(
    store: &dyn Store,
    run_id: &str,
    rx: &std::sync::mpsc::Receiver<Job>,
    sinks: &[Arc<dyn EventSink>],
    failed: &Mutex<Option<String>>,
) {
    while let Ok(first) = rx.recv() {
        // Whatever queued up meanwhile goes in the same transaction.
        let mut jobs = vec![first];
        while let Ok(j) = rx.try_recv() {
            jobs.push(j);
        }
        // After a failed commit only the final status goes in (the batches after the failed
        // one must not land without it).
        let earlier = lock(failed).clone();
        let writes: Vec<Write> = jobs
            .iter_mut()
            .filter(|j| earlier.is_none() || j.last)
            .flat_map(|j| std::mem::take(&mut j.writes))
            .collect();
        let result = match (&earlier, writes.is_empty()) {
            (Some(e), true) => Err(e.clone()),
            _ => store
                .record(run_id, &writes)
                .map_err(String::from)
                .and(earlier.map_or(Ok(()), Err)),
        };
        match &result {
            Ok(()) => {
                for e in jobs.iter().flat_map(|j| &j.done) {
                    for s in sinks {
                        s.event(e);
                    }
                }
            }
            Err(e) => {
                lock(failed).get_or_insert_with(|| e.clone());
            }
        }
        for j in jobs {
            if let Some(r) = j.reply {
                let _ = r.send(result.clone());
            }
        }
    }
}

/// The run's recorder, or `None` without a store: a resumed run (whose lock `lock` already
/// holds) is marked running again; a new one is locked, then created.
pub fn open_recorder(
    store: Option<&Arc<dyn Store>>,
    lock: Option<Box<dyn RunLock>>,
    new: store::NewRun,
    sinks: Arc<Vec<Arc<dyn EventSink>>>,
) -> Result<Option<Recorder>, String> {
    let Some(st) = store else { return Ok(None) };
    let l = match lock {
        Some(l) => {
            st.record(&new.run_id, &[Write::Status("running".into())])?;
            l
        }
        None => {
            let l = st.lock_run(&new.run_id)?;
            st.create_run(&new)?;
            l
        }
    };
    Recorder::new(st.clone(), new.run_id.clone(), l, sinks).map(Some)
}

/// What a resume asks for: the run, and what it must be running.
pub struct ResumeOf<'a> {
    pub id: &'a str,
    /// The sources, named in the refusal ("the pipeline files", "the recipe").
    pub what: &'a str,
    /// What the workflow is to the user ("pipeline", "recipe", "workflow").
    pub kind: &'a str,
    /// The workflow asked for, when one was: the run must be running it.
    pub workflow: Option<&'a str>,
}

/// Why a run cannot be resumed. Typed, so that a caller (a durable engine, a retry) can tell
/// a run another process owns (`Store(StoreError::Busy)`) from one that must not be resumed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    #[error("--resume needs a run store")]
    NoStore,
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The run was started on another workflow of the file.
    #[error("run {id} runs {kind} `{recorded}`; it cannot be resumed as {kind} `{asked}`")]
    OtherWorkflow {
        id: String,
        kind: String,
        recorded: String,
        asked: String,
    },
    #[error("run {id} keeps the input it started with; --input cannot be given with --resume")]
    InputGiven { id: String },
    /// The sources' hash differs from the recorded one (and `--force` was not given).
    #[error("{what} changed since run {id} started; resuming would mix results of two versions. Restore them, or pass --force to replay only the steps whose content did not change")]
    SourcesChanged { id: String, what: String },
}

impl From<ResumeError> for String {
    fn from(e: ResumeError) -> String {
        e.to_string()
    }
}

/// The record of a run to resume, owned by this process, after the checks every dialect makes:
/// a store, a well-formed id, the same workflow, no new input, and the same sources (unless
/// `--force`).
pub fn resume_record(
    store: Option<&Arc<dyn Store>>,
    force: bool,
    of: ResumeOf<'_>,
    input: &serde_json::Value,
    source_hash: &str,
) -> Result<(Box<dyn RunLock>, store::RunRecord), ResumeError> {
    let ResumeOf {
        id,
        what,
        kind,
        workflow,
    } = of;
    let st = store.ok_or(ResumeError::NoStore)?;
    store::check_run_id(id)?;
    // Owner first, then read: what is read cannot change under us.
    let lock = st.lock_run(id)?;
    let rec = st.load_run(id)?;
    if let Some(w) = workflow.filter(|w| *w != rec.workflow) {
        return Err(ResumeError::OtherWorkflow {
            id: id.to_string(),
            kind: kind.to_string(),
            recorded: rec.workflow,
            asked: w.to_string(),
        });
    }
    if !input.is_null() {
        return Err(ResumeError::InputGiven { id: id.to_string() });
    }
    if rec.source_hash != source_hash && !force {
        return Err(ResumeError::SourcesChanged {
            id: id.to_string(),
            what: what.to_string(),
        });
    }
    Ok((lock, rec))
}

/// Turns the outcome into a failure of the store (unless it already failed of that).
pub fn store_failure(outcome: &mut RunOutcome, workflow: &pipewright_ir::Workflow, msg: String) {
    outcome.store_error.get_or_insert(msg.clone());
    if outcome.error.is_some() {
        // The step's own failure stays the diagnostic; the CLI reports the store's too.
        return;
    }
    outcome.status = RunStatus::Failed;
    outcome.cancelled_at = None;
    outcome.error = Some(RunError::new(
        codes::STORE,
        "",
        "run",
        workflow.span,
        format!("the run could not be recorded: {msg}"),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewRun, SqliteStore};

    fn resume(
        st: Option<&Arc<dyn Store>>,
        id: &str,
        workflow: Option<&str>,
        input: serde_json::Value,
        hash: &str,
    ) -> Result<String, ResumeError> {
        let of = ResumeOf {
            id,
            what: "the pipeline files",
            kind: "pipeline",
            workflow,
        };
        resume_record(st, false, of, &input, hash).map(|(_, rec)| rec.run_id)
    }

    /// Each refusal a resume can meet is its own variant, in the words every dialect printed.
    #[test]
    fn each_resume_refusal_is_typed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let st: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&dir.path().join("runs.db")).unwrap_or_else(|e| panic!("{e}")),
        );
        let id = store::new_run_id();
        st.create_run(&NewRun {
            run_id: id.clone(),
            file: "p.yaml".into(),
            workflow: "main".into(),
            source_hash: "h1".into(),
            input: serde_json::Value::Null,
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let null = serde_json::Value::Null;
        assert_eq!(
            resume(None, &id, None, null.clone(), "h1"),
            Err(ResumeError::NoStore)
        );
        assert!(matches!(
            resume(Some(&st), "../x", None, null.clone(), "h1"),
            Err(ResumeError::Store(StoreError::BadRunId(_)))
        ));
        let other = resume(Some(&st), &id, Some("other"), null.clone(), "h1");
        assert!(
            matches!(&other, Err(ResumeError::OtherWorkflow { recorded, asked, .. }) if recorded == "main" && asked == "other"),
            "{other:?}"
        );
        let given = resume(Some(&st), &id, None, serde_json::json!({"a": 1}), "h1");
        assert_eq!(given, Err(ResumeError::InputGiven { id: id.clone() }));
        let changed = resume(Some(&st), &id, None, null.clone(), "h2");
        assert!(
            matches!(&changed, Err(ResumeError::SourcesChanged { .. })),
            "{changed:?}"
        );
        assert!(String::from(changed.unwrap_err()).contains("pass --force"));
        assert_eq!(resume(Some(&st), &id, Some("main"), null, "h1"), Ok(id));
    }
}
