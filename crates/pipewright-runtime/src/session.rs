//! What a run of every dialect shares, whatever executes its steps: the options it starts
//! with, the checks a resume must pass, and the [`RunSession`] that owns the run while it
//! goes (its lock, the landings of earlier attempts it replays, its journal, events and
//! sinks). Each dialect's runtime drives the session with its own semantics; the engine that
//! makes the run durable sits under it as a [`Journal`] (the run store's [`Recorder`] here; a
//! durable-execution engine's journal in issue 24).

use crate::backend::{mock::MockBackend, AgentBackend};
use crate::cancel::CancelToken;
use crate::config::ProjectConfig;
pub use crate::journal::Journal;
use crate::outcome::RunOutcome;
pub use crate::recorder::Recorder;
use crate::store::{
    self, Event, EventKind, EventSink, Landed, Landing, RunLock, Store, StoreError, Write,
};
use crate::tools::Tools;
use crate::usage::Usage;
use std::collections::HashMap;
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
    /// The id of a new run, when its engine chose it before the run started (a durable engine
    /// keys its invocation by it); `None`: a new UUIDv7.
    pub run_id: Option<String>,
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
    /// The run's budgets (`--max-cost`, `--max-tokens`, `--max-agent-calls`).
    pub budgets: crate::usage::Budgets,
    /// What the run's agent calls cost, admitted against `budgets`: the runtime's backend
    /// charges it (`RunRequest::into_options` wraps the backend), the session records it.
    pub meter: Arc<crate::usage::Meter>,
    /// The `pipewright` executable, for steps that call back into it: it answers `meow …` (the
    /// MEOW reference's command name) when called `meow`. `None`: only `pipewright meow` works
    /// there.
    pub self_exe: Option<PathBuf>,
    /// Where a MEOW run keeps its directory (`<runs_dir>/<run-id>/`: the orchestrator socket,
    /// the `meow` link). The CLI puts it next to the run store, so every command that finds
    /// the store finds a run's socket; `None`: `<workdir>/.pipewright/runs`.
    pub runs_dir: Option<PathBuf>,
    /// Where the run's fan-out members run; `None`: here, in this process (see
    /// [`crate::members`]).
    pub members: Option<Arc<dyn crate::members::Members>>,
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
            run_id: None,
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
            budgets: crate::usage::Budgets::default(),
            meter: Arc::new(crate::usage::Meter::new(
                crate::usage::Budgets::default(),
                CancelToken::new(),
            )),
            self_exe: None,
            runs_dir: None,
            members: None,
        }
    }
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

/// A run about to start: a new one, or an earlier one this process now owns, with what it
/// recorded. [`Begun::open`] turns it into the running [`RunSession`].
pub struct Begun {
    pub run_id: String,
    /// The run's input: the given one, or on resume the one the run started with.
    pub input: serde_json::Value,
    /// The earlier attempts' record, on resume (its landings move into the session).
    pub resumed: Option<store::RunRecord>,
    lock: Option<Box<dyn RunLock>>,
    /// A fan-out member run apart from its run ([`Begun::joined`]): it records under the
    /// run's owner and leaves the run's status alone.
    joined: bool,
}

impl Begun {
    /// A new run (`resume` is `None`), or the run `resume` names after the checks every
    /// dialect makes ([`resume_record`]), with `opts`' store, `--force` and chosen run id.
    pub fn new(
        opts: &RunOptions,
        resume: Option<ResumeOf<'_>>,
        input: serde_json::Value,
        source_hash: &str,
    ) -> Result<Begun, ResumeError> {
        let (store, force) = (opts.store.as_ref(), opts.force);
        let Some(of) = resume else {
            return Ok(Begun {
                run_id: opts.run_id.clone().unwrap_or_else(store::new_run_id),
                input,
                resumed: None,
                lock: None,
                joined: false,
            });
        };
        let (lock, rec) = resume_record(store, force, of, &input, source_hash)?;
        Ok(Begun {
            run_id: rec.run_id.clone(),
            input: rec.input.clone(),
            resumed: Some(rec),
            lock: Some(lock),
            joined: false,
        })
    }

    /// Fan-out member `member` of run `run_id`, run apart from it (on another worker of an
    /// engine) under `lock`, which joins the run's owner rather than claiming the run: the
    /// run's landings under the member are replayed as on resume, and a write after the owner
    /// was superseded is refused. The sources must be the run's (unless `--force`).
    pub fn joined(
        opts: &RunOptions,
        run_id: &str,
        member: &str,
        lock: Box<dyn RunLock>,
        what: &str,
        source_hash: &str,
    ) -> Result<Begun, ResumeError> {
        let st = opts.store.as_ref().ok_or(ResumeError::NoStore)?;
        let rec = st.load_run_under(run_id, member)?;
        if rec.source_hash != source_hash && !opts.force {
            return Err(ResumeError::SourcesChanged {
                id: run_id.to_string(),
                what: what.to_string(),
            });
        }
        Ok(Begun {
            run_id: rec.run_id.clone(),
            input: rec.input.clone(),
            resumed: Some(rec),
            lock: Some(lock),
            joined: true,
        })
    }

    /// The landings of the earlier attempts (none for a new run).
    pub fn landings(&self) -> &[Landing] {
        self.resumed.as_ref().map_or(&[], |r| &r.landings)
    }

    /// Starts the run: a new one is locked, then created (it exists before its first step
    /// starts, so a kill -9 at any later point leaves a run `--resume` can open); a resumed
    /// one is marked running again. Without a store the run is recorded nowhere.
    pub fn open(
        self,
        store: Option<&Arc<dyn Store>>,
        start: RunStart,
        sinks: Vec<Arc<dyn EventSink>>,
        meter: &Arc<crate::usage::Meter>,
    ) -> Result<RunSession, String> {
        let sinks = Arc::new(sinks);
        let journal: Option<Arc<dyn Journal>> = match store {
            None => None,
            Some(st) => {
                let lock = match self.lock {
                    Some(l) if self.joined => l,
                    Some(l) => {
                        st.record(&self.run_id, &[Write::Status("running".into())])?;
                        l
                    }
                    None => {
                        let l = st.lock_run(&self.run_id)?;
                        st.create_run(&store::NewRun {
                            run_id: self.run_id.clone(),
                            file: start.file,
                            workflow: start.workflow,
                            source_hash: start.source_hash,
                            input: self.input.clone(),
                        })?;
                        l
                    }
                };
                let rec = Recorder::new(st.clone(), self.run_id.clone(), lock, sinks.clone())?;
                Some(Arc::new(rec))
            }
        };
        if let Some(rec) = &self.resumed {
            // Budgets count on from what the earlier attempts spent.
            meter.seed(&rec.usage);
        }
        if let Some(j) = &journal {
            // Weak: the meter may outlive the run (it is the caller's), and the journal holds
            // the run's lock, which must go when the session does.
            let j = Arc::downgrade(j);
            meter.record_with(Box::new(move |key, usage| {
                if let Some(j) = j.upgrade() {
                    // A failed write is the journal's to remember: the run fails of it at its end.
                    let _ = j.usage(key, usage);
                }
            }));
        }
        let (landed, spawns) = match self.resumed {
            Some(rec) => (
                rec.landings
                    .into_iter()
                    .map(|l| (l.key, (l.step_hash, l.landed)))
                    .collect(),
                rec.spawns,
            ),
            None => (HashMap::new(), 0),
        };
        Ok(RunSession {
            run_id: self.run_id,
            meter: meter.clone(),
            journal,
            landed: Mutex::new(landed),
            keep_new: true,
            failed: Mutex::new(None),
            sinks,
            started: Instant::now(),
            spawns_before: spawns,
        })
    }
}

/// What a new run is recorded as.
pub struct RunStart {
    /// The file as given on the command line (what `--resume` reloads).
    pub file: String,
    /// The workflow of the file the run runs.
    pub workflow: String,
    pub source_hash: String,
}

/// A run while it goes: every dialect's runtime lands, replays, forgets and reports through
/// it, whatever engine records the run underneath.
///
/// It replays by key and content hash: a step whose key landed in an earlier attempt with
/// the same hash answers that landing instead of running again. A failed write is
/// remembered, so the run cannot end `ok` after it even when the step that met it went on
/// (a fan-out member under `on_error: continue`).
pub struct RunSession {
    run_id: String,
    /// `None`: the run is recorded nowhere (no store).
    journal: Option<Arc<dyn Journal>>,
    meter: Arc<crate::usage::Meter>,
    /// Every landing of this run and of its earlier attempts, by key: (step hash, landed).
    landed: Mutex<HashMap<String, (String, Landed)>>,
    /// Whether this attempt's own landings join `landed` (see [`RunSession::keep_only_replayed`]).
    keep_new: bool,
    /// The first write that failed.
    failed: Mutex<Option<StoreError>>,
    sinks: Arc<Vec<Arc<dyn EventSink>>>,
    started: Instant,
    spawns_before: u64,
}

impl RunSession {
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Keeps in memory only the landings of the earlier attempts, for a runtime that never asks
    /// for one this attempt made ([`RunSession::landing`], [`RunSession::replayed`]): a state
    /// machine lands each turn under a key of its own, its whole reply included, and kept they
    /// made a long run's memory grow by kilobytes with every step. What is recorded is the same.
    pub fn keep_only_replayed(mut self) -> RunSession {
        self.keep_new = false;
        self
    }

    /// Milliseconds since this attempt started (the clock events carry).
    pub fn elapsed_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }

    /// Agents spawned by the earlier attempts of the run.
    pub fn spawns_before(&self) -> u64 {
        self.spawns_before
    }

    /// Whether anything hears of events: without sinks or a journal, building one is waste.
    pub fn observed(&self) -> bool {
        self.journal.is_some() || !self.sinks.is_empty()
    }

    /// Whether a display listens (only displays read an event's summary).
    pub fn displayed(&self) -> bool {
        !self.sinks.is_empty()
    }

    /// Whether the run is recorded anywhere (and so can be resumed).
    pub fn recorded(&self) -> bool {
        self.journal.is_some()
    }

    /// Where the run is recorded, as messages name it.
    pub fn describe(&self) -> Option<String> {
        self.journal.as_ref().map(|j| j.describe())
    }

    /// What `key` landed, with the hash of the step that landed it, whatever that step was.
    pub fn landing(&self, key: &str) -> Option<(String, Landed)> {
        lock(&self.landed).get(key).cloned()
    }

    /// The landings at `key` and under it: each key, with its step's hash and what it landed.
    pub fn landings_under(&self, key: &str) -> Vec<(String, String, Landed)> {
        let under = format!("{key}.");
        lock(&self.landed)
            .iter()
            .filter(|(k, _)| *k == key || k.starts_with(&under))
            .map(|(k, (h, l))| (k.clone(), h.clone(), l.clone()))
            .collect()
    }

    /// The value `key` landed, if the step that landed it had content hash `hash`.
    pub fn replayed(&self, key: &str, hash: &str) -> Option<serde_json::Value> {
        match lock(&self.landed).get(key) {
            Some((h, Landed::Value(v))) if h == hash => Some(v.clone()),
            _ => None,
        }
    }

    /// Lands a step's result with the event that reports it: recorded together (at once when
    /// `durable`, see [`Journal::land`]), and the sinks hear of `done` only after that. A
    /// failed write is remembered (see [`RunSession`]).
    pub fn land(
        &self,
        key: &str,
        hash: &str,
        landed: Landed,
        done: Option<Event>,
        durable: bool,
    ) -> Result<(), StoreError> {
        let done = done.map(|e| self.with_usage(e));
        let kept = match &self.journal {
            Some(j) => {
                let kept = self.keep_new.then(|| landed.clone());
                let l = Landing {
                    key: key.to_string(),
                    step_hash: hash.to_string(),
                    landed,
                };
                j.land(l, done, durable).map_err(|e| self.fail(e))?;
                kept
            }
            None => {
                if let Some(e) = &done {
                    self.notify(e);
                }
                self.keep_new.then_some(landed)
            }
        };
        if let Some(landed) = kept {
            lock(&self.landed).insert(key.to_string(), (hash.to_string(), landed));
        }
        Ok(())
    }

    /// Forgets the landing at `key` and every landing under it, so the next attempt of that
    /// part of the run (a retried fan-out item, a loop's next iteration) runs it afresh.
    pub fn forget_under(&self, key: &str, durable: bool) -> Result<(), StoreError> {
        let under = format!("{key}.");
        let mut had = false;
        lock(&self.landed).retain(|k, _| {
            let keep = k != key && !k.starts_with(&under);
            had |= !keep;
            keep
        });
        match &self.journal {
            // What this session never held, the journal does not hold either.
            Some(j) if had => j.forget_under(key, durable).map_err(|e| self.fail(e)),
            _ => Ok(()),
        }
    }

    /// Makes everything landed so far durable: called before a step with effects outside the
    /// run starts, so a crash never loses a landing whose step would repeat those effects.
    pub fn flush(&self) -> Result<(), StoreError> {
        match &self.journal {
            Some(j) => j.flush().map_err(|e| self.fail(e)),
            None => Ok(()),
        }
    }

    /// Records that the run has spawned `n` agents, before the next one starts, so a resume
    /// counts on from it.
    pub fn spawns(&self, n: u64) -> Result<(), StoreError> {
        match &self.journal {
            Some(j) => j.spawns(n).map_err(|e| self.fail(e)),
            None => Ok(()),
        }
    }

    /// An event that lands nothing: the sinks hear of it at once, the journal with its next
    /// write.
    pub fn report(&self, e: &Event) {
        let costed;
        let e = match self.step_usage(e) {
            Some(u) => {
                costed = Event {
                    usage: Some(Box::new(u)),
                    ..e.clone()
                };
                &costed
            }
            None => e,
        };
        if let Some(j) = &self.journal {
            j.event(e);
        }
        self.notify(e);
    }

    /// What a finished step's agent calls cost, for its event (`runs events`).
    fn step_usage(&self, e: &Event) -> Option<Usage> {
        if e.usage.is_some() || !matches!(e.kind, EventKind::Completed | EventKind::Failed) {
            return None;
        }
        self.meter.step(&e.key)
    }

    fn with_usage(&self, mut e: Event) -> Event {
        if let Some(u) = self.step_usage(&e) {
            e.usage = Some(Box::new(u));
        }
        e
    }

    fn notify(&self, e: &Event) {
        for s in self.sinks.iter() {
            s.event(e);
        }
    }

    /// Remembers a failed write (the first one wins) and hands it back.
    fn fail(&self, e: StoreError) -> StoreError {
        lock(&self.failed).get_or_insert_with(|| e.clone());
        e
    }

    /// Ends the run: makes everything landed durable, then records how it ended. `record`
    /// describes the outcome to the journal; `on_failure` applies a failed write to it (the
    /// first one the run met, then the final record's own), before and after recording.
    ///
    /// A run its meter stopped (a budget reached: the run was cancelled before the call) ends
    /// `stopped`, with the error that names the budget (at `span`). A run that made agent calls
    /// reports what they cost.
    pub fn finish(
        self,
        outcome: &mut RunOutcome,
        span: pipewright_syntax::Span,
        record: impl Fn(&RunOutcome) -> store::Finish,
        on_failure: impl Fn(&mut RunOutcome, String),
    ) {
        if let Some(e) = self.meter.exhausted() {
            if outcome.status == crate::outcome::RunStatus::Cancelled && outcome.error.is_none() {
                outcome.status = crate::outcome::RunStatus::Stopped;
                outcome.signal = None;
                let key = outcome.cancelled_at.clone().unwrap_or_default();
                outcome.error = Some(crate::failure::RunError::new(
                    crate::codes::BUDGET,
                    &key,
                    "run",
                    span,
                    e.message(),
                ));
            }
        }
        if self.meter.total().agent_calls > 0 {
            outcome.usage = Some(self.meter.report_json());
        }
        let Some(j) = &self.journal else { return };
        outcome.store = Some(j.describe());
        // Pure landings are written in the background: flush them first, so a write that
        // failed after the last step is known before the final status is recorded.
        let _ = j.flush();
        let seen = lock(&self.failed).take().or_else(|| j.failed());
        if let Some(e) = seen {
            on_failure(outcome, e.to_string());
        }
        if let Err(e) = j.finish(record(outcome)) {
            on_failure(outcome, e.to_string());
        }
        j.close();
    }
}

impl RunSession {
    /// Ends a fan-out member run apart from its run ([`Begun::joined`]): makes what it landed
    /// durable and lets the journal go, leaving the run's status to the run. The first write
    /// that failed, if one did.
    pub fn close(self) -> Option<StoreError> {
        let j = self.journal.as_ref()?;
        let flushed = j.flush().err();
        let failed = lock(&self.failed).take().or(flushed).or_else(|| j.failed());
        j.close();
        failed
    }
}

/// How a run's end is recorded in the common case: its status, output, stores and error.
pub fn finish_record(o: &RunOutcome) -> store::Finish {
    store::Finish {
        status: o.status.name().into(),
        output: o.output.to_json(),
        stores: o.stores.to_json(),
        error: o
            .error
            .as_ref()
            .map(|e| serde_json::json!({"code": e.code, "key": e.key, "message": e.message})),
        cancelled_at: o.cancelled_at.clone(),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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

    /// A session replays only what landed with the same step hash, forgets a key with
    /// everything under it, and a resumed session starts from what the first one recorded.
    #[test]
    fn a_resumed_session_replays_by_key_and_hash_and_forgets_under_a_key() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let st: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&dir.path().join("runs.db")).unwrap_or_else(|e| panic!("{e}")),
        );
        let start = || RunStart {
            file: "p.yaml".into(),
            workflow: "main".into(),
            source_hash: "h".into(),
        };
        let mut opts = RunOptions::new(dir.path().to_path_buf());
        opts.store = Some(st.clone());
        let begun = Begun::new(&opts, None, serde_json::json!({"a": 1}), "h")
            .unwrap_or_else(|e| panic!("{e}"));
        let session = begun
            .open(Some(&st), start(), Vec::new(), &opts.meter)
            .unwrap_or_else(|e| panic!("{e}"));
        let id = session.run_id().to_string();
        let land = |key: &str, v: i64, durable: bool| {
            session
                .land(key, "k", Landed::Value(serde_json::json!(v)), None, durable)
                .unwrap_or_else(|e| panic!("{e}"));
        };
        land("0", 1, false);
        land("1", 2, true);
        land("1.0", 3, false);
        land("10", 4, false);
        session
            .forget_under("1", true)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(session.replayed("1.0", "k"), None);
        assert_eq!(session.replayed("10", "k"), Some(serde_json::json!(4)));
        let mut outcome = RunOutcome::new(
            crate::outcome::RunStatus::Cancelled,
            id.clone(),
            pipewright_r1::Value::Null,
            pipewright_r1::Value::Null,
        );
        session.finish(
            &mut outcome,
            pipewright_syntax::Span::default(),
            finish_record,
            |_, e| panic!("{e}"),
        );

        let of = ResumeOf {
            id: &id,
            what: "the pipeline files",
            kind: "pipeline",
            workflow: None,
        };
        let begun = Begun::new(&opts, Some(of), serde_json::Value::Null, "h")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(begun.input, serde_json::json!({"a": 1}));
        let keys: Vec<&str> = begun.landings().iter().map(|l| l.key.as_str()).collect();
        assert_eq!(keys, ["0", "10"]);
        let resumed = begun
            .open(Some(&st), start(), Vec::new(), &opts.meter)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resumed.run_id(), id);
        assert_eq!(resumed.replayed("0", "k"), Some(serde_json::json!(1)));
        assert_eq!(resumed.replayed("0", "other step"), None);
        assert_eq!(resumed.replayed("1", "k"), None);
    }

    /// A session that keeps only the earlier attempts' landings (the state machine's) still
    /// records every landing of its own, and replays the earlier ones; it just does not hold
    /// its own in memory (a long run's memory grew by kilobytes a step).
    #[test]
    fn a_session_keeping_only_replayed_landings_records_every_landing() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let st: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&dir.path().join("runs.db")).unwrap_or_else(|e| panic!("{e}")),
        );
        let start = || RunStart {
            file: "m.json".into(),
            workflow: "main".into(),
            source_hash: "h".into(),
        };
        let mut opts = RunOptions::new(dir.path().to_path_buf());
        opts.store = Some(st.clone());
        let finish = |session: RunSession| {
            let mut outcome = RunOutcome::new(
                crate::outcome::RunStatus::Cancelled,
                session.run_id().to_string(),
                pipewright_r1::Value::Null,
                pipewright_r1::Value::Null,
            );
            session.finish(
                &mut outcome,
                pipewright_syntax::Span::default(),
                finish_record,
                |_, e| panic!("{e}"),
            );
        };
        let session = Begun::new(&opts, None, serde_json::Value::Null, "h")
            .unwrap_or_else(|e| panic!("{e}"))
            .open(Some(&st), start(), Vec::new(), &opts.meter)
            .unwrap_or_else(|e| panic!("{e}"))
            .keep_only_replayed();
        let id = session.run_id().to_string();
        for (key, durable) in [("turn.1", false), ("turn.2", true)] {
            session
                .land(
                    key,
                    "k",
                    Landed::Value(serde_json::json!(key)),
                    None,
                    durable,
                )
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(session.landing(key).is_none(), "{key} is not held");
        }
        finish(session);

        let of = ResumeOf {
            id: &id,
            what: "the recipe files",
            kind: "statemachine",
            workflow: None,
        };
        let begun = Begun::new(&opts, Some(of), serde_json::Value::Null, "h")
            .unwrap_or_else(|e| panic!("{e}"));
        let keys: Vec<&str> = begun.landings().iter().map(|l| l.key.as_str()).collect();
        assert_eq!(keys, ["turn.1", "turn.2"], "both recorded");
        let resumed = begun
            .open(Some(&st), start(), Vec::new(), &opts.meter)
            .unwrap_or_else(|e| panic!("{e}"))
            .keep_only_replayed();
        assert_eq!(
            resumed.replayed("turn.1", "k"),
            Some(serde_json::json!("turn.1")),
            "the earlier attempt's landings replay"
        );
        resumed
            .land(
                "turn.3",
                "k",
                Landed::Value(serde_json::json!(3)),
                None,
                true,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(resumed.landing("turn.3").is_none());
        finish(resumed);
    }
}
