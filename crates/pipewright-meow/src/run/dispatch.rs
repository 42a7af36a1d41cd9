//! The seven executors: what dispatching a ready step does, what its completion does, and
//! how expansions insert their steps.

use super::agent;
use super::duration::DurationError;
use super::recovery;
use super::shell;
use super::state::{Ended, State, Status, StepValues};
use super::subst::{self, SubstError};
use super::template::{under, ModuleFile, Template, TemplateStep};
use super::tmux::AdapterError;
use super::{AgentInfo, Dispatched, Exec, ForeachThrottle};
use crate::ast::Text;
use crate::executor::{
    Agent, AgentUse, Branch, BranchTarget, Capture, Command, Env, Expand, Flag, Foreach, Kill,
    MaxConcurrent, Spawn, SpawnArgs, Timeout,
};
use crate::tree::Node;
use crate::Executor;
use pipewright_runtime::codes;
use serde_json::{json, Map, Value};
use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

pub(super) type InFlight = Pin<Box<dyn Future<Output = (usize, Completion)> + Send>>;

/// A step's completion.
pub(crate) enum Completion {
    Shell(shell::Ran),
    /// A command that did not start: what was recorded before it could not be committed.
    NotStarted(String),
    /// Outputs, or the error type and message.
    Agent(Result<Map<String, Value>, (&'static str, String)>),
    /// A tmux agent's session started (or was found alive).
    Spawned {
        agent: String,
        info: Result<AgentInfo, super::tmux::TmuxError>,
    },
    /// A prompt was typed into a tmux agent's session (and, unless `fire_forget`, the agent
    /// reported); a failure carries its spec error type.
    Injected(Result<(), (&'static str, String)>),
    Killed(Result<(), super::tmux::TmuxError>),
    /// Steps sent away as a member came back (the index is their group's, in `Exec::sent`).
    Member(pipewright_runtime::members::MemberReport),
}

/// The fields of a step that take `{{…}}` substitution when it runs, with their keys, as
/// written: those it has.
pub(super) fn substituted_fields(executor: &Executor) -> Vec<(&'static str, Value)> {
    let text = |field: &Option<Text>| {
        field
            .as_ref()
            .map(|field| Value::String(field.text.clone()))
    };
    let env = |env: &Env| env.written.as_ref().map(Node::to_json);
    let command = |script: &'static str, command: &Command| {
        vec![
            (script, text(&command.script)),
            ("workdir", text(&command.workdir)),
            ("env", env(&command.env)),
        ]
    };
    let fields = match executor {
        Executor::Shell(shell) => command("command", &shell.command),
        Executor::Branch(branch) => command("condition", &branch.condition),
        Executor::Spawn(spawn) => vec![
            ("agent", text(&spawn.agent)),
            ("adapter", text(&spawn.adapter)),
            ("workdir", text(&spawn.workdir)),
            ("env", env(&spawn.env)),
            (
                "spawn_args",
                spawn.spawn_args.as_ref().map(|args| match args {
                    SpawnArgs::Text(one) => Value::String(one.text.clone()),
                    SpawnArgs::List(list) => list
                        .iter()
                        .map(|arg| Value::String(arg.text.clone()))
                        .collect(),
                }),
            ),
        ],
        Executor::Kill(kill) => vec![("agent", text(&kill.agent))],
        Executor::Expand(expand) => vec![
            ("template", text(&expand.template)),
            ("variables", expand.variables.as_ref().map(Node::to_json)),
        ],
        Executor::Foreach(foreach) => vec![
            ("items", text(&foreach.items)),
            ("template", text(&foreach.template)),
            (
                "parallel",
                foreach.parallel.as_ref().map(|parallel| match parallel {
                    Flag::Bool(value) => Value::Bool(*value),
                    Flag::Text(text) => Value::String(text.text.clone()),
                    Flag::Other(written) => written.to_json(),
                }),
            ),
            (
                "max_concurrent",
                foreach.max_concurrent.as_ref().map(|max| match max {
                    MaxConcurrent::Count(count) => Value::from(*count),
                    MaxConcurrent::Text(text) => Value::String(text.text.clone()),
                    MaxConcurrent::Other(written) => written.to_json(),
                }),
            ),
        ],
        Executor::Agent(agent) => vec![
            ("agent", text(&agent.agent)),
            ("prompt", text(&agent.prompt)),
        ],
        Executor::Unknown { .. } => Vec::new(),
    };
    fields
        .into_iter()
        .filter_map(|(key, value)| value.map(|value| (key, value)))
        .collect()
}

/// Why an expansion could not insert its steps.
pub(super) struct Refused {
    pub code: &'static str,
    pub message: String,
    /// The spec's error type when the refusal says it (`_failed_step.error_type`).
    pub kind: Option<&'static str>,
}

impl From<String> for Refused {
    fn from(message: String) -> Refused {
        Refused {
            code: codes::MEOW_STEP,
            message,
            kind: None,
        }
    }
}

/// Why a step could not start: a field of it did not substitute or does not say what it must.
/// The step fails with the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum PrepareError {
    /// A field's `{{…}}` did not resolve; `key` names the field (`env.NAME` for a variable).
    #[error("`{key}`: {error}")]
    Field { key: String, error: SubstError },
    #[error("output `{name}` source: {error}")]
    CaptureSource { name: String, error: SubstError },
    /// A field whose errors the reference does not prefix with its key.
    #[error(transparent)]
    Subst(#[from] SubstError),
    #[error("the {step} step has no `{field}`")]
    Missing {
        step: &'static str,
        field: &'static str,
    },
    #[error("the branch has no `condition`")]
    NoCondition,
    #[error("`timeout`: {0}")]
    Timeout(DurationError),
    #[error("`timeout` must be a duration such as \"30s\"")]
    TimeoutNotText,
    #[error("give `items` or `items_file`, not both")]
    ItemsAndItemsFile,
    #[error("the foreach has neither `items` nor `items_file`")]
    NoItems,
    /// `got` is a preview of the text.
    #[error("`items` must be a JSON array: {error} (got {got})")]
    ItemsNotJson { error: String, got: String },
    #[error("cannot read `items_file` {}: {error}", .path.display())]
    ItemsFileUnreadable { path: PathBuf, error: String },
    #[error("`items_file` {} is not JSON: {error}", .path.display())]
    ItemsFileNotJson { path: PathBuf, error: String },
    /// `0` is a preview of the value.
    #[error("the items must be a JSON array, got {0}")]
    ItemsNotAList(String),
    #[error("`{key}` must be true or false, got `{got}`")]
    NotAFlag { key: String, got: String },
    #[error("`{0}` must be true or false")]
    NotAFlagAtAll(String),
    #[error(transparent)]
    Adapter(#[from] AdapterError),
}

impl From<PrepareError> for String {
    fn from(e: PrepareError) -> String {
        e.to_string()
    }
}

fn fail(why: impl Into<String>) -> Dispatched {
    Dispatched::Now(Status::Failed, Map::new(), Some(why.into()))
}

impl Exec {
    pub(super) fn dispatch(&mut self, st: &mut State, i: usize, ended: &mut Ended) -> Dispatched {
        self.start(st, i, None);
        let step = st.steps[i].template.clone();
        match &step.executor {
            Executor::Shell(shell) => self.shell(st, i, &shell.command, None, ended),
            Executor::Branch(branch) => self.shell(st, i, &branch.condition, Some(branch), ended),
            Executor::Expand(expand) => self.expand(st, i, expand, ended),
            Executor::Foreach(foreach) => self.foreach(st, i, foreach, ended),
            Executor::Agent(agent) => self.agent(st, i, agent),
            Executor::Spawn(spawn) => self.spawn(st, i, spawn),
            Executor::Kill(kill) => self.kill(st, i, kill),
            Executor::Unknown { name } if name.is_empty() => fail("the step has no `executor`"),
            Executor::Unknown { name } => fail(format!(
                "unknown executor `{name}` (shell, spawn, kill, expand, branch, foreach, agent)"
            )),
        }
    }

    /// Expansion step `i`, which a member ran, expands here as it did there, from the facts
    /// the member landed ([`Exec::recorded`]): its start is not reported again (the member
    /// recorded it), and nothing runs.
    pub(super) fn expand_again(
        &mut self,
        st: &mut State,
        i: usize,
        ended: &mut Ended,
    ) -> Dispatched {
        st.steps[i].status = Status::Running;
        st.steps[i].started = Some(Instant::now());
        self.iteration_runs(st, i);
        let step = st.steps[i].template.clone();
        match &step.executor {
            Executor::Branch(branch) => self.shell(st, i, &branch.condition, Some(branch), ended),
            Executor::Expand(expand) => self.expand(st, i, expand, ended),
            _ => fail("not an expansion a member hands back"),
        }
    }

    /// A shell step's command, or a branch's condition, run. `branch`: the step is one.
    fn shell(
        &mut self,
        st: &mut State,
        i: usize,
        command: &Command,
        branch: Option<&Branch>,
        ended: &mut Ended,
    ) -> Dispatched {
        let id = st.steps[i].id.clone();
        let replayed = match branch {
            None => {
                if let Some((status, outputs, error)) = self.replay(&id) {
                    return Dispatched::Now(status, outputs, error);
                }
                None
            }
            Some(branch) => self
                .recorded(&format!("{id}#condition"))
                .map(|landed| (branch, landed)),
        };
        if let Some((branch, landed)) = replayed {
            let outcome = match landed["outcome"].as_str() {
                Some("true") => "true",
                Some("timeout") => "timeout",
                _ => "false",
            };
            let outputs = landed["outputs"].as_object().cloned().unwrap_or_default();
            let problem = landed["problem"].as_str().map(str::to_string);
            return self.branch_outcome(st, i, branch, outcome, outputs, problem, ended);
        }
        let key = if branch.is_some() {
            "condition"
        } else {
            "command"
        };
        let prepared = (|| -> Result<shell::Command, PrepareError> {
            let script = render(st, i, command.script.as_ref(), key, true)?;
            let script = match (script, branch) {
                (Some(script), _) => script,
                (None, None) => String::new(),
                (None, Some(_)) => return Err(PrepareError::NoCondition),
            };
            let cwd = match render(st, i, command.workdir.as_ref(), "workdir", false)? {
                Some(workdir) if !workdir.is_empty() => under(&self.project, &workdir),
                _ => self.project.clone(),
            };
            let env = self.step_env(render_env(st, i, &command.env)?, &id, None);
            let captures = captures(st, i, &command.captures)?;
            Ok(shell::Command {
                script,
                cwd,
                env,
                env_remove: self.withhold_env.clone(),
                timeout: timeout(command.timeout.as_ref())?,
                captures,
            })
        })();
        let command = match prepared {
            Ok(command) => command,
            Err(e) => return fail(e),
        };
        // The command starts when the scheduler first polls it, after its one commit of the
        // pass (`Exec::commit`): everything recorded before it, its start included, is
        // durable by then, or it does not start.
        self.unflushed = true;
        let commit_failed = self.commit_failed.clone();
        let run_id = self.session.run_id().to_string();
        Dispatched::Later(Box::pin(async move {
            if let Some(e) = commit_failed.get() {
                return (i, Completion::NotStarted(e.clone()));
            }
            let ran =
                pipewright_runtime::tools::process::for_step(&run_id, &id, shell::run(command));
            (i, Completion::Shell(ran.await))
        }))
    }

    /// The environment the orchestrator gives every command and agent.
    pub(super) fn meow_env(&self, step: &str, agent: Option<&str>) -> Vec<(String, String)> {
        let mut env = vec![
            (
                "MEOW_WORKFLOW".to_string(),
                self.session.run_id().to_string(),
            ),
            ("MEOW_STEP".to_string(), step.to_string()),
        ];
        if let Some(agent) = agent {
            env.push(("MEOW_AGENT".into(), agent.to_string()));
        }
        if let Some(socket) = &self.socket {
            env.push(("MEOW_ORCH_SOCK".into(), socket.display().to_string()));
        }
        if let Some(socket) = &self.run_socket {
            env.push((
                super::command::RUN_SOCK.into(),
                socket.display().to_string(),
            ));
        }
        env
    }

    /// [`Exec::meow_env`] added to a step's `env`, with `meow` first on the PATH (the step's
    /// own PATH, if it sets one, else the orchestrator's).
    pub(super) fn step_env(
        &self,
        mut env: Vec<(String, String)>,
        step: &str,
        agent: Option<&str>,
    ) -> Vec<(String, String)> {
        env.extend(self.meow_env(step, agent));
        let Some(bin) = &self.meow_bin else {
            return env;
        };
        let path = match env.iter().rposition(|(name, _)| name == "PATH") {
            Some(at) => bin.before(&env.remove(at).1),
            None => bin.inherited.clone(),
        };
        env.push(("PATH".into(), path));
        env
    }

    pub(super) fn complete(
        &mut self,
        st: &mut State,
        i: usize,
        completion: Completion,
        ended: &mut Ended,
    ) {
        // `i` is a group's, not a step's.
        if let Completion::Member(report) = completion {
            return self.member_ended(st, i, report, ended);
        }
        if st.steps[i].status != Status::Running {
            return;
        }
        match completion {
            Completion::Shell(ran) => {
                let step = st.steps[i].template.clone();
                if let Executor::Branch(branch) = &step.executor {
                    let id = st.steps[i].id.clone();
                    self.land_fact(
                        format!("{id}#condition"),
                        json!({"outcome": ran.outcome, "outputs": ran.outputs, "problem": ran.problem}),
                    );
                    let (outcome, outputs, problem) = (ran.outcome, ran.outputs, ran.problem);
                    match self.branch_outcome(st, i, branch, outcome, outputs, problem, ended) {
                        Dispatched::Now(status, outputs, error) => {
                            st.end(i, status, outputs, error, ended)
                        }
                        Dispatched::Joining | Dispatched::Later(_) => {}
                    }
                    return;
                }
                let mut outputs = ran.outputs;
                let ok = ran.exit_code == 0 && ran.problem.is_none();
                if ok {
                    st.end(i, Status::Done, outputs, None, ended);
                } else if self.continues(st, i) {
                    let err = if ran.stderr.is_empty() {
                        ran.problem.unwrap_or_default()
                    } else {
                        ran.stderr
                    };
                    outputs.insert("error".into(), Value::String(err));
                    st.end(i, Status::Done, outputs, None, ended);
                } else {
                    let kind = match ran.outcome {
                        "timeout" => recovery::TIMEOUT,
                        _ => recovery::COMMAND_FAILED,
                    };
                    let why = ran.problem.unwrap_or_else(|| "the command failed".into());
                    st.fail(i, kind, outputs, why, ended);
                }
            }
            Completion::NotStarted(why) => st.end(i, Status::Failed, Map::new(), Some(why), ended),
            Completion::Agent(Ok(outputs)) => st.end(i, Status::Done, outputs, None, ended),
            Completion::Agent(Err((kind, e))) => st.fail(i, kind, Map::new(), e, ended),
            Completion::Spawned { agent, info } => match info {
                Ok(info) => {
                    let mut outputs = Map::new();
                    outputs.insert("agent".into(), Value::String(agent.clone()));
                    outputs.insert(
                        "workdir".into(),
                        Value::String(info.workdir.display().to_string()),
                    );
                    if let Some((session, _)) = &info.session {
                        outputs.insert("session".into(), Value::String(session.clone()));
                    }
                    if let Some(id) = self.spawned(&agent, &info.session_id) {
                        outputs.insert("session_id".into(), Value::String(id));
                    }
                    self.agents.insert(agent, info);
                    st.end(i, Status::Done, outputs, None, ended);
                }
                Err(e) => st.end(i, Status::Failed, Map::new(), Some(e.into()), ended),
            },
            Completion::Injected(Ok(())) => {
                if st.steps[i].agent().is_some_and(Agent::fire_forget) {
                    st.end(i, Status::Done, Map::new(), None, ended);
                }
            }
            Completion::Injected(Err((kind, e))) => {
                self.waiting.remove(&i);
                self.watchers.remove(&i);
                self.deadlines.retain(|(_, step)| *step != i);
                st.fail(i, kind, Map::new(), e, ended);
            }
            Completion::Killed(Err(e)) => {
                st.end(i, Status::Failed, Map::new(), Some(e.into()), ended)
            }
            Completion::Killed(Ok(())) => st.end(i, Status::Done, Map::new(), None, ended),
            Completion::Member(_) => {}
        }
    }

    /// Keeps what a refusal says of step `i`'s failure: its code, and its error type.
    fn note_refusal(&mut self, st: &mut State, i: usize, refusal: &Refused) {
        self.codes.insert(i, refusal.code);
        if let Some(kind) = refusal.kind {
            st.error_types.insert(i, kind);
        }
    }

    fn continues(&self, st: &State, i: usize) -> bool {
        st.steps[i].on_error() == Some("continue")
    }

    #[allow(clippy::too_many_arguments)]
    fn branch_outcome(
        &mut self,
        st: &mut State,
        i: usize,
        branch: &Branch,
        outcome: &str,
        mut outputs: Map<String, Value>,
        problem: Option<String>,
        ended: &mut Ended,
    ) -> Dispatched {
        let (key, target) = match outcome {
            "true" => ("on_true", &branch.on_true),
            "timeout" if branch.on_timeout.is_some() => ("on_timeout", &branch.on_timeout),
            _ => ("on_false", &branch.on_false),
        };
        let target = target
            .as_ref()
            .filter(|target| !matches!(target, BranchTarget::NotATable));
        let Some(target) = target else {
            if outcome == "true" {
                return Dispatched::Now(Status::Done, outputs, None);
            }
            if self.continues(st, i) {
                if let Some(problem) = problem {
                    outputs.insert("error".into(), Value::String(problem));
                }
                return Dispatched::Now(Status::Done, outputs, None);
            }
            let why = match outcome {
                "timeout" => "the condition timed out",
                _ => "the condition was false",
            };
            return Dispatched::Now(
                Status::Failed,
                outputs,
                Some(format!(
                    "{why} and the branch has no `{key}` (write `{key} = {{ inline = [] }}` to make it a normal outcome){}",
                    problem.map(|problem| format!(": {problem}")).unwrap_or_default()
                )),
            );
        };
        match self.expand_target(st, i, target, key, ended) {
            Err(refusal) => {
                self.note_refusal(st, i, &refusal);
                Dispatched::Now(Status::Failed, outputs, Some(refusal.message))
            }
            Ok(0) => Dispatched::Now(Status::Done, outputs, None),
            Ok(_) => {
                if st.steps[i].status == Status::Running {
                    st.steps[i].outputs = outputs;
                }
                Dispatched::Joining
            }
        }
    }

    /// A branch target: `{ template, variables }` or `{ inline = [steps] }`. Returns how many
    /// steps it inserted (the branch joins on them).
    fn expand_target(
        &mut self,
        st: &mut State,
        i: usize,
        target: &BranchTarget,
        key: &str,
        ended: &mut Ended,
    ) -> Result<usize, Refused> {
        let prefix = format!("{}.", st.steps[i].id);
        let inline = match target {
            BranchTarget::Template {
                template,
                variables,
                ..
            } => {
                let (workflow, scope, _) =
                    self.instance(st, i, &template.text, variables.as_ref(), None)?;
                let steps = workflow.steps.clone();
                return self.insert_children(
                    st,
                    i,
                    &steps,
                    scope,
                    workflow.src.clone(),
                    prefix,
                    true,
                    None,
                    ended,
                );
            }
            BranchTarget::Inline { steps, .. } => steps,
            BranchTarget::Nothing { .. } | BranchTarget::NotATable => return Ok(0),
        };
        let mut steps = Vec::new();
        for (index, step) in inline.iter().enumerate() {
            match step {
                Ok(step) => steps.push(Arc::new(TemplateStep::from_ast(step))),
                Err(why) => return Err(format!("`{key}` inline step {index}: {why}").into()),
            }
        }
        let scope = st.steps[i].scope.clone();
        let src = st.steps[i].src.clone();
        self.insert_children(st, i, &steps, scope, src, prefix, true, None, ended)
    }

    /// The agents named by the steps expansion step `i` may insert (any of a branch's
    /// outcomes), and by the steps those expand into, however deep, as those steps would
    /// name them if it expanded now, each with the kind of step that names it; `None` when
    /// one cannot be known before the step runs (its variables or the name read a step's
    /// output).
    pub(super) fn agents_expanded(
        &mut self,
        st: &State,
        i: usize,
    ) -> Option<Vec<(String, AgentUse)>> {
        let step = st.steps[i].template.clone();
        let id = &st.steps[i].id;
        let mut agents = Vec::new();
        let mut instances = Vec::new();
        match &step.executor {
            Executor::Expand(x) => instances.push((x.template.as_ref()?, x.variables.as_ref())),
            Executor::Branch(b) => {
                for (_, target) in b.targets() {
                    match target {
                        Some(BranchTarget::Template {
                            template,
                            variables,
                            ..
                        }) => instances.push((template, variables.as_ref())),
                        // Inline steps see the branch's own variables.
                        Some(BranchTarget::Inline { steps, .. }) => {
                            let steps: Vec<TemplateStep> = steps
                                .iter()
                                .filter_map(|s| s.as_ref().ok().map(TemplateStep::from_ast))
                                .collect();
                            let vars = st.steps[i].scope.vars.clone();
                            let src = st.steps[i].src.clone();
                            self.agents_beneath(&steps, &src, &vars, st, id, 1, &mut agents)?;
                        }
                        _ => {}
                    }
                }
            }
            _ => return Some(agents),
        }
        for (reference, variables) in instances {
            // Only a template that names agents needs its variables now.
            let src = st.steps[i].src.clone();
            // A template named through a variable is the one the step will expand.
            let reference_now =
                subst::render(&reference.text, &StepValues::new(st, i), false).ok()?;
            match self.lib.resolve(&reference_now, &src) {
                Ok(w) if self.names_agents(&w.steps, &w.src, 1) => {}
                _ => continue,
            }
            let (workflow, scope, _) = self
                .instance(st, i, &reference.text, variables, None)
                .ok()?;
            let steps: Vec<TemplateStep> = workflow.steps.iter().map(|t| (**t).clone()).collect();
            self.agents_beneath(&steps, &workflow.src, &scope.vars, st, id, 1, &mut agents)?;
        }
        Some(agents)
    }

    /// The workflow a reference names and the variables of one instance of it.
    fn instance(
        &mut self,
        st: &State,
        i: usize,
        reference: &str,
        variables: Option<&Node>,
        extra: Option<&Map<String, Value>>,
    ) -> Result<(Arc<Template>, Arc<super::state::Scope>, String), Refused> {
        let values = StepValues {
            state: st,
            step: i,
            extra,
            depth: 0,
        };
        let reference =
            subst::render(reference, &values, false).map_err(|e| format!("`template`: {e}"))?;
        let src = st.steps[i].src.clone();
        let workflow = self.lib.resolve(&reference, &src).map_err(|e| Refused {
            code: codes::MEOW_STEP,
            message: e.into(),
            kind: Some(recovery::TEMPLATE_NOT_FOUND),
        })?;
        let mut given = match variables {
            Some(variables) => match subst::typed_value(&variables.to_json(), &values)
                .map_err(|e| format!("`variables`: {e}"))?
            {
                Value::Object(given) => given,
                _ => return Err("`variables` must be a table".to_string().into()),
            },
            None => Map::new(),
        };
        // A foreach gives each iteration its item and index: a template that declares them
        // (as `meow validate` wants of a template that uses them) has them given, so
        // `required` holds and a declared type applies.
        for (name, value) in extra.into_iter().flatten() {
            if workflow.vars.iter().any(|decl| decl.name == *name) {
                given.insert(name.clone(), value.clone());
            }
        }
        let mut vars = workflow
            .bind(given, false)
            .map_err(|e| format!("expanding `{reference}`: {e}"))?;
        // What a recovery expands still describes the failure it recovers from.
        let failed = super::recovery::FAILED_STEP;
        if let Some(failure) = st.steps[i].scope.vars.get(failed) {
            vars.entry(failed.to_string())
                .or_insert_with(|| failure.clone());
        }
        Ok((workflow, Arc::new(super::state::Scope { vars }), reference))
    }

    /// Inserts an expansion's steps under `prefix`. A need naming one of these steps (or a
    /// step under one) is rewritten to its prefixed id; other needs are kept as written, so a
    /// template can wait for a step outside it. `join`: the parent waits for them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert_children(
        &mut self,
        st: &mut State,
        parent: usize,
        steps: &[Arc<TemplateStep>],
        scope: Arc<super::state::Scope>,
        src: Arc<ModuleFile>,
        prefix: String,
        join: bool,
        foreach: Option<(usize, usize)>,
        ended: &mut Ended,
    ) -> Result<usize, Refused> {
        self.room(st, parent, steps.len())?;
        let depth = st.steps[parent].depth + 1;
        // A recovery's steps run one recovery deeper than the step that failed.
        let recovery =
            st.steps[parent].recovery + u32::from(st.steps[parent].status == Status::Recovering);
        let ids: HashSet<&str> = steps.iter().map(|step| step.id.as_str()).collect();
        let iteration = foreach.or(st.steps[parent].foreach);
        if join {
            st.steps[parent].open += steps.len();
        }
        let mut made = 0;
        for template in steps {
            let mut step = self.new_step(
                template.clone(),
                scope.clone(),
                src.clone(),
                prefix.clone(),
                join.then_some(parent),
                iteration,
                depth,
            );
            step.needs = rewrite(&template.needs, &ids, &prefix);
            step.recovery = recovery;
            if let Some((foreach, iteration)) = iteration {
                if let Some(throttle) = self.throttles.get_mut(&foreach) {
                    *throttle.left.entry(iteration).or_insert(0) += 1;
                }
            }
            match st.insert(step, ended) {
                Ok(child) => st.steps[parent].children.push(child),
                Err(e) => {
                    if join {
                        let left = steps.len() - made;
                        let parent = &mut st.steps[parent];
                        parent.open = parent.open.saturating_sub(left);
                    }
                    return Err(e.into());
                }
            }
            made += 1;
        }
        Ok(made)
    }

    /// The expansion limits: depth and the run's step count.
    fn room(&self, st: &State, parent: usize, more: usize) -> Result<(), Refused> {
        let depth = st.steps[parent].depth + 1;
        if depth > self.limits.max_depth {
            return Err(Refused {
                code: codes::MEOW_LIMIT,
                message: format!(
                    "expansions nest {depth} deep, over the limit of {} (`[meow] max_expansion_depth` in pipewright.toml)",
                    self.limits.max_depth
                ),
                kind: None,
            });
        }
        let total = st.steps.len() + more;
        if total > self.limits.max_steps {
            return Err(Refused {
                code: codes::MEOW_LIMIT,
                message: format!(
                    "the run would have {total} steps, over the limit of {} (`[meow] max_total_steps` in pipewright.toml)",
                    self.limits.max_steps
                ),
                kind: None,
            });
        }
        Ok(())
    }

    fn expand(
        &mut self,
        st: &mut State,
        i: usize,
        expand: &Expand,
        ended: &mut Ended,
    ) -> Dispatched {
        let Some(reference) = &expand.template else {
            return fail("the expand step has no `template`");
        };
        let inserted = self
            .instance(st, i, &reference.text, expand.variables.as_ref(), None)
            .and_then(|(workflow, scope, _)| {
                let prefix = format!("{}.", st.steps[i].id);
                let steps = workflow.steps.clone();
                self.insert_children(
                    st,
                    i,
                    &steps,
                    scope,
                    workflow.src.clone(),
                    prefix,
                    false,
                    None,
                    ended,
                )
            });
        match inserted {
            Ok(_) => Dispatched::Now(Status::Done, Map::new(), None),
            Err(refusal) => {
                self.note_refusal(st, i, &refusal);
                fail(refusal.message)
            }
        }
    }

    fn items(
        &mut self,
        st: &State,
        i: usize,
        foreach: &Foreach,
    ) -> Result<Vec<Value>, PrepareError> {
        let id = &st.steps[i].id;
        if let Some(Value::Array(landed)) = self.recorded(&format!("{id}#items")) {
            return Ok(landed.clone());
        }
        let items = match (&foreach.items, &foreach.items_file) {
            (Some(_), Some(_)) => return Err(PrepareError::ItemsAndItemsFile),
            (None, None) => return Err(PrepareError::NoItems),
            (Some(items), None) => {
                let items = subst::typed(&items.text, &StepValues::new(st, i))
                    .map_err(|error| field("items", error))?;
                match items {
                    Value::String(text) => {
                        serde_json::from_str(&text).map_err(|e| PrepareError::ItemsNotJson {
                            error: e.to_string(),
                            got: preview(&text),
                        })?
                    }
                    other => other,
                }
            }
            (None, Some(file)) => {
                let file = subst::render(&file.text, &StepValues::new(st, i), false)
                    .map_err(|error| field("items_file", error))?;
                let path = under(&self.project, &file);
                let text = match std::fs::read_to_string(&path) {
                    Ok(text) => text,
                    Err(e) => {
                        return Err(PrepareError::ItemsFileUnreadable {
                            path,
                            error: e.to_string(),
                        })
                    }
                };
                match serde_json::from_str(&text) {
                    Ok(items) => items,
                    Err(e) => {
                        return Err(PrepareError::ItemsFileNotJson {
                            path,
                            error: e.to_string(),
                        })
                    }
                }
            }
        };
        match items {
            Value::Array(items) => Ok(items),
            other => Err(PrepareError::ItemsNotAList(preview(&other.to_string()))),
        }
    }

    fn foreach(
        &mut self,
        st: &mut State,
        i: usize,
        foreach: &Foreach,
        ended: &mut Ended,
    ) -> Dispatched {
        let items = match self.items(st, i, foreach) {
            Ok(items) => items,
            Err(e) => return fail(e),
        };
        let id = st.steps[i].id.clone();
        self.land_fact(format!("{id}#items"), Value::Array(items.clone()));
        let Some(item_var) = foreach.item_var.as_ref().map(|name| name.text.clone()) else {
            return fail("the foreach has no `item_var`");
        };
        let index_var = foreach.index_var.as_ref().map(|name| name.text.clone());
        let Some(reference) = &foreach.template else {
            return fail("the foreach has no `template`");
        };
        let flag = |key: &str, flag: &Option<Flag>, default: bool| -> Result<bool, PrepareError> {
            match flag {
                None => Ok(default),
                Some(Flag::Bool(value)) => Ok(*value),
                Some(Flag::Text(text)) => {
                    let text = subst::render(&text.text, &StepValues::new(st, i), false)?;
                    match text.trim().to_ascii_lowercase().as_str() {
                        "true" | "1" | "yes" => Ok(true),
                        "false" | "0" | "no" => Ok(false),
                        _ => Err(PrepareError::NotAFlag {
                            key: key.to_string(),
                            got: text,
                        }),
                    }
                }
                Some(Flag::Other(_)) => Err(PrepareError::NotAFlagAtAll(key.to_string())),
            }
        };
        let parallel = flag("parallel", &foreach.parallel, true);
        let join = flag("join", &foreach.join, true);
        let (parallel, join) = match (parallel, join) {
            (Ok(parallel), Ok(join)) => (parallel, join),
            (Err(e), _) | (_, Err(e)) => return fail(e),
        };
        let max = match &foreach.max_concurrent {
            Some(MaxConcurrent::Count(n)) if *n > 0 => Some(*n as usize),
            Some(MaxConcurrent::Text(text)) => {
                subst::render(&text.text, &StepValues::new(st, i), false)
                    .ok()
                    .and_then(|text| text.trim().parse::<usize>().ok())
                    .filter(|n| *n > 0)
            }
            _ => None,
        };
        if let Err(refusal) = self.room(st, i, 0) {
            self.note_refusal(st, i, &refusal);
            return fail(refusal.message);
        }
        if let (Some(max), true) = (max, parallel) {
            self.throttles.insert(
                i,
                ForeachThrottle {
                    max,
                    left: Default::default(),
                    active: Default::default(),
                    held: VecDeque::new(),
                },
            );
        }
        let mut total = 0;
        let mut previous: Vec<String> = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let mut extra = Map::new();
            extra.insert(item_var.clone(), item.clone());
            if let Some(index_var) = &index_var {
                extra.insert(index_var.clone(), Value::from(index));
            }
            let instance = self.instance(
                st,
                i,
                &reference.text,
                foreach.variables.as_ref(),
                Some(&extra),
            );
            let (workflow, scope, resolved) = match instance {
                Ok(instance) => instance,
                Err(refusal) => {
                    self.note_refusal(st, i, &refusal);
                    return self.foreach_failed(st, i, total, refusal.message);
                }
            };
            let mut vars = scope.vars.clone();
            // Declared ones were bound (and coerced) with the variables.
            vars.extend(
                extra
                    .into_iter()
                    .filter(|(name, _)| !workflow.vars.iter().any(|decl| decl.name == *name)),
            );
            let scope = Arc::new(super::state::Scope { vars });
            let prefix = format!("{id}.{index}.");
            let ids: HashSet<&str> = workflow.steps.iter().map(|step| step.id.as_str()).collect();
            // Sequential: the steps an iteration starts with wait for the whole previous one.
            let steps: Vec<Arc<TemplateStep>> = if parallel || previous.is_empty() {
                workflow.steps.clone()
            } else {
                workflow
                    .steps
                    .iter()
                    .map(|step| {
                        if step
                            .needs
                            .iter()
                            .any(|need| ids.contains(need.split('.').next().unwrap_or("")))
                        {
                            return step.clone();
                        }
                        let mut chained = TemplateStep::clone(step);
                        // Absolute ids: `rewrite` keeps needs that name no template step.
                        chained.needs.extend(previous.iter().cloned());
                        Arc::new(chained)
                    })
                    .collect()
            };
            previous = workflow
                .steps
                .iter()
                .map(|step| format!("{prefix}{}", step.id))
                .collect();
            // A sequential iteration is sent too, once the whole previous one has ended (its
            // first steps need it here): one at a time, each on whichever worker takes it.
            let vars = self.members.is_some().then(|| scope.vars.clone());
            match self.insert_children(
                st,
                i,
                &steps,
                scope,
                workflow.src.clone(),
                prefix.clone(),
                join,
                Some((i, index)),
                ended,
            ) {
                Ok(made) => {
                    total += made;
                    if let Some(vars) = vars {
                        self.send_away(st, i, &workflow, resolved, vars, &prefix);
                    }
                }
                Err(refusal) => {
                    self.note_refusal(st, i, &refusal);
                    return self.foreach_failed(st, i, total, refusal.message);
                }
            }
        }
        if join && total > 0 && st.steps[i].status == Status::Running {
            Dispatched::Joining
        } else if join && st.steps[i].status.terminal() {
            // Every child ended while being inserted (all skipped): the join already ended.
            Dispatched::Joining
        } else {
            Dispatched::Now(Status::Done, Map::new(), None)
        }
    }

    fn foreach_failed(
        &mut self,
        st: &mut State,
        i: usize,
        _made: usize,
        why: String,
    ) -> Dispatched {
        // Iterations already inserted run on; the foreach itself fails.
        st.steps[i].open = 0;
        fail(why)
    }

    fn agent(&mut self, st: &mut State, i: usize, agent: &Agent) -> Dispatched {
        let id = st.steps[i].id.clone();
        if let Some((status, outputs, error)) = self.replay(&id) {
            return Dispatched::Now(status, outputs, error);
        }
        let prepared =
            (|| -> Result<(String, String, Option<std::time::Duration>), PrepareError> {
                let name = render(st, i, agent.agent.as_ref(), "agent", false)?.ok_or(
                    PrepareError::Missing {
                        step: "agent",
                        field: "agent",
                    },
                )?;
                let prompt = render(st, i, agent.prompt.as_ref(), "prompt", false)?.ok_or(
                    PrepareError::Missing {
                        step: "agent",
                        field: "prompt",
                    },
                )?;
                Ok((name, prompt, timeout(agent.timeout.as_ref())?))
            })();
        let (agent_name, prompt, timeout) = match prepared {
            Ok(prepared) => prepared,
            Err(e) => return fail(e),
        };
        let decl = agent.outputs.clone();
        let fire_forget = agent.fire_forget();
        if fire_forget && !decl.is_empty() {
            return fail("a `fire_forget` agent step cannot declare outputs");
        }
        if self.tmux {
            return self.agent_in_tmux(st, i, agent_name, prompt, decl, fire_forget, timeout);
        }
        if fire_forget {
            return Dispatched::Now(Status::Done, Map::new(), None);
        }
        self.set_busy(agent_name.clone(), i);
        let workdir = self
            .agents
            .get(&agent_name)
            .map_or_else(|| self.project.clone(), |info| info.workdir.clone());
        let ask = agent::Ask {
            backend: self.backend.clone(),
            run_id: self.session.run_id().to_string(),
            step: id,
            workflow: self.workflow.clone(),
            agent: agent_name,
            prompt: agent::full_prompt(&prompt, &decl, false),
            identity: self.identity.clone(),
            decl,
            workdir,
            timeout,
        };
        Dispatched::Later(Box::pin(async move {
            (i, Completion::Agent(agent::ask(ask).await))
        }))
    }

    #[allow(clippy::too_many_arguments)]
    fn agent_in_tmux(
        &mut self,
        st: &mut State,
        i: usize,
        agent_name: String,
        prompt: String,
        decl: Vec<crate::executor::OutputDecl>,
        fire_forget: bool,
        timeout: Option<std::time::Duration>,
    ) -> Dispatched {
        let Some((session, adapter)) = self
            .agents
            .get(&agent_name)
            .and_then(|info| info.session.clone())
        else {
            st.error_types.insert(i, recovery::AGENT_NOT_FOUND);
            return fail(format!(
                "agent `{agent_name}` is not running: no spawn step of this run started it"
            ));
        };
        if !fire_forget {
            self.set_busy(agent_name, i);
            self.waiting.insert(i);
            if let Some(timeout) = timeout {
                self.deadlines.insert((Instant::now() + timeout, i));
            }
        }
        let text = agent::full_prompt(&prompt, &decl, fire_forget);
        let done = Arc::new(tokio::sync::Notify::new());
        if !fire_forget {
            self.watchers.insert(i, done.clone());
            self.prompted(i, &text);
        }
        Dispatched::Later(Box::pin(async move {
            // The prompt cannot reach a session that is gone (killed, or its agent quit
            // between steps): the agent is not found, it did not crash during this step.
            if let Err(e) = super::tmux::inject(&adapter, &session, &text).await {
                return (
                    i,
                    Completion::Injected(Err((super::recovery::AGENT_NOT_FOUND, e.into()))),
                );
            }
            if fire_forget {
                return (i, Completion::Injected(Ok(())));
            }
            // Until the step ends, a session that dies fails it instead of leaving the run
            // waiting for a report that cannot come.
            loop {
                tokio::select! {
                    _ = done.notified() => return (i, Completion::Injected(Ok(()))),
                    _ = tokio::time::sleep(std::time::Duration::from_millis(500)) => {
                        if !super::tmux::alive(&session).await {
                            return (i, Completion::Injected(Err((
                                super::recovery::AGENT_CRASHED,
                                "the agent's session ended before the agent reported".into(),
                            ))));
                        }
                    }
                }
            }
        }))
    }

    /// An agent step's `timeout` passed before its agent reported.
    pub(super) fn timed_out(&mut self, st: &mut State, i: usize, ended: &mut Ended) {
        if !self.waiting.remove(&i) || st.steps[i].status != Status::Running {
            return;
        }
        if let Some(watcher) = self.watchers.remove(&i) {
            watcher.notify_one();
        }
        let took = st.steps[i]
            .started
            .map(|started| super::duration::show(started.elapsed()))
            .unwrap_or_default();
        st.fail(
            i,
            recovery::TIMEOUT,
            Map::new(),
            format!("step timed out after {took}"),
            ended,
        );
    }

    /// Offline, an agent is a name and a working directory: spawning records them.
    fn spawn(&mut self, st: &mut State, i: usize, spawn: &Spawn) -> Dispatched {
        let prepared = (|| -> Result<(String, std::path::PathBuf), PrepareError> {
            let agent = render(st, i, spawn.agent.as_ref(), "agent", false)?.ok_or(
                PrepareError::Missing {
                    step: "spawn",
                    field: "agent",
                },
            )?;
            let workdir = match render(st, i, spawn.workdir.as_ref(), "workdir", false)? {
                Some(workdir) if !workdir.is_empty() => under(&self.project, &workdir),
                _ => self.project.clone(),
            };
            Ok((agent, workdir))
        })();
        if self.tmux {
            return match prepared {
                Ok((agent, workdir)) => self.spawn_in_tmux(st, i, spawn, agent, workdir),
                Err(e) => fail(e),
            };
        }
        match prepared {
            Ok((agent, workdir)) => {
                let outputs = json!({"agent": agent, "workdir": workdir.display().to_string()});
                self.agents.insert(agent, AgentInfo::offline(workdir));
                Dispatched::Now(
                    Status::Done,
                    outputs.as_object().cloned().unwrap_or_default(),
                    None,
                )
            }
            Err(e) => fail(e),
        }
    }

    fn spawn_in_tmux(
        &mut self,
        st: &State,
        i: usize,
        spawn: &Spawn,
        agent: String,
        workdir: std::path::PathBuf,
    ) -> Dispatched {
        let prepared = (|| -> Result<_, PrepareError> {
            let name = match render(st, i, spawn.adapter.as_ref(), "adapter", false)? {
                Some(adapter) if !adapter.is_empty() => adapter,
                _ => "claude".to_string(),
            };
            let adapter = super::tmux::Adapter::find(&name, &self.project)?;
            let mut env = render_env(st, i, &spawn.env)?;
            env.retain(|(name, _)| !name.starts_with("MEOW_"));
            let mut env = self.step_env(env, &st.steps[i].id, Some(&agent));
            // An agent works on many steps: which one is running is the orchestrator's to say.
            env.retain(|(name, _)| name != "MEOW_STEP");
            let args = match &spawn.spawn_args {
                Some(SpawnArgs::Text(text)) => {
                    render(st, i, Some(text), "spawn_args", false)?.unwrap_or_default()
                }
                Some(SpawnArgs::List(list)) => list
                    .iter()
                    .map(|arg| subst::render(&arg.text, &StepValues::new(st, i), true))
                    .collect::<Result<Vec<_>, _>>()?
                    .join(" "),
                None => String::new(),
            };
            let resume = render(
                st,
                i,
                spawn.resume_session.as_ref(),
                "resume_session",
                false,
            )?;
            Ok((adapter, env, args, resume))
        })();
        let (adapter, env, args, resume) = match prepared {
            Ok(prepared) => prepared,
            Err(e) => return fail(e),
        };
        if let Err(e) = std::fs::create_dir_all(&workdir) {
            return fail(format!(
                "cannot create the agent's workdir {}: {e}",
                workdir.display()
            ));
        }
        let session = super::tmux::session_name(self.session.run_id(), &agent);
        Dispatched::Later(Box::pin(async move {
            let spawned =
                super::tmux::spawn(&adapter, &session, &workdir, &env, &args, resume.as_deref())
                    .await;
            let info = spawned.map(|session_id| AgentInfo {
                workdir,
                session: Some((session, adapter)),
                session_id,
            });
            (i, Completion::Spawned { agent, info })
        }))
    }

    fn kill(&mut self, st: &mut State, i: usize, kill: &Kill) -> Dispatched {
        match render(st, i, kill.agent.as_ref(), "agent", false) {
            Ok(Some(agent)) => {
                let info = self.agents.remove(&agent);
                if let Some((session, adapter)) = info.and_then(|info| info.session) {
                    let graceful = kill.graceful;
                    return Dispatched::Later(Box::pin(async move {
                        (
                            i,
                            Completion::Killed(
                                super::tmux::kill(Some(&adapter), &session, graceful).await,
                            ),
                        )
                    }));
                }
                Dispatched::Now(Status::Done, Map::new(), None)
            }
            Ok(None) => fail(PrepareError::Missing {
                step: "kill",
                field: "agent",
            }),
            Err(e) => fail(e),
        }
    }
}

/// What step `i` is given, for its `step_started` event: a shell step's command or an agent
/// step's prompt, substituted as the step itself substitutes it (a field that does not
/// substitute is the step's own failure, reported when it runs).
pub(super) fn given(st: &State, i: usize) -> Option<pipewright_runtime::given::Given> {
    use pipewright_runtime::given::Given;
    match &st.steps[i].template.executor {
        Executor::Shell(shell) => render(st, i, shell.command.script.as_ref(), "command", true)
            .ok()
            .flatten()
            .map(|c| Given::command(&c)),
        Executor::Agent(agent) => render(st, i, agent.prompt.as_ref(), "prompt", false)
            .ok()
            .flatten()
            .map(|p| Given::prompt(&p)),
        _ => None,
    }
}

/// A text field substituted for step `i`; `key` names it in errors.
fn render(
    st: &State,
    i: usize,
    field: Option<&Text>,
    key: &str,
    shell: bool,
) -> Result<Option<String>, PrepareError> {
    match field {
        Some(text) => subst::render(&text.text, &StepValues::new(st, i), shell)
            .map(Some)
            .map_err(|error| self::field(key, error)),
        None => Ok(None),
    }
}

fn field(key: &str, error: SubstError) -> PrepareError {
    PrepareError::Field {
        key: key.to_string(),
        error,
    }
}

/// The variables `env` sets, substituted.
fn render_env(st: &State, i: usize, env: &Env) -> Result<Vec<(String, String)>, PrepareError> {
    let values = StepValues::new(st, i);
    env.vars()
        .map(|(name, value)| {
            subst::render(value, &values, false)
                .map(|value| (name.to_string(), value))
                .map_err(|error| field(&format!("env.{name}"), error))
        })
        .collect()
}

fn timeout(timeout: Option<&Timeout>) -> Result<Option<std::time::Duration>, PrepareError> {
    match timeout {
        None => Ok(None),
        Some(Timeout::Text(text)) => super::duration::parse(&text.text)
            .map(Some)
            .map_err(PrepareError::Timeout),
        Some(Timeout::Seconds(secs)) => Ok(Some(std::time::Duration::from_secs(*secs))),
        Some(Timeout::Invalid) => Err(PrepareError::TimeoutNotText),
    }
}

/// The outputs a command captures, their sources substituted.
fn captures(
    st: &State,
    i: usize,
    captures: &[Capture],
) -> Result<Vec<shell::Capture>, PrepareError> {
    let values = StepValues::new(st, i);
    captures
        .iter()
        .map(|capture| {
            let source = capture
                .source
                .as_ref()
                .map_or("stdout", |source| source.text.as_str());
            let source = subst::render(source, &values, false).map_err(|error| {
                PrepareError::CaptureSource {
                    name: capture.name.clone(),
                    error,
                }
            })?;
            Ok(shell::Capture {
                name: capture.name.clone(),
                source,
                json: capture.json,
            })
        })
        .collect()
}

pub(super) fn rewrite(needs: &[String], ids: &HashSet<&str>, prefix: &str) -> Vec<String> {
    needs
        .iter()
        .map(|need| {
            let head = need.split('.').next().unwrap_or(need);
            if ids.contains(need.as_str()) || ids.contains(head) {
                format!("{prefix}{need}")
            } else {
                need.clone()
            }
        })
        .collect()
}

/// The agents `steps` name (agent, spawn, kill), with the kind of step that names each,
/// rendered with variables `vars` as steps inserted under step `parent` of run `st` would see
/// them; `None` when a name cannot be known so (it reads an output, or a variable that holds
/// references).
pub(super) fn named_agents<'t>(
    steps: impl Iterator<Item = &'t TemplateStep>,
    vars: &Map<String, Value>,
    st: &State,
    parent: &str,
    agents: &mut Vec<(String, AgentUse)>,
) -> Option<()> {
    for t in steps {
        let Some((field, kind)) = t.executor.agent_named() else {
            continue;
        };
        let cx = subst::Known {
            vars,
            run_id: &st.run_id,
            step: Some((&t.id, format!("{parent}."))),
        };
        let name = subst::render(&field?.text, &cx, false).ok()?;
        agents.push((name, kind));
    }
    Some(())
}

fn preview(text: &str) -> String {
    let head: String = text.chars().take(60).collect();
    if head.len() < text.len() {
        format!("`{head}…`")
    } else {
        format!("`{head}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_that_is_no_duration_is_refused_naming_the_field() {
        let text = Timeout::Text(Text {
            text: "soon".into(),
            span: Default::default(),
        });
        let e = timeout(Some(&text)).unwrap_err();
        assert_eq!(
            e,
            PrepareError::Timeout(DurationError::NotADuration("soon".into()))
        );
        assert_eq!(
            e.to_string(),
            "`timeout`: `soon` is not a duration (write e.g. `30s`, `5m`, `1h30m`, `500ms`)"
        );
        assert_eq!(
            timeout(Some(&Timeout::Invalid)).unwrap_err().to_string(),
            "`timeout` must be a duration such as \"30s\""
        );
    }
}
