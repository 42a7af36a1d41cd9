//! The execution loop (spec §2.1) on the run store.
//!
//! Landings (committed as [`Exec::land`] says):
//! - `session.K`: session K (0 for the first, one more per restart) started: its id and recipe;
//! - `session.K.created`: its first turn succeeded (§3.1 `sessionCreated`), with the id the
//!   backend gave it;
//! - `turn.N`: the N-th step of the run reported an outcome: the state it ran in, the outcome,
//!   the decision taken, its usage and reply.
//!
//! A resume reads them back, replays the decisions into the state, and goes on with the first
//! step that did not land, in the session it ran in.

use super::machine::{self, Machine, Recipes};
use super::report::{Outcome, TraceEntry};
use super::semantics::{self as sem, Decision, Limits, State};
use super::session::{new_session_id, AgentResponse, SessionLock, Turn};
use super::{Line, Options, TIERS};
use crate::ast::Recipe;
use pipewright_ir::Program;
use pipewright_runtime::codes;
use pipewright_runtime::failure::RunError;
use pipewright_runtime::outcome::{RunOutcome, RunStatus};
use pipewright_runtime::session::{
    finish_record, Begun, ResumeOf, RunOptions, RunSession, RunStart,
};
use pipewright_runtime::store::{self, Event, EventKind, Landed, Landing, StoreError};
use pipewright_syntax::SourceMap;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// A run that cannot start; `config` marks §9's configuration errors (exit code 5 there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub config: bool,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<String> for Refusal {
    fn from(message: String) -> Refusal {
        Refusal {
            message,
            config: false,
        }
    }
}

impl From<pipewright_runtime::session::ResumeError> for Refusal {
    fn from(e: pipewright_runtime::session::ResumeError) -> Refusal {
        Refusal::from(e.to_string())
    }
}

fn config(message: String) -> Refusal {
    Refusal {
        message,
        config: true,
    }
}

#[derive(Debug, Clone)]
struct Session {
    id: String,
    recipe: String,
    created: bool,
    backend_id: Option<String>,
}

/// How the loop ended.
enum End {
    /// An exit transition.
    Exit(String),
    Failed(String, Box<RunError>),
    Cancelled(String),
}

impl End {
    fn failed(reason: impl Into<String>, e: RunError) -> End {
        End::Failed(reason.into(), Box::new(e))
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    input: Option<u64>,
    output: Option<u64>,
    cost: Option<f64>,
}

impl Usage {
    fn add(&mut self, r: &AgentResponse) {
        fn sum<T: std::ops::Add<Output = T> + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            }
        }
        self.input = sum(self.input, r.input_tokens);
        self.output = sum(self.output, r.output_tokens);
        self.cost = sum(self.cost, r.cost_usd);
    }

    fn to_json(self) -> Value {
        json!({"input_tokens": self.input, "output_tokens": self.output, "cost_usd": self.cost})
    }

    fn from_json(v: &Value) -> Usage {
        Usage {
            input: v.get("input_tokens").and_then(Value::as_u64),
            output: v.get("output_tokens").and_then(Value::as_u64),
            cost: v.get("cost_usd").and_then(Value::as_f64),
        }
    }

    fn merge(&mut self, o: Usage) {
        let r = AgentResponse {
            input_tokens: o.input,
            output_tokens: o.output,
            cost_usd: o.cost,
            ..AgentResponse::default()
        };
        self.add(&r);
    }
}

struct Exec {
    recipes: Arc<Recipes>,
    sm: Options,
    /// The backend's answers are computed here (the mock): see [`Exec::land`].
    reproducible: bool,
    opts_cancel: pipewright_runtime::cancel::CancelToken,
    /// The run's lock, journal and replayed landings (see [`RunSession`]).
    session: RunSession,
    /// Admits each agent turn against the run's budgets and charges it (its backends are
    /// session backends, which the shared `Metered` wrapper does not reach).
    meter: Arc<pipewright_runtime::usage::Meter>,
    store: Option<Arc<dyn store::Store>>,
    // The run so far.
    sessions: Vec<Session>,
    trace: Vec<TraceEntry>,
    turns: u64,
    usage: Usage,
    last_reply: Option<String>,
    /// The state of the step running or last run.
    state: Option<State>,
}

/// Runs `recipe`, the checked state-machine recipe `program` was lowered from.
pub async fn run(
    program: Arc<Program>,
    recipe: &Recipe,
    sources: &SourceMap,
    opts: RunOptions,
    sm: Options,
) -> Result<Outcome, Refusal> {
    let w = program
        .workflows
        .first()
        .ok_or("the file declares no recipe".to_string())?;
    let recipes = machine::load(recipe, sources, w.file, opts.source_path.as_deref())
        .map_err(|e| config(e.into()))?;
    if let Some(t) = sm.model.as_deref().filter(|t| !TIERS.contains(t)) {
        return Err(config(format!(
            "`--model {t}` is not a model tier (tiers: haiku, sonnet, opus)"
        )));
    }
    if sm.system_prompt.is_some() && !sm.backend.supports_system_prompt() {
        return Err(config(format!(
            "the {} backend cannot pass a system prompt on; --system-prompt works with --backend claude",
            sm.backend.name()
        )));
    }
    let root = recipes
        .by_id
        .first()
        .map(|(id, _)| id.clone())
        .unwrap_or_default();
    let source_hash = store::source_hash(sources.files().map(|f| &*f.text));
    let resume = opts.resume.as_deref().map(|id| ResumeOf {
        id,
        what: "the recipe",
        kind: "recipe",
        workflow: Some(&root),
    });
    let mut begun = Begun::new(&opts, resume, opts.input.clone(), &source_hash)?;
    match &opts.resume {
        Some(id) => {
            // Another backend would not know the recorded sessions (and the mock, the
            // default, would answer for the agent).
            let recorded = begun.landings().iter().find_map(|l| match &l.landed {
                Landed::Value(v) if l.key == "session.0" => {
                    v.get("backend").and_then(Value::as_str).map(str::to_string)
                }
                _ => None,
            });
            if let Some(b) = recorded.filter(|b| b != sm.backend.name()) {
                return Err(config(format!(
                    "run {id} ran with the {b} backend; resume it with the same --backend (not {})",
                    sm.backend.name()
                )));
            }
        }
        None => {
            if !(opts.input.is_null() || opts.input.as_object().is_some_and(|m| m.is_empty())) {
                return Err(
                    "a state-machine recipe takes no input: its prompts are sent as written"
                        .to_string()
                        .into(),
                );
            }
            // Its prompts are sent as written: an empty object is recorded as no input.
            begun.input = Value::Null;
        }
    }
    let landings = begun.landings().to_vec();
    let meter = Arc::new(
        pipewright_runtime::usage::Meter::new(opts.budgets, opts.cancel.clone())
            .with_prices(opts.config.prices.clone()),
    );
    if let Some(warning) = meter.unenforceable_with(sm.backend.name(), sm.backend.reports_cost()) {
        // Once, before anything runs, as every dialect's run says it.
        eprintln!("{warning}");
    }
    let session = begun
        .open(
            opts.store.as_ref(),
            RunStart {
                file: opts.file_label.clone(),
                workflow: root.clone(),
                source_hash,
            },
            opts.sinks,
            &meter,
        )?
        // The machine replays from `begun`'s landings, read before it opened; it never asks the
        // session for one it made.
        .keep_only_replayed();
    let mut ex = Exec {
        recipes: Arc::new(recipes),
        reproducible: sm.backend.reproducible(),
        sm,
        opts_cancel: opts.cancel,
        session,
        meter,
        store: opts.store,
        sessions: Vec::new(),
        trace: Vec::new(),
        turns: 0,
        usage: Usage::default(),
        last_reply: None,
        state: None,
    };
    let end = match ex.replay(&landings) {
        Ok(Some((state, None))) => ex.drive(state).await,
        Ok(Some((_, Some(end)))) => end,
        Ok(None) => match ex.new_session(&root) {
            Ok(()) => {
                let m = ex.machine(&root);
                ex.drive(State::new(m)).await
            }
            Err(e) => End::failed(STORE_ERROR, ex.store_error(e)),
        },
        // The record does not fit the recipe (after `--force`) or cannot be read.
        Err(e) => End::failed(
            "configuration-error",
            RunError::new(
                codes::SM_CONFIG,
                "",
                "recipe",
                ex.recipes.root_span,
                e.to_string(),
            ),
        ),
    };
    Ok(ex.finish(end))
}

/// The turns and sessions a run recorded, by number; `None` when it started none. Each
/// session must have its start recorded, as every turn's session is read by its number.
#[allow(clippy::type_complexity)]
fn recorded(
    landings: &[Landing],
) -> Result<Option<(BTreeMap<u64, Value>, Vec<Session>)>, ReplayError> {
    let mut turns: BTreeMap<u64, Value> = BTreeMap::new();
    let mut sessions: BTreeMap<usize, Session> = BTreeMap::new();
    for l in landings {
        let Landed::Value(v) = &l.landed else {
            continue;
        };
        let parts: Vec<&str> = l.key.split('.').collect();
        match parts.as_slice() {
            ["turn", n] => {
                if let Ok(n) = n.parse() {
                    turns.insert(n, v.clone());
                }
            }
            ["session", k] => {
                let (Ok(k), Some(id), Some(recipe)) = (
                    k.parse(),
                    v.get("id").and_then(Value::as_str),
                    v.get("recipe").and_then(Value::as_str),
                ) else {
                    continue;
                };
                let s = sessions.entry(k).or_insert_with(|| Session {
                    id: String::new(),
                    recipe: String::new(),
                    created: false,
                    backend_id: None,
                });
                s.id = id.to_string();
                s.recipe = recipe.to_string();
            }
            ["session", k, "created"] => {
                if let Ok(k) = k.parse() {
                    let s = sessions.entry(k).or_insert_with(|| Session {
                        id: String::new(),
                        recipe: String::new(),
                        created: false,
                        backend_id: None,
                    });
                    s.created = true;
                    s.backend_id = v
                        .get("backend_session")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
            }
            _ => {}
        }
    }
    if sessions.is_empty() {
        return Ok(None);
    }
    let sessions = sessions
        .into_iter()
        .enumerate()
        .map(|(i, (k, s))| {
            if i == k && !s.id.is_empty() {
                Ok(s)
            } else {
                Err(ReplayError::NoSessionStart(i))
            }
        })
        .collect::<Result<_, ReplayError>>()?;
    Ok(Some((turns, sessions)))
}

/// Why a recorded run cannot go on under the recipe: its record does not fit the recipe (after
/// `--force`), cannot be read, or cannot be added to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ReplayError {
    #[error("the run store holds no start of session {0}")]
    NoSessionStart(usize),
    #[error("the landing turn.{0} cannot be read")]
    Unreadable(u64),
    #[error("the landing turn.{0} has no decision")]
    NoDecision(u64),
    /// What the record names (`step `x``, `recipe `r``).
    #[error("the recorded run names {0}, which the recipe no longer has; it cannot be resumed")]
    Gone(String),
    #[error("the recorded sessions do not follow the recorded turns")]
    OutOfStep,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The exit reason when the run store cannot record the run.
const STORE_ERROR: &str = "store-error";

fn decision_json(d: &Decision) -> Value {
    match d {
        Decision::Next(s) => json!({"next": s}),
        Decision::Exit(r) => json!({"exit": r}),
        Decision::Restart(r) => json!({"restart": r}),
        Decision::Guardrail(r) => json!({"guardrail": r}),
    }
}

fn decision_from(v: &Value) -> Option<Decision> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    s("next")
        .map(Decision::Next)
        .or_else(|| s("exit").map(Decision::Exit))
        .or_else(|| s("restart").map(Decision::Restart))
        .or_else(|| s("guardrail").map(Decision::Guardrail))
}

impl Exec {
    fn machine(&self, id: &str) -> &Machine {
        // Every recipe a restart names was loaded before the run started.
        match self.recipes.get(id) {
            Some(m) => m,
            None => &self.recipes.by_id[0],
        }
    }

    fn limits(&self, m: &Machine) -> Limits {
        Limits::of(m, self.sm.max_visits, self.sm.max_steps)
    }

    /// A line for the observer, made only when it hears lines of `kind`.
    fn say<S: AsRef<str>>(&self, kind: Line, text: impl FnOnce() -> S) {
        if let Some(o) = self.sm.observer.as_ref().filter(|o| o.hears(kind)) {
            o.line(kind, text().as_ref());
        }
    }

    fn store_error(&self, e: StoreError) -> RunError {
        RunError::new(
            codes::STORE,
            "",
            "run",
            self.recipes.root_span,
            format!("the run could not be recorded: {e}"),
        )
    }

    /// Lands `value` at `key` (with `done`, the event it completes).
    ///
    /// Nothing that was answered may be lost. A real agent's answer is something that
    /// happened outside the run: the agent worked in the working directory, spent tokens, and
    /// its conversation moved on; asked again it would do it all again and may answer
    /// otherwise. Once its reply is received, the turn's landing commits before the run goes
    /// on, that is before the next turn is sent, the first thing that depends on it (a resume
    /// goes on from it, in the same session); the session starts and `created` marks around
    /// it commit at once too, and everything staged commits before each turn is sent.
    ///
    /// The mock's answer is not received from anywhere: it is computed here, from the step and
    /// the restarts so far, it touches nothing outside the run, and computed again it is the
    /// same (`SessionBackend::reproducible`). Nothing was answered that a crash could lose, so
    /// its turns land like a pipeline's pure steps: staged, and committed by the recorder's
    /// writer in batches (`pipewright_runtime::recorder`), in order, and all of them before the
    /// run's final status. A kill -9 loses at most the tail of the batches, whole landings in
    /// staging order, so what the store holds is always a prefix of the run; the resume
    /// replays it and computes the rest again, the same turns with the same outcomes.
    fn land(&self, key: &str, value: Value, done: Option<Event>) -> Result<(), StoreError> {
        self.session
            .land(key, "", Landed::Value(value), done, !self.reproducible)
    }

    fn event(&self, kind: EventKind, key: &str, recipe: &str, step: &str) -> Event {
        Event {
            kind,
            key: key.to_string(),
            step_kind: "agent",
            workflow: recipe.to_string(),
            at_ms: self.session.elapsed_ms(),
            elapsed_ms: None,
            error: None,
            summary: step.to_string(),
            usage: None,
            given: None,
        }
    }

    fn report(&self, e: Event) {
        self.session.report(&e);
    }

    /// Starts session K (a restart's, or the first) for `recipe`: a new id, landed before it
    /// is used.
    fn new_session(&mut self, recipe: &str) -> Result<(), StoreError> {
        let k = self.sessions.len();
        let s = Session {
            id: new_session_id(),
            recipe: recipe.to_string(),
            created: false,
            backend_id: None,
        };
        self.land(
            &format!("session.{k}"),
            json!({"id": s.id, "recipe": s.recipe, "backend": self.sm.backend.name()}),
            None,
        )?;
        self.sessions.push(s);
        Ok(())
    }

    /// Rebuilds the run from its landings: `None` when nothing landed; else the state to go
    /// on from, or how the run already ended.
    #[allow(clippy::type_complexity)]
    fn replay(
        &mut self,
        landings: &[Landing],
    ) -> Result<Option<(State, Option<End>)>, ReplayError> {
        let Some((turns, sessions)) = recorded(landings)? else {
            return Ok(None);
        };
        self.sessions = sessions;
        let unknown = |what: &str| ReplayError::Gone(what.to_string());
        let mut current: Option<(usize, State)> = None;
        for (n, t) in &turns {
            let k = t.get("session").and_then(Value::as_u64).unwrap_or(0) as usize;
            let state = t
                .get("state")
                .and_then(State::from_json)
                .ok_or(ReplayError::Unreadable(*n))?;
            let m = self
                .recipes
                .get(&state.recipe)
                .ok_or_else(|| unknown(&format!("recipe `{}`", state.recipe)))?;
            if !m.steps.contains_key(&state.current_step) {
                return Err(unknown(&format!("step `{}`", state.current_step)));
            }
            let outcome = t.get("outcome").and_then(Value::as_str).map(str::to_string);
            let session = self
                .sessions
                .get(k)
                .map(|s| s.id.clone())
                .unwrap_or_default();
            self.trace.push(TraceEntry {
                step: state.current_step.clone(),
                outcome,
                recipe: state.recipe.clone(),
                session,
            });
            self.usage.merge(Usage::from_json(&t["usage"]));
            if let (Some(s), Some(id)) = (
                self.sessions.get_mut(k),
                t.get("backend_session").and_then(Value::as_str),
            ) {
                s.backend_id = Some(id.to_string());
            }
            self.last_reply = t.get("reply").and_then(Value::as_str).map(str::to_string);
            self.turns = *n;
            let d = t
                .get("decision")
                .and_then(decision_from)
                .ok_or(ReplayError::NoDecision(*n))?;
            let step = state.current_step.clone();
            self.report(self.event(
                EventKind::Replayed,
                &format!("turn.{n}"),
                &state.recipe,
                &step,
            ));
            self.state = Some(state.clone());
            let end = match &d {
                Decision::Next(next) => {
                    if !m.steps.contains_key(next) {
                        return Err(unknown(&format!("step `{next}`")));
                    }
                    let mut s = state.clone();
                    s.advance(next);
                    current = Some((k, s));
                    None
                }
                Decision::Restart(id) => {
                    let target = self
                        .recipes
                        .get(id)
                        .ok_or_else(|| unknown(&format!("recipe `{id}`")))?;
                    current = Some((k + 1, State::new(target)));
                    None
                }
                Decision::Exit(r) => Some(End::Exit(r.clone())),
                Decision::Guardrail(r) => Some(End::failed(
                    r.clone(),
                    self.guardrail_error(&state.recipe, &step, r),
                )),
            };
            if let Some(end) = end {
                return Ok(Some((state, Some(end))));
            }
        }
        let (k, state) = match current {
            Some(c) => c,
            None => {
                let s = &self.sessions[0];
                let m = self
                    .recipes
                    .get(&s.recipe)
                    .ok_or_else(|| unknown(&format!("recipe `{}`", s.recipe)))?;
                (0, State::new(m))
            }
        };
        if k == self.sessions.len() {
            // Killed between a restart's decision and its session's start.
            self.new_session(&state.recipe)?;
        } else if k + 1 != self.sessions.len() {
            return Err(ReplayError::OutOfStep);
        }
        // A session whose first turn never came back may exist at the backend or not: a
        // fresh id cannot collide with it.
        let last = self.sessions.len() - 1;
        if !self.sessions[last].created {
            let id = new_session_id();
            self.land(
                &format!("session.{last}"),
                json!({"id": id, "recipe": state.recipe, "backend": self.sm.backend.name()}),
                None,
            )?;
            self.sessions[last].id = id;
        }
        Ok(Some((state, None)))
    }

    fn guardrail_error(&self, recipe: &str, step: &str, reason: &str) -> RunError {
        let msg = if reason == sem::MAX_RESTARTS {
            format!(
                "step `{step}` asked for a restart-new-session, and --max-restarts {} allows no more",
                self.sm.max_restarts.unwrap_or(0)
            )
        } else if let Some(target) = reason.strip_prefix("max-step-visits-exceeded:") {
            let m = self.machine(recipe);
            format!(
                "step `{step}` leads to `{target}`, which was already visited {} times (maxStepVisits)",
                self.limits(m).max_step_visits
            )
        } else {
            let m = self.machine(recipe);
            format!(
                "recipe `{recipe}` ran {} steps (maxTotalSteps); step `{step}` leads to another",
                self.limits(m).max_total_steps
            )
        };
        RunError::new(
            codes::SM_GUARDRAIL,
            step,
            "agent",
            self.recipes.span_of(recipe, step),
            msg,
        )
    }

    /// One agent turn, raced against cancellation.
    async fn ask(
        &self,
        prompt: &str,
        state: &State,
        model: Option<&str>,
        mock: Option<&str>,
    ) -> Result<AgentResponse, Result<String, ()>> {
        let s = &self.sessions[self.sessions.len() - 1];
        let turn = Turn {
            prompt,
            session: &s.id,
            backend_session: s.backend_id.as_deref(),
            is_new: !s.created,
            model,
            system_prompt: self.sm.system_prompt.as_deref(),
            workdir: &self.sm.workdir,
            run_id: self.session.run_id(),
            recipe: &state.recipe,
            step: &state.current_step,
            mock_outcome: mock,
        };
        tokio::select! {
            r = self.sm.backend.send(&turn) => r.map_err(|e| Ok(e.message)),
            _ = self.opts_cancel.cancelled() => Err(Err(())),
        }
    }

    /// §3.1: the first successful turn creates the session.
    fn created(&mut self, r: &AgentResponse) -> Result<(), StoreError> {
        let k = self.sessions.len() - 1;
        if self.sessions[k].created {
            return Ok(());
        }
        self.land(
            &format!("session.{k}.created"),
            json!({"backend_session": r.session_id}),
            None,
        )?;
        let s = &mut self.sessions[k];
        s.created = true;
        s.backend_id = r.session_id.clone();
        Ok(())
    }

    /// §2.1 from the current state until the run ends.
    async fn drive(&mut self, mut state: State) -> End {
        loop {
            let session_id = self.sessions[self.sessions.len() - 1].id.clone();
            let lock = match SessionLock::acquire(&session_id, self.store.as_ref()) {
                Ok(l) => l,
                Err(e) => {
                    let err = RunError::new(
                        codes::SM_BACKEND,
                        &state.current_step,
                        "agent",
                        self.recipes.span_of(&state.recipe, &state.current_step),
                        e,
                    );
                    return End::failed("backend-error", err);
                }
            };
            self.say(Line::Verbose, || {
                format!(
                    "[orchestration] Starting recipe: {} (session: {})",
                    state.recipe,
                    lock.id()
                )
            });
            match self.session_loop(&mut state).await {
                Ok(target) => {
                    drop(lock);
                    if let Err(e) = self.new_session(&target) {
                        return End::failed(STORE_ERROR, self.store_error(e));
                    }
                    state = State::new(self.machine(&target));
                }
                Err(end) => return end,
            }
        }
    }

    /// The steps of one session: `Ok(recipe)` for a restart, else how the run ended.
    async fn session_loop(&mut self, state: &mut State) -> Result<String, End> {
        let recipes = self.recipes.clone();
        loop {
            self.state = Some(state.clone());
            let m = match recipes.get(&state.recipe) {
                Some(m) => m,
                None => &recipes.by_id[0],
            };
            let limits = self.limits(m);
            let Some(step) = m.steps.get(&state.current_step) else {
                return Err(End::failed(
                    sem::ORCHESTRATION_ERROR,
                    RunError::new(
                        codes::SM_ORCHESTRATION,
                        &state.current_step,
                        "agent",
                        self.recipes.root_span,
                        format!("recipe `{}` has no step `{}`", m.id, state.current_step),
                    ),
                ));
            };
            let n = self.turns + 1;
            let key = format!("turn.{n}");
            if self.opts_cancel.is_cancelled() {
                return Err(End::Cancelled(key));
            }
            let tier = sem::model_tier(self.sm.model.as_deref(), step, m).map(str::to_string);
            let model = tier
                .as_deref()
                .and_then(|t| self.sm.backend.resolve_model(t));
            let visit = || {
                format!(
                    "visit {}/{}, total {}/{}",
                    state.visits_of(&step.name),
                    limits.max_step_visits,
                    state.step_count,
                    limits.max_total_steps
                )
            };
            self.say(Line::Progress, || {
                let tier_note = tier
                    .as_deref()
                    .map(|t| format!(" [model: {t}]"))
                    .unwrap_or_default();
                format!("{} ({}){tier_note}", step.name, visit())
            });
            self.say(Line::Verbose, || {
                format!("[orchestration] Step: {} ({})", step.name, visit())
            });
            let mock = sem::mock_choice(step, self.sessions.len() as u64 - 1);
            let span = self.recipes.span_of(&state.recipe, &step.name);
            let fail = |code: &'static str, msg: String| {
                RunError::new(code, &step.name, "agent", span, msg)
            };
            // A real agent's turn is an effect outside the run: everything before it commits
            // first (see `land`).
            if !self.reproducible {
                if let Err(e) = self.session.flush() {
                    return Err(End::failed(STORE_ERROR, self.store_error(e)));
                }
            }
            let mut started = self.event(EventKind::Started, &key, &state.recipe, &step.name);
            if self.session.recorded() {
                started.given = Some(Box::new(pipewright_runtime::given::Given::prompt(
                    &step.sent,
                )));
            }
            self.report(started);
            let t0 = Instant::now();
            let mut usage = Usage::default();
            let mut reply = String::new();
            let mut extracted = Err(sem::ExtractError {
                error: String::new(),
                malformed_json: None,
            });
            // §2.1 steps 4–7: the prompt, then at most one reminder in the same session.
            for attempt in 0..2 {
                let text: std::borrow::Cow<str> = if attempt == 0 {
                    step.sent.as_str().into()
                } else {
                    let e = extracted
                        .as_ref()
                        .err()
                        .map(|e| e.error.clone())
                        .unwrap_or_default();
                    self.say(Line::Verbose, || {
                        format!(
                            "[orchestration] Outcome extraction failed: {e}; sending a reminder"
                        )
                    });
                    self.say(Line::Progress, || {
                        format!("  no outcome ({e}); reminder sent")
                    });
                    sem::reminder_prompt(&e, &step.outcomes).into()
                };
                self.say(Line::Verbose, || {
                    format!(
                        "[orchestration] Sending prompt ({} chars) to {}{}",
                        text.chars().count(),
                        self.sm.backend.name(),
                        tier.as_deref()
                            .map(|t| format!(" [{t}]"))
                            .unwrap_or_default()
                    )
                });
                if self.meter.admit().is_err() {
                    // A budget is reached: the turn is not sent, and the run stops here.
                    let mut e = self.event(EventKind::Cancelled, &key, &state.recipe, &step.name);
                    e.error = Some("stopped at its budget".into());
                    self.report(e);
                    return Err(End::Cancelled(key));
                }
                let asked = Instant::now();
                let r = match self.ask(&text, state, model.as_deref(), mock).await {
                    Ok(r) => r,
                    Err(Err(())) => {
                        let mut e =
                            self.event(EventKind::Cancelled, &key, &state.recipe, &step.name);
                        e.error = Some("cancelled".into());
                        self.report(e);
                        return Err(End::Cancelled(key));
                    }
                    Err(Ok(msg)) => {
                        // §11: the step the backend failed in is in the trace, without an
                        // outcome, as a step that reported none is.
                        self.turns = n;
                        self.trace.push(TraceEntry {
                            step: step.name.clone(),
                            outcome: None,
                            recipe: state.recipe.clone(),
                            session: self.sessions[self.sessions.len() - 1].id.clone(),
                        });
                        let mut e = self.event(EventKind::Failed, &key, &state.recipe, &step.name);
                        e.error = Some(msg.clone());
                        e.elapsed_ms = Some(t0.elapsed().as_secs_f64() * 1000.0);
                        self.report(e);
                        self.say(Line::Verbose, || {
                            format!("[orchestration] Backend error: {msg}")
                        });
                        return Err(End::failed(
                            "backend-error",
                            fail(codes::SM_BACKEND, format!("step `{}`: {msg}", step.name)),
                        ));
                    }
                };
                usage.add(&r);
                let mut spent = pipewright_runtime::usage::Usage {
                    input_tokens: r.input_tokens,
                    output_tokens: r.output_tokens,
                    cost_usd: r.cost_usd,
                    cache_read_tokens: r.cache_read_tokens,
                    cache_write_tokens: r.cache_write_tokens,
                    agent_calls: 1,
                    wall_ms: asked.elapsed().as_secs_f64() * 1000.0,
                };
                self.meter
                    .priced(&mut spent, r.model.as_deref().or(model.as_deref()));
                self.meter.charge(&key, &spent);
                if let Err(e) = self.created(&r) {
                    return Err(End::failed(STORE_ERROR, self.store_error(e)));
                }
                // Claude Code answers a resumed conversation under a new id: the next turn
                // resumes that one, or it would not see this turn.
                if let Some(id) = &r.session_id {
                    let k = self.sessions.len() - 1;
                    self.sessions[k].backend_id = Some(id.clone());
                }
                reply = r.text;
                extracted = sem::extract_outcome(&reply, &step.outcomes);
                if extracted.is_ok() {
                    break;
                }
            }
            self.usage.merge(usage);
            self.last_reply = Some(reply.clone());
            let session = self.sessions[self.sessions.len() - 1].id.clone();
            let e = match extracted {
                Ok(e) => e,
                Err(err) => {
                    self.turns = n;
                    self.trace.push(TraceEntry {
                        step: step.name.clone(),
                        outcome: None,
                        recipe: state.recipe.clone(),
                        session,
                    });
                    let mut ev = self.event(EventKind::Failed, &key, &state.recipe, &step.name);
                    ev.error = Some(err.error.clone());
                    self.report(ev);
                    let mut run_err = fail(
                        codes::SM_ORCHESTRATION,
                        format!(
                            "step `{}` reported no usable outcome after the reminder: {}",
                            step.name, err.error
                        ),
                    );
                    if let Some(j) = err.malformed_json {
                        run_err.value = Some(pipewright_r1::Value::Str(j));
                    }
                    self.say(Line::Progress, || "  no outcome after the reminder");
                    self.say(Line::Verbose, || {
                        format!("[orchestration] Exit: {}", sem::ORCHESTRATION_ERROR)
                    });
                    return Err(End::failed(sem::ORCHESTRATION_ERROR, run_err));
                }
            };
            self.say(Line::Verbose, || {
                format!("[orchestration] Outcome extracted: {}", e.outcome)
            });
            let mut decision = match sem::decide(step, state, &e.outcome, limits) {
                Some(d) => d,
                None => {
                    return Err(End::failed(
                        sem::ORCHESTRATION_ERROR,
                        fail(
                            codes::SM_ORCHESTRATION,
                            format!(
                                "step `{}` has no transition for outcome `{}`",
                                step.name, e.outcome
                            ),
                        ),
                    ))
                }
            };
            let restarts = self.sessions.len() as u64 - 1;
            if matches!(decision, Decision::Restart(_))
                && !sem::restart_allowed(restarts, self.sm.max_restarts)
            {
                decision = Decision::Guardrail(sem::MAX_RESTARTS.into());
            }
            let mut done = self.event(EventKind::Completed, &key, &state.recipe, &step.name);
            done.elapsed_ms = Some(t0.elapsed().as_secs_f64() * 1000.0);
            let landing = json!({
                "session": self.sessions.len() - 1,
                "state": state.to_json(),
                "outcome": e.outcome,
                "description": e.description,
                "decision": decision_json(&decision),
                "backend_session": self.sessions[self.sessions.len() - 1].backend_id,
                "usage": usage.to_json(),
                "reply": reply,
            });
            if let Err(err) = self.land(&key, landing, Some(done)) {
                return Err(End::failed(STORE_ERROR, self.store_error(err)));
            }
            self.turns = n;
            self.trace.push(TraceEntry {
                step: step.name.clone(),
                outcome: Some(e.outcome.clone()),
                recipe: state.recipe.clone(),
                session,
            });
            let desc = e
                .description
                .as_ref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            self.say(Line::Progress, || format!("  outcome: {}{desc}", e.outcome));
            match decision {
                Decision::Next(next) => {
                    self.say(Line::Progress, || format!("  → {next}"));
                    self.say(Line::Verbose, || {
                        format!("[orchestration] Transition: {} → {next}", step.name)
                    });
                    // `self.state` follows at the top of the loop.
                    state.advance(&next);
                }
                Decision::Exit(reason) => {
                    self.say(Line::Progress, || format!("  → exit: {reason}"));
                    self.say(Line::Verbose, || format!("[orchestration] Exit: {reason}"));
                    return Err(End::Exit(reason));
                }
                Decision::Guardrail(reason) => {
                    self.say(Line::Progress, || format!("  → stopped: {reason}"));
                    self.say(Line::Verbose, || format!("[orchestration] Exit: {reason}"));
                    let err = self.guardrail_error(&state.recipe, &step.name, &reason);
                    return Err(End::failed(reason, err));
                }
                Decision::Restart(target) => {
                    self.say(Line::Progress, || {
                        format!("  → restart: {target} in a new session")
                    });
                    self.say(Line::Verbose, || {
                        format!("[orchestration] Restart in a new session: {target}")
                    });
                    return Ok(target);
                }
            }
        }
    }

    fn stores(&self) -> Value {
        let sessions: Vec<Value> = self
            .sessions
            .iter()
            .map(|s| json!({"id": s.id, "recipe": s.recipe, "backend_session": s.backend_id}))
            .collect();
        json!({
            "state": self.state.as_ref().map(State::to_json),
            "restarts": self.sessions.len().saturating_sub(1),
            "turns": self.turns,
            "sessions": sessions,
            "usage": self.usage.to_json(),
        })
    }

    fn finish(self, end: End) -> Outcome {
        let output = match &self.last_reply {
            Some(r) => pipewright_r1::Value::Str(r.clone()),
            None => pipewright_r1::Value::Null,
        };
        let stores = pipewright_r1::Value::from_json(&self.stores());
        let run_id = self.session.run_id().to_string();
        let (mut run, exit_reason) = match end {
            End::Exit(reason) => (
                RunOutcome::new(RunStatus::Ok, run_id, output, stores),
                reason,
            ),
            End::Failed(reason, err) => {
                let mut o = RunOutcome::new(RunStatus::Failed, run_id, output, stores);
                o.error = Some(*err);
                (o, reason)
            }
            End::Cancelled(key) => {
                let mut o = RunOutcome::new(RunStatus::Cancelled, run_id, output, stores);
                o.cancelled_at = Some(key);
                o.signal = self.opts_cancel.signal();
                (o, "cancelled".to_string())
            }
        };
        let span = self.recipes.root_span;
        self.session.finish(
            &mut run,
            span,
            |o| {
                let mut fin = finish_record(o);
                if let Some(e) = fin.error.as_mut() {
                    e["exit_reason"] = json!(exit_reason);
                }
                fin
            },
            |o, msg| o.fail_store(msg, span),
        );
        Outcome {
            run,
            exit_reason,
            trace: self.trace,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn landing(key: &str, v: Value) -> Landing {
        Landing {
            key: key.into(),
            step_hash: String::new(),
            landed: Landed::Value(v),
        }
    }

    #[test]
    fn a_session_without_its_recorded_start_cannot_be_resumed() {
        let first = landing("session.0", json!({"id": "s0", "recipe": "r"}));
        let created = landing("session.1.created", json!({"backend_session": "b"}));
        assert_eq!(
            recorded(&[first.clone(), created]).err(),
            Some(ReplayError::NoSessionStart(1))
        );
        assert_eq!(
            ReplayError::NoSessionStart(1).to_string(),
            "the run store holds no start of session 1"
        );
        assert!(matches!(recorded(&[]), Ok(None)));
        assert!(matches!(recorded(&[first]), Ok(Some((_, s))) if s.len() == 1));
    }
}
