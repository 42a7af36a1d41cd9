//! A parallel foreach's iterations run apart from their run (issue 24), through
//! `pipewright_runtime::members`: what the run's process sends (the foreach step, by its span;
//! the iteration's context; whether its agent turn is counted already), and the other side,
//! which finds the step again in the same recipe and runs the iteration under the run's owner.
//!
//! Only iterations of the root recipe whose step is a `bash` command, or an agent step in a
//! recipe without `rate_limiting` (its limits hold in one process), are sent; the others run
//! where the run is.

use super::exec::Boxed;
use super::{values, Exec, Frame, Stop};
use crate::runtime::Context;
use crate::value::Value;
use pipewright_dialect::Member;
use pipewright_ir::{Node, NodeKind, Program, Region};
use pipewright_runtime::codes;
use pipewright_runtime::failure::RunError;
use pipewright_runtime::members::{
    self, exhausted, MemberCall, MemberReport, MemberResult, Members, SentError, SentSpan,
};
use pipewright_runtime::session::RunOptions;
use pipewright_syntax::SourceMap;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Debug, Serialize, Deserialize)]
struct Sent {
    /// The foreach step.
    looped: SentSpan,
    /// The iteration's context, as exact text (big integers, NaN).
    vars: String,
    precounted: bool,
}

/// The foreach step at `span` in `region` or a stage of it.
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

impl Exec {
    /// Where an iteration running `inner` in frame `f` is sent, if it is (see the module).
    pub(super) fn sends(&self, f: &Frame, inner: &Node) -> Option<&Arc<dyn Members>> {
        let members = self.members.as_ref()?;
        let limits = &f.workflow.limits;
        let unlimited = limits.max_concurrent_agents.is_none()
            && limits.min_agent_delay_ms.is_none()
            && limits.backoff.is_none();
        let sendable = match inner.kind {
            NodeKind::Command(_) => true,
            NodeKind::Ask(_) => unlimited,
            _ => false,
        };
        (f.depth == 0 && f.prefix.is_empty() && sendable).then_some(members)
    }

    /// Runs iteration `ikey` of the foreach `node` where `members` runs it; its result.
    pub(super) fn item_elsewhere<'a>(
        &'a self,
        members: &'a Arc<dyn Members>,
        node: &'a Node,
        vars: &'a Context,
        ikey: &'a str,
        precounted: bool,
    ) -> Boxed<'a, Result<Value, Stop>> {
        Box::pin(async move {
            // As before any step with effects outside the run: what is staged is recorded first.
            self.before_side_effects()
                .map_err(|e| self.fail(ikey, node, codes::STORE, e))?;
            let sent = Sent {
                looped: node.span.into(),
                vars: values::to_text(&Value::Map(vars.clone())),
                precounted,
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
            self.meter.seed(&report.usage);
            match report.result {
                // As a landing: a mapping (a bare string would read as exact text).
                MemberResult::Done(v) => Ok(v
                    .as_ref()
                    .and_then(values::from_landed)
                    .map(|l| super::exec::field(&l, "result"))
                    .unwrap_or(Value::Null)),
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
        })
    }
}

/// Runs an iteration sent from its run: the other side of [`Exec::item_elsewhere`].
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
    let (ex, frame) = super::root(workflow, text, opts, session);
    let Some(looped) = find_loop(&frame.workflow.body, sent.looped.into()) else {
        return MemberReport::broken(format!(
            "no foreach step of run {run_id} at the place it was sent from: the worker's recipe differs from the run's"
        ));
    };
    let Some(inner) = inner(looped) else {
        return MemberReport::broken("the foreach step has no step to run");
    };
    let hash = ex.step_hash(&frame, looped);
    let r = match ex.landed_item(&call.key, &hash) {
        Some(v) => Ok(v),
        None => {
            ex.run_item(
                &frame,
                looped,
                inner,
                &hash,
                &vars,
                &call.key,
                sent.precounted,
            )
            .await
        }
    };
    let failed_write = ex.session.close();
    let result = match r {
        Ok(v) => {
            let landing = Value::Map([("result".to_string(), v)].into_iter().collect());
            MemberResult::Done(Some(values::to_landed(&landing)))
        }
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
    members::report(&meter, result, failed_write, |e| {
        RunError::new(codes::STORE, &call.key, looped.kind.name(), looped.span, e)
    })
}
