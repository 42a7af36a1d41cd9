//! The MEOW runtime: runs a workflow of a `.meow.toml` module with the semantics of
//! specs/meow-spec-v2.md and what specs/notes/meow-runtime.md §2–§5 record of the reference.
//!
//! One task owns the run's steps ([`state::State`]). It dispatches every ready step at once
//! (orchestrator executors before agents, then in creation order), keeps shell commands,
//! branch conditions and agent turns in flight as futures, and applies each completion the
//! moment it arrives; there is no polling tick, so a chain of shell steps costs what its
//! processes cost. Expansions (`expand`, branch targets, `foreach` iterations) insert prefixed
//! steps into the same DAG. Every ended step lands in the run store; a resume replays the
//! landings of leaf steps (shell, agent, spawn, kill) and re-creates expansions from the
//! landed branch outcomes and foreach items, so what was in flight runs again.
//!
//! docs/meow.md lists where this follows the spec rather than the reference.

mod agent;
mod answers;
pub mod approval;
pub mod channel;
pub mod command;
mod dispatch;
mod duration;
mod member;
mod plan;
mod recovery;
mod shell;
mod state;
mod subst;
mod template;
mod tmux;

pub use duration::{parse as parse_duration, DurationError};
pub use member::member;
pub use plan::plan;

use crate::ast::Module;
use crate::Executor;
use pipewright_ir::Program;
use pipewright_runtime::backend::AgentBackend;
use pipewright_runtime::cancel::CancelToken;
use pipewright_runtime::codes;
use pipewright_runtime::failure::RunError;
use pipewright_runtime::outcome::{RunOutcome, RunStatus};
use pipewright_runtime::session::{
    finish_record, Begun, ResumeOf, RunOptions, RunSession, RunStart,
};
use pipewright_runtime::store::{self, Event, EventKind, Landed};
use pipewright_syntax::{SourceMap, Span};
use serde_json::{json, Map, Value};
use state::{Ended, RunStep, Scope, State, Status};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use template::{Library, ModuleFile, Template};

/// `[meow]` limits of pipewright.toml.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Expansions inside expansions (expand, branch targets, foreach iterations).
    pub max_depth: u32,
    /// Steps in the whole run, expanded ones included.
    pub max_steps: usize,
    /// `on_error` recoveries inside recoveries.
    pub max_recovery_depth: u32,
    /// The longest request line the orchestrator socket takes, in bytes.
    pub max_message_bytes: usize,
}

impl Limits {
    /// The limits `[meow]` of pipewright.toml sets.
    pub fn of(cfg: &pipewright_project::ProjectConfig) -> Limits {
        Limits {
            max_depth: u32::try_from(cfg.meow_max_depth).unwrap_or(u32::MAX),
            max_steps: usize::try_from(cfg.meow_max_steps).unwrap_or(usize::MAX),
            max_recovery_depth: u32::try_from(cfg.meow_max_recovery).unwrap_or(u32::MAX),
            max_message_bytes: usize::try_from(cfg.meow_max_message).unwrap_or(usize::MAX),
        }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_depth: 10,
            max_steps: 1000,
            max_recovery_depth: 3,
            max_message_bytes: channel::MAX_MESSAGE_BYTES,
        }
    }
}

/// The directory holding `meow`, as the PATH of steps and agent sessions starts.
struct MeowPath {
    dir: String,
    /// `dir` before the orchestrator's PATH: what a step that sets no PATH of its own gets
    /// (read once per run, not per step).
    inherited: String,
}

impl MeowPath {
    fn new(dir: PathBuf) -> Self {
        let dir = dir.to_string_lossy().into_owned();
        let rest = std::env::var_os("PATH").map(|p| p.to_string_lossy().into_owned());
        let inherited = Self::join(&dir, rest.as_deref().unwrap_or(""));
        MeowPath { dir, inherited }
    }

    /// `dir` before a step's own PATH.
    fn before(&self, rest: &str) -> String {
        Self::join(&self.dir, rest)
    }

    fn join(dir: &str, rest: &str) -> String {
        if rest.is_empty() {
            dir.to_string()
        } else {
            format!("{dir}:{rest}")
        }
    }
}

/// Why a MEOW run cannot start (besides what the run store and the channel say).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// `has` lists the module's workflows.
    #[error("the module has no workflow `{name}` (it has {}); pick one with `file.meow.toml#NAME`", .has.join(", "))]
    NoSuchWorkflow { name: String, has: Vec<String> },
    #[error("the MEOW module is not among the loaded sources")]
    SourceNotLoaded,
    #[error("no workflow `{0}`")]
    NoTemplate(String),
    /// The input as JSON.
    #[error("the variables must be a JSON object, got {0}")]
    VariablesNotAnObject(String),
    #[error("cannot create {}: {error}", .dir.display())]
    CreateBin { dir: PathBuf, error: String },
    #[error("cannot replace {}: {error}", .link.display())]
    ReplaceLink { link: PathBuf, error: String },
    #[error("cannot link {} to {}: {error}", .link.display(), .exe.display())]
    Link {
        link: PathBuf,
        exe: PathBuf,
        error: String,
    },
}

impl From<StartError> for String {
    fn from(e: StartError) -> String {
        e.to_string()
    }
}

/// The variables a run is given: its input, which must be a JSON object (or nothing).
fn given_variables(input: &Value) -> Result<Map<String, Value>, StartError> {
    match input {
        Value::Null => Ok(Map::new()),
        Value::Object(m) => Ok(m.clone()),
        other => Err(StartError::VariablesNotAnObject(other.to_string())),
    }
}

/// Makes `<run dir>/bin/meow` a link to `exe`, so that workflows written for the reference,
/// whose commands and prompts call `meow done`, `meow event`… , run unchanged.
fn meow_command_dir(
    run_dir: &std::path::Path,
    exe: &std::path::Path,
) -> Result<PathBuf, StartError> {
    let bin = run_dir.join("bin");
    let link = bin.join("meow");
    if let Err(e) = std::fs::create_dir_all(&bin) {
        return Err(StartError::CreateBin {
            dir: bin,
            error: e.to_string(),
        });
    }
    // A run's members on its host find the link the run made: replacing it would leave the
    // run's own steps without `meow` for a moment.
    if std::fs::read_link(&link).is_ok_and(|to| to == exe) {
        return Ok(bin);
    }
    // A resumed run finds the link of its first start, which may name an older executable.
    match std::fs::remove_file(&link) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(StartError::ReplaceLink {
                link,
                error: e.to_string(),
            })
        }
    }
    if let Err(e) = std::os::unix::fs::symlink(exe, &link) {
        return Err(StartError::Link {
            link,
            exe: exe.to_path_buf(),
            error: e.to_string(),
        });
    }
    Ok(bin)
}

/// The workflow `workflow` (default `main`) of `module`, the checked module `program` was
/// lowered from: its name, the library it was registered in, and its template.
fn root_template(
    program: &Program,
    module: Arc<Module>,
    sources: &SourceMap,
    workflow: Option<&str>,
    source_path: Option<&std::path::Path>,
) -> Result<(String, Library, Arc<Template>), StartError> {
    let name = workflow.unwrap_or("main").to_string();
    let Some(wf) = program.workflows.iter().find(|w| w.name == name) else {
        let has = program.workflows.iter().map(|w| w.name.clone()).collect();
        return Err(StartError::NoSuchWorkflow { name, has });
    };
    let file = sources.get(wf.file).ok_or(StartError::SourceNotLoaded)?;
    let path = source_path
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(&file.name));
    let src = Arc::new(ModuleFile { module, path });
    let mut lib = Library::default();
    lib.register(src.clone());
    let Some(root) = lib.template(&src, &name) else {
        return Err(StartError::NoTemplate(name));
    };
    Ok((name, lib, root))
}

/// What `run` checks before it opens the run store (`pipewright_runtime::prerun`): the variables bind and
/// every top-level step's fields resolve.
pub fn prerun(
    program: &Program,
    module: Arc<Module>,
    sources: &SourceMap,
    workflow: Option<&str>,
    input: &Value,
    source_path: Option<&std::path::Path>,
) -> Result<(), String> {
    let (_, _, root) = root_template(program, module, sources, workflow, source_path)?;
    let vars = root.bind(given_variables(input)?, true)?;
    bake_check(&root, &Arc::new(Scope { vars }), "")
}

/// Runs the workflow `opts.workflow` (default `main`) of `module`, the checked module
/// `program` was lowered from.
pub async fn run(
    program: Arc<Program>,
    module: Arc<Module>,
    sources: &SourceMap,
    mut opts: RunOptions,
) -> Result<RunOutcome, String> {
    let (name, lib, root) = root_template(
        &program,
        module,
        sources,
        opts.workflow.as_deref(),
        opts.source_path.as_deref(),
    )?;
    let source_hash = store::source_hash(sources.files().map(|f| &*f.text));

    let resume = opts.resume.as_deref().map(|id| ResumeOf {
        id,
        what: "the MEOW module",
        kind: "workflow",
        workflow: Some(&name),
    });
    let begun = Begun::new(&opts, resume, opts.input.clone(), &source_hash)?;
    if let Some(rec) = begun.resumed.as_ref() {
        if rec.status == "ok" || rec.status == "failed" {
            return Err(format!(
                "run {} has ended ({}); there is nothing to resume",
                rec.run_id, rec.status
            ));
        }
    }
    let run_id = begun.run_id.clone();
    let input = begun.input.clone();
    let given = given_variables(&input)?;
    let vars = root.bind(given.clone(), true)?;
    let scope = Arc::new(Scope { vars });

    // Every variable the top-level steps name must be known before anything runs.
    let mut st = State {
        run_id: run_id.clone(),
        ..State::default()
    };
    bake_check(&root, &scope, &run_id)?;

    let session = begun.open(
        opts.store.as_ref(),
        RunStart {
            file: opts.file_label.clone(),
            workflow: name.clone(),
            source_hash,
        },
        std::mem::take(&mut opts.sinks),
        &opts.meter,
    )?;
    let run_dir = run_dir(&opts, &run_id);
    let limits = Limits::of(&opts.config);
    let channel = match opts.channel {
        true => Some(channel::Channel::open(&run_dir, limits.max_message_bytes)?),
        false => None,
    };
    let meow_bin = match (&channel, &opts.self_exe) {
        (Some(_), Some(exe)) => Some(MeowPath::new(meow_command_dir(&run_dir, exe)?)),
        _ => None,
    };
    let socket = channel.as_ref().map(|c| c.path().to_path_buf());
    let mut exec = Exec::new(
        &opts, name, session, lib, &root, sources, given, socket, meow_bin,
    );
    exec.tmux = exec.backend.name() == "command";
    if exec.tmux && exec.socket.is_none() {
        return Err(
            "agents in tmux report over the orchestrator channel, which this run does not open"
                .into(),
        );
    }
    let mut ended = Ended::default();
    for t in &root.steps {
        let s = exec.new_step(
            t.clone(),
            scope.clone(),
            root.src.clone(),
            String::new(),
            None,
            None,
            0,
        );
        st.insert(s, &mut ended)?;
    }
    let status = exec.drive(&mut st, ended, channel).await;
    // A cancelled run may leave the scheduler with landings staged: durable before the
    // cleanup script, an effect of its own, runs.
    exec.commit();
    let cleanup = match status {
        RunStatus::Ok => &root.cleanup.on_success,
        RunStatus::Cancelled => &root.cleanup.on_stop,
        _ => &root.cleanup.on_failure,
    };
    if let Some(script) = cleanup {
        exec.cleanup(&script.text).await;
    }
    // A run that ended stops its agents; a cancelled one leaves them for a resume.
    if status != RunStatus::Cancelled {
        for (_, a) in exec.agents.drain() {
            if let Some((session, adapter)) = a.session {
                let _ = tmux::kill(Some(&adapter), &session, true).await;
            }
        }
    }
    Ok(exec.finish(&st, status, &root))
}

/// The variables of every top-level step's fields resolve (step outputs are read later).
fn bake_check(root: &Template, scope: &Arc<Scope>, run_id: &str) -> Result<(), String> {
    use subst::Lookup as _;
    struct Bake<'a> {
        scope: &'a Scope,
        step: &'a str,
        run_id: &'a str,
    }
    impl subst::Lookup for Bake<'_> {
        fn var(&self, name: &str) -> Option<Value> {
            match name {
                "workflow_id" => Some(Value::from(self.run_id)),
                "step_id" => Some(Value::from(self.step)),
                "__step_prefix__" | "timestamp" | "date" | "time" => Some(Value::from("")),
                _ => self.scope.vars.get(name).cloned(),
            }
        }
        fn outputs(&self, _: &str) -> Result<Value, subst::SubstError> {
            Ok(Value::Object(Map::new()))
        }
    }
    let mut problems = Vec::new();
    for t in &root.steps {
        let cx = Bake {
            scope,
            step: &t.id,
            run_id,
        };
        // Inline branch steps and foreach templates bind their own names: only the fields
        // this step's own executor reads are checked here.
        for (key, value) in dispatch::substituted_fields(&t.executor) {
            let mut texts = Vec::new();
            collect_strings(&value, &mut texts);
            for text in texts {
                for (_, _, inner) in subst::refs(&text) {
                    let r = subst::parse(inner);
                    if let subst::Ref::Var { root: name, .. } = &r {
                        match subst::resolve(&r, &cx) {
                            Ok(_) => {}
                            Err(_) if cx.var(name).is_none() => problems.push(format!(
                                "step `{}` field `{key}` uses `{{{{{inner}}}}}`, but `{name}` is not a variable of workflow `{}`",
                                t.id, root.name
                            )),
                            Err(e) => problems.push(format!(
                                "step `{}` field `{key}`: `{{{{{inner}}}}}`: {e}",
                                t.id
                            )),
                        }
                    }
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        problems.dedup();
        Err(problems.join("\n"))
    }
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

/// An agent as the run knows it.
pub(crate) struct AgentInfo {
    pub workdir: PathBuf,
    /// Its tmux session and adapter, when agents run in tmux.
    pub session: Option<(String, tmux::Adapter)>,
    /// What its spawn said of its session id (answers.rs records it).
    pub session_id: tmux::SessionId,
}

impl AgentInfo {
    /// An agent answered by the run's backend: a name's working directory, no session.
    pub(crate) fn offline(workdir: PathBuf) -> AgentInfo {
        AgentInfo {
            workdir,
            session: None,
            session_id: Default::default(),
        }
    }
}

/// A foreach with `max_concurrent`: the iterations with a running step, and the steps held
/// back until one of them ends.
struct ForeachThrottle {
    max: usize,
    /// Steps of each iteration not yet ended (expansions inside it included).
    left: HashMap<usize, usize>,
    /// Iterations that started a step and still have steps left: the spec's "concurrent
    /// executions" (the reference counts only iterations with a step running at that moment,
    /// so an iteration between two steps lets another one start).
    active: std::collections::HashSet<usize>,
    held: VecDeque<usize>,
}

pub(crate) struct Exec {
    workflow: String,
    backend: Arc<dyn AgentBackend>,
    cancel: CancelToken,
    project: PathBuf,
    withhold_env: Vec<String>,
    identity: String,
    /// The run's lock, journal and the landings of earlier attempts (see [`RunSession`]).
    session: RunSession,
    lib: Library,
    limits: Limits,
    /// Failure codes other than the step-failure one, by step.
    codes: HashMap<usize, &'static str>,
    agents: HashMap<String, AgentInfo>,
    /// Agent name → its running step (an agent works on one step at a time).
    busy: HashMap<String, usize>,
    /// The same, by step.
    busy_step: HashMap<usize, String>,
    held_agent: HashMap<String, VecDeque<usize>>,
    /// The foreach steps with `max_concurrent`, by step.
    throttles: HashMap<usize, ForeachThrottle>,
    /// The run's variables as given (cleanup scripts see them as environment variables).
    given: Map<String, Value>,
    /// Where the orchestrator channel listens.
    socket: Option<PathBuf>,
    /// Where the run's orchestrator listens, in a member (which has a channel of its own):
    /// its steps' events and approvals go there.
    run_socket: Option<PathBuf>,
    /// A directory holding `meow` (the pipewright executable under the reference's command
    /// name), put first on the PATH of shell steps and agent sessions.
    meow_bin: Option<MeowPath>,
    root_span: Span,
    sources_has: Vec<pipewright_syntax::FileId>,
    /// Agents run in tmux sessions through adapters (`--backend command`); otherwise the
    /// backend answers agent steps.
    tmux: bool,
    /// Agent steps waiting for `meow done` over the channel.
    waiting: std::collections::HashSet<usize>,
    /// Agent step timeouts.
    deadlines: std::collections::BTreeSet<(Instant, usize)>,
    /// Told when a waiting agent step ends, so its session watch stops.
    watchers: HashMap<usize, Arc<tokio::sync::Notify>>,
    /// Prompts, refusals and notes kept for the agent-side commands.
    side: answers::Side,
    /// Something was staged that must be durable before the scheduler waits or starts a
    /// command: see [`Exec::commit`].
    unflushed: bool,
    /// Why the last commit failed: the commands dispatched before it do not start.
    commit_failed: Arc<std::sync::OnceLock<String>>,
    /// The root workflow's file: steps written there may be sent away (`member.rs`).
    root_path: PathBuf,
    /// Where the run's fan-out members run, when elsewhere (on a durable engine).
    members: Option<Arc<dyn pipewright_runtime::members::Members>>,
    /// The run's agent calls and budgets: members' calls are counted in it when they are back.
    meter: Arc<pipewright_runtime::usage::Meter>,
    /// The steps sent (or to be sent) away as members, and what they came to.
    sent: member::Sent,
}

/// How a dispatched step goes on.
pub(crate) enum Dispatched {
    /// Ended at once.
    Now(Status, Map<String, Value>, Option<String>),
    /// Runs on; its completion arrives later.
    Later(dispatch::InFlight),
    /// Waits for the steps it expanded into.
    Joining,
}

/// `<runs_dir>/<run-id>/`: the run's orchestrator socket and `meow` link.
fn run_dir(opts: &RunOptions, run_id: &str) -> PathBuf {
    opts.runs_dir
        .clone()
        .unwrap_or_else(|| opts.tools.workdir.join(".pipewright").join("runs"))
        .join(run_id)
}

impl Exec {
    /// The scheduler of workflow `workflow`, whose root template is `root`, recording into
    /// `session`; `socket` and `meow_bin` as the run's orchestrator has them.
    #[allow(clippy::too_many_arguments)]
    fn new(
        opts: &RunOptions,
        workflow: String,
        session: RunSession,
        lib: Library,
        root: &Template,
        sources: &SourceMap,
        given: Map<String, Value>,
        socket: Option<PathBuf>,
        meow_bin: Option<MeowPath>,
    ) -> Exec {
        Exec {
            workflow,
            backend: opts.backend.clone(),
            cancel: opts.cancel.clone(),
            project: opts.tools.workdir.clone(),
            withhold_env: opts.tools.withhold_env.clone(),
            identity: opts.identity.clone(),
            session,
            lib,
            limits: Limits::of(&opts.config),
            codes: HashMap::new(),
            agents: HashMap::new(),
            busy: HashMap::new(),
            busy_step: HashMap::new(),
            held_agent: HashMap::new(),
            throttles: HashMap::new(),
            given,
            socket,
            run_socket: None,
            meow_bin,
            root_span: root.span,
            root_path: root.src.path.clone(),
            sources_has: sources.files().map(|f| f.id).collect(),
            tmux: false,
            waiting: Default::default(),
            deadlines: Default::default(),
            watchers: HashMap::new(),
            side: Default::default(),
            unflushed: false,
            commit_failed: Default::default(),
            members: opts.members.clone(),
            meter: opts.meter.clone(),
            sent: member::Sent::default(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn new_step(
        &self,
        template: Arc<template::TemplateStep>,
        scope: Arc<Scope>,
        src: Arc<ModuleFile>,
        prefix: String,
        parent: Option<usize>,
        foreach: Option<(usize, usize)>,
        depth: u32,
    ) -> RunStep {
        RunStep {
            id: format!("{prefix}{}", template.id),
            needs: template.needs.clone(),
            template,
            scope,
            src,
            prefix,
            status: Status::Pending,
            outputs: Map::new(),
            error: None,
            parent,
            foreach,
            depth,
            recovery: 0,
            waiting: 0,
            dependents: Vec::new(),
            wild: false,
            open: 0,
            child_failed: false,
            children: Vec::new(),
            started: None,
        }
    }

    /// The scheduler: dispatches what is ready, waits for the next completion or message,
    /// and applies it, until nothing runs and nothing is ready.
    async fn drive(
        &mut self,
        st: &mut State,
        mut ended: Ended,
        mut channel: Option<channel::Channel>,
    ) -> RunStatus {
        use futures_util::stream::{FuturesUnordered, StreamExt};
        use futures_util::FutureExt as _;
        let mut inflight: FuturesUnordered<dispatch::InFlight> = FuturesUnordered::new();
        let mut msgs = channel.as_mut().map(|c| c.take_receiver());
        loop {
            self.after(st, &mut ended);
            if self.cancel.is_cancelled() || self.sent.cancelled.is_some() {
                return RunStatus::Cancelled;
            }
            while let Some((agent_kind, i)) = st.ready.pop_first() {
                if st.steps[i].status != Status::Pending {
                    continue;
                }
                if self.hold(st, i) {
                    continue;
                }
                // A step sent away ends when its member reports.
                let group = self.sent.of.get(&i).copied();
                let group = group.or_else(|| self.send_late(st, i));
                if let Some(m) = group.or_else(|| self.send_alone(st, i, !inflight.is_empty())) {
                    match self.send(st, m, i) {
                        member::Sending::Sent(f) => {
                            inflight.push(f);
                            continue;
                        }
                        member::Sending::Out => continue,
                        member::Sending::Here => {}
                    }
                }
                let _ = agent_kind;
                match self.dispatch(st, i, &mut ended) {
                    Dispatched::Now(s, o, e) => st.end(i, s, o, e, &mut ended),
                    Dispatched::Later(f) => inflight.push(f),
                    Dispatched::Joining => {}
                }
                self.after(st, &mut ended);
            }
            st.check_wild(&mut ended);
            if !st.ready.is_empty() || !ended.steps.is_empty() {
                continue;
            }
            self.commit();
            if inflight.is_empty() && !self.waits_for_agents(st) {
                if self.unstick(st, &mut ended) {
                    continue;
                }
                break;
            }
            let msg = async {
                match msgs.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            let next_deadline = self.deadlines.first().map(|(t, _)| *t);
            let deadline = async {
                match next_deadline {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                Some((i, fin)) = inflight.next(), if !inflight.is_empty() => {
                    self.complete(st, i, fin, &mut ended);
                    // Whatever else has ended by now is applied in the same pass, so its
                    // landings share one commit.
                    while let Some(Some((i, fin))) = inflight.next().now_or_never() {
                        self.complete(st, i, fin, &mut ended);
                    }
                }
                _ = deadline => {
                    if let Some((_, i)) = self.deadlines.pop_first() {
                        self.timed_out(st, i, &mut ended);
                    }
                }
                Some(m) = msg => {
                    self.message(st, m, &mut ended);
                }
                _ = self.cancel.cancelled() => {
                    return RunStatus::Cancelled;
                }
            }
        }
        if (0..st.steps.len()).any(|i| recovery::fails_run(st, i)) {
            RunStatus::Failed
        } else {
            RunStatus::Ok
        }
    }

    /// Whether a running agent step waits for an agent to report over the channel.
    fn waits_for_agents(&self, st: &State) -> bool {
        self.waiting
            .iter()
            .any(|&i| st.steps[i].status == Status::Running)
    }

    /// Nothing runs and nothing is ready, yet steps are pending: each waits for a step that
    /// will never exist (the reference waits forever) or in a cycle. They fail, saying which.
    fn unstick(&mut self, st: &mut State, ended: &mut Ended) -> bool {
        let pending: Vec<usize> = (0..st.steps.len())
            .filter(|&i| st.steps[i].status == Status::Pending)
            .collect();
        if pending.is_empty() {
            return false;
        }
        let mut any = false;
        for &i in &pending {
            let missing: Vec<&String> = st.steps[i]
                .needs
                .iter()
                .filter(|n| !n.contains('*') && !st.index.contains_key(*n))
                .collect();
            // `E.child` of an expansion that never ran (E failed or was skipped): skipped
            // like any dependent of E.
            let never_ran = missing.iter().find_map(|n| {
                let (head, _) = n.split_once('.')?;
                let h = &st.steps[*st.index.get(head)?];
                matches!(h.status, Status::Failed | Status::Skipped)
                    .then(|| (head.to_string(), h.status))
            });
            if let Some((head, status)) = never_ran {
                let why = match status {
                    Status::Skipped => format!("dependency `{head}` was skipped"),
                    _ => format!("dependency `{head}` failed"),
                };
                st.end(i, Status::Skipped, Map::new(), Some(why), ended);
                any = true;
                continue;
            }
            let missing: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
            if !missing.is_empty() {
                let why = format!(
                    "it needs {}, which no step of the run provides",
                    missing.join(", ")
                );
                st.end(i, Status::Failed, Map::new(), Some(why), ended);
                any = true;
            }
        }
        if !any {
            for &i in &pending {
                st.end(
                    i,
                    Status::Failed,
                    Map::new(),
                    Some("its needs wait on each other in a cycle".into()),
                    ended,
                );
            }
        }
        true
    }

    /// Holds a ready step back while its agent works on another step, or while its foreach
    /// has `max_concurrent` iterations running. `true`: held.
    fn hold(&mut self, st: &mut State, i: usize) -> bool {
        let s = &st.steps[i];
        if let Some(a) = s.agent().filter(|a| !a.fire_forget()) {
            if let Some(agent) = &a.agent {
                let agent = subst::render(&agent.text, &state::StepValues::new(st, i), false)
                    .unwrap_or_else(|_| agent.text.clone());
                // Taken by a group out on a member: its own steps are not held for it.
                let taken = self
                    .sent
                    .reserved
                    .get(&agent)
                    .is_some_and(|&m| self.sent.of.get(&i) != Some(&m));
                if self.busy.contains_key(&agent) || taken {
                    self.held_agent.entry(agent).or_default().push_back(i);
                    return true;
                }
            }
        }
        let mut within = s.foreach;
        while let Some((foreach, iteration)) = within {
            if let Some(throttle) = self.throttles.get_mut(&foreach) {
                if !throttle.active.contains(&iteration) && throttle.active.len() >= throttle.max {
                    throttle.held.push_back(i);
                    return true;
                }
            }
            within = st.steps[foreach].foreach;
        }
        false
    }

    /// Reports and records what ended, and releases what it held back.
    fn after(&mut self, st: &mut State, ended: &mut Ended) {
        while !ended.steps.is_empty() || !ended.recover.is_empty() {
            let list = std::mem::take(&mut ended.steps);
            for i in list {
                if let Some(order) = self.sent.order.as_mut() {
                    order.push((i, st.steps[i].status));
                }
                self.report_end(st, i);
                self.release(st, i);
            }
            for i in std::mem::take(&mut ended.recover) {
                self.recover(st, i, ended);
            }
        }
    }

    fn release(&mut self, st: &mut State, i: usize) {
        let s = &st.steps[i];
        // A recovering step's iteration goes on until its recovery ends.
        let over = s.status.terminal();
        if let (Some((foreach, iteration)), true) = (s.foreach, over) {
            if let Some(throttle) = self.throttles.get_mut(&foreach) {
                if let Some(left) = throttle.left.get_mut(&iteration) {
                    *left = left.saturating_sub(1);
                    if *left == 0 {
                        throttle.left.remove(&iteration);
                        throttle.active.remove(&iteration);
                        for n in throttle.held.drain(..) {
                            let agent_kind = st.steps[n].is_agent();
                            st.ready.insert((agent_kind, n));
                        }
                    }
                }
            }
        }
        let s = &st.steps[i];
        if s.started.is_none() {
            return;
        }
        if s.is_agent() {
            if let Some(a) = self.busy_step.remove(&i) {
                self.busy.remove(&a);
                if let Some(q) = self.held_agent.get_mut(&a) {
                    if let Some(n) = q.pop_front() {
                        let agent_kind = st.steps[n].is_agent();
                        st.ready.insert((agent_kind, n));
                    }
                }
            }
        }
    }

    pub(super) fn set_busy(&mut self, agent: String, i: usize) {
        self.busy_step.insert(i, agent.clone());
        self.busy.insert(agent, i);
    }

    /// Marks a step running: its agent is busy, its iteration counts as running.
    fn start(&mut self, st: &mut State, i: usize, agent: Option<String>) {
        st.steps[i].status = Status::Running;
        st.steps[i].started = Some(Instant::now());
        if let Some(a) = agent {
            self.set_busy(a, i);
        }
        self.iteration_runs(st, i);
        let mut e = self.event(st, i, EventKind::Started);
        if self.session.recorded() {
            e.given = dispatch::given(st, i).map(Box::new);
        }
        self.session.report(&e);
    }

    /// Step `i` starts: its iterations count as running for their foreach's throttle.
    fn iteration_runs(&mut self, st: &State, i: usize) {
        let mut within = st.steps[i].foreach;
        while let Some((foreach, iteration)) = within {
            if let Some(throttle) = self.throttles.get_mut(&foreach) {
                if throttle.left.contains_key(&iteration) {
                    throttle.active.insert(iteration);
                }
            }
            within = st.steps[foreach].foreach;
        }
    }

    fn event(&self, st: &State, i: usize, kind: EventKind) -> Event {
        let s = &st.steps[i];
        Event {
            kind,
            key: s.id.clone(),
            step_kind: kind_name(&s.template.executor),
            workflow: self.workflow.clone(),
            at_ms: self.session.elapsed_ms(),
            elapsed_ms: s.started.map(|t| t.elapsed().as_secs_f64() * 1000.0),
            error: s.error.clone(),
            summary: String::new(),
            usage: None,
            given: None,
        }
    }

    fn report_end(&mut self, st: &State, i: usize) {
        let s = &st.steps[i];
        let kind = match s.status {
            Status::Done | Status::Recovered => EventKind::Completed,
            Status::Skipped if s.started.is_none() => return self.land(st, i, None),
            _ => EventKind::Failed,
        };
        let e = self.event(st, i, kind);
        self.land(st, i, Some(e));
    }

    /// The scheduler's one commit of a pass, made once the pass has dispatched everything that
    /// was ready and before it waits: it holds the landings of the steps with effects that
    /// ended in the pass (and of the rest staged since) and the starts of the commands it
    /// dispatched, which only run once polled, after it. So a step with effects outside the run
    /// still starts only after everything before it is durable, and a landing of such a step is
    /// durable before the run waits for anything or starts anything else; but a pass that saw
    /// many completions commits once, not once per completion and once per start (issue 27:
    /// each was a blocking hand-off to the store's writer on the scheduler's task). If the
    /// commit fails, the commands it preceded fail without starting.
    fn commit(&mut self) {
        if !std::mem::take(&mut self.unflushed) {
            return;
        }
        if let Err(e) = self.session.flush() {
            let _ = self
                .commit_failed
                .set(format!("the run could not be recorded: {e}"));
        }
    }

    /// Lands an ended step with its event, in one transaction. Steps with effects outside the
    /// run commit with the scheduler's pass ([`Exec::commit`]); the rest ride along with the
    /// next commit.
    fn land(&mut self, st: &State, i: usize, done: Option<Event>) {
        // Landed, with its event, by the member that ran it.
        if self.sent.landed.contains(&i) {
            return;
        }
        let s = &st.steps[i];
        // A recovering step failed; the store says so until its recovery ends.
        let status = match s.status {
            Status::Recovering => Status::Failed,
            other => other,
        };
        let mut v = json!({"status": status.name(), "outputs": s.outputs});
        if let Some(e) = &s.error {
            v["error"] = json!(e);
        }
        if let Some(n) = self.take_notes(i) {
            v["notes"] = json!(n);
        }
        // A tmux agent's answer cannot be asked for again for free: it commits at once too.
        let now = matches!(
            s.template.executor,
            Executor::Shell(_) | Executor::Spawn(_) | Executor::Kill(_) | Executor::Branch(_)
        ) || (self.tmux && s.is_agent());
        self.unflushed |= now;
        // A failed write is remembered by the session: the run reports it at its end.
        let _ = self.session.land(&s.id, "", Landed::Value(v), done, false);
    }

    /// Lands a fact a resume must not recompute (a branch's outcome, a foreach's items).
    fn land_fact(&mut self, key: String, v: Value) {
        // Landed by the member that ran its step.
        if self.sent.facts.contains_key(&key) {
            return;
        }
        if self.sent.order.is_some() {
            self.sent.facts_out.push((key.clone(), v.clone()));
        }
        let _ = self.session.land(&key, "", Landed::Value(v), None, true);
    }

    /// What an earlier attempt (or this one, or a member of it) landed at `key`.
    pub(super) fn recorded(&self, key: &str) -> Option<Value> {
        if let Some(v) = self.sent.facts.get(key) {
            return Some(v.clone());
        }
        match self.session.landing(key)? {
            (_, Landed::Value(v)) => Some(v),
            (_, Landed::Dropped(_)) => None,
        }
    }

    /// A leaf step's landing from an earlier attempt: (status, outputs, error).
    fn replay(&self, id: &str) -> Option<(Status, Map<String, Value>, Option<String>)> {
        let v = self.recorded(id)?;
        let status = match v.get("status")?.as_str()? {
            "done" => Status::Done,
            // It fails again, and its recovery (whose steps landed too) replays.
            "failed" | "recovered" => Status::Failed,
            _ => return None,
        };
        let outputs = v.get("outputs")?.as_object()?.clone();
        let error = v.get("error").and_then(Value::as_str).map(str::to_string);
        Some((status, outputs, error))
    }

    async fn cleanup(&self, script: &str) {
        let mut env: Vec<(String, String)> = self
            .given
            .iter()
            .map(|(k, v)| (k.clone(), subst::to_text(v)))
            .collect();
        env.push(("MEOW_WORKFLOW".into(), self.session.run_id().to_string()));
        let c = shell::Command {
            script: script.to_string(),
            cwd: self.project.clone(),
            env,
            env_remove: self.withhold_env.clone(),
            timeout: Some(std::time::Duration::from_secs(60)),
            captures: Vec::new(),
        };
        let _ = shell::run(c).await;
    }

    fn finish(self, st: &State, status: RunStatus, root: &Template) -> RunOutcome {
        let mut stores = Map::new();
        let mut steps = Map::new();
        for s in &st.steps {
            let name = if status == RunStatus::Cancelled && s.status == Status::Running {
                "cancelled"
            } else {
                s.status.name()
            };
            steps.insert(s.id.clone(), Value::from(name));
            if s.status == Status::Done && !s.outputs.is_empty() {
                stores.insert(s.id.clone(), Value::Object(s.outputs.clone()));
            }
        }
        // The run's output: the outputs of the last top-level step.
        let output = root
            .steps
            .last()
            .and_then(|t| st.index.get(&t.id))
            .map(|&i| Value::Object(st.steps[i].outputs.clone()))
            .unwrap_or(Value::Null);
        let mut o = RunOutcome::new(
            status,
            self.session.run_id().to_string(),
            pipewright_r1::Value::from_json(&output),
            pipewright_r1::Value::from_json(&Value::Object(stores)),
        );
        o.steps = Some(Value::Object(steps));
        if status == RunStatus::Failed {
            // The cause, not a join that failed because of it: a limit, else the first failed
            // step that expanded nothing, else the first failed step.
            let failed = |i: &usize| recovery::fails_run(st, *i);
            let cause = (0..st.steps.len())
                .filter(failed)
                .find(|i| self.codes.contains_key(i))
                .or_else(|| {
                    (0..st.steps.len())
                        .filter(failed)
                        .find(|&i| st.steps[i].children.is_empty())
                })
                .or_else(|| (0..st.steps.len()).find(failed));
            if let Some(i) = cause {
                let s = &st.steps[i];
                let span = if self.sources_has.contains(&s.template.span.file) {
                    s.template.span
                } else {
                    self.root_span
                };
                let code = self.codes.get(&i).copied().unwrap_or(codes::MEOW_STEP);
                o.error = Some(RunError::new(
                    code,
                    &s.id,
                    kind_name(&s.template.executor),
                    span,
                    format!(
                        "step `{}` failed: {}",
                        s.id,
                        s.error.as_deref().unwrap_or("no reason recorded")
                    ),
                ));
            }
        }
        if status == RunStatus::Cancelled {
            o.signal = self.cancel.signal();
            o.cancelled_at = st
                .steps
                .iter()
                .find(|s| s.status == Status::Running)
                .map(|s| s.id.clone())
                .or_else(|| self.sent.cancelled.clone());
        }
        // The run's own status stands: `store_error` reports the failed write beside it.
        self.session
            .finish(&mut o, root.span, finish_record, |o, msg| {
                o.store_error.get_or_insert(msg);
            });
        o
    }
}

/// The executor as events name a step's kind.
fn kind_name(executor: &Executor) -> &'static str {
    executor.keyword().unwrap_or("step")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_refuses_variables_that_are_no_object_and_a_bin_it_cannot_make() {
        assert_eq!(
            given_variables(&json!([1])),
            Err(StartError::VariablesNotAnObject("[1]".into()))
        );
        assert_eq!(given_variables(&Value::Null), Ok(Map::new()));
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = d.path().join("run");
        std::fs::write(&file, "").unwrap_or_else(|e| panic!("{e}"));
        let e = meow_command_dir(&file, std::path::Path::new("/bin/true")).unwrap_err();
        assert!(
            matches!(&e, StartError::CreateBin { dir, .. } if *dir == file.join("bin")),
            "{e}"
        );
    }
}
