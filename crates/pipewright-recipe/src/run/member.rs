//! A foreach's iterations run apart from their run (issue 24), through
//! `pipewright_runtime::members`: what the run's process sends (the foreach step, by its span
//! in the recipe or sub-recipe it is in; the context the iteration sees; which kind of
//! iteration it is), and the other side, which finds the step again in the same files, runs
//! the iteration under the run's owner and sends back what it came to: its landing (the
//! context it leaves), the agent turns it counted and what its turns told the rate limiter.
//!
//! A parallel foreach sends each iteration (a `bash` command, an agent step or a sub-recipe
//! call); a sequential one, each iteration, one at a time. Under `rate_limiting` the run's limiter
//! admits each agent turn before it is sent, so only iterations of one agent step (or none)
//! are sent then; the others run where the run is (see [`Exec::sends_iteration`]).

use super::exec::{field, load_recipe, Boxed};
use super::limiter::Turn;
use super::{values, Ctx, Exec, Frame, Stop};
use crate::runtime::Context;
use crate::value::Value;
use pipewright_dialect::Member;
use pipewright_ir::{Loop, Node, NodeKind, Program, Region};
use pipewright_runtime::codes;
use pipewright_runtime::failure::RunError;
use pipewright_runtime::members::{
    self, exhausted, MemberCall, MemberReport, MemberResult, Members, SentError, SentSpan,
};
use pipewright_runtime::session::RunOptions;
use pipewright_runtime::store;
use pipewright_syntax::SourceMap;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[derive(Debug, Serialize, Deserialize)]
struct Sent {
    /// The foreach step.
    looped: SentSpan,
    frame: SentFrame,
    /// The iteration's context, as exact text (big integers, NaN).
    vars: String,
    what: Iteration,
    /// Its agent turn was admitted by the run's rate limiter, whose backoff was then this (its
    /// delay in ms, the successes since); `None`: not admitted (nothing to limit).
    admitted: Option<(Option<u64>, u64)>,
}

#[derive(Debug, Serialize, Deserialize)]
enum Iteration {
    /// Of a parallel foreach: its one step; `precounted`: its agent turn is counted already.
    Parallel { precounted: bool },
    /// Iteration `index` of a sequential foreach, in stage `stage`.
    Sequential { index: usize, stage: Option<String> },
}

/// The recipe (root or sub-recipe) the foreach step is in, as the run's [`Frame`] has it.
#[derive(Debug, Serialize, Deserialize)]
struct SentFrame {
    /// A sub-recipe's file, from the root recipe's directory; `None`: the root.
    file: Option<String>,
    /// The sub-recipe's text's hash: the worker's must be the run's.
    text_hash: String,
    depth: u64,
    stack: Vec<String>,
    max_depth: u64,
    max_total_steps: u64,
    prefix: String,
    gate_path: String,
}

impl SentFrame {
    fn of(f: &Frame) -> SentFrame {
        SentFrame {
            file: f.file.as_deref().map(|p| p.to_string_lossy().into_owned()),
            text_hash: store::source_hash([&*f.text].into_iter()),
            depth: f.depth,
            stack: f.stack.clone(),
            max_depth: f.max_depth,
            max_total_steps: f.max_total_steps,
            prefix: f.prefix.clone(),
            gate_path: f.gate_path.clone(),
        }
    }

    /// The frame again, here: the root's, or the sub-recipe's loaded from this checkout.
    fn frame(self, root: Frame) -> Result<Frame, String> {
        let Some(file) = self.file else {
            return Ok(root);
        };
        let path = root.dir.join(&file);
        let (workflow, text) = load_recipe(&path, &file)?;
        if store::source_hash([text.as_str()].into_iter()) != self.text_hash {
            return Err(format!(
                "the worker's sub-recipe {file} differs from the run's"
            ));
        }
        Ok(Frame {
            workflow,
            text: Arc::from(text.as_str()),
            dir: path.parent().map(Path::to_path_buf).unwrap_or(root.dir),
            depth: self.depth,
            stack: self.stack,
            max_depth: self.max_depth,
            max_total_steps: self.max_total_steps,
            prefix: self.prefix,
            gate_path: self.gate_path,
            file: Some(PathBuf::from(file)),
        })
    }
}

/// What an iteration sent away came to: the value of its member's `Done`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Reply {
    /// As landed: a parallel iteration's `{"result": …}`; a sequential one's change of the
    /// context with its result and flow. With `error` or `paused` it is the change it made
    /// before it stopped the run, not landed.
    landing: Json,
    error: Option<SentError>,
    /// What the approver of a gate it reached (in a sub-recipe) is asked.
    paused: Option<Json>,
    /// It was cancelled at this key: by a budget (`stopped`), or as its run let go.
    cancelled: Option<String>,
    /// The budget that stopped it (the run's name for it, its limit, what was spent).
    stopped: Option<(String, String, pipewright_runtime::usage::Usage)>,
    /// The agent turns it counted in the run's budget (`max_total_steps`).
    turns: u64,
    /// What its agent turns told the rate limiter, in order.
    limits: Vec<Turn>,
}

/// The foreach step at `span` in `region` or a body in it.
fn find_loop(region: &Region, span: pipewright_syntax::Span) -> Option<&Node> {
    region.graph.node_weights().find_map(|n| {
        if matches!(n.kind, NodeKind::Loop(_)) && n.span == span {
            return Some(n);
        }
        n.kind
            .regions()
            .into_iter()
            .find_map(|(_, r)| find_loop(r, span))
    })
}

/// The step each iteration of the loop `node` runs.
fn inner(node: &Node) -> Option<&Node> {
    match &node.kind {
        NodeKind::Loop(l) => l.body.entry.and_then(|n| l.body.node(n)),
        _ => None,
    }
}

/// Whether running `region` may take an agent turn: an agent step, or a sub-recipe (which
/// may hold any), in it or in a body nested in it.
fn takes_turns(region: &Region) -> bool {
    region.graph.node_weights().any(|n| match &n.kind {
        NodeKind::Ask(_) | NodeKind::SubWorkflow(_) => true,
        other => other.regions().into_iter().any(|(_, r)| takes_turns(r)),
    })
}

impl Exec {
    /// Where a parallel foreach's iteration running `inner` is sent, if it is: a sub-recipe
    /// call not under `rate_limiting` (its turns cannot be admitted one by one, see
    /// [`Exec::sends_iteration`]).
    pub(super) fn sends(&self, inner: &Node) -> Option<&Arc<dyn Members>> {
        let members = self.members.as_ref()?;
        let sendable = match inner.kind {
            NodeKind::Command(_) | NodeKind::Ask(_) => true,
            NodeKind::SubWorkflow(_) => self.limiter.limits_nothing(),
            _ => false,
        };
        sendable.then_some(members)
    }

    /// Where an iteration of the sequential foreach `l` is sent, if it is. Under
    /// `rate_limiting` the run's limiter admits an agent turn before it is sent and holds its
    /// slot until it ends: an iteration that may take more than one turn (several agent steps,
    /// a sub-recipe) cannot be admitted so, and runs here.
    pub(super) fn sends_iteration(&self, l: &Loop) -> Option<&Arc<dyn Members>> {
        let members = self.members.as_ref()?;
        let admitted = self.limiter.limits_nothing()
            || match l.body.entry.and_then(|n| l.body.node(n)) {
                Some(one) if !l.nested => {
                    matches!(one.kind, NodeKind::Command(_) | NodeKind::Ask(_))
                }
                _ => !takes_turns(&l.body),
            };
        admitted.then_some(members)
    }

    /// Whether an iteration running `inner` (one step) is admitted by the run's limiter before
    /// it is sent.
    fn admits(&self, inner: Option<&Node>) -> bool {
        !self.limiter.limits_nothing() && inner.is_some_and(|n| matches!(n.kind, NodeKind::Ask(_)))
    }

    /// Runs iteration `ikey` of the parallel foreach `node` where `members` runs it; its result.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn item_elsewhere<'a>(
        &'a self,
        members: &'a Arc<dyn Members>,
        f: &'a Frame,
        node: &'a Node,
        inner: &'a Node,
        vars: &'a Context,
        ikey: &'a str,
        precounted: bool,
    ) -> Boxed<'a, Result<Value, Stop>> {
        Box::pin(async move {
            let what = Iteration::Parallel { precounted };
            let admits = self.admits(Some(inner));
            let _slot = match admits {
                true => Some(self.limiter.acquire().await),
                false => None,
            };
            let reply = self
                .send(members, f, node, vars, ikey, what, admits)
                .await?;
            if let Some(e) = reply.error {
                return Err(Stop::Failed(Box::new(RunError::from(e))));
            }
            if let Some(pending) = reply.paused {
                return Err(Stop::Paused(pending));
            }
            Ok(values::from_landed(&reply.landing)
                .map(|l| field(&l, "result"))
                .unwrap_or(Value::Null))
        })
    }

    /// Runs iteration `i` of the sequential foreach `node` at `key` where `members` runs it,
    /// against `ctx` (its variable set), and takes the change it made into `ctx`: what it
    /// landed, as [`Exec::iteration`] answers.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn iteration_elsewhere<'a>(
        &'a self,
        members: &'a Arc<dyn Members>,
        f: &'a Frame,
        ctx: &'a mut Ctx,
        node: &'a Node,
        key: &'a str,
        i: usize,
        stage: Option<&'a str>,
    ) -> Boxed<'a, Result<Value, Stop>> {
        Box::pin(async move {
            let ikey = format!("{key}.{i}");
            let one = match &node.kind {
                NodeKind::Loop(l) if !l.nested => inner(node),
                _ => None,
            };
            let admits = self.admits(one);
            let _slot = match admits {
                true => Some(self.limiter.acquire().await),
                false => None,
            };
            let what = Iteration::Sequential {
                index: i,
                stage: stage.map(str::to_string),
            };
            let reply = self
                .send(members, f, node, &ctx.vars, &ikey, what, admits)
                .await?;
            let landing = values::from_landed(&reply.landing).unwrap_or(Value::Null);
            ctx.absorb(&landing);
            if let Some(e) = reply.error {
                return Err(Stop::Failed(Box::new(RunError::from(e))));
            }
            if let Some(pending) = reply.paused {
                return Err(Stop::Paused(pending));
            }
            if let Some((budget, limit, spent)) = reply.stopped {
                self.meter.stop(exhausted(&budget, limit, spent));
            }
            if let Some(key) = reply.cancelled {
                return Err(Stop::Cancelled(key));
            }
            Ok(landing)
        })
    }

    /// Sends an iteration of the foreach `node` (its turn `admitted` by the run's limiter) and
    /// waits for what it came to; its agent turns and what they told the limiter are the run's.
    #[allow(clippy::too_many_arguments)]
    async fn send(
        &self,
        members: &Arc<dyn Members>,
        f: &Frame,
        node: &Node,
        vars: &Context,
        ikey: &str,
        what: Iteration,
        admitted: bool,
    ) -> Result<Reply, Stop> {
        // As before any step with effects outside the run: what is staged is recorded first
        // (the budget's count of turns among it, which the iteration counts on from).
        self.before_side_effects()
            .map_err(|e| self.fail(ikey, node, codes::STORE, e))?;
        let sent = Sent {
            looped: node.span.into(),
            frame: SentFrame::of(f),
            vars: values::to_text(&Value::Map(vars.clone())),
            what,
            admitted: admitted.then(|| self.limiter.backoff_state()),
        };
        let call = MemberCall {
            key: ikey.to_string(),
            body: serde_json::to_value(&sent).unwrap_or_default(),
        };
        let report = tokio::select! {
            biased;
            r = members.run(call) => r,
            // The iteration sees its run stop (the owner lets the run go) and stops too.
            () = self.cancel.cancelled() => return Err(Stop::Cancelled(ikey.to_string())),
        };
        self.meter.replace_under(ikey, &report.usage);
        match report.result {
            MemberResult::Done(v) => {
                let reply: Reply = v
                    .map(serde_json::from_value)
                    .transpose()
                    .ok()
                    .flatten()
                    .ok_or_else(|| {
                        self.fail(
                            ikey,
                            node,
                            codes::STORE,
                            format!("iteration {ikey} answered what this pipewright does not read"),
                        )
                    })?;
                if reply.turns > 0 {
                    // Recorded as the run's count: iterations at once each recorded their own
                    // start plus theirs.
                    let total =
                        self.agent_turns.fetch_add(reply.turns, Ordering::SeqCst) + reply.turns;
                    self.session
                        .spawns(total)
                        .map_err(|e| self.fail(ikey, node, codes::STORE, e))?;
                }
                self.limiter.replay(&reply.limits);
                Ok(reply)
            }
            MemberResult::Failed(e) => Err(Stop::Failed(Box::new(RunError::from(e)))),
            MemberResult::Cancelled { key } => Err(Stop::Cancelled(key)),
            MemberResult::Stopped {
                budget,
                limit,
                spent,
            } => {
                self.meter.stop(exhausted(&budget, limit, spent));
                Err(Stop::Cancelled(ikey.to_string()))
            }
            MemberResult::Broken(msg) => Err(self.fail(
                ikey,
                node,
                codes::STORE,
                format!("iteration {ikey} could not run: {msg}"),
            )),
        }
    }

    /// Runs here an iteration sent from its run: the other side of [`Exec::send`].
    async fn sent_iteration(
        &self,
        f: &Frame,
        looped: &Node,
        vars: Context,
        ikey: &str,
        what: Iteration,
    ) -> Result<Reply, Stop> {
        let hash = self.step_hash(f, looped);
        let mut reply = match what {
            Iteration::Parallel { precounted } => {
                let Some(inner) = inner(looped) else {
                    return Err(self.fail(
                        ikey,
                        looped,
                        codes::UNSUPPORTED,
                        "the foreach step has no step to run",
                    ));
                };
                let r = match self.landed_item(ikey, &hash) {
                    Some(v) => Ok(v),
                    None => {
                        self.run_item(f, looped, inner, &hash, &vars, ikey, precounted)
                            .await
                    }
                };
                match r {
                    Ok(v) => Reply {
                        landing: values::to_landed(&Value::Map(
                            [("result".to_string(), v)].into_iter().collect(),
                        )),
                        ..Reply::default()
                    },
                    Err(Stop::Failed(e)) => Reply {
                        error: Some(SentError::from(&*e)),
                        ..Reply::default()
                    },
                    // At a gate in the sub-recipe it calls.
                    Err(Stop::Paused(pending)) => Reply {
                        paused: Some(pending),
                        ..Reply::default()
                    },
                    Err(other) => return Err(other),
                }
            }
            Iteration::Sequential { index, stage } => {
                if let Some(landed) = self.landed(ikey, &hash) {
                    return Ok(Reply {
                        landing: values::to_landed(&landed),
                        ..Reply::default()
                    });
                }
                let key = ikey
                    .strip_suffix(&format!(".{index}"))
                    .unwrap_or(ikey)
                    .to_string();
                let mut ctx = Ctx::new(vars);
                let r = self
                    .iteration(f, &mut ctx, looped, &hash, &key, index, stage.as_deref())
                    .await;
                let left = || values::to_landed(&ctx.iteration_delta(Vec::new()));
                match r {
                    Ok(landed) => Reply {
                        landing: values::to_landed(&landed),
                        ..Reply::default()
                    },
                    Err(Stop::Failed(e)) => Reply {
                        landing: left(),
                        error: Some(SentError::from(&*e)),
                        ..Reply::default()
                    },
                    Err(Stop::Paused(pending)) => Reply {
                        landing: left(),
                        paused: Some(pending),
                        ..Reply::default()
                    },
                    // A budget's stop, said with the change made before it, as a local run
                    // leaves it in the report.
                    Err(Stop::Cancelled(key)) => Reply {
                        landing: left(),
                        cancelled: Some(key),
                        stopped: self
                            .meter
                            .exhausted()
                            .map(|e| (e.budget.to_string(), e.limit, e.spent)),
                        ..Reply::default()
                    },
                }
            }
        };
        reply.turns = self
            .agent_turns
            .load(Ordering::SeqCst)
            .saturating_sub(self.session.spawns_before());
        reply.limits = self.limiter.turns();
        Ok(reply)
    }
}

/// Runs an iteration sent from its run: the other side of [`Exec::send`].
pub async fn member(
    program: Arc<Program>,
    sources: &SourceMap,
    opts: RunOptions,
    member: Member,
) -> MemberReport {
    let Member { run_id, call, lock } = member;
    let sent: Sent = match serde_json::from_value(call.body) {
        Ok(s) => s,
        Err(e) => {
            return MemberReport::broken(format!("an iteration this pipewright does not read: {e}"))
        }
    };
    let Some(workflow) = program.workflows.first().cloned() else {
        return MemberReport::broken("the file declares no recipe");
    };
    let vars = match values::from_text(&sent.vars) {
        Ok(Value::Map(m)) => m,
        _ => return MemberReport::broken("an iteration's context this pipewright does not read"),
    };
    let text: Arc<str> = sources
        .get(workflow.file)
        .map(|f| f.text.clone())
        .unwrap_or_else(|| Arc::from(""));
    let members::Joined {
        session,
        opts,
        meter,
    } = match members::join(
        opts,
        sources,
        &run_id,
        &call.key,
        lock,
        "the recipe",
        workflow.name.clone(),
    ) {
        Ok(j) => j,
        Err(why) => return MemberReport::broken(why),
    };
    let (mut ex, root) = super::root(workflow, text, opts, session);
    ex.limiter.keep_turns();
    if let Some(backoff) = sent.admitted {
        ex.limiter.admitted(backoff);
    }
    let frame = match sent.frame.frame(root) {
        Ok(frame) => frame,
        Err(why) => {
            ex.session.close();
            return MemberReport::broken(why);
        }
    };
    let Some(looped) = find_loop(&frame.workflow.body, sent.looped.into()) else {
        ex.session.close();
        return MemberReport::broken(format!(
            "no foreach step of run {run_id} at the place it was sent from: the worker's recipe differs from the run's"
        ));
    };
    let r = ex
        .sent_iteration(&frame, looped, vars, &call.key, sent.what)
        .await;
    let failed_write = ex.session.close();
    let result = match r {
        Ok(reply) => MemberResult::Done(Some(serde_json::to_value(&reply).unwrap_or_default())),
        Err(Stop::Failed(e)) => MemberResult::Failed(SentError::from(&*e)),
        Err(Stop::Cancelled(key)) => match meter.exhausted() {
            Some(e) => MemberResult::Stopped {
                budget: e.budget.to_string(),
                limit: e.limit,
                spent: e.spent,
            },
            None => MemberResult::Cancelled { key },
        },
        Err(Stop::Paused(_)) => MemberResult::Broken("an iteration cannot wait at a gate".into()),
    };
    members::report(&call.key, &meter, result, failed_write, |e| {
        RunError::new(codes::STORE, &call.key, looped.kind.name(), looped.span, e)
    })
}
