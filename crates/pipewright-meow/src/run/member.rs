//! A MEOW run's steps run apart from it on a durable engine (issue 24), through
//! `pipewright_runtime::members`, in groups: a foreach's iteration, or a top-level step
//! that runs beside others. The run's one scheduler keeps the DAG and the step statuses.
//!
//! The pass inserts an iteration's steps into its DAG as a local run does. When the iteration
//! can run alone, its steps are not dispatched: the first of them to be ready (and let through
//! by `max_concurrent`) sends the whole iteration with its variables (`check` holds a
//! template's output references to its own steps). A top-level step is sent the same way, alone,
//! with the outputs of the steps it reads. Whichever worker takes the group runs its steps with
//! this same scheduler, landing each under the pass's epoch (its landed steps are replayed when
//! it is retried), and hands back how each step ended, in order. The pass then ends the same
//! steps with the same results in the same order, so its statuses, joins, skips and its report
//! are a local run's; it does not land them again.
//!
//! A group holds only shell, agent, spawn and kill steps, and in an iteration expand and
//! branch steps whose templates are named as written (or through variables known when it
//! leaves) and expand into such steps and expansions, however deep, and `on_error` recovery
//! templates so named that hold shell steps and such expansions; an iteration's needs name
//! its own steps. The member expands them; the pass inserts the same steps from what it hands
//! back (a branch's outcome, a failure it recovered from) when it ends them.
//!
//! An iteration whose expansions read outputs of its own steps cannot be told when it is
//! inserted: its first steps run here, and once they have ended (shell steps) and what is
//! left can be told from their outputs, the rest goes as a group (its worker replays the
//! steps that ended here from their landings): [`Exec::send_late`].
//!
//! A group takes the agents its steps name with it: each must be free when it goes, and the
//! run's other steps that name one wait until the group is back, as for an agent at work (an
//! agent works on one step at a time across the whole run); a group that cannot take its
//! agents runs here. An agent in tmux lives in a session on the host that spawned it: a group
//! takes one only if it spawns and kills it, and the member's worker then owns the session
//! and an orchestrator socket of its own for the agent's `meow done`.

use super::dispatch::{Completion, InFlight};
use super::state::{Ended, Scope, State, Status};
use super::template::{ModuleFile, Template, TemplateStep};
use super::{recovery, subst, Exec};
use crate::ast::Text;
use crate::executor::AgentUse;
use crate::tree::Node;
use crate::Executor;
use pipewright_dialect::Member;
use pipewright_ir::Program;
use pipewright_runtime::codes;
use pipewright_runtime::failure::RunError;
use pipewright_runtime::members::{MemberCall, MemberReport, MemberResult, SentError};
use pipewright_runtime::outcome::RunStatus;
use pipewright_runtime::session::{Begun, RunOptions, RunStart};
use pipewright_runtime::store;
use pipewright_syntax::SourceMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The run's steps that run as members, and what they came to.
#[derive(Default)]
pub(super) struct Sent {
    pub groups: Vec<Group>,
    /// Step → the group (in `groups`) it belongs to.
    pub of: HashMap<usize, usize>,
    /// Steps a member landed, with their events: the pass does not land them again.
    pub landed: HashSet<usize>,
    /// The steps in the order they ended, each with the status it ended with (a step that
    /// recovers ends twice: `recovering`, then as its recovery ends): what a member hands
    /// back (`None` in a run).
    pub order: Option<Vec<(usize, Status)>>,
    /// A member was cancelled (its step's key): the run stops as cancelled.
    pub cancelled: Option<String>,
    /// Agents a group took with it (agent → group): the run's other steps that name one wait
    /// until the group is back, as for an agent at work.
    pub reserved: HashMap<String, usize>,
    /// Facts members landed (a branch's outcome), by key: the pass expands their steps again
    /// from them ([`Exec::recorded`]) and does not land them again.
    pub facts: HashMap<String, Value>,
    /// In a member: the facts it landed, in order, to hand back.
    pub facts_out: Vec<(String, Value)>,
    /// Iterations that could not go when inserted, by their steps: each goes later, with the
    /// steps it has left, once what it expands is known ([`Exec::send_late`]).
    pub late: HashMap<usize, usize>,
    pub later: Vec<Late>,
}

/// An iteration that may go later: what it is sent with.
#[derive(Clone)]
pub(super) struct Late {
    /// Its template, as written (a sequential iteration's steps in the DAG also need the
    /// previous iteration).
    workflow: Arc<Template>,
    /// Its steps in the run's DAG, the template's own.
    steps: Vec<usize>,
    reference: String,
    prefix: String,
    vars: Map<String, Value>,
}

/// What a step's fields are rendered with before it runs: its variables, and a lookup that
/// has them and (for a step in the run's DAG) the outputs of the steps that ended.
#[derive(Clone, Copy)]
struct Seen<'a> {
    vars: &'a Map<String, Value>,
    cx: &'a dyn subst::Lookup,
}

/// Steps that run together as one member: an iteration, or a step alone.
pub(super) struct Group {
    /// `F.3`, `build`: its steps' keys are at or under it.
    key: String,
    /// What is sent; `None` once it was.
    body: Option<Body>,
    steps: Vec<usize>,
    /// The agents its steps name, once it was sent.
    agents: Vec<String>,
    /// An iteration that may go later if it cannot go now (the names of the agents it would
    /// take read outputs of its own steps): [`Exec::send_late`].
    later: Option<Late>,
}

/// What became of a group's first ready step: [`Exec::send`].
pub(super) enum Sending {
    /// The group was sent: its answer.
    Sent(InFlight),
    /// The group was sent earlier: the step ends when it is back.
    Out,
    /// The group cannot go (an agent it names is at work in the run, or its name is not
    /// known before the group runs): its steps run here.
    Here,
}

/// What a member is sent.
#[derive(Debug, Serialize, Deserialize)]
struct Body {
    what: What,
    /// The variables its steps see.
    vars: Map<String, Value>,
    /// The steps outside it whose outputs its steps read (`{{step.outputs…}}`): id, status,
    /// outputs, as they stood when it was sent.
    outside: Vec<(String, String, Map<String, Value>)>,
    /// The agents its agent, spawn and kill steps name, with the working directory a spawn
    /// in the run gave each (`None`: not spawned; it works in the project).
    #[serde(default)]
    agents: Vec<(String, Option<std::path::PathBuf>)>,
}

/// What a member hands back: how each of its steps ended, in order, and what became of the
/// agents it took (spawned in it, with their working directory, or killed: `None`).
#[derive(Debug, Serialize, Deserialize)]
struct Back {
    ends: Vec<StepEnd>,
    #[serde(default)]
    agents: Vec<(String, Option<std::path::PathBuf>)>,
    /// The facts its expansions landed: the pass inserts the same steps from them.
    #[serde(default)]
    facts: Vec<(String, Value)>,
}

#[derive(Debug, Serialize, Deserialize)]
enum What {
    /// An iteration of a foreach: the template, by a reference that resolves to it from the
    /// root workflow's file, and the prefix of its steps' ids (`F.3.`).
    Iteration { reference: String, prefix: String },
    /// A top-level step of the root workflow, alone.
    Step { id: String },
}

/// How one of a member's steps ended.
#[derive(Debug, Serialize, Deserialize)]
struct StepEnd {
    id: String,
    status: String,
    outputs: Map<String, Value>,
    error: Option<String>,
    error_type: Option<String>,
}

/// The spec's error type a member names, as the run keeps it.
fn error_type(name: &str) -> Option<&'static str> {
    [
        recovery::TIMEOUT,
        recovery::COMMAND_FAILED,
        recovery::AGENT_NOT_FOUND,
        recovery::AGENT_CRASHED,
        recovery::TEMPLATE_NOT_FOUND,
    ]
    .into_iter()
    .find(|t| *t == name)
}

/// Whether template step `t` of an iteration whose step ids are `ids` can run apart from the
/// run (see the module).
/// `needs_inside`: its needs must name steps of `ids` (an iteration's); a step sent alone is
/// sent once its needs are met. `offline`: agents are answered by the run's backend, not
/// typed to in tmux sessions, so an agent step can go alone too. Agent, spawn and kill steps
/// go with their agents ([`Exec::group_agents`] says which can).
fn runs_alone(
    t: &super::template::TemplateStep,
    ids: &HashSet<&str>,
    needs_inside: bool,
    offline: bool,
) -> bool {
    let goes = match t.executor {
        Executor::Shell(_) => true,
        // In tmux an agent goes only with the iteration that spawns and kills it.
        Executor::Agent(_) => offline || needs_inside,
        // Offline they end at once, and in tmux their session must go with its agent's
        // steps: worth sending only with the rest of their iteration.
        Executor::Spawn(_) | Executor::Kill(_) => needs_inside,
        _ => false,
    };
    goes && (!needs_inside || needs_within(t, ids))
}

/// Step `t`'s `on_error` recovery template, if it has one.
fn recovery(t: &TemplateStep) -> Option<&Text> {
    t.on_error
        .as_ref()
        .filter(|e| crate::on_error_template(&e.text))
}

/// Whether step `t`'s needs name steps of `ids` (or steps under them: `track.done`).
fn needs_within(t: &super::template::TemplateStep, ids: &HashSet<&str>) -> bool {
    t.needs
        .iter()
        .all(|n| ids.contains(n.as_str()) || ids.contains(n.split('.').next().unwrap_or(n)))
}

/// How deep [`Exec::expands_plainly`] follows expansions into expansions.
const PLAIN_DEPTH: u32 = 8;

/// Whether step `t` names a template, gives an expansion variables or names an agent from an
/// output of a step (`{{step.outputs.field}}`): what only its run can tell.
fn reads_outputs(t: &TemplateStep) -> bool {
    let reads = |text: &str| text.contains(".outputs.");
    t.executor
        .agent_named()
        .is_some_and(|(field, _)| field.is_some_and(|f| reads(&f.text)))
        || expansions(t).into_iter().any(|e| match e {
            Expansion::Named(reference, variables) => {
                reads(&reference.text) || variables.is_some_and(|v| reads(&v.to_json().to_string()))
            }
            Expansion::Inline(steps) => steps.iter().any(reads_outputs),
        })
}

/// What an expand or branch step may expand into.
enum Expansion<'t> {
    /// A template, by its reference, with the variables it is given.
    Named(&'t Text, Option<&'t Node>),
    /// A branch's inline steps.
    Inline(Vec<TemplateStep>),
}

/// What step `t` may expand into (each of a branch's outcomes); nothing for other steps.
fn expansions(t: &TemplateStep) -> Vec<Expansion<'_>> {
    use crate::executor::BranchTarget;
    match &t.executor {
        Executor::Expand(x) => x
            .template
            .as_ref()
            .map(|r| Expansion::Named(r, x.variables.as_ref()))
            .into_iter()
            .collect(),
        Executor::Branch(b) => b
            .targets()
            .into_iter()
            .filter_map(|(_, target)| match target {
                Some(BranchTarget::Template {
                    template,
                    variables,
                    ..
                }) => Some(Expansion::Named(template, variables.as_ref())),
                Some(BranchTarget::Inline { steps, .. }) => Some(Expansion::Inline(
                    steps
                        .iter()
                        .filter_map(|s| s.as_ref().ok().map(TemplateStep::from_ast))
                        .collect(),
                )),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The steps of `st` whose outputs step `i`'s fields and variables may read: what a member
/// running it without them needs to know of them.
fn outside(st: &State, i: usize) -> Vec<(String, String, Map<String, Value>)> {
    let s = &st.steps[i];
    let mut texts = Vec::new();
    for (_, v) in super::dispatch::substituted_fields(&s.template.executor) {
        super::collect_strings(&v, &mut texts);
    }
    if let Executor::Shell(shell) = &s.template.executor {
        texts.extend(
            shell
                .command
                .captures
                .iter()
                .filter_map(|c| c.source.as_ref().map(|t| t.text.clone())),
        );
    }
    // A variable's value may hold references too (a default such as "{{b.outputs.x}}").
    for v in s.scope.vars.values() {
        super::collect_strings(v, &mut texts);
    }
    let mut named = Vec::new();
    for text in &texts {
        for (_, _, inner) in subst::refs(text) {
            if let subst::Ref::Output { step, .. } = subst::parse(inner) {
                named.extend(super::state::candidates(&s.id, &step));
            }
        }
    }
    named.sort();
    named.dedup();
    named
        .into_iter()
        .filter_map(|id| {
            let k = *st.index.get(&id)?;
            (k != i).then(|| {
                let o = &st.steps[k];
                (id, o.status.name().to_string(), o.outputs.clone())
            })
        })
        .collect()
}

impl Exec {
    /// Iteration `prefix` of foreach `i`, just inserted from `workflow` (which `reference`
    /// names) with variables `vars`, runs as a member if it can; if it cannot yet (what it
    /// expands reads an output of its own steps), it may later ([`Exec::send_late`]).
    pub(super) fn send_away(
        &mut self,
        st: &State,
        i: usize,
        workflow: &Arc<Template>,
        reference: String,
        vars: Map<String, Value>,
        prefix: &str,
    ) {
        if self.members.is_none() || workflow.steps.is_empty() {
            return;
        }
        // The member finds the template from the root workflow's file: one a foreach of
        // another file names is sent by its own file's path from the project's root.
        let reference = if st.steps[i].src.path == self.root_path {
            reference
        } else {
            match self.lib.reference_from(workflow, &self.root_path) {
                Some(r) => r,
                None => return,
            }
        };
        let steps: Vec<usize> = workflow
            .steps
            .iter()
            .filter_map(|t| st.index.get(&format!("{prefix}{}", t.id)).copied())
            .collect();
        if steps.len() != workflow.steps.len()
            || steps.iter().any(|&k| st.steps[k].status != Status::Pending)
        {
            return;
        }
        // Landed whole in an earlier pass: replayed here, at no cost.
        if steps
            .iter()
            .all(|&k| self.recorded(&st.steps[k].id).is_some())
        {
            return;
        }
        // Only what reads an output of a step can be told later.
        let late = workflow
            .steps
            .iter()
            .any(|t| reads_outputs(t))
            .then(|| Late {
                workflow: workflow.clone(),
                steps: steps.clone(),
                reference: reference.clone(),
                prefix: prefix.to_string(),
                vars: vars.clone(),
            });
        if self.goes_whole(st, workflow, prefix, &steps) {
            let m = self.group_iteration(reference, prefix, vars, steps);
            self.sent.groups[m].later = late;
        } else if let Some(late) = late {
            self.wait_to_send(late);
        }
    }

    /// Iteration `late` goes later if it can ([`Exec::send_late`]).
    fn wait_to_send(&mut self, late: Late) {
        let c = self.sent.later.len();
        for &k in &late.steps {
            self.sent.late.insert(k, c);
        }
        self.sent.later.push(late);
    }

    /// Whether steps `steps` of an iteration of `workflow` whose steps' ids start with
    /// `prefix` (its own, in the run's DAG, not started) can run apart from the run, with what
    /// is known of them now (see the module). The needs are the template's: a sequential
    /// iteration's steps in the DAG also need the previous iteration, which has ended when
    /// they can start.
    fn goes_whole(
        &mut self,
        st: &State,
        workflow: &Arc<Template>,
        prefix: &str,
        steps: &[usize],
    ) -> bool {
        let ids: HashSet<&str> = workflow.steps.iter().map(|t| t.id.as_str()).collect();
        let offline = !self.tmux;
        steps.iter().all(|&k| {
            let s = &st.steps[k];
            let Some(t) =
                s.id.strip_prefix(prefix)
                    .and_then(|id| workflow.steps.iter().find(|t| t.id == id))
            else {
                return false;
            };
            let values = super::state::StepValues::new(st, k);
            let seen = Seen {
                vars: &s.scope.vars,
                cx: &values,
            };
            (runs_alone(t, &ids, true, offline)
                || (needs_within(t, &ids) && self.expands_plainly(t, &s.src, 0, Some(seen))))
                && self.recovers_plainly(t, &s.src, 0, Some(seen))
        })
    }

    /// Steps `steps` of the iteration of the template `reference` names whose steps' ids
    /// start with `prefix`, with variables `vars`, go as one group.
    fn group_iteration(
        &mut self,
        reference: String,
        prefix: &str,
        vars: Map<String, Value>,
        steps: Vec<usize>,
    ) -> usize {
        let body = Body {
            what: What::Iteration {
                reference,
                prefix: prefix.to_string(),
            },
            vars,
            outside: Vec::new(),
            agents: Vec::new(),
        };
        self.group(prefix.trim_end_matches('.').to_string(), body, steps)
    }

    /// Ready step `i` is a step of an iteration that could not go when inserted: the
    /// iteration goes now, with the steps it has left, if what those expand into is known
    /// now (an output of a step of it that ended here names a template or an agent, or gives
    /// its variables). Its steps that ended here must be shell or agent steps (a member
    /// replays them from their landings), and none may be running; its group.
    pub(super) fn send_late(&mut self, st: &State, i: usize) -> Option<usize> {
        let c = *self.sent.late.get(&i)?;
        // What an expansion of it that ran here inserted is not a step of its own: such an
        // expansion ended (or runs), and it is not a shell step, so the iteration stays.
        let own = self.sent.later[c].steps.clone();
        let mut left = Vec::new();
        for &k in &own {
            let s = &st.steps[k];
            if s.status.terminal() {
                let replays =
                    matches!(s.template.executor, Executor::Shell(_) | Executor::Agent(_));
                if !replays || s.status != Status::Done {
                    return None;
                }
            } else if s.status != Status::Pending {
                return None;
            } else {
                left.push(k);
            }
        }
        // None ended yet: nothing is known that was not when it was inserted.
        if left.len() == own.len() || left.is_empty() {
            return None;
        }
        let (workflow, prefix) = {
            let it = &self.sent.later[c];
            (it.workflow.clone(), it.prefix.clone())
        };
        if !self.goes_whole(st, &workflow, &prefix, &left) {
            return None;
        }
        for &k in &own {
            self.sent.late.remove(&k);
        }
        let it = self.sent.later[c].clone();
        let m = self.group_iteration(it.reference.clone(), &prefix, it.vars.clone(), left);
        self.sent.groups[m].later = Some(it);
        Some(m)
    }

    /// Whether expansion step `t` (written in `src`; what its fields are rendered with,
    /// `seen`, when known before it runs) expands, wherever its member runs, into steps the pass can
    /// mirror from what the member hands back: an expand or a branch whose templates are
    /// named as written or through variables known now ([`Exec::known_template`]), and every
    /// step they hold, and the steps those expand into, shell, agent, spawn and kill steps
    /// or such expansions ([`Exec::plain`]), each recovering, if it has an `on_error`
    /// template, as [`Exec::recovers_plainly`] says. An iteration holding a foreach stays
    /// here: the foreach's own iterations are sent, spread over the workers.
    fn expands_plainly(
        &mut self,
        t: &TemplateStep,
        src: &Arc<ModuleFile>,
        depth: u32,
        seen: Option<Seen<'_>>,
    ) -> bool {
        if depth > PLAIN_DEPTH || !self.recovers_plainly(t, src, depth, seen) {
            return false;
        }
        match &t.executor {
            Executor::Expand(x) if x.template.is_some() => {}
            Executor::Branch(_) => {}
            _ => return false,
        }
        expansions(t).into_iter().all(|e| match e {
            Expansion::Named(reference, variables) => {
                let Some(w) = self.known_template(reference, src, seen) else {
                    return false;
                };
                let inner = seen.and_then(|seen| self.known_vars(&w, variables, seen));
                self.all_plain(&w, depth + 1, inner.as_ref())
            }
            // Inline steps see the branch's own variables.
            Expansion::Inline(steps) => steps.iter().all(|s| self.plain(s, src, depth + 1, seen)),
        })
    }

    /// A step an expansion of a member inserts: a shell, agent, spawn or kill step, or an
    /// expansion the pass can mirror ([`Exec::expands_plainly`]). When the group goes, the
    /// agents such steps name must be known from the variables its expansions expand with,
    /// and go with it ([`Exec::group_agents`], [`Exec::agents_beneath`]); if they cannot be,
    /// the group runs here.
    fn plain(
        &mut self,
        t: &TemplateStep,
        src: &Arc<ModuleFile>,
        depth: u32,
        seen: Option<Seen<'_>>,
    ) -> bool {
        match t.executor {
            Executor::Shell(_) | Executor::Agent(_) | Executor::Spawn(_) | Executor::Kill(_) => {
                self.recovers_plainly(t, src, depth, seen)
            }
            _ => self.expands_plainly(t, src, depth, seen),
        }
    }

    /// Whether every step of template `w`, expanded `depth` deep with variables `vars` (when
    /// known), is [`Exec::plain`].
    fn all_plain(&mut self, w: &Template, depth: u32, vars: Option<&Map<String, Value>>) -> bool {
        let run_id = self.session.run_id().to_string();
        let known = vars.map(|vars| subst::Known {
            vars,
            run_id: &run_id,
            step: None,
        });
        let seen = match (vars, &known) {
            (Some(vars), Some(cx)) => Some(Seen { vars, cx }),
            _ => None,
        };
        w.steps.iter().all(|s| self.plain(s, &w.src, depth, seen))
    }

    /// Whether step `t` (written in `src`, rendered with `seen` when known) recovers, if it
    /// has an `on_error` template, into steps the pass can mirror from the failure its member
    /// hands back: a template named as written or through variables known now, whose steps
    /// are [`Exec::plain`] (the agents they name go with the group, as its own do:
    /// [`Exec::recovery_agents`]).
    fn recovers_plainly(
        &mut self,
        t: &TemplateStep,
        src: &Arc<ModuleFile>,
        depth: u32,
        seen: Option<Seen<'_>>,
    ) -> bool {
        let Some(reference) = recovery(t) else {
            return true;
        };
        if depth >= PLAIN_DEPTH {
            return false;
        }
        let Some(w) = self.known_template(reference, src, seen) else {
            return false;
        };
        // `_failed_step` is not known before the failure: what reads it is not named.
        let inner = seen.and_then(|seen| recovery::recovery_vars(&w, seen.vars).ok());
        self.all_plain(&w, depth + 1, inner.as_ref())
    }

    /// The template `reference` (written in `src`, by a step whose fields are rendered with
    /// `seen` when known) names, when it can be told before the step runs: named as written,
    /// or through what is known now.
    fn known_template(
        &mut self,
        reference: &Text,
        src: &Arc<ModuleFile>,
        seen: Option<Seen<'_>>,
    ) -> Option<Arc<Template>> {
        let name = match reference.text.contains("{{") {
            false => reference.text.clone(),
            true => subst::render(&reference.text, seen?.cx, false).ok()?,
        };
        self.lib.resolve(&name, src).ok()
    }

    /// Whether `steps` (written in `src`, `depth` expansions below an iteration's step), or
    /// the steps their expansions insert, name an agent; `true` too when a template they
    /// name cannot be told without the variables it is given.
    pub(super) fn names_agents(
        &mut self,
        steps: &[Arc<TemplateStep>],
        src: &Arc<ModuleFile>,
        depth: u32,
    ) -> bool {
        if depth > PLAIN_DEPTH {
            return true;
        }
        steps.iter().any(|t| {
            t.executor.agent_named().is_some()
                || recovery(t).is_some_and(|reference| {
                    match self.known_template(reference, src, None) {
                        Some(w) => self.names_agents(&w.steps, &w.src, depth + 1),
                        None => true,
                    }
                })
                || expansions(t).into_iter().any(|target| match target {
                    Expansion::Named(reference, _) => {
                        match self.known_template(reference, src, None) {
                            Some(w) => self.names_agents(&w.steps, &w.src, depth + 1),
                            None => true,
                        }
                    }
                    Expansion::Inline(steps) => {
                        let steps: Vec<Arc<TemplateStep>> =
                            steps.into_iter().map(Arc::new).collect();
                        self.names_agents(&steps, src, depth + 1)
                    }
                })
        })
    }

    /// The agents `steps` name (written in `src`, expanded with `vars` under step `parent` of
    /// the run, `depth` expansions below an iteration's step), and the steps their
    /// expansions insert, however deep, with the kind of step that names each; `None` when
    /// one cannot be known before the iteration runs.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn agents_beneath(
        &mut self,
        steps: &[TemplateStep],
        src: &Arc<ModuleFile>,
        vars: &Map<String, Value>,
        st: &State,
        parent: &str,
        depth: u32,
        agents: &mut Vec<(String, AgentUse)>,
    ) -> Option<()> {
        if depth > PLAIN_DEPTH {
            return None;
        }
        super::dispatch::named_agents(steps.iter(), vars, st, parent, agents)?;
        let known = subst::Known {
            vars,
            run_id: &st.run_id,
            step: None,
        };
        let seen = Seen { vars, cx: &known };
        for t in steps {
            let under = format!("{parent}.{}", t.id);
            let on_error = format!("{under}.on_error");
            self.recovery_agents(t, src, vars, st, &on_error, depth, agents)?;
            for target in expansions(t) {
                match target {
                    Expansion::Named(reference, variables) => {
                        let w = self.known_template(reference, src, Some(seen))?;
                        let arcs: Vec<Arc<TemplateStep>> = w.steps.clone();
                        if !self.names_agents(&arcs, &w.src, depth + 1) {
                            continue;
                        }
                        let inner = self.known_vars(&w, variables, seen)?;
                        let steps: Vec<TemplateStep> =
                            w.steps.iter().map(|s| (**s).clone()).collect();
                        self.agents_beneath(&steps, &w.src, &inner, st, &under, depth + 1, agents)?;
                    }
                    // Inline steps see the branch's own variables.
                    Expansion::Inline(steps) => {
                        self.agents_beneath(&steps, src, vars, st, &under, depth + 1, agents)?;
                    }
                }
            }
        }
        Some(())
    }

    /// The agents the `on_error` recovery of step `t` (written in `src`, with variables
    /// `vars`; its steps under `on_error`, `depth` expansions below an iteration's step) may
    /// name, should it run, as [`Exec::agents_beneath`] finds them; `None` when one cannot
    /// be known before the iteration runs (the recovery's name or an agent's reads
    /// `_failed_step`, which only the failure tells).
    #[allow(clippy::too_many_arguments)]
    fn recovery_agents(
        &mut self,
        t: &TemplateStep,
        src: &Arc<ModuleFile>,
        vars: &Map<String, Value>,
        st: &State,
        on_error: &str,
        depth: u32,
        agents: &mut Vec<(String, AgentUse)>,
    ) -> Option<()> {
        let Some(reference) = recovery(t) else {
            return Some(());
        };
        let known = subst::Known {
            vars,
            run_id: &st.run_id,
            step: None,
        };
        let w = self.known_template(reference, src, Some(Seen { vars, cx: &known }))?;
        if !self.names_agents(&w.steps, &w.src, depth + 1) {
            return Some(());
        }
        let inner = recovery::recovery_vars(&w, vars).ok()?;
        let steps: Vec<TemplateStep> = w.steps.iter().map(|s| (**s).clone()).collect();
        self.agents_beneath(&steps, &w.src, &inner, st, on_error, depth + 1, agents)
    }

    /// The variables template `w` is expanded with, given `variables` by a step whose fields
    /// are rendered with `seen`, when they are known before the step runs.
    fn known_vars(
        &self,
        w: &Template,
        variables: Option<&Node>,
        seen: Seen<'_>,
    ) -> Option<Map<String, Value>> {
        let given = match variables {
            Some(v) => match subst::typed_value(&v.to_json(), seen.cx).ok()? {
                Value::Object(given) => given,
                _ => return None,
            },
            None => Map::new(),
        };
        w.bind(given, false).ok()
    }

    fn group(&mut self, key: String, body: Body, steps: Vec<usize>) -> usize {
        let m = self.sent.groups.len();
        for &k in &steps {
            self.sent.of.insert(k, m);
        }
        self.sent.groups.push(Group {
            key,
            body: Some(body),
            steps,
            agents: Vec::new(),
            later: None,
        });
        m
    }

    /// Ready step `i`, when it runs beside other steps with effects (`running`: some are in
    /// flight), runs as a member of its own if it is a top-level shell step of the root
    /// workflow that can (see the module); its group.
    pub(super) fn send_alone(&mut self, st: &State, i: usize, running: bool) -> Option<usize> {
        let s = &st.steps[i];
        let alone = self.members.is_some()
            && s.prefix.is_empty()
            && s.src.path == self.root_path
            && runs_alone(&s.template, &HashSet::new(), false, !self.tmux)
            && recovery(&s.template).is_none()
            // Landed in an earlier pass: replayed here, at no cost.
            && self.recorded(&s.id).is_none();
        // Expansions ready beside it end at once: they do not make it run side by side.
        let beside = || {
            running
                || st.ready.iter().any(|&(_, k)| {
                    !matches!(
                        st.steps[k].template.executor,
                        Executor::Expand(_) | Executor::Foreach(_) | Executor::Unknown { .. }
                    )
                })
        };
        if !alone || !beside() {
            return None;
        }
        let body = Body {
            what: What::Step { id: s.id.clone() },
            vars: s.scope.vars.clone(),
            outside: Vec::new(),
            agents: Vec::new(),
        };
        Some(self.group(s.id.clone(), body, vec![i]))
    }

    /// Step `i` of group `m` is ready: the group is sent, if it was not yet and can go.
    ///
    /// A group whose steps name agents takes them with it: each must be free (no step of the
    /// run at work with it, no other group out with it) and its name known from what the
    /// group is sent with, and while the group is out the run's other steps that name one of
    /// them wait, as for an agent at work (an agent works on one step at a time). Otherwise
    /// the group's steps run here, as in a local run.
    pub(super) fn send(&mut self, st: &State, m: usize, i: usize) -> Sending {
        let Some(members) = self.members.clone() else {
            return Sending::Here;
        };
        if self.sent.groups[m].body.is_none() {
            return Sending::Out;
        }
        let Some(agents) = self.group_agents(st, m) else {
            let later = self.sent.groups[m].later.take();
            self.dissolve(m);
            if let Some(late) = later {
                self.wait_to_send(late);
            }
            return Sending::Here;
        };
        let it = &mut self.sent.groups[m];
        let Some(mut body) = it.body.take() else {
            return Sending::Out;
        };
        if let What::Step { .. } = body.what {
            body.outside = outside(st, i);
        }
        for a in &agents {
            self.sent.reserved.insert(a.clone(), m);
        }
        body.agents = agents
            .iter()
            .map(|a| {
                (
                    a.clone(),
                    self.agents.get(a).map(|info| info.workdir.clone()),
                )
            })
            .collect();
        self.sent.groups[m].agents = agents;
        let it = &self.sent.groups[m];
        let call = MemberCall {
            key: it.key.clone(),
            body: serde_json::to_value(&body).unwrap_or_default(),
        };
        self.iteration_runs(st, i);
        // Sent once polled, after the scheduler's commit, as a command starts: what was
        // recorded before is durable first.
        self.unflushed = true;
        let commit_failed = self.commit_failed.clone();
        Sending::Sent(Box::pin(async move {
            if let Some(e) = commit_failed.get() {
                return (m, Completion::Member(MemberReport::broken(e.clone())));
            }
            (m, Completion::Member(members.run(call).await))
        }))
    }

    /// The agents group `m`'s steps name, each free; `None` when one is at work or taken by
    /// another group, or its name cannot be known before the group runs (it reads an output
    /// of a step of the group).
    ///
    /// In tmux an agent's session lives on the host that spawned it, so the group must spawn
    /// each agent it names and kill it too, and none may be running in the run already: its
    /// worker then owns the session from start to end.
    ///
    /// The agents the steps of the group's expansions name count too, as those steps would
    /// name them if the expansions expanded now ([`Exec::plain`]).
    fn group_agents(&mut self, st: &State, m: usize) -> Option<Vec<String>> {
        let mut named = Vec::new();
        for k in self.sent.groups[m].steps.clone() {
            let s = &st.steps[k];
            let (t, src, vars) = (s.template.clone(), s.src.clone(), s.scope.vars.clone());
            let on_error = format!("{}.on_error", s.id);
            self.recovery_agents(&t, &src, &vars, st, &on_error, 0, &mut named)?;
            let executor = &st.steps[k].template.executor;
            if let Executor::Expand(_) | Executor::Branch(_) = executor {
                named.extend(self.agents_expanded(st, k)?);
                continue;
            }
            let Some((field, kind)) = executor.agent_named() else {
                continue;
            };
            let name =
                subst::render(&field?.text, &super::state::StepValues::new(st, k), false).ok()?;
            named.push((name, kind));
        }
        let mut agents = Vec::new();
        let (mut spawned, mut killed) = (HashSet::new(), HashSet::new());
        for (name, kind) in named {
            if self.busy.contains_key(&name) || self.sent.reserved.contains_key(&name) {
                return None;
            }
            match kind {
                AgentUse::Spawn => spawned.insert(name.clone()),
                AgentUse::Kill => killed.insert(name.clone()),
                AgentUse::Ask => false,
            };
            if !agents.contains(&name) {
                agents.push(name);
            }
        }
        let in_tmux_here =
            |a: &String| self.agents.contains_key(a) || !spawned.contains(a) || !killed.contains(a);
        if self.tmux && agents.iter().any(in_tmux_here) {
            return None;
        }
        Some(agents)
    }

    /// Group `m` does not go: its steps, in the run's DAG already, run here.
    fn dissolve(&mut self, m: usize) {
        let it = &mut self.sent.groups[m];
        it.body = None;
        for k in std::mem::take(&mut it.steps) {
            self.sent.of.remove(&k);
        }
    }

    /// Group `m` is back: the agents it took are free again, as it left them (spawned in it
    /// with their working directory, or killed), and the first step that waited for each runs.
    fn agents_back(
        &mut self,
        st: &mut State,
        m: usize,
        back: Vec<(String, Option<std::path::PathBuf>)>,
    ) {
        for (agent, workdir) in back {
            if !self.sent.groups[m].agents.contains(&agent) {
                continue;
            }
            match workdir {
                Some(workdir) => {
                    self.agents
                        .insert(agent, super::AgentInfo::offline(workdir));
                }
                None => {
                    self.agents.remove(&agent);
                }
            }
        }
        for agent in std::mem::take(&mut self.sent.groups[m].agents) {
            self.sent.reserved.remove(&agent);
            let Some(queue) = self.held_agent.get_mut(&agent) else {
                continue;
            };
            while let Some(n) = queue.pop_front() {
                if st.steps[n].status == Status::Pending {
                    let agent_kind = st.steps[n].is_agent();
                    st.ready.insert((agent_kind, n));
                    break;
                }
            }
        }
    }

    /// Iteration `m` came back: its steps end here as they ended in the member.
    pub(super) fn member_ended(
        &mut self,
        st: &mut State,
        m: usize,
        report: MemberReport,
        ended: &mut Ended,
    ) {
        let key = self.sent.groups[m].key.clone();
        // Its agent calls, recorded where it ran, count in the run's usage and budgets.
        self.meter.replace_under(&key, &report.usage);
        let back = match &report.result {
            MemberResult::Done(Some(v)) => serde_json::from_value::<Back>(v.clone())
                .ok()
                // What a worker from before agents could go sends: its steps' ends alone.
                .or_else(|| {
                    let ends = serde_json::from_value::<Vec<StepEnd>>(v.clone()).ok()?;
                    Some(Back {
                        ends,
                        agents: Vec::new(),
                        facts: Vec::new(),
                    })
                }),
            _ => None,
        };
        // Whatever it came to, the agents it took are free again (as it left them, when it
        // says).
        let agents = back.as_ref().map(|b| b.agents.clone()).unwrap_or_default();
        self.agents_back(st, m, agents);
        let ends = match report.result {
            MemberResult::Done(_) => match back {
                Some(back) => {
                    self.sent.facts.extend(back.facts);
                    back.ends
                }
                None => {
                    return self.iteration_failed(
                        st,
                        m,
                        codes::STORE,
                        format!("iteration {key} sent back what this pipewright does not read"),
                        ended,
                    )
                }
            },
            MemberResult::Failed(e) => {
                let e = RunError::from(e);
                return self.iteration_failed(st, m, e.code, e.message, ended);
            }
            MemberResult::Cancelled { key } => {
                self.sent.cancelled = Some(key);
                return;
            }
            MemberResult::Stopped {
                budget,
                limit,
                spent,
            } => {
                // The run stops here as it stops on a budget it reaches itself.
                self.meter.stop(pipewright_runtime::members::exhausted(
                    &budget, limit, spent,
                ));
                return;
            }
            MemberResult::Broken(why) => {
                return self.iteration_failed(
                    st,
                    m,
                    codes::STORE,
                    format!("iteration {key} could not run: {why}"),
                    ended,
                )
            }
        };
        let mut skipped = Vec::new();
        for e in ends {
            let Some(i) = self.mirrored(st, m, &e.id, ended) else {
                continue;
            };
            self.sent.landed.insert(i);
            if st.steps[i].status.terminal() {
                continue;
            }
            match Status::named(&e.status) {
                Some(Status::Done) => st.end(i, Status::Done, e.outputs, None, ended),
                // Recovering here already: a failure of its own children began it.
                Some(Status::Recovering) if st.steps[i].status == Status::Recovering => {}
                // A failure it recovered from recovers here too: its recovery's steps are
                // inserted as the next of them comes back ([`Exec::mirrored`]).
                Some(Status::Failed | Status::Recovering) => {
                    match e.error_type.as_deref().and_then(error_type) {
                        Some(kind) => {
                            st.fail(i, kind, e.outputs, e.error.unwrap_or_default(), ended)
                        }
                        None => st.end(i, Status::Failed, e.outputs, e.error, ended),
                    }
                }
                Some(Status::Recovered) => st.end(i, Status::Recovered, e.outputs, e.error, ended),
                // Follows here from the failure it followed from there.
                _ => skipped.push((i, e.error)),
            }
        }
        for (i, why) in skipped {
            st.end(i, Status::Skipped, Map::new(), why, ended);
        }
        let left = self.sent.groups[m]
            .steps
            .iter()
            .any(|&k| !st.steps[k].status.terminal());
        if left {
            self.iteration_failed(
                st,
                m,
                codes::STORE,
                format!("iteration {key} came back without ending all its steps"),
                ended,
            );
        }
    }

    /// Step `id` of group `m`, in the run's DAG. The group's expansions that led to it (the
    /// step itself, when it is one) expand here first, as they did in the member: from the
    /// facts it landed (a branch's outcome), without running anything, their steps joining
    /// the group. `None`: not a step of the group here.
    fn mirrored(&mut self, st: &mut State, m: usize, id: &str, ended: &mut Ended) -> Option<usize> {
        loop {
            // The step itself, or the nearest step above it.
            let mut at = Some(id);
            let nearest = loop {
                let p = at?;
                if let Some(&k) = st.index.get(p) {
                    break k;
                }
                at = p.rfind('.').map(|cut| &p[..cut]);
            };
            if self.sent.of.get(&nearest) != Some(&m) {
                return None;
            }
            if st.steps[nearest].status == Status::Pending && self.can_expand_again(st, nearest) {
                self.expanded_again(st, m, nearest, ended);
                continue;
            }
            if let Some(at) = ended.recover.iter().position(|&k| k == nearest) {
                ended.recover.remove(at);
                self.recovered_again(st, m, nearest, ended);
                continue;
            }
            return (st.steps[nearest].id == id).then_some(nearest);
        }
    }

    /// Whether step `k` is an expansion the pass can insert again from what its member
    /// handed back (an expand needs nothing more; a branch its outcome).
    fn can_expand_again(&self, st: &State, k: usize) -> bool {
        let id = &st.steps[k].id;
        match st.steps[k].template.executor {
            Executor::Expand(_) => true,
            Executor::Branch(_) => self.sent.facts.contains_key(&format!("{id}#condition")),
            _ => false,
        }
    }

    /// Expansion `k` of group `m` expands here as it did in the member; what it inserts
    /// belongs to the group and was landed there.
    fn expanded_again(&mut self, st: &mut State, m: usize, k: usize, ended: &mut Ended) {
        let before = st.steps.len();
        self.sent.landed.insert(k);
        let dispatched = self.expand_again(st, k, ended);
        for c in before..st.steps.len() {
            self.sent.of.insert(c, m);
            self.sent.landed.insert(c);
            self.sent.groups[m].steps.push(c);
        }
        match dispatched {
            super::Dispatched::Now(status, outputs, error) => {
                st.end(k, status, outputs, error, ended)
            }
            super::Dispatched::Joining => {}
            // Not from what the member handed back: nothing here runs it.
            super::Dispatched::Later(_) => {
                let key = self.sent.groups[m].key.clone();
                self.codes.insert(k, codes::STORE);
                st.end(
                    k,
                    Status::Failed,
                    Map::new(),
                    Some(format!(
                        "iteration {key} came back without what step `{}` expanded into",
                        st.steps[k].id
                    )),
                    ended,
                );
            }
        }
    }

    /// Step `k` of group `m`, failed here as it failed in the member, recovers as it did
    /// there: from the failure the member landed (`…#recovery`), its recovery's steps are
    /// inserted, belong to the group and were landed there.
    fn recovered_again(&mut self, st: &mut State, m: usize, k: usize, ended: &mut Ended) {
        let before = st.steps.len();
        self.recover(st, k, ended);
        for c in before..st.steps.len() {
            self.sent.of.insert(c, m);
            self.sent.landed.insert(c);
            self.sent.groups[m].steps.push(c);
        }
    }

    /// Iteration `m` did not run (or not whole): each of its steps not ended fails so.
    fn iteration_failed(
        &mut self,
        st: &mut State,
        m: usize,
        code: &'static str,
        why: String,
        ended: &mut Ended,
    ) {
        let steps = self.sent.groups[m].steps.clone();
        for i in steps {
            if !st.steps[i].status.terminal() {
                self.codes.insert(i, code);
                st.end(i, Status::Failed, Map::new(), Some(why.clone()), ended);
            }
        }
    }
}

/// Runs an iteration sent from its run: the other side of [`Exec::send`].
pub async fn member(
    program: Arc<Program>,
    module: Arc<crate::ast::Module>,
    sources: &SourceMap,
    opts: RunOptions,
    member: Member,
) -> MemberReport {
    run_member(program, module, sources, opts, member)
        .await
        .unwrap_or_else(MemberReport::broken)
}

async fn run_member(
    program: Arc<Program>,
    module: Arc<crate::ast::Module>,
    sources: &SourceMap,
    opts: RunOptions,
    member: Member,
) -> Result<MemberReport, String> {
    let Member { run_id, call, lock } = member;
    let call_key = call.key.clone();
    let body: Body = serde_json::from_value(call.body)
        .map_err(|e| format!("an iteration this pipewright does not read: {e}"))?;
    let (name, mut lib, root) = super::root_template(
        &program,
        module,
        sources,
        opts.workflow.as_deref(),
        opts.source_path.as_deref(),
    )?;
    // The steps, and the prefix of their ids.
    let (steps, src, prefix) = match &body.what {
        What::Iteration { reference, prefix } => {
            let t = lib.resolve(reference, &root.src)?;
            (t.steps.clone(), t.src.clone(), prefix.clone())
        }
        What::Step { id } => {
            let Some(t) = root.steps.iter().find(|t| t.id == *id) else {
                return Err(format!(
                    "no step `{id}` in workflow `{name}`: the worker's module differs from the run's"
                ));
            };
            (vec![t.clone()], root.src.clone(), String::new())
        }
    };
    let source_hash = store::source_hash(sources.files().map(|f| &*f.text));
    let begun = Begun::joined(
        &opts,
        &run_id,
        &call.key,
        lock,
        "the MEOW module",
        &source_hash,
    )
    .map_err(|e| e.to_string())?;
    let run_dir = super::run_dir(&opts, &run_id);
    // The run's orchestrator listens on the run's host: a step's `meow …` reaches it there,
    // or through the engine from any other host.
    let socket = opts.channel.then(|| super::channel::socket_path(&run_dir));
    let meow_bin = match (&socket, &opts.self_exe) {
        (Some(_), Some(exe)) => Some(super::MeowPath::new(super::meow_command_dir(
            &run_dir, exe,
        )?)),
        _ => None,
    };
    let session = begun.open(
        opts.store.as_ref(),
        RunStart {
            file: opts.file_label.clone(),
            workflow: name.clone(),
            source_hash,
        },
        Vec::new(),
        &opts.meter,
    )?;
    let mut exec = super::Exec::new(
        &opts,
        name,
        session,
        lib,
        &root,
        sources,
        Map::new(),
        socket,
        meow_bin,
    );
    exec.members = None;
    exec.sent.order = Some(Vec::new());
    exec.tmux = exec.backend.name() == "command";
    // The member's steps ask an orchestrator of its own what they came to (the run hears of
    // them only when the member is back), and its agents in tmux report to it; events and
    // approvals, and steps outside it, are the run's.
    let own_dir = run_dir
        .join("members")
        .join(format!("{run_id}.{}", call.key.replace('/', "_")));
    let channel = match exec.socket.is_some() {
        true => {
            let limits = super::Limits::of(&opts.config);
            let channel = super::channel::Channel::open(&own_dir, limits.max_message_bytes)?;
            exec.run_socket = exec.socket.replace(channel.path().to_path_buf());
            Some(channel)
        }
        false => None,
    };
    // The agents it took, as the run knew them.
    for (agent, workdir) in &body.agents {
        if let Some(workdir) = workdir {
            exec.agents
                .insert(agent.clone(), super::AgentInfo::offline(workdir.clone()));
        }
    }
    let took: Vec<String> = body.agents.iter().map(|(a, _)| a.clone()).collect();
    let mut st = State {
        run_id,
        outside: body
            .outside
            .into_iter()
            .filter_map(|(id, status, outputs)| Some((id, (Status::named(&status)?, outputs))))
            .collect(),
        ..State::default()
    };
    let scope = Arc::new(Scope { vars: body.vars });
    let ids: HashSet<&str> = steps.iter().map(|t| t.id.as_str()).collect();
    let mut ended = Ended::default();
    let mut refused = None;
    for t in &steps {
        let mut s = exec.new_step(
            t.clone(),
            scope.clone(),
            src.clone(),
            prefix.clone(),
            None,
            None,
            0,
        );
        s.needs = match body.what {
            What::Iteration { .. } => super::dispatch::rewrite(&t.needs, &ids, &prefix),
            // Met in the run before it was sent.
            What::Step { .. } => Vec::new(),
        };
        if let Err(e) = st.insert(s, &mut ended) {
            refused = Some(e);
            break;
        }
    }
    let status = match refused {
        Some(_) => RunStatus::Failed,
        None => exec.drive(&mut st, ended, channel).await,
    };
    // Its socket went with the channel.
    let _ = std::fs::remove_dir(&own_dir);
    exec.commit();
    // The sessions of the agents it took end with it (the group kills each it spawns, unless
    // a step failed first): the run cannot reach them on this host. A cancelled member
    // leaves them for its retry, as a cancelled run leaves its agents for a resume.
    if exec.tmux && status != RunStatus::Cancelled {
        for a in &took {
            if let Some((session, adapter)) = exec.agents.remove(a).and_then(|info| info.session) {
                let _ = super::tmux::kill(Some(&adapter), &session, true).await;
            }
        }
    }
    let order = exec.sent.order.take().unwrap_or_default();
    // A retried member replays the outcomes an earlier attempt landed: they go back too.
    let mut facts = std::mem::take(&mut exec.sent.facts_out);
    for s in &st.steps {
        let branch = matches!(s.template.executor, Executor::Branch(_));
        let keys = [
            branch.then(|| format!("{}#condition", s.id)),
            s.recovery_template().map(|_| format!("{}#recovery", s.id)),
        ];
        for key in keys.into_iter().flatten() {
            if !facts.iter().any(|(k, _)| *k == key) {
                if let Some(v) = exec.recorded(&key) {
                    facts.push((key, v));
                }
            }
        }
    }
    let failed_write = exec.session.close();
    if let Some(e) = refused {
        return Err(e);
    }
    let result = if status == RunStatus::Cancelled {
        match opts.meter.exhausted() {
            Some(e) => MemberResult::Stopped {
                budget: e.budget.to_string(),
                limit: e.limit,
                spent: e.spent,
            },
            None => MemberResult::Cancelled { key: call.key },
        }
    } else if let Some(e) = failed_write {
        let e = RunError::new(codes::STORE, &call.key, "foreach", root.span, e.to_string());
        MemberResult::Failed(SentError::from(&e))
    } else {
        let ends: Vec<StepEnd> = order
            .into_iter()
            .map(|(i, status)| {
                let s = &st.steps[i];
                StepEnd {
                    id: s.id.clone(),
                    status: status.name().to_string(),
                    outputs: s.outputs.clone(),
                    error: s.error.clone(),
                    error_type: st.error_types.get(&i).map(|t| t.to_string()),
                }
            })
            .collect();
        let agents = took
            .into_iter()
            .map(|a| {
                let workdir = exec.agents.get(&a).map(|info| info.workdir.clone());
                (a, workdir)
            })
            .collect();

        let back = Back {
            ends,
            agents,
            facts,
        };
        MemberResult::Done(Some(serde_json::to_value(back).map_err(|e| e.to_string())?))
    };
    Ok(MemberReport {
        result,
        usage: opts.meter.spent_under(&call_key),
    })
}
