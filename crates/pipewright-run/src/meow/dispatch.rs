//! The seven executors: what dispatching a ready step does, what its completion does, and
//! how expansions insert their steps.

use super::agent;
use super::recovery;
use super::shell;
use super::state::{Cx, Ended, State, Status};
use super::subst;
use super::template::{under, Src, TStep, Template};
use super::{AgentInfo, Disp, Exec, ForeachThrottle};
use crate::codes;
use pipewright_meow::ast::Text;
use pipewright_meow::executor::{
    Agent, Branch, BranchTarget, Capture, Command, Env, Expand, Flag, Foreach, Kill, MaxConcurrent,
    Spawn, SpawnArgs, Timeout,
};
use pipewright_meow::tree::Node;
use pipewright_meow::Executor;
use serde_json::{json, Map, Value};
use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

pub type Fut = Pin<Box<dyn Future<Output = (usize, Fin)> + Send>>;

/// A step's completion.
pub enum Fin {
    Shell(shell::Ran),
    /// Outputs, or the error type and message.
    Agent(Result<Map<String, Value>, (&'static str, String)>),
    /// A tmux agent's session started (or was found alive).
    Spawned {
        agent: String,
        info: Result<AgentInfo, String>,
    },
    /// A prompt was typed into a tmux agent's session (and, unless `fire_forget`, the agent
    /// reported); a failure carries its spec error type.
    Injected(Result<(), (&'static str, String)>),
    Killed(Result<(), String>),
}

/// The fields of a step that take `{{…}}` substitution when it runs, with their keys, as
/// written: those it has.
pub fn substituted_fields(executor: &Executor) -> Vec<(&'static str, Value)> {
    let text = |t: &Option<Text>| t.as_ref().map(|t| Value::String(t.text.clone()));
    let env = |e: &Env| e.written.as_ref().map(Node::to_json);
    let command = |script: &'static str, c: &Command| {
        vec![
            (script, text(&c.script)),
            ("workdir", text(&c.workdir)),
            ("env", env(&c.env)),
        ]
    };
    let fields = match executor {
        Executor::Shell(s) => command("command", &s.command),
        Executor::Branch(b) => command("condition", &b.condition),
        Executor::Spawn(s) => vec![
            ("agent", text(&s.agent)),
            ("adapter", text(&s.adapter)),
            ("workdir", text(&s.workdir)),
            ("env", env(&s.env)),
            (
                "spawn_args",
                s.spawn_args.as_ref().map(|a| match a {
                    SpawnArgs::Text(t) => Value::String(t.text.clone()),
                    SpawnArgs::List(l) => l.iter().map(|t| Value::String(t.text.clone())).collect(),
                }),
            ),
        ],
        Executor::Kill(k) => vec![("agent", text(&k.agent))],
        Executor::Expand(e) => vec![
            ("template", text(&e.template)),
            ("variables", e.variables.as_ref().map(Node::to_json)),
        ],
        Executor::Foreach(f) => vec![
            ("items", text(&f.items)),
            ("template", text(&f.template)),
            (
                "parallel",
                f.parallel.as_ref().map(|p| match p {
                    Flag::Bool(b) => Value::Bool(*b),
                    Flag::Text(t) => Value::String(t.text.clone()),
                    Flag::Other(n) => n.to_json(),
                }),
            ),
            (
                "max_concurrent",
                f.max_concurrent.as_ref().map(|m| match m {
                    MaxConcurrent::Count(n) => Value::from(*n),
                    MaxConcurrent::Text(t) => Value::String(t.text.clone()),
                    MaxConcurrent::Other(n) => n.to_json(),
                }),
            ),
        ],
        Executor::Agent(a) => vec![("agent", text(&a.agent)), ("prompt", text(&a.prompt))],
        Executor::Unknown { .. } => Vec::new(),
    };
    fields
        .into_iter()
        .filter_map(|(key, v)| v.map(|v| (key, v)))
        .collect()
}

/// Why an expansion could not insert its steps.
pub struct Refused {
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

fn fail(msg: impl Into<String>) -> Disp {
    Disp::Now(Status::Failed, Map::new(), Some(msg.into()))
}

impl Exec {
    pub(super) fn dispatch(&mut self, st: &mut State, i: usize, ended: &mut Ended) -> Disp {
        self.start(st, i, None);
        let step = st.steps[i].t.clone();
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

    /// A shell step's command, or a branch's condition, run. `branch`: the step is one.
    fn shell(
        &mut self,
        st: &mut State,
        i: usize,
        command: &Command,
        branch: Option<&Branch>,
        ended: &mut Ended,
    ) -> Disp {
        let id = st.steps[i].id.clone();
        let replayed = match branch {
            None => {
                if let Some((s, o, e)) = self.replay(&id) {
                    return Disp::Now(s, o, e);
                }
                None
            }
            Some(branch) => self
                .journal
                .get(&format!("{id}#condition"))
                .cloned()
                .map(|c| (branch, c)),
        };
        if let Some((branch, c)) = replayed {
            let outcome = match c["outcome"].as_str() {
                Some("true") => "true",
                Some("timeout") => "timeout",
                _ => "false",
            };
            let outputs = c["outputs"].as_object().cloned().unwrap_or_default();
            let problem = c["problem"].as_str().map(str::to_string);
            return self.branch_outcome(st, i, branch, outcome, outputs, problem, ended);
        }
        let key = if branch.is_some() {
            "condition"
        } else {
            "command"
        };
        let prepared = (|| -> Result<shell::Command, String> {
            let script = render(st, i, command.script.as_ref(), key, true)?;
            let script = match (script, branch) {
                (Some(s), _) => s,
                (None, None) => String::new(),
                (None, Some(_)) => return Err("the branch has no `condition`".into()),
            };
            let cwd = match render(st, i, command.workdir.as_ref(), "workdir", false)? {
                Some(w) if !w.is_empty() => under(&self.project, &w),
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
        let cmd = match prepared {
            Ok(c) => c,
            Err(e) => return fail(e),
        };
        if let Some(rec) = &self.recorder {
            if let Err(e) = rec.flush() {
                self.store_failed.get_or_insert(e.clone());
                return fail(format!("the run could not be recorded: {e}"));
            }
        }
        Disp::Later(Box::pin(
            async move { (i, Fin::Shell(shell::run(cmd).await)) },
        ))
    }

    /// The environment the orchestrator gives every command and agent.
    pub(super) fn meow_env(&self, step: &str, agent: Option<&str>) -> Vec<(String, String)> {
        let mut env = vec![
            ("MEOW_WORKFLOW".to_string(), self.run_id.clone()),
            ("MEOW_STEP".to_string(), step.to_string()),
        ];
        if let Some(a) = agent {
            env.push(("MEOW_AGENT".into(), a.to_string()));
        }
        if let Some(s) = &self.sock {
            env.push(("MEOW_ORCH_SOCK".into(), s.display().to_string()));
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
        let path = match env.iter().rposition(|(k, _)| k == "PATH") {
            Some(at) => bin.before(&env.remove(at).1),
            None => bin.inherited.clone(),
        };
        env.push(("PATH".into(), path));
        env
    }

    pub(super) fn complete(&mut self, st: &mut State, i: usize, fin: Fin, ended: &mut Ended) {
        if st.steps[i].status != Status::Running {
            return;
        }
        match fin {
            Fin::Shell(ran) => {
                let step = st.steps[i].t.clone();
                if let Executor::Branch(branch) = &step.executor {
                    let id = st.steps[i].id.clone();
                    self.land_fact(
                        format!("{id}#condition"),
                        json!({"outcome": ran.outcome, "outputs": ran.outputs, "problem": ran.problem}),
                    );
                    let (outcome, outputs, problem) = (ran.outcome, ran.outputs, ran.problem);
                    match self.branch_outcome(st, i, branch, outcome, outputs, problem, ended) {
                        Disp::Now(s, o, e) => st.end(i, s, o, e, ended),
                        Disp::Joining | Disp::Later(_) => {}
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
            Fin::Agent(Ok(outs)) => st.end(i, Status::Done, outs, None, ended),
            Fin::Agent(Err((kind, e))) => st.fail(i, kind, Map::new(), e, ended),
            Fin::Spawned { agent, info } => match info {
                Ok(info) => {
                    let mut out = Map::new();
                    out.insert("agent".into(), Value::String(agent.clone()));
                    out.insert(
                        "workdir".into(),
                        Value::String(info.workdir.display().to_string()),
                    );
                    if let Some((s, _)) = &info.session {
                        out.insert("session".into(), Value::String(s.clone()));
                    }
                    if let Some(id) = self.spawned(&agent, &info.session_id) {
                        out.insert("session_id".into(), Value::String(id));
                    }
                    self.agents.insert(agent, info);
                    st.end(i, Status::Done, out, None, ended);
                }
                Err(e) => st.end(i, Status::Failed, Map::new(), Some(e), ended),
            },
            Fin::Injected(Ok(())) => {
                if st.steps[i].agent().is_some_and(Agent::fire_forget) {
                    st.end(i, Status::Done, Map::new(), None, ended);
                }
            }
            Fin::Injected(Err((kind, e))) => {
                self.waiting.remove(&i);
                self.watchers.remove(&i);
                self.deadlines.retain(|(_, k)| *k != i);
                st.fail(i, kind, Map::new(), e, ended);
            }
            Fin::Killed(Err(e)) => st.end(i, Status::Failed, Map::new(), Some(e), ended),
            Fin::Killed(Ok(())) => st.end(i, Status::Done, Map::new(), None, ended),
        }
    }

    /// Keeps what a refusal says of step `i`'s failure: its code, and its error type.
    fn note_refusal(&mut self, st: &mut State, i: usize, r: &Refused) {
        self.codes.insert(i, r.code);
        if let Some(kind) = r.kind {
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
    ) -> Disp {
        let (key, target) = match outcome {
            "true" => ("on_true", &branch.on_true),
            "timeout" if branch.on_timeout.is_some() => ("on_timeout", &branch.on_timeout),
            _ => ("on_false", &branch.on_false),
        };
        let target = target
            .as_ref()
            .filter(|t| !matches!(t, BranchTarget::NotATable));
        let Some(target) = target else {
            if outcome == "true" {
                return Disp::Now(Status::Done, outputs, None);
            }
            if self.continues(st, i) {
                if let Some(p) = problem {
                    outputs.insert("error".into(), Value::String(p));
                }
                return Disp::Now(Status::Done, outputs, None);
            }
            let why = match outcome {
                "timeout" => "the condition timed out",
                _ => "the condition was false",
            };
            return Disp::Now(
                Status::Failed,
                outputs,
                Some(format!(
                    "{why} and the branch has no `{key}` (write `{key} = {{ inline = [] }}` to make it a normal outcome){}",
                    problem.map(|p| format!(": {p}")).unwrap_or_default()
                )),
            );
        };
        match self.expand_target(st, i, target, key, ended) {
            Err(r) => {
                self.note_refusal(st, i, &r);
                Disp::Now(Status::Failed, outputs, Some(r.message))
            }
            Ok(0) => Disp::Now(Status::Done, outputs, None),
            Ok(_) => {
                if st.steps[i].status == Status::Running {
                    st.steps[i].outputs = outputs;
                }
                Disp::Joining
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
                let (tmpl, scope) =
                    self.instance(st, i, &template.text, variables.as_ref(), None)?;
                let steps = tmpl.steps.clone();
                return self.insert_children(
                    st,
                    i,
                    &steps,
                    scope,
                    tmpl.src.clone(),
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
        for (k, step) in inline.iter().enumerate() {
            match step {
                Ok(s) => steps.push(Arc::new(TStep::from_ast(s))),
                Err(why) => return Err(format!("`{key}` inline step {k}: {why}").into()),
            }
        }
        let scope = st.steps[i].scope.clone();
        let src = st.steps[i].src.clone();
        self.insert_children(st, i, &steps, scope, src, prefix, true, None, ended)
    }

    /// The workflow a reference names and the variables of one instance of it.
    fn instance(
        &mut self,
        st: &State,
        i: usize,
        reference: &str,
        variables: Option<&Node>,
        extra: Option<&Map<String, Value>>,
    ) -> Result<(Arc<Template>, Arc<super::state::Scope>), Refused> {
        let cx = Cx {
            st,
            i,
            extra,
            depth: 0,
        };
        let reference =
            subst::render(reference, &cx, false).map_err(|e| format!("`template`: {e}"))?;
        let src = st.steps[i].src.clone();
        let tmpl = self
            .lib
            .resolve(&reference, &src)
            .map_err(|message| Refused {
                code: codes::MEOW_STEP,
                message,
                kind: Some(recovery::TEMPLATE_NOT_FOUND),
            })?;
        let mut given = match variables {
            Some(v) => match subst::typed_value(&v.to_json(), &cx)
                .map_err(|e| format!("`variables`: {e}"))?
            {
                Value::Object(m) => m,
                _ => return Err("`variables` must be a table".to_string().into()),
            },
            None => Map::new(),
        };
        // A foreach gives each iteration its item and index: a template that declares them
        // (as `meow validate` wants of a template that uses them) has them given, so
        // `required` holds and a declared type applies.
        for (k, v) in extra.into_iter().flatten() {
            if tmpl.vars.iter().any(|d| d.name == *k) {
                given.insert(k.clone(), v.clone());
            }
        }
        let mut vars = tmpl
            .bind(given, false)
            .map_err(|e| format!("expanding `{reference}`: {e}"))?;
        // What a recovery expands still describes the failure it recovers from.
        let failed = super::recovery::FAILED_STEP;
        if let Some(f) = st.steps[i].scope.vars.get(failed) {
            vars.entry(failed.to_string()).or_insert_with(|| f.clone());
        }
        Ok((tmpl, Arc::new(super::state::Scope { vars })))
    }

    /// Inserts an expansion's steps under `prefix`. A need naming one of these steps (or a
    /// step under one) is rewritten to its prefixed id; other needs are kept as written, so a
    /// template can wait for a step outside it. `join`: the parent waits for them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert_children(
        &mut self,
        st: &mut State,
        parent: usize,
        steps: &[Arc<TStep>],
        scope: Arc<super::state::Scope>,
        src: Arc<Src>,
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
        let ids: HashSet<&str> = steps.iter().map(|s| s.id.as_str()).collect();
        let fe = foreach.or(st.steps[parent].foreach);
        if join {
            st.steps[parent].open += steps.len();
        }
        let mut made = 0;
        for t in steps {
            let mut s = self.new_step(
                t.clone(),
                scope.clone(),
                src.clone(),
                prefix.clone(),
                join.then_some(parent),
                fe,
                depth,
            );
            s.needs = rewrite(&t.needs, &ids, &prefix);
            s.recovery = recovery;
            if let Some((fi, it)) = fe {
                if let Some(f) = self.fe.get_mut(&fi) {
                    *f.left.entry(it).or_insert(0) += 1;
                }
            }
            match st.insert(s, ended) {
                Ok(k) => st.steps[parent].children.push(k),
                Err(e) => {
                    if join {
                        let left = steps.len() - made;
                        let p = &mut st.steps[parent];
                        p.open = p.open.saturating_sub(left);
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

    fn expand(&mut self, st: &mut State, i: usize, expand: &Expand, ended: &mut Ended) -> Disp {
        let Some(reference) = &expand.template else {
            return fail("the expand step has no `template`");
        };
        let res = self
            .instance(st, i, &reference.text, expand.variables.as_ref(), None)
            .and_then(|(tmpl, scope)| {
                let prefix = format!("{}.", st.steps[i].id);
                let steps = tmpl.steps.clone();
                self.insert_children(
                    st,
                    i,
                    &steps,
                    scope,
                    tmpl.src.clone(),
                    prefix,
                    false,
                    None,
                    ended,
                )
            });
        match res {
            Ok(_) => Disp::Now(Status::Done, Map::new(), None),
            Err(r) => {
                self.note_refusal(st, i, &r);
                fail(r.message)
            }
        }
    }

    fn items(&mut self, st: &State, i: usize, foreach: &Foreach) -> Result<Vec<Value>, String> {
        let id = &st.steps[i].id;
        if let Some(Value::Array(a)) = self.journal.get(&format!("{id}#items")) {
            return Ok(a.clone());
        }
        let v = match (&foreach.items, &foreach.items_file) {
            (Some(_), Some(_)) => return Err("give `items` or `items_file`, not both".into()),
            (None, None) => return Err("the foreach has neither `items` nor `items_file`".into()),
            (Some(items), None) => {
                let v = subst::typed(&items.text, &Cx::new(st, i))
                    .map_err(|e| format!("`items`: {e}"))?;
                match v {
                    Value::String(s) => serde_json::from_str(&s).map_err(|e| {
                        format!("`items` must be a JSON array: {e} (got {})", preview(&s))
                    })?,
                    other => other,
                }
            }
            (None, Some(f)) => {
                let f = subst::render(&f.text, &Cx::new(st, i), false)
                    .map_err(|e| format!("`items_file`: {e}"))?;
                let p = under(&self.project, &f);
                let text = std::fs::read_to_string(&p)
                    .map_err(|e| format!("cannot read `items_file` {}: {e}", p.display()))?;
                serde_json::from_str(&text)
                    .map_err(|e| format!("`items_file` {} is not JSON: {e}", p.display()))?
            }
        };
        match v {
            Value::Array(a) => Ok(a),
            other => Err(format!(
                "the items must be a JSON array, got {}",
                preview(&other.to_string())
            )),
        }
    }

    fn foreach(&mut self, st: &mut State, i: usize, foreach: &Foreach, ended: &mut Ended) -> Disp {
        let items = match self.items(st, i, foreach) {
            Ok(a) => a,
            Err(e) => return fail(e),
        };
        let id = st.steps[i].id.clone();
        self.land_fact(format!("{id}#items"), Value::Array(items.clone()));
        let Some(item_var) = foreach.item_var.as_ref().map(|t| t.text.clone()) else {
            return fail("the foreach has no `item_var`");
        };
        let index_var = foreach.index_var.as_ref().map(|t| t.text.clone());
        let Some(reference) = &foreach.template else {
            return fail("the foreach has no `template`");
        };
        let flag = |key: &str, flag: &Option<Flag>, default: bool| -> Result<bool, String> {
            match flag {
                None => Ok(default),
                Some(Flag::Bool(b)) => Ok(*b),
                Some(Flag::Text(s)) => {
                    let s = subst::render(&s.text, &Cx::new(st, i), false)?;
                    match s.trim().to_ascii_lowercase().as_str() {
                        "true" | "1" | "yes" => Ok(true),
                        "false" | "0" | "no" => Ok(false),
                        _ => Err(format!("`{key}` must be true or false, got `{s}`")),
                    }
                }
                Some(Flag::Other(_)) => Err(format!("`{key}` must be true or false")),
            }
        };
        let parallel = flag("parallel", &foreach.parallel, true);
        let join = flag("join", &foreach.join, true);
        let (parallel, join) = match (parallel, join) {
            (Ok(p), Ok(j)) => (p, j),
            (Err(e), _) | (_, Err(e)) => return fail(e),
        };
        let max = match &foreach.max_concurrent {
            Some(MaxConcurrent::Count(n)) if *n > 0 => Some(*n as usize),
            Some(MaxConcurrent::Text(s)) => subst::render(&s.text, &Cx::new(st, i), false)
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .filter(|n| *n > 0),
            _ => None,
        };
        if let Err(r) = self.room(st, i, 0) {
            self.note_refusal(st, i, &r);
            return fail(r.message);
        }
        if let (Some(max), true) = (max, parallel) {
            self.fe.insert(
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
        let mut prev: Vec<String> = Vec::new();
        for (k, item) in items.iter().enumerate() {
            let mut extra = Map::new();
            extra.insert(item_var.clone(), item.clone());
            if let Some(iv) = &index_var {
                extra.insert(iv.clone(), Value::from(k));
            }
            let instance = self.instance(
                st,
                i,
                &reference.text,
                foreach.variables.as_ref(),
                Some(&extra),
            );
            let (tmpl, scope) = match instance {
                Ok(x) => x,
                Err(r) => {
                    self.note_refusal(st, i, &r);
                    return self.foreach_failed(st, i, total, r.message);
                }
            };
            let mut vars = scope.vars.clone();
            // Declared ones were bound (and coerced) with the variables.
            vars.extend(
                extra
                    .into_iter()
                    .filter(|(k, _)| !tmpl.vars.iter().any(|d| d.name == *k)),
            );
            let scope = Arc::new(super::state::Scope { vars });
            let prefix = format!("{id}.{k}.");
            let ids: HashSet<&str> = tmpl.steps.iter().map(|s| s.id.as_str()).collect();
            // Sequential: the steps an iteration starts with wait for the whole previous one.
            let steps: Vec<Arc<TStep>> = if parallel || prev.is_empty() {
                tmpl.steps.clone()
            } else {
                tmpl.steps
                    .iter()
                    .map(|s| {
                        if s.needs
                            .iter()
                            .any(|n| ids.contains(n.split('.').next().unwrap_or("")))
                        {
                            return s.clone();
                        }
                        let mut c = TStep::clone(s);
                        // Absolute ids: `rewrite` keeps needs that name no template step.
                        c.needs.extend(prev.iter().cloned());
                        Arc::new(c)
                    })
                    .collect()
            };
            prev = tmpl
                .steps
                .iter()
                .map(|s| format!("{prefix}{}", s.id))
                .collect();
            match self.insert_children(
                st,
                i,
                &steps,
                scope,
                tmpl.src.clone(),
                prefix,
                join,
                Some((i, k)),
                ended,
            ) {
                Ok(n) => total += n,
                Err(r) => {
                    self.note_refusal(st, i, &r);
                    return self.foreach_failed(st, i, total, r.message);
                }
            }
        }
        if join && total > 0 && st.steps[i].status == Status::Running {
            Disp::Joining
        } else if join && st.steps[i].status.terminal() {
            // Every child ended while being inserted (all skipped): the join already ended.
            Disp::Joining
        } else {
            Disp::Now(Status::Done, Map::new(), None)
        }
    }

    fn foreach_failed(&mut self, st: &mut State, i: usize, _made: usize, msg: String) -> Disp {
        // Iterations already inserted run on; the foreach itself fails.
        st.steps[i].open = 0;
        fail(msg)
    }

    fn agent(&mut self, st: &mut State, i: usize, agent: &Agent) -> Disp {
        let id = st.steps[i].id.clone();
        if let Some((s, o, e)) = self.replay(&id) {
            return Disp::Now(s, o, e);
        }
        let prepared = (|| -> Result<(String, String, Option<std::time::Duration>), String> {
            let name = render(st, i, agent.agent.as_ref(), "agent", false)?
                .ok_or("the agent step has no `agent`")?;
            let prompt = render(st, i, agent.prompt.as_ref(), "prompt", false)?
                .ok_or("the agent step has no `prompt`")?;
            Ok((name, prompt, timeout(agent.timeout.as_ref())?))
        })();
        let (agent_name, prompt, timeout) = match prepared {
            Ok(x) => x,
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
            return Disp::Now(Status::Done, Map::new(), None);
        }
        self.set_busy(agent_name.clone(), i);
        let workdir = self
            .agents
            .get(&agent_name)
            .map_or_else(|| self.project.clone(), |a| a.workdir.clone());
        let ask = agent::Ask {
            backend: self.backend.clone(),
            run_id: self.run_id.clone(),
            step: id,
            workflow: self.workflow.clone(),
            agent: agent_name,
            prompt: agent::full_prompt(&prompt, &decl, false),
            identity: self.identity.clone(),
            decl,
            workdir,
            timeout,
        };
        Disp::Later(Box::pin(
            async move { (i, Fin::Agent(agent::ask(ask).await)) },
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn agent_in_tmux(
        &mut self,
        st: &mut State,
        i: usize,
        agent_name: String,
        prompt: String,
        decl: Vec<pipewright_meow::executor::OutputDecl>,
        fire_forget: bool,
        timeout: Option<std::time::Duration>,
    ) -> Disp {
        let Some((session, adapter)) = self.agents.get(&agent_name).and_then(|a| a.session.clone())
        else {
            st.error_types.insert(i, recovery::AGENT_NOT_FOUND);
            return fail(format!(
                "agent `{agent_name}` is not running: no spawn step of this run started it"
            ));
        };
        if !fire_forget {
            self.set_busy(agent_name, i);
            self.waiting.insert(i);
            if let Some(t) = timeout {
                self.deadlines.insert((Instant::now() + t, i));
            }
        }
        let text = agent::full_prompt(&prompt, &decl, fire_forget);
        let done = Arc::new(tokio::sync::Notify::new());
        if !fire_forget {
            self.watchers.insert(i, done.clone());
            self.prompted(i, &text);
        }
        Disp::Later(Box::pin(async move {
            // The prompt cannot reach a session that is gone (killed, or its agent quit
            // between steps): the agent is not found, it did not crash during this step.
            if let Err(e) = super::tmux::inject(&adapter, &session, &text).await {
                return (i, Fin::Injected(Err((super::recovery::AGENT_NOT_FOUND, e))));
            }
            if fire_forget {
                return (i, Fin::Injected(Ok(())));
            }
            // Until the step ends, a session that dies fails it instead of leaving the run
            // waiting for a report that cannot come.
            loop {
                tokio::select! {
                    _ = done.notified() => return (i, Fin::Injected(Ok(()))),
                    _ = tokio::time::sleep(std::time::Duration::from_millis(500)) => {
                        if !super::tmux::alive(&session).await {
                            return (i, Fin::Injected(Err((
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
        if let Some(w) = self.watchers.remove(&i) {
            w.notify_one();
        }
        let took = st.steps[i]
            .started
            .map(|t| super::duration::show(t.elapsed()))
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
    fn spawn(&mut self, st: &mut State, i: usize, spawn: &Spawn) -> Disp {
        let prepared = (|| -> Result<(String, std::path::PathBuf), String> {
            let agent = render(st, i, spawn.agent.as_ref(), "agent", false)?
                .ok_or("the spawn step has no `agent`")?;
            let workdir = match render(st, i, spawn.workdir.as_ref(), "workdir", false)? {
                Some(w) if !w.is_empty() => under(&self.project, &w),
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
                let out = json!({"agent": agent, "workdir": workdir.display().to_string()});
                self.agents.insert(
                    agent,
                    AgentInfo {
                        workdir,
                        session: None,
                        session_id: Default::default(),
                    },
                );
                Disp::Now(
                    Status::Done,
                    out.as_object().cloned().unwrap_or_default(),
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
    ) -> Disp {
        let prepared = (|| -> Result<_, String> {
            let name = match render(st, i, spawn.adapter.as_ref(), "adapter", false)? {
                Some(a) if !a.is_empty() => a,
                _ => "claude".to_string(),
            };
            let adapter = super::tmux::Adapter::find(&name, &self.project)?;
            let mut env = render_env(st, i, &spawn.env)?;
            env.retain(|(k, _)| !k.starts_with("MEOW_"));
            let mut env = self.step_env(env, &st.steps[i].id, Some(&agent));
            // An agent works on many steps: which one is running is the orchestrator's to say.
            env.retain(|(k, _)| k != "MEOW_STEP");
            let args = match &spawn.spawn_args {
                Some(SpawnArgs::Text(t)) => {
                    render(st, i, Some(t), "spawn_args", false)?.unwrap_or_default()
                }
                Some(SpawnArgs::List(a)) => a
                    .iter()
                    .map(|x| subst::render(&x.text, &Cx::new(st, i), true))
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
            Ok(x) => x,
            Err(e) => return fail(e),
        };
        if let Err(e) = std::fs::create_dir_all(&workdir) {
            return fail(format!(
                "cannot create the agent's workdir {}: {e}",
                workdir.display()
            ));
        }
        let session = super::tmux::session_name(&self.run_id, &agent);
        Disp::Later(Box::pin(async move {
            let res =
                super::tmux::spawn(&adapter, &session, &workdir, &env, &args, resume.as_deref())
                    .await;
            let info = res.map(|session_id| AgentInfo {
                workdir,
                session: Some((session, adapter)),
                session_id,
            });
            (i, Fin::Spawned { agent, info })
        }))
    }

    fn kill(&mut self, st: &mut State, i: usize, kill: &Kill) -> Disp {
        match render(st, i, kill.agent.as_ref(), "agent", false) {
            Ok(Some(agent)) => {
                let info = self.agents.remove(&agent);
                if let Some((session, adapter)) = info.and_then(|a| a.session) {
                    let graceful = kill.graceful;
                    return Disp::Later(Box::pin(async move {
                        (
                            i,
                            Fin::Killed(
                                super::tmux::kill(Some(&adapter), &session, graceful).await,
                            ),
                        )
                    }));
                }
                Disp::Now(Status::Done, Map::new(), None)
            }
            Ok(None) => fail("the kill step has no `agent`"),
            Err(e) => fail(e),
        }
    }
}

/// A text field substituted for step `i`; `key` names it in errors.
fn render(
    st: &State,
    i: usize,
    field: Option<&Text>,
    key: &str,
    shell: bool,
) -> Result<Option<String>, String> {
    match field {
        Some(t) => subst::render(&t.text, &Cx::new(st, i), shell)
            .map(Some)
            .map_err(|e| format!("`{key}`: {e}")),
        None => Ok(None),
    }
}

/// The variables `env` sets, substituted.
fn render_env(st: &State, i: usize, env: &Env) -> Result<Vec<(String, String)>, String> {
    let cx = Cx::new(st, i);
    env.vars()
        .map(|(k, v)| {
            subst::render(v, &cx, false)
                .map(|v| (k.to_string(), v))
                .map_err(|e| format!("`env.{k}`: {e}"))
        })
        .collect()
}

fn timeout(t: Option<&Timeout>) -> Result<Option<std::time::Duration>, String> {
    match t {
        None => Ok(None),
        Some(Timeout::Text(s)) => super::duration::parse(&s.text)
            .map(Some)
            .map_err(|e| format!("`timeout`: {e}")),
        Some(Timeout::Seconds(s)) => Ok(Some(std::time::Duration::from_secs(*s))),
        Some(Timeout::Invalid) => Err("`timeout` must be a duration such as \"30s\"".into()),
    }
}

/// The outputs a command captures, their sources substituted.
fn captures(st: &State, i: usize, captures: &[Capture]) -> Result<Vec<shell::Capture>, String> {
    let cx = Cx::new(st, i);
    captures
        .iter()
        .map(|c| {
            let source = c.source.as_ref().map_or("stdout", |s| s.text.as_str());
            let source = subst::render(source, &cx, false)
                .map_err(|er| format!("output `{}` source: {er}", c.name))?;
            Ok(shell::Capture {
                name: c.name.clone(),
                source,
                json: c.json,
            })
        })
        .collect()
}

fn rewrite(needs: &[String], ids: &HashSet<&str>, prefix: &str) -> Vec<String> {
    needs
        .iter()
        .map(|n| {
            let head = n.split('.').next().unwrap_or(n);
            if ids.contains(n.as_str()) || ids.contains(head) {
                format!("{prefix}{n}")
            } else {
                n.clone()
            }
        })
        .collect()
}

fn preview(s: &str) -> String {
    let t: String = s.chars().take(60).collect();
    if t.len() < s.len() {
        format!("`{t}…`")
    } else {
        format!("`{t}`")
    }
}
