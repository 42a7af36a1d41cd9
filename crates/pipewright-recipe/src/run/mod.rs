//! The recipe runtime: runs a lowered recipe (a workflow of dialect `recipe`) with the
//! semantics of the reference runner (specs/notes/recipe-runtime.md §5), on the same run
//! store, backends, child-process handling and cancellation as pipelines.
//!
//! The state of a recipe run is its context, a mapping of named variables. Each top-level step
//! (and each loop iteration) lands in the run store as the change it made to the context (the
//! keys it set and removed, exact to Python's JSON), so a resume replays the landed steps into
//! the same context and goes on with the first step that did not land: a kill -9 loses at most
//! the step in flight. An approval gate lands as its decision; a run that reaches an undecided
//! gate ends `paused`, and `pipewright approve|deny` records the decision for the resume.

mod exec;
mod gate;
mod limiter;
mod member;
pub mod plan;
pub mod prerun;
mod values;

use crate::runtime::{self as rt, Context};
use crate::value::Value;
use pipewright_ir::{Node, Program, Workflow};
use pipewright_runtime::backend::AgentBackend;
use pipewright_runtime::cancel::CancelToken;
use pipewright_runtime::failure::RunError;
use pipewright_runtime::outcome::{RunOutcome, RunStatus};
use pipewright_runtime::session::{
    finish_record, Begun, ResumeOf, RunOptions, RunSession, RunStart,
};
use pipewright_runtime::store::{self, Event, EventKind, Landed, StoreError};
use pipewright_syntax::SourceMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

pub use gate::{decide, has_gates, pending_gates, Decision};
pub use member::member;

/// The runner's defaults (`recursion`).
const DEFAULT_MAX_DEPTH: u64 = 5;
const DEFAULT_MAX_TOTAL_STEPS: u64 = 100;

/// Why a recipe stopped before its end.
pub(crate) enum Stop {
    Failed(Box<RunError>),
    Cancelled(String),
    /// At an undecided approval gate: what the approver is asked.
    Paused(serde_json::Value),
}

/// What a step asks of the steps after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Next,
    /// `on_error: skip_remaining`: the rest of the step list (of the stage) is skipped.
    SkipRemaining,
}

/// The shared state of one run.
pub(crate) struct Exec {
    backend: Arc<dyn AgentBackend>,
    cancel: CancelToken,
    /// The project directory: relative `cwd`s resolve here, and commands run here.
    project: PathBuf,
    withhold_env: Vec<String>,
    identity: String,
    /// The run's lock, journal and replayed landings (see [`RunSession`]).
    session: RunSession,
    /// Agent turns so far, over every attempt of the run (the `max_total_steps` budget).
    agent_turns: AtomicU64,
    limiter: limiter::Limiter,
    /// Gates ask on the terminal instead of pausing.
    interactive: bool,
    /// Where a parallel foreach's iterations run; `None`: here (see `run::member`).
    members: Option<Arc<dyn pipewright_runtime::members::Members>>,
    /// The run's meter: what iterations run elsewhere spent is counted here.
    meter: Arc<pipewright_runtime::usage::Meter>,
}

/// One recipe being executed: the root, or a sub-recipe inside it.
pub(crate) struct Frame {
    workflow: Workflow,
    /// Its source text (step hashes) and directory (sub-recipe paths).
    text: Arc<str>,
    dir: PathBuf,
    depth: u64,
    /// Recipe names from the root down to this one.
    stack: Vec<String>,
    max_depth: u64,
    max_total_steps: u64,
    /// Prefix of every key landed inside (empty at the root).
    prefix: String,
    /// The stages of the staged recipes calling this one, each followed by `/`: a gate in
    /// here is shown to the approver under `<parent stage>/<stage>` (notes §5.13).
    gate_path: String,
    /// A sub-recipe's file, from the root recipe's directory (where an iteration sent to
    /// another worker finds it there); `None`: the root.
    file: Option<PathBuf>,
}

/// The context with the keys a step changed, so its landing holds only those.
pub(crate) struct Ctx {
    pub vars: Context,
    touched: Vec<String>,
}

impl Ctx {
    fn new(vars: Context) -> Ctx {
        Ctx {
            vars,
            touched: Vec::new(),
        }
    }

    pub(crate) fn set(&mut self, k: &str, v: Value) {
        self.vars.insert(k.to_string(), v);
        self.touch(k);
    }

    pub(crate) fn remove(&mut self, k: &str) {
        self.vars.shift_remove(k);
        self.touch(k);
    }

    /// A key changed by a runtime helper that writes the context itself.
    pub(crate) fn touch(&mut self, k: &str) {
        if !self.touched.iter().any(|t| t == k) {
            self.touched.push(k.to_string());
        }
    }

    /// The change since the last call, as landed: `{"set": {…}, "unset": […]}` plus `extra`.
    fn take_delta(&mut self, extra: Vec<(&str, Value)>) -> Value {
        let keys = std::mem::take(&mut self.touched);
        self.delta(keys, extra)
    }

    /// The change so far of the step a loop iteration belongs to, for the iteration's landing.
    /// The keys stay: the loop step's own landing repeats them, and they must reach it even
    /// when the iteration is inside an outer one.
    pub(crate) fn iteration_delta(&self, extra: Vec<(&str, Value)>) -> Value {
        self.delta(self.touched.clone(), extra)
    }

    fn delta(&self, keys: Vec<String>, extra: Vec<(&str, Value)>) -> Value {
        let mut set = indexmap::IndexMap::new();
        let mut unset = Vec::new();
        for k in keys {
            match self.vars.get(&k) {
                Some(v) => {
                    set.insert(k, v.clone());
                }
                None => unset.push(Value::Str(k)),
            }
        }
        let mut m = indexmap::IndexMap::new();
        m.insert("set".to_string(), Value::Map(set));
        m.insert("unset".to_string(), Value::List(unset));
        for (k, v) in extra {
            m.insert(k.to_string(), v);
        }
        Value::Map(m)
    }

    /// Applies the change an iteration made ([`Ctx::apply`]) as the step's own: its keys are
    /// the change of the step the iteration belongs to too, whether the iteration ran elsewhere
    /// or is replayed (the step's landing must hold what a replayed iteration set, or a later
    /// resume that replays the step would not have it).
    pub(crate) fn absorb(&mut self, delta: &Value) {
        self.apply(delta);
        let Value::Map(m) = delta else { return };
        let set = match m.get("set") {
            Some(Value::Map(set)) => set.keys().cloned().collect(),
            _ => Vec::new(),
        };
        let unset = match m.get("unset") {
            Some(Value::List(unset)) => unset
                .iter()
                .filter_map(|k| match k {
                    Value::Str(k) => Some(k.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        for k in set.into_iter().chain(unset) {
            self.touch(&k);
        }
    }

    /// Applies a landed change (on resume).
    fn apply(&mut self, delta: &Value) {
        let Value::Map(m) = delta else { return };
        if let Some(Value::Map(set)) = m.get("set") {
            for (k, v) in set {
                self.vars.insert(k.clone(), v.clone());
            }
        }
        if let Some(Value::List(unset)) = m.get("unset") {
            for k in unset {
                if let Value::Str(k) = k {
                    self.vars.shift_remove(k);
                }
            }
        }
    }
}

/// Runs the first workflow of `program`, a lowered recipe.
pub async fn run(
    program: Arc<Program>,
    sources: &SourceMap,
    mut opts: RunOptions,
) -> Result<RunOutcome, String> {
    let workflow = program
        .workflows
        .first()
        .ok_or("the file declares no recipe")?
        .clone();
    let text: Arc<str> = sources
        .get(workflow.file)
        .map(|f| f.text.clone())
        .unwrap_or_else(|| Arc::from(""));
    let source_hash = store::source_hash(sources.files().map(|f| &*f.text));
    let resume = opts.resume.as_deref().map(|id| ResumeOf {
        id,
        what: "the recipe",
        kind: "recipe",
        workflow: Some(&workflow.name),
    });
    let begun = Begun::new(&opts, resume, opts.input.clone(), &source_hash)?;
    let input = begun.input.clone();
    if !(input.is_null() || input.is_object()) {
        return Err(format!(
            "the input must be a JSON object (its keys become context variables), got {input}"
        ));
    }
    // Before the run exists: a run that cannot start records nothing.
    if opts.resume.is_none() {
        crate::run::prerun::recipe(&workflow, &input)?;
    }
    let session = begun.open(
        opts.store.as_ref(),
        RunStart {
            file: opts.file_label.clone(),
            workflow: workflow.name.clone(),
            source_hash,
        },
        std::mem::take(&mut opts.sinks),
        &opts.meter,
    )?;
    let (ex, frame) = root(workflow, text, opts, session);
    let caller = values::context_of(&input);
    let mut ctx = Ctx::new(ex.start_context(&frame, &caller)?);
    let result = ex.run_recipe(&frame, &mut ctx).await;
    Ok(ex.finish(&frame, ctx, result))
}

/// The run's shared state and its root recipe's frame.
fn root(
    workflow: Workflow,
    text: Arc<str>,
    opts: RunOptions,
    session: RunSession,
) -> (Exec, Frame) {
    let limits = workflow.limits.clone();
    let dir = opts
        .source_path
        .as_deref()
        .and_then(|p| p.parent())
        .map(PathBuf::from)
        .unwrap_or_else(|| opts.tools.workdir.clone());
    let ex = Exec {
        backend: opts.backend,
        cancel: opts.cancel,
        project: opts.tools.workdir.clone(),
        withhold_env: opts.tools.withhold_env.clone(),
        identity: opts.identity,
        agent_turns: AtomicU64::new(session.spawns_before()),
        session,
        limiter: limiter::Limiter::new(&limits),
        interactive: opts.interactive,
        members: opts.members,
        meter: opts.meter,
    };
    let frame = Frame {
        stack: vec![workflow.name.clone()],
        max_depth: limits.max_depth.unwrap_or(DEFAULT_MAX_DEPTH),
        max_total_steps: limits.max_total_steps.unwrap_or(DEFAULT_MAX_TOTAL_STEPS),
        workflow,
        text,
        dir,
        depth: 0,
        prefix: String::new(),
        gate_path: String::new(),
        file: None,
    };
    (ex, frame)
}

impl Exec {
    /// The context a recipe starts with; on resume, the one its first attempt started with
    /// (its `session.started` included).
    fn start_context(&self, f: &Frame, caller: &Context) -> Result<Context, String> {
        let key = format!("{}init", f.prefix);
        if let Some((_, Landed::Value(v))) = self.session.landing(&key) {
            if let Some(Value::Map(m)) = values::from_landed(&v) {
                return Ok(m);
            }
        }
        let missing: Vec<&str> = f
            .workflow
            .params
            .iter()
            .filter(|p| p.required && !caller.contains_key(&p.name))
            .map(|p| p.name.as_str())
            .collect();
        if !missing.is_empty() {
            let them = if missing.len() == 1 { "it" } else { "them" };
            // The root's inputs come from the command line; a sub-recipe's from its step.
            if f.depth == 0 {
                let given = caller.keys().map(String::as_str).collect();
                return Err(pipewright_runtime::prerun::needs_message(
                    &format!("recipe `{}`", f.workflow.name),
                    &crate::run::prerun::recipe_lacks(&f.workflow, &given),
                ));
            }
            let how = format!("pass {them} in the calling step's `context:`");
            return Err(format!(
                "recipe `{}` needs {} (declared `required` with no default): {how}",
                f.workflow.name,
                missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ));
        }
        let defaults: Context = f
            .workflow
            .params
            .iter()
            .filter(|p| !p.required)
            .map(|p| (p.name.clone(), Value::from(&p.default)))
            .collect();
        let meta = rt::recipe_meta(
            &f.workflow.name,
            f.workflow.version.as_deref().unwrap_or(""),
            f.workflow.description.as_deref().unwrap_or(""),
        );
        let session = rt::session_meta(
            self.session.run_id(),
            &now_iso(),
            &self.project.display().to_string(),
        );
        let ctx = rt::initial_context(&defaults, caller, meta, session);
        self.land_raw(
            &key,
            "init",
            values::to_landed(&Value::Map(ctx.clone())),
            true,
        )
        .map_err(|e| format!("the run could not be recorded: {e}"))?;
        Ok(ctx)
    }

    /// Stores a landing (and remembers it for this run); `now` commits it at once, else it
    /// commits before the next step with side effects.
    fn land_raw(
        &self,
        key: &str,
        hash: &str,
        v: serde_json::Value,
        now: bool,
    ) -> Result<(), StoreError> {
        self.session.land(key, hash, Landed::Value(v), None, now)
    }

    /// Everything landed so far is committed before a step with effects outside the run
    /// starts: a crash then never loses a landing whose step would repeat those effects.
    fn before_side_effects(&self) -> Result<(), StoreError> {
        self.session.flush()
    }

    /// Forgets what an earlier attempt landed inside an iteration that runs again (the
    /// iterations of a loop in its body): the body's steps run afresh, so what they lead to
    /// must not be replayed from the attempt that died. An approval gate's state is kept: a
    /// person's decision (or the question already asked, with its time) is not the step's to
    /// repeat, and without it an iteration reaching a gate would wait at it again forever.
    fn forget_under(&self, key: &str) -> Result<(), StoreError> {
        let gates: Vec<_> = self
            .session
            .landings_under(key)
            .into_iter()
            .filter(|(_, hash, _)| gate::is_gate(hash))
            .collect();
        self.session.forget_under(key, false)?;
        for (k, hash, landed) in gates {
            self.session.land(&k, &hash, landed, None, false)?;
        }
        Ok(())
    }

    /// A landing of this run (an earlier attempt's included) at `key` with content `hash`.
    fn landed(&self, key: &str, hash: &str) -> Option<Value> {
        values::from_landed(&self.session.replayed(key, hash)?)
    }

    /// The content hash of a step: its kind and its source text.
    fn step_hash(&self, f: &Frame, node: &Node) -> String {
        let text = f
            .text
            .get(node.span.start as usize..node.span.end as usize)
            .unwrap_or("");
        store::source_hash([node.kind.name(), text].into_iter())
    }

    fn event(&self, kind: EventKind, key: &str, f: &Frame, node: &Node) -> Event {
        Event {
            kind,
            key: key.to_string(),
            step_kind: node.kind.name(),
            workflow: f.workflow.name.clone(),
            at_ms: self.session.elapsed_ms(),
            elapsed_ms: None,
            error: None,
            summary: node.id.clone().unwrap_or_else(|| node.summary()),
            usage: None,
            given: None,
        }
    }

    /// Reports an event that lands nothing (started, failed, replayed).
    fn report(&self, e: Event) {
        self.session.report(&e);
    }

    /// Lands a step's change of the context with its completion event, in one transaction.
    /// Staged, not committed: the next step with side effects commits it before it starts
    /// (`Exec::before_side_effects`), so one commit per step suffices.
    fn land_step(
        &self,
        key: &str,
        hash: &str,
        delta: &Value,
        done: Event,
    ) -> Result<(), StoreError> {
        let v = values::to_landed(delta);
        self.session
            .land(key, hash, Landed::Value(v), Some(done), false)
    }

    fn finish(self, f: &Frame, ctx: Ctx, result: Result<(), Stop>) -> RunOutcome {
        let final_out = rt::final_output(&ctx.vars, last_output(&f.workflow))
            .map(|o| values::to_json(&o.value))
            .unwrap_or(serde_json::Value::Null);
        let output = pipewright_r1::Value::from_json(&final_out);
        let stores = pipewright_r1::Value::from_json(&values::context_json(&ctx.vars));
        let run_id = self.session.run_id().to_string();
        let mut outcome = match result {
            Ok(()) => RunOutcome::new(RunStatus::Ok, run_id, output, stores),
            Err(Stop::Failed(e)) => {
                let mut o = RunOutcome::new(RunStatus::Failed, run_id, output, stores);
                o.error = Some(*e);
                o
            }
            Err(Stop::Cancelled(key)) => {
                let mut o = RunOutcome::new(RunStatus::Cancelled, run_id, output, stores);
                o.cancelled_at = Some(key);
                o.signal = self.cancel.signal();
                o
            }
            Err(Stop::Paused(pending)) => {
                let mut o = RunOutcome::new(RunStatus::Paused, run_id, output, stores);
                o.pending = Some(pending);
                o
            }
        };
        self.session
            .finish(&mut outcome, f.workflow.span, finish_record, |o, msg| {
                o.fail_store(msg, f.workflow.span)
            });
        outcome
    }
}

/// The output variable of the recipe's last step (the last stage's, when staged), which
/// becomes the run's output when the context has no `final_output`.
fn last_output(w: &Workflow) -> Option<&str> {
    let nodes = w.body.sequence();
    let mut last = nodes.iter().rev().find_map(|n| {
        let node = w.body.node(*n)?;
        match &node.kind {
            pipewright_ir::NodeKind::Gate { .. } => None,
            pipewright_ir::NodeKind::Stage { body, .. } => Some(Err(body)),
            _ => Some(Ok(node)),
        }
    })?;
    loop {
        match last {
            Ok(node) => return node.output.as_deref(),
            Err(body) => {
                let n = *body.sequence().last()?;
                last = Ok(body.node(n)?);
            }
        }
    }
}

/// The time now as ISO 8601 (UTC), for `session.started`.
fn now_iso() -> String {
    let (y, m, d, hh, mm, ss) = store::utc_parts(store::now_ms());
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}+00:00")
}
