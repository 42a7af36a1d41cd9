//! Steps, loops and sub-recipes (notes §5.2–§5.12, §5.16).

use super::{values, Ctx, Exec, Flow, Frame, Stop};
use crate::runtime::{self as rt, Context};
use crate::value::Value;
use pipewright_ir::{
    Ask, Command, ErrorPolicy, Loop, LoopMode, Node, NodeKind, Region, SubWorkflow,
};
use pipewright_runtime::backend::AgentRequest;
use pipewright_runtime::codes;
use pipewright_runtime::failure::RunError;
use pipewright_runtime::store::{EventKind, StoreError};
use pipewright_runtime::tools::process;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The runner's default `max_iterations` of a foreach.
const DEFAULT_MAX_ITEMS: u64 = 100;
/// A command without `timeout` may run this long (the runner has no limit).
const NO_TIMEOUT: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Appended to the prompt of a `parse_json` agent step.
const PARSE_JSON_RIDER: &str = "\n\nIMPORTANT: end your reply with the result as valid JSON, either in a ```json fenced block or as raw JSON, and put nothing after it.";

/// What one execution of a step's action produced.
pub(crate) struct Done {
    /// The processed result; `None` when the step was skipped by `skip_remaining`.
    result: Value,
    flow: Flow,
    /// Variables the action itself sets (a command's exit code).
    sets: Vec<(String, Value)>,
}

fn step_id(node: &Node) -> String {
    node.id
        .clone()
        .unwrap_or_else(|| format!("step_{}", node.index))
}

impl Exec {
    pub(super) fn fail(
        &self,
        key: &str,
        node: &Node,
        code: &'static str,
        msg: impl Into<String>,
    ) -> Stop {
        Stop::Failed(Box::new(RunError::new(
            code,
            key,
            node.kind.name(),
            node.span,
            msg,
        )))
    }

    fn check_cancel(&self, key: &str) -> Result<(), Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancelled(key.to_string()));
        }
        Ok(())
    }

    /// Runs the whole recipe: its steps, or its stages and their gates.
    pub(crate) fn run_recipe<'a>(
        &'a self,
        f: &'a Frame,
        ctx: &'a mut Ctx,
    ) -> Boxed<'a, Result<(), Stop>> {
        Box::pin(async move {
            let body = &f.workflow.body;
            if !is_staged(&f.workflow) {
                self.steps(f, ctx, body, &f.prefix, None, true).await?;
                return Ok(());
            }
            let mut stage_index = 0;
            for (i, n) in body.sequence().into_iter().enumerate() {
                let Some(node) = body.node(n) else { continue };
                let key = format!("{}{i}", f.prefix);
                self.check_cancel(&key)?;
                match &node.kind {
                    NodeKind::Stage { name, body: inner } => {
                        ctx.set("stage", rt::stage_meta(name, stage_index));
                        stage_index += 1;
                        // A `skip_remaining` ends only this stage.
                        self.steps(f, ctx, inner, &format!("{key}."), Some(name), true)
                            .await?;
                        let gated = body
                            .next(n)
                            .and_then(|g| body.node(g))
                            .is_some_and(|g| matches!(g.kind, NodeKind::Gate { .. }));
                        if !gated && !ctx.vars.contains_key("_approval_message") {
                            ctx.set("_approval_message", Value::Str(String::new()));
                        }
                    }
                    NodeKind::Gate { .. } => self.gate(f, ctx, node, &key).await?,
                    _ => {}
                }
            }
            Ok(())
        })
    }

    /// Runs a list of steps in order. `top` steps land one by one; the sub-steps of a loop
    /// body land with their iteration. Conditions of sub-steps render their templates first
    /// (notes §3.6). Returns the flow and the last executed step's result.
    pub(crate) fn steps<'a>(
        &'a self,
        f: &'a Frame,
        ctx: &'a mut Ctx,
        region: &'a Region,
        prefix: &'a str,
        stage: Option<&'a str>,
        top: bool,
    ) -> Boxed<'a, Result<(Flow, Option<Value>), Stop>> {
        Box::pin(async move {
            let mut last = None;
            for n in region.sequence() {
                let Some(node) = region.node(n) else { continue };
                let key = format!("{prefix}{}", node.index);
                self.check_cancel(&key)?;
                let (flow, result) = if top {
                    self.top_step(f, ctx, node, &key, stage).await?
                } else {
                    self.step(f, ctx, node, &key, stage, false).await?
                };
                if result.is_some() {
                    last = result;
                }
                if flow == Flow::SkipRemaining {
                    return Ok((Flow::SkipRemaining, last));
                }
            }
            Ok((Flow::Next, last))
        })
    }

    /// A top-level step: replayed when it landed in an earlier attempt, else run and landed.
    async fn top_step(
        &self,
        f: &Frame,
        ctx: &mut Ctx,
        node: &Node,
        key: &str,
        stage: Option<&str>,
    ) -> Result<(Flow, Option<Value>), Stop> {
        let hash = self.step_hash(f, node);
        if let Some(delta) = self.landed(key, &hash) {
            ctx.apply(&delta);
            ctx.touched.clear();
            self.report(self.event(EventKind::Replayed, key, f, node));
            let flow = match &delta {
                Value::Map(m) if m.get("flow") == Some(&Value::Str("skip".into())) => {
                    Flow::SkipRemaining
                }
                _ => Flow::Next,
            };
            return Ok((flow, None));
        }
        let mut started_event = self.event(EventKind::Started, key, f, node);
        if self.session.recorded() {
            started_event.given = given(node, &ctx.vars, stage).map(Box::new);
        }
        self.report(started_event);
        let started = Instant::now();
        let r = self.step(f, ctx, node, key, stage, true).await;
        match r {
            Ok((flow, result)) => {
                let mut extra = Vec::new();
                if flow == Flow::SkipRemaining {
                    extra.push(("flow", Value::Str("skip".into())));
                }
                let delta = ctx.take_delta(extra);
                let mut done = self.event(EventKind::Completed, key, f, node);
                done.elapsed_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
                self.land_step(key, &hash, &delta, done).map_err(|e| {
                    self.fail(
                        key,
                        node,
                        codes::STORE,
                        format!("the run could not be recorded: {e}"),
                    )
                })?;
                Ok((flow, result))
            }
            Err(stop) => {
                if let Stop::Failed(e) = &stop {
                    let mut ev = self.event(EventKind::Failed, key, f, node);
                    ev.error = Some(e.message.clone());
                    ev.elapsed_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
                    self.report(ev);
                }
                Err(stop)
            }
        }
    }

    /// One step (notes §5.2): `step`, the condition, then the loop or the action, the result
    /// processing and the output.
    pub(crate) fn step<'a>(
        &'a self,
        f: &'a Frame,
        ctx: &'a mut Ctx,
        node: &'a Node,
        key: &'a str,
        stage: Option<&'a str>,
        top: bool,
    ) -> Boxed<'a, Result<(Flow, Option<Value>), Stop>> {
        Box::pin(async move {
            let id = step_id(node);
            ctx.set("step", rt::step_meta(&id, node.index, stage));
            if let Some(cond) = &node.condition {
                let holds = if top {
                    rt::condition_top_level(&cond.src, &ctx.vars).map_err(|e| {
                        self.fail(
                            key,
                            node,
                            codes::RECIPE_EXPR,
                            format!("Step '{id}': condition error: {}", e.message()),
                        )
                    })?
                } else {
                    rt::condition_rendered(&cond.src, &ctx.vars).map_err(|e| {
                        self.fail(key, node, codes::RECIPE_EXPR, e.message().to_string())
                    })?
                };
                if !holds {
                    skip(ctx, &id);
                    return Ok((Flow::Next, None));
                }
            }
            if let NodeKind::Loop(l) = &node.kind {
                return self.run_loop(f, ctx, node, l, key, stage).await;
            }
            let done = if top {
                self.action(f, &ctx.vars, node, key, false).await?
            } else {
                self.inner_action(f, &ctx.vars, node, key, false).await?
            };
            for (k, v) in done.sets {
                ctx.set(&k, v);
            }
            if done.flow == Flow::SkipRemaining {
                return Ok((Flow::SkipRemaining, None));
            }
            if let Some(o) = &node.output {
                ctx.set(o, done.result.clone());
            }
            Ok((Flow::Next, Some(done.result)))
        })
    }

    /// The step's own work, once, against `vars` (read only: what it sets is returned).
    /// `precounted`: a parallel foreach counted this agent turn in the budget already.
    pub(crate) fn action<'a>(
        &'a self,
        f: &'a Frame,
        vars: &'a Context,
        node: &'a Node,
        key: &'a str,
        precounted: bool,
    ) -> Boxed<'a, Result<Done, Stop>> {
        Box::pin(async move {
            if precounted || !matches!(node.kind, NodeKind::Ask(_)) {
                // (An agent turn commits the budget count first, which commits these too.)
                self.before_side_effects()
                    .map_err(|e| self.fail(key, node, codes::STORE, e))?;
            }
            match &node.kind {
                NodeKind::Ask(a) => self.ask(f, vars, node, a, key, precounted).await,
                NodeKind::Command(c) => self.command(vars, node, c, key).await,
                NodeKind::SubWorkflow(w) => self.sub_recipe(f, vars, node, w, key).await,
                other => Err(self.fail(
                    key,
                    node,
                    codes::UNSUPPORTED,
                    format!("a `{}` node cannot run as a recipe step", other.name()),
                )),
            }
        })
    }

    /// The action of a step inside a loop (an iteration's step, or a step of a loop's
    /// `steps:`), between a start and an end event at its own key, as `top_step` brackets a
    /// top-level step: a view of the run sees each iteration's step run, with its rendered
    /// prompt or command. Nothing is landed here: the iteration lands as a whole.
    pub(crate) async fn inner_action(
        &self,
        f: &Frame,
        vars: &Context,
        node: &Node,
        key: &str,
        precounted: bool,
    ) -> Result<Done, Stop> {
        let mut started_event = self.event(EventKind::Started, key, f, node);
        if self.session.recorded() {
            // `vars` holds the step's own `step` entry already (set by `step`, or the loop's).
            started_event.given = given_in(node, vars).map(Box::new);
        }
        self.report(started_event);
        let started = Instant::now();
        let r = self.action(f, vars, node, key, precounted).await;
        let (kind, error) = match &r {
            Ok(_) => (EventKind::Completed, None),
            Err(Stop::Failed(e)) => (EventKind::Failed, Some(e.message.clone())),
            Err(Stop::Cancelled(_)) => (EventKind::Cancelled, None),
            // A sub-recipe at its gate: the step runs again on resume, and starts again then.
            Err(Stop::Paused(_)) => return r,
        };
        let mut end = self.event(kind, key, f, node);
        end.error = error;
        end.elapsed_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
        self.report(end);
        r
    }

    /// Adds `n` agent turns to the run's budget count and records it (committing what is
    /// staged, before the turns run). Returns the new total.
    fn count_turns(&self, n: u64) -> Result<u64, StoreError> {
        let total = self.agent_turns.fetch_add(n, Ordering::SeqCst) + n;
        self.session.spawns(total)?;
        Ok(total)
    }

    async fn ask(
        &self,
        f: &Frame,
        vars: &Context,
        node: &Node,
        a: &Ask,
        key: &str,
        precounted: bool,
    ) -> Result<Done, Stop> {
        let id = step_id(node);
        // Only a compound container dispatched by a parallel foreach gets here without them
        // (the validator requires both elsewhere); the runner fails each such iteration.
        if a.agent.is_empty() || a.prompt.src.is_empty() {
            return Err(self.fail(
                key,
                node,
                codes::RECIPE_AGENT,
                format!("Step '{id}' is an agent step but missing prompt or agent"),
            ));
        }
        let mut attempt = 0u32;
        let mut delay = a.retry.initial_delay_secs;
        loop {
            attempt += 1;
            self.check_cancel(key)?;
            let r = self.ask_once(f, vars, node, a, key, precounted).await;
            match r {
                Ok(reply) => {
                    let result = rt::process_result(Value::Str(reply), false, a.parse_json);
                    return Ok(Done {
                        result,
                        flow: Flow::Next,
                        sets: Vec::new(),
                    });
                }
                Err(AskError::Stop(s)) => return Err(s),
                Err(AskError::Failed(msg)) if attempt < a.retry.max_attempts => {
                    let lower = msg.to_lowercase();
                    if lower.contains("429") || lower.contains("rate limit") {
                        self.limiter.rate_limited();
                    }
                    let pause = Duration::from_secs_f64(delay.min(a.retry.max_delay_secs).max(0.0));
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = self.cancel.cancelled() => return Err(Stop::Cancelled(key.to_string())),
                    }
                    if a.retry.exponential {
                        delay *= 2.0;
                    }
                }
                Err(AskError::Failed(msg)) => {
                    return match a.on_error {
                        ErrorPolicy::Fail => Err(self.fail(key, node, codes::RECIPE_AGENT, msg)),
                        ErrorPolicy::Continue => Ok(Done {
                            result: Value::Null,
                            flow: Flow::Next,
                            sets: Vec::new(),
                        }),
                        ErrorPolicy::SkipRemaining => Ok(Done {
                            result: Value::Null,
                            flow: Flow::SkipRemaining,
                            sets: Vec::new(),
                        }),
                    }
                }
            }
        }
    }

    async fn ask_once(
        &self,
        f: &Frame,
        vars: &Context,
        node: &Node,
        a: &Ask,
        key: &str,
        precounted: bool,
    ) -> Result<String, AskError> {
        let id = step_id(node);
        let prompt = ask_prompt(a, vars).map_err(AskError::Failed)?;
        // The budget counts every agent execution, before it runs (notes §5.11); a parallel
        // foreach counted and checked its whole batch instead.
        if !precounted {
            let total = self
                .count_turns(1)
                .map_err(|e| AskError::Stop(self.fail(key, node, codes::STORE, e)))?;
            if total >= f.max_total_steps {
                return Err(AskError::Stop(self.fail(
                    key,
                    node,
                    codes::RECIPE_BUDGET,
                    format!("Total steps {total} exceeds limit {}", f.max_total_steps),
                )));
            }
        }
        let req = AgentRequest {
            run_id: self.session.run_id().to_string(),
            step: key.to_string(),
            workflow: f.workflow.name.clone(),
            prompt,
            identity: if a.agent.is_empty() {
                self.identity.clone()
            } else {
                a.agent.clone()
            },
            tools: Vec::new(),
            schema_name: None,
            schema: None,
            model: a.model.clone(),
            mode: a.mode.clone(),
            shape: a.shape.clone(),
        };
        let _slot = self.limiter.acquire().await;
        let call = self.backend.complete(&req);
        let timed = async {
            match a.timeout_secs {
                Some(t) => tokio::time::timeout(Duration::from_secs(t), call)
                    .await
                    .map_err(|_| format!("Step '{id}': agent '{}' timed out after {t}s", a.agent)),
                None => Ok(call.await),
            }
        };
        let r = tokio::select! {
            r = timed => r,
            _ = self.cancel.cancelled() => return Err(AskError::Stop(Stop::Cancelled(key.to_string()))),
        };
        self.limiter.done(matches!(r, Ok(Ok(_))));
        match r {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(e)) => Err(AskError::Failed(e.message)),
            Err(msg) => Err(AskError::Failed(msg)),
        }
    }

    async fn command(
        &self,
        vars: &Context,
        node: &Node,
        c: &Command,
        key: &str,
    ) -> Result<Done, Stop> {
        let id = step_id(node);
        let fail = |msg: String| self.fail(key, node, codes::RECIPE_BASH, msg);
        let line =
            rt::render(&c.command.src, vars).map_err(|e| fail(format!("Step '{id}': {}", e.0)))?;
        let cwd = match &c.cwd {
            Some(t) => {
                let p =
                    rt::render(&t.src, vars).map_err(|e| fail(format!("Step '{id}': {}", e.0)))?;
                let p = self.project.join(p);
                if !p.exists() {
                    return Err(fail(format!(
                        "Step '{id}': cwd does not exist: {}",
                        p.display()
                    )));
                }
                if !p.is_dir() {
                    return Err(fail(format!(
                        "Step '{id}': cwd is not a directory: {}",
                        p.display()
                    )));
                }
                p
            }
            None => self.project.clone(),
        };
        let mut env = Vec::with_capacity(c.env.len());
        for (k, v) in &c.env {
            let v = rt::render(&v.src, vars).map_err(|e| fail(format!("Step '{id}': {}", e.0)))?;
            env.push((k.clone(), v));
        }
        let bash = if std::path::Path::new("/bin/bash").exists() {
            "/bin/bash"
        } else {
            "bash"
        };
        let argv = [bash.to_string(), "-c".to_string(), line];
        let run = process::for_step(
            self.session.run_id(),
            key,
            process::run(process::Spec {
                argv: &argv,
                stdin: None,
                cwd: &cwd,
                timeout: NO_TIMEOUT,
                env: &env,
                env_remove: &self.withhold_env,
            }),
        );
        let limit = c
            .timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(NO_TIMEOUT);
        let out = tokio::select! {
            r = tokio::time::timeout(limit, run) => match r {
                Ok(Ok(o)) => o,
                Ok(Err(e)) => return Err(fail(format!("Step '{id}': failed to execute command: {e}"))),
                // Dropping the run killed the command's process group.
                Err(_) => return Err(fail(format!(
                    "Step '{id}': command timed out after {}s",
                    c.timeout_secs.unwrap_or(0)
                ))),
            },
            _ = self.cancel.cancelled() => return Err(Stop::Cancelled(key.to_string())),
        };
        let code = out.code.unwrap_or_else(|| -out.signal.unwrap_or(1));
        let mut sets = Vec::new();
        if let Some(to) = &c.exit_code_to {
            sets.push((to.clone(), Value::Str(code.to_string())));
        }
        let mut flow = Flow::Next;
        if code != 0 {
            let mut msg = format!("Step '{id}': command failed with exit code {code}");
            let err = rt::py_strip(&out.stderr);
            if !err.is_empty() {
                msg.push_str(&format!("\nstderr: {err}"));
            }
            match c.on_error {
                ErrorPolicy::Fail => return Err(fail(msg)),
                ErrorPolicy::SkipRemaining => flow = Flow::SkipRemaining,
                ErrorPolicy::Continue => {}
            }
        }
        Ok(Done {
            result: rt::process_result(Value::Str(out.stdout), true, c.parse_json),
            flow,
            sets,
        })
    }

    async fn sub_recipe(
        &self,
        f: &Frame,
        vars: &Context,
        node: &Node,
        w: &SubWorkflow,
        key: &str,
    ) -> Result<Done, Stop> {
        let id = step_id(node);
        let fail = |msg: String| self.fail(key, node, codes::SUB_RECIPE, msg);
        let rel =
            rt::render(&w.path.src, vars).map_err(|e| fail(format!("Step '{id}': {}", e.0)))?;
        if rel.starts_with('@') {
            return Err(fail(format!(
                "Cannot resolve @mention path '{rel}': mention_resolver capability not available"
            )));
        }
        let path = f.dir.join(&rel);
        let (child, text) = load_recipe(&path, &rel).map_err(fail)?;
        let depth = f.depth + 1;
        // A step's `recursion` replaces the limits for the callee; its own are ignored.
        let (max_depth, max_total) = match (w.max_depth, w.max_total_steps) {
            (None, None) => (f.max_depth, f.max_total_steps),
            (d, t) => (
                d.unwrap_or(super::DEFAULT_MAX_DEPTH),
                t.unwrap_or(super::DEFAULT_MAX_TOTAL_STEPS),
            ),
        };
        let mut stack = f.stack.clone();
        stack.push(child.name.clone());
        if depth >= max_depth {
            return Err(self.fail(
                key,
                node,
                codes::SUB_RECIPE,
                format!(
                    "Recipe recursion depth {depth} exceeds limit {max_depth}. Stack: {}",
                    stack.join(" -> ")
                ),
            ));
        }
        let mut passed = Context::new();
        for (k, v) in &w.context {
            let v = rt::substitute_context(&Value::from(v), vars)
                .map_err(|e| fail(format!("Step '{id}': {}", e.0)))?;
            passed.insert(k.clone(), v);
        }
        let frame = Frame {
            workflow: child,
            text: Arc::from(text.as_str()),
            dir: path
                .parent()
                .map(PathBuf::from)
                .unwrap_or_else(|| f.dir.clone()),
            depth,
            stack,
            max_depth,
            max_total_steps: max_total,
            prefix: format!("{key}.r."),
            file: Some(match &f.file {
                Some(parent) => parent.parent().unwrap_or(Path::new("")).join(&rel),
                None => PathBuf::from(&rel),
            }),
            gate_path: match vars.get("stage") {
                Some(Value::Map(m)) if is_staged(&f.workflow) => match m.get("name") {
                    Some(Value::Str(name)) => format!("{}{name}/", f.gate_path),
                    _ => f.gate_path.clone(),
                },
                _ => f.gate_path.clone(),
            },
        };
        let start = self.start_context(&frame, &passed).map_err(fail)?;
        let mut child_ctx = Ctx::new(start);
        self.run_recipe(&frame, &mut child_ctx).await?;
        let keys: Vec<&str> = passed.keys().map(String::as_str).collect();
        let delta = rt::subrecipe_output(&child_ctx.vars, &keys);
        Ok(Done {
            result: rt::process_result(delta, false, false),
            flow: Flow::Next,
            sets: Vec::new(),
        })
    }

    async fn run_loop(
        &self,
        f: &Frame,
        ctx: &mut Ctx,
        node: &Node,
        l: &Loop,
        key: &str,
        stage: Option<&str>,
    ) -> Result<(Flow, Option<Value>), Stop> {
        match &l.mode {
            LoopMode::Each {
                parallel: Some(n), ..
            } => self.each_parallel(f, ctx, node, l, key, *n).await,
            LoopMode::Each { .. } => self.each(f, ctx, node, l, key, stage).await,
            LoopMode::While { .. } => self.while_loop(f, ctx, node, l, key, stage).await,
        }
    }

    /// The items of a foreach, and its bound.
    /// The items of a foreach, within its bound. An empty list skips the step (it joins
    /// `_skipped_steps`, `collect` becomes `[]`, `output` stays unset): `None` then.
    fn items(
        &self,
        ctx: &mut Ctx,
        node: &Node,
        l: &Loop,
        source: &str,
        max: Option<u64>,
        key: &str,
    ) -> Result<Option<Vec<Value>>, Stop> {
        let id = step_id(node);
        let items = rt::resolve_foreach(source, &ctx.vars, &id)
            .map_err(|e| self.fail(key, node, codes::RECIPE_LOOP, e.to_string()))?
            .to_vec();
        rt::check_foreach_len(&id, items.len(), max.unwrap_or(DEFAULT_MAX_ITEMS))
            .map_err(|e| self.fail(key, node, codes::RECIPE_LOOP, e.to_string()))?;
        if items.is_empty() {
            skip(ctx, &id);
            if let Some(c) = &l.collect {
                ctx.set(c, Value::List(Vec::new()));
            }
            return Ok(None);
        }
        Ok(Some(items))
    }

    /// One iteration's body: the step's action (processed), or its nested steps.
    async fn body(
        &self,
        f: &Frame,
        ctx: &mut Ctx,
        _node: &Node,
        l: &Loop,
        key: &str,
        stage: Option<&str>,
    ) -> Result<(Flow, Value), Stop> {
        if l.nested {
            let (flow, last) = self
                .steps(f, ctx, &l.body, &format!("{key}."), stage, false)
                .await?;
            return Ok((flow, last.unwrap_or(Value::Null)));
        }
        let Some(inner) = l.body.entry.and_then(|n| l.body.node(n)) else {
            return Ok((Flow::Next, Value::Null));
        };
        let done = self.inner_action(f, &ctx.vars, inner, key, false).await?;
        for (k, v) in done.sets {
            ctx.set(&k, v);
        }
        Ok((done.flow, done.result))
    }

    async fn each(
        &self,
        f: &Frame,
        ctx: &mut Ctx,
        node: &Node,
        l: &Loop,
        key: &str,
        stage: Option<&str>,
    ) -> Result<(Flow, Option<Value>), Stop> {
        let LoopMode::Each {
            source,
            var,
            max_items,
            ..
        } = &l.mode
        else {
            return Ok((Flow::Next, None));
        };
        let Some(items) = self.items(ctx, node, l, &source.src, *max_items, key)? else {
            return Ok((Flow::Next, None));
        };
        let hash = self.step_hash(f, node);
        let mut results = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let ikey = format!("{key}.{i}");
            self.check_cancel(&ikey)?;
            let landed = match self.landed(&ikey, &hash) {
                Some(landed) => {
                    ctx.absorb(&landed);
                    landed
                }
                None => {
                    ctx.set(var, item);
                    match self.sends_iteration(l) {
                        Some(members) => {
                            self.iteration_elsewhere(members, f, ctx, node, key, i, stage)
                                .await?
                        }
                        None => self.iteration(f, ctx, node, &hash, key, i, stage).await?,
                    }
                }
            };
            results.push(field(&landed, "result"));
            if field(&landed, "flow") == Value::Str("skip".into()) {
                return Ok((Flow::SkipRemaining, None));
            }
        }
        self.store_results(ctx, node, l, results)
    }

    /// Iteration `i` of the sequential foreach `node` at `key`, its variable set in `ctx`: its
    /// body afresh (what an earlier attempt landed inside it is forgotten), then its change of
    /// the context landed at `key.i` with its result and flow (unless it stops the run). The
    /// landing. Where the run runs, or where the iteration was sent.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn iteration(
        &self,
        f: &Frame,
        ctx: &mut Ctx,
        node: &Node,
        hash: &str,
        key: &str,
        i: usize,
        stage: Option<&str>,
    ) -> Result<Value, Stop> {
        let NodeKind::Loop(l) = &node.kind else {
            return Err(self.fail(key, node, codes::UNSUPPORTED, "internal: not a loop"));
        };
        let LoopMode::Each { var, on_error, .. } = &l.mode else {
            return Err(self.fail(key, node, codes::UNSUPPORTED, "internal: not a foreach"));
        };
        let ikey = format!("{key}.{i}");
        self.forget_under(&ikey)
            .map_err(|e| self.fail(key, node, codes::STORE, e))?;
        let r = self.body(f, ctx, node, l, &ikey, stage).await;
        ctx.remove(var);
        let (flow, result) = match r {
            Ok(x) => x,
            Err(Stop::Failed(e)) => match on_error {
                ErrorPolicy::Continue => (Flow::Next, Value::Null),
                ErrorPolicy::SkipRemaining => (Flow::SkipRemaining, Value::Null),
                ErrorPolicy::Fail => {
                    let mut e = *e;
                    e.message = format!(
                        "Step '{}' iteration {i} failed: {}",
                        step_id(node),
                        e.message
                    );
                    return Err(Stop::Failed(Box::new(e)));
                }
            },
            Err(other) => return Err(other),
        };
        let mut extra = vec![("result", result)];
        if flow == Flow::SkipRemaining {
            extra.push(("flow", Value::Str("skip".into())));
        }
        let delta = ctx.iteration_delta(extra);
        self.land_raw(&ikey, hash, values::to_landed(&delta), false)
            .map_err(|e| self.fail(key, node, codes::STORE, e))?;
        Ok(delta)
    }

    /// `collect` gets every result; else `output` the last one (notes §5.7, §5.8).
    fn store_results(
        &self,
        ctx: &mut Ctx,
        node: &Node,
        l: &Loop,
        results: Vec<Value>,
    ) -> Result<(Flow, Option<Value>), Stop> {
        let last = results.last().cloned();
        if let Some(c) = &l.collect {
            ctx.set(c, Value::List(results));
        } else if let (Some(o), Some(v)) = (&node.output, &last) {
            ctx.set(o, v.clone());
        }
        // The loop's `output` is written here, not by the caller.
        Ok((Flow::Next, None))
    }

    async fn each_parallel(
        &self,
        f: &Frame,
        ctx: &mut Ctx,
        node: &Node,
        l: &Loop,
        key: &str,
        limit: u64,
    ) -> Result<(Flow, Option<Value>), Stop> {
        let LoopMode::Each {
            source,
            var,
            max_items,
            on_error,
            ..
        } = &l.mode
        else {
            return Ok((Flow::Next, None));
        };
        let id = step_id(node);
        let Some(items) = self.items(ctx, node, l, &source.src, *max_items, key)? else {
            return Ok((Flow::Next, None));
        };
        let Some(inner) = l.body.entry.and_then(|n| l.body.node(n)) else {
            return Ok((Flow::Next, None));
        };
        let hash = self.step_hash(f, node);
        // Agent turns are counted for the whole batch up front, so exactly the budget fits
        // (notes §5.11); iterations landed by an earlier attempt do not run again.
        let precounted = matches!(inner.kind, NodeKind::Ask(_));
        if precounted {
            let to_run = (0..items.len())
                .filter(|i| self.landed(&format!("{key}.{i}"), &hash).is_none())
                .count() as u64;
            let t = self.agent_turns.load(Ordering::SeqCst);
            if t + to_run > f.max_total_steps {
                return Err(self.fail(
                    key,
                    node,
                    codes::RECIPE_BUDGET,
                    format!(
                        "Parallel loop would exceed max_total_steps ({t} + {to_run} > {})",
                        f.max_total_steps
                    ),
                ));
            }
            self.count_turns(to_run)
                .map_err(|e| self.fail(key, node, codes::STORE, e))?;
        }
        let slots = Arc::new(tokio::sync::Semaphore::new(if limit == 0 {
            items.len().max(1)
        } else {
            limit as usize
        }));
        let group = format!("{key}-{}", self.session.run_id());
        let n = items.len();
        let runs = items.into_iter().enumerate().map(|(i, item)| {
            let slots = slots.clone();
            let mut copy = ctx.vars.clone();
            copy.insert(var.clone(), item);
            copy.insert("_parallel_group_id".into(), Value::Str(group.clone()));
            let hash = hash.clone();
            async move {
                let ikey = format!("{key}.{i}");
                if let Some(v) = self.landed_item(&ikey, &hash) {
                    return Ok(v);
                }
                let _slot = slots.acquire().await;
                self.check_cancel(&ikey)?;
                if let Some(members) = self.sends(inner) {
                    return self
                        .item_elsewhere(members, f, node, inner, &copy, &ikey, precounted)
                        .await;
                }
                self.run_item(f, node, inner, &hash, &copy, &ikey, precounted)
                    .await
            }
        });
        let outcomes = futures_util::future::join_all(runs).await;
        let mut results = Vec::with_capacity(n);
        let mut failures = Vec::new();
        for (i, r) in outcomes.into_iter().enumerate() {
            match r {
                Ok(v) => results.push(v),
                Err(Stop::Failed(e)) => {
                    let msg: String = e.message.chars().take(100).collect();
                    failures.push(format!("iteration {i}: {msg}"));
                    results.push(Value::Null);
                }
                Err(other) => return Err(other),
            }
        }
        if !failures.is_empty() && *on_error != ErrorPolicy::Continue {
            return Err(self.fail(
                key,
                node,
                codes::RECIPE_LOOP,
                format!(
                    "Step '{id}': {}/{n} iterations failed: {}",
                    failures.len(),
                    failures.join("; ")
                ),
            ));
        }
        self.store_results(ctx, node, l, results)
    }

    /// One iteration of a parallel foreach: its action, landed at once (an iteration can
    /// finish while the others still run, with no next side effect to commit it before a
    /// kill). Where the run runs, or where its member was sent.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_item(
        &self,
        f: &Frame,
        node: &Node,
        inner: &Node,
        hash: &str,
        vars: &Context,
        ikey: &str,
        precounted: bool,
    ) -> Result<Value, Stop> {
        let done = self.inner_action(f, vars, inner, ikey, precounted).await?;
        let mut m = indexmap::IndexMap::new();
        m.insert("result".to_string(), done.result.clone());
        self.land_raw(ikey, hash, values::to_landed(&Value::Map(m)), true)
            .map_err(|e| self.fail(ikey, node, codes::STORE, e))?;
        Ok(done.result)
    }

    /// What an iteration landed in an earlier attempt: its result.
    pub(super) fn landed_item(&self, ikey: &str, hash: &str) -> Option<Value> {
        self.landed(ikey, hash).map(|l| field(&l, "result"))
    }

    async fn while_loop(
        &self,
        f: &Frame,
        ctx: &mut Ctx,
        node: &Node,
        l: &Loop,
        key: &str,
        stage: Option<&str>,
    ) -> Result<(Flow, Option<Value>), Stop> {
        let LoopMode::While {
            condition,
            break_when,
            update,
            max_iterations,
        } = &l.mode
        else {
            return Ok((Flow::Next, None));
        };
        let id = step_id(node);
        let hash = self.step_hash(f, node);
        let updates: Vec<(String, Value)> = update
            .iter()
            .map(|(k, v)| (k.clone(), Value::Str(v.src.clone())))
            .collect();
        let single = !l.nested;
        let mut results = Vec::new();
        let mut i: u64 = 0;
        let end = loop {
            if i >= *max_iterations {
                break Flow::Next;
            }
            let ikey = format!("{key}.{i}");
            self.check_cancel(&ikey)?;
            if let Some(landed) = self.landed(&ikey, &hash) {
                ctx.absorb(&landed);
                results.push(field(&landed, "result"));
                i += 1;
                match field(&landed, "flow") {
                    Value::Str(s) if s == "break" => break Flow::Next,
                    Value::Str(s) if s == "skip" => break Flow::SkipRemaining,
                    _ => continue,
                }
            }
            let holds = rt::condition_rendered(&condition.src, &ctx.vars)
                .map_err(|e| self.fail(&ikey, node, codes::RECIPE_EXPR, e.message().to_string()))?;
            if !holds {
                break Flow::Next;
            }
            let index = i64::try_from(i).unwrap_or(i64::MAX);
            ctx.set("_loop_index", Value::Int(index));
            ctx.set("_loop_iteration", Value::Int(index.saturating_add(1)));
            self.forget_under(&ikey)
                .map_err(|e| self.fail(key, node, codes::STORE, e))?;
            let (flow, result) = match self.body(f, ctx, node, l, &ikey, stage).await {
                Ok(x) => x,
                Err(Stop::Failed(e)) => {
                    let mut e = *e;
                    e.message = format!("Step '{id}' iteration {i} failed: {}", e.message);
                    return Err(Stop::Failed(Box::new(e)));
                }
                Err(other) => return Err(other),
            };
            if single {
                if let Some(o) = &node.output {
                    ctx.set(o, result.clone());
                }
            }
            results.push(result.clone());
            let mut stop = None;
            if flow == Flow::SkipRemaining {
                stop = Some("skip");
            } else {
                rt::apply_update_context(&mut ctx.vars, &updates)
                    .map_err(|e| self.fail(&ikey, node, codes::RECIPE_EXPR, e.0))?;
                for (k, _) in &updates {
                    ctx.touch(k);
                }
                if let Some(b) = break_when {
                    match rt::break_when(&b.src, &ctx.vars)
                        .map_err(|e| self.fail(&ikey, node, codes::RECIPE_EXPR, e.0))?
                    {
                        rt::BreakWhen::Break => stop = Some("break"),
                        rt::BreakWhen::Continue => {}
                        rt::BreakWhen::Warning(w) => {
                            let mut ev = self.event(EventKind::Failed, &ikey, f, node);
                            ev.error = Some(format!("break_when: {w} (the loop goes on)"));
                            self.report(ev);
                        }
                    }
                }
            }
            let mut extra = vec![("result", result)];
            if let Some(s) = stop {
                extra.push(("flow", Value::Str(s.into())));
            }
            let delta = ctx.iteration_delta(extra);
            self.land_raw(&ikey, &hash, values::to_landed(&delta), false)
                .map_err(|e| self.fail(key, node, codes::STORE, e))?;
            i += 1;
            match stop {
                Some("skip") => break Flow::SkipRemaining,
                Some(_) => break Flow::Next,
                None => {}
            }
        };
        ctx.remove("_loop_index");
        ctx.remove("_loop_iteration");
        if let Some(c) = &l.collect {
            ctx.set(c, Value::List(results));
        } else if let (Some(o), Some(last)) = (&node.output, results.last()) {
            ctx.set(o, last.clone());
        }
        Ok((end, None))
    }
}

enum AskError {
    Stop(Stop),
    Failed(String),
}

/// A skipped step's id goes to `_skipped_steps`; its output is not set.
/// A recipe with `stages:` (lowered to stage nodes) rather than flat `steps:`.
fn is_staged(w: &pipewright_ir::Workflow) -> bool {
    let body = &w.body;
    body.sequence()
        .iter()
        .any(|n| matches!(body.node(*n).map(|x| &x.kind), Some(NodeKind::Stage { .. })))
}

fn skip(ctx: &mut Ctx, id: &str) {
    let mut list = match ctx.vars.get("_skipped_steps") {
        Some(Value::List(l)) => l.clone(),
        _ => Vec::new(),
    };
    list.push(Value::Str(id.to_string()));
    ctx.set("_skipped_steps", Value::List(list));
}

pub(super) fn field(landed: &Value, name: &str) -> Value {
    match landed {
        Value::Map(m) => m.get(name).cloned().unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// The recipe at `path` (`rel`: as its step names it), lowered, and its text. Not validated
/// (as the runner does), but what the runner refuses to load is refused, in its words.
pub(super) fn load_recipe(
    path: &Path,
    rel: &str,
) -> Result<(pipewright_ir::Workflow, String), String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if e.kind() == std::io::ErrorKind::NotFound {
            format!("Sub-recipe not found: {}", abs.display())
        } else {
            format!("cannot read sub-recipe {}: {e}", abs.display())
        }
    })?;
    let (docs, diags) = pipewright_yaml::load(
        pipewright_syntax::FileId(u32::MAX),
        &text,
        pipewright_yaml::Limits::default(),
    );
    let Some(root) = docs.iter().find_map(|d| d.root.as_ref()) else {
        let why = diags
            .first()
            .map(|d| d.message.clone())
            .unwrap_or_else(|| "the file is empty".into());
        return Err(format!("Failed to load recipe {rel}: {why}"));
    };
    if root.as_map().is_none() {
        return Err(format!(
            "Failed to load recipe {rel}: Recipe YAML must be a dictionary"
        ));
    }
    let mut loader = crate::load::Loader::new();
    let recipe = loader.recipe(root);
    if let Some(d) = loader.diags.iter().find(|d| d.is_error()) {
        return Err(format!("Failed to load recipe {rel}: {}", d.message));
    }
    let program = crate::lower::recipe(&recipe, pipewright_syntax::FileId(u32::MAX));
    let Some(child) = program.workflows.into_iter().next() else {
        return Err(format!("Failed to load recipe {rel}: no recipe"));
    };
    Ok((child, text))
}

/// An agent step's prompt as the agent gets it.
fn ask_prompt(a: &Ask, vars: &Context) -> Result<String, String> {
    let mut prompt = rt::render(&a.prompt.src, vars).map_err(|e| e.0)?;
    if let Some(mode) = &a.mode {
        prompt = format!("MODE: {mode}\n\n{prompt}");
    }
    if a.parse_json {
        prompt.push_str(PARSE_JSON_RIDER);
    }
    Ok(prompt)
}

/// What a top-level step is given, for its `step_started` event: an agent step's prompt or a
/// bash step's command, rendered against the context the step sees (its `step` entry set as
/// `Exec::step` sets it). A field that does not render is the step's own failure, reported
/// when it runs.
fn given(
    node: &Node,
    vars: &Context,
    stage: Option<&str>,
) -> Option<pipewright_runtime::given::Given> {
    if !matches!(node.kind, NodeKind::Ask(_) | NodeKind::Command(_)) {
        return None;
    }
    let mut with_step = vars.clone();
    with_step.insert(
        "step".into(),
        rt::step_meta(&step_id(node), node.index, stage),
    );
    given_in(node, &with_step)
}

/// What a step is given, rendered against `vars` exactly as its action renders it.
fn given_in(node: &Node, vars: &Context) -> Option<pipewright_runtime::given::Given> {
    use pipewright_runtime::given::Given;
    match &node.kind {
        NodeKind::Ask(a) => ask_prompt(a, vars).ok().map(|p| Given::prompt(&p)),
        NodeKind::Command(c) => rt::render(&c.command.src, vars)
            .ok()
            .map(|c| Given::command(&c)),
        _ => None,
    }
}
