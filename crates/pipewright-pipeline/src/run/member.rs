//! A fan-out member run apart from its run (issue 24): what the run's process sends through
//! [`Members`] (the fan-out step, by its span; the branch; the frame the member sees; its
//! attempts), and the other side, which finds the step again in the same files and runs the
//! member under the run's owner, as the run itself would have.

use super::{Frame, Interp};
use pipewright_dialect::Member;
use pipewright_ir::{Node, NodeKind, Program, Region, WorkflowId};
use pipewright_r1::Value;
use pipewright_runtime::codes;
use pipewright_runtime::failure::{Failure, RunError};
use pipewright_runtime::members::{
    self, exhausted, MemberCall, MemberReport, MemberResult, Members, SentSpan,
};
use pipewright_runtime::session::RunOptions;
use pipewright_syntax::SourceMap;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::sync::Arc;

/// What a member needs besides its key.
#[derive(Debug, Serialize, Deserialize)]
struct Sent {
    /// The for_each or parallel step (a span is unique to a step in the same files).
    fan_out: SentSpan,
    /// The parallel branch; `None`: the for_each's body.
    branch: Option<String>,
    frame: SentFrame,
    attempts: usize,
}

#[derive(Debug, Serialize, Deserialize)]
struct SentFrame {
    ctx: Json,
    pipe: Json,
    item: Option<Json>,
    acc: Option<Json>,
    depth: u64,
    workflow: usize,
}

impl From<&Frame> for SentFrame {
    fn from(f: &Frame) -> SentFrame {
        SentFrame {
            ctx: f.ctx.to_json(),
            pipe: f.pipe.to_json(),
            item: f.item.as_deref().map(Value::to_json),
            acc: f.acc.as_deref().map(Value::to_json),
            depth: f.depth,
            workflow: f.workflow.0,
        }
    }
}

impl From<&SentFrame> for Frame {
    fn from(f: &SentFrame) -> Frame {
        let value = |v: &Json| Arc::new(Value::from_json(v));
        Frame {
            ctx: value(&f.ctx),
            pipe: value(&f.pipe),
            item: f.item.as_ref().map(value),
            acc: f.acc.as_ref().map(value),
            depth: f.depth,
            workflow: WorkflowId(f.workflow),
        }
    }
}

/// Which of `node`'s bodies `body` is: `Some(None)` the for_each's, `Some(Some(name))` a
/// parallel branch.
fn body_of(node: &Node, body: &Region) -> Option<Option<String>> {
    match &node.kind {
        NodeKind::ForEach(each) if std::ptr::eq(&each.body, body) => Some(None),
        NodeKind::Parallel { branches, .. } => branches
            .iter()
            .find(|b| std::ptr::eq(&b.region, body))
            .map(|b| Some(b.name.clone())),
        _ => None,
    }
}

/// The fan-out step at `span`, anywhere in the program.
fn find_fan_out(program: &Program, span: pipewright_syntax::Span) -> Option<&Node> {
    fn walk(region: &Region, span: pipewright_syntax::Span) -> Option<&Node> {
        region.graph.node_weights().find_map(|n| {
            let fan_out = matches!(n.kind, NodeKind::ForEach(_) | NodeKind::Parallel { .. });
            if fan_out && n.span == span {
                return Some(n);
            }
            n.kind
                .regions()
                .into_iter()
                .find_map(|(_, r)| walk(r, span))
        })
    }
    program.workflows.iter().find_map(|w| walk(&w.body, span))
}

/// `node`'s body a member runs.
fn member_body<'a>(node: &'a Node, branch: Option<&str>) -> Option<&'a Region> {
    match (&node.kind, branch) {
        (NodeKind::ForEach(each), None) => Some(&each.body),
        (NodeKind::Parallel { branches, .. }, Some(name)) => {
            branches.iter().find(|b| b.name == name).map(|b| &b.region)
        }
        _ => None,
    }
}

/// Whether running `region` may reach outside the run (a shell, tool or agent step in it, in
/// a body nested in it, or in a workflow it calls): only such members are worth a worker of
/// their own. A pure member runs where its run is, at the cost of an evaluation.
fn reaches_out(program: &Program, region: &Region, seen: &mut Vec<WorkflowId>) -> bool {
    region.graph.node_weights().any(|n| {
        super::has_side_effects(n)
            || n.kind
                .regions()
                .into_iter()
                .any(|(_, r)| reaches_out(program, r, seen))
            || n.kind.calls().into_iter().any(|(_, c)| match c.resolved {
                Some(id) if !seen.contains(&id) => {
                    seen.push(id);
                    program
                        .workflow(id)
                        .is_some_and(|w| reaches_out(program, &w.body, seen))
                }
                // Called already (its answer is being worked out) or unknown (the call fails).
                _ => false,
            })
    })
}

impl Interp {
    /// Whether a member running `body` is sent to [`Members`] (see [`reaches_out`]); worked
    /// out once per body.
    pub(super) fn sends(&self, body: &Region) -> bool {
        let at = body as *const Region as usize;
        let mut known = self.sent_bodies.lock().unwrap_or_else(|p| p.into_inner());
        *known
            .entry(at)
            .or_insert_with(|| reaches_out(&self.program, body, &mut Vec::new()))
    }

    /// Whether this member's value landed already (its body one step, landed in an earlier
    /// attempt): it is replayed here rather than sent anywhere.
    pub(super) fn landed_whole(&self, body: &Region, key: &str) -> bool {
        match body.sequence().as_slice() {
            [one] => body
                .node(*one)
                .is_some_and(|n| self.replayed(key, &self.step_hash(n)).is_some()),
            _ => false,
        }
    }

    /// Runs the member where `members` runs it, and takes back what it came to.
    pub(super) async fn run_elsewhere(
        &self,
        members: &Arc<dyn Members>,
        node: &Node,
        body: &Region,
        frame: &Frame,
        key: String,
        attempts: usize,
    ) -> Result<Option<Value>, Failure> {
        let Some(branch) = body_of(node, body) else {
            return Err(self
                .fail(
                    codes::UNSUPPORTED,
                    &key,
                    node,
                    "internal: a member body that is not its fan-out's",
                )
                .into());
        };
        let sent = Sent {
            fan_out: node.span.into(),
            branch,
            frame: frame.into(),
            attempts,
        };
        // As before any step with effects outside the run: what the run staged is recorded
        // first (and its events come before the member's in the run's events).
        self.flush()
            .map_err(|msg| self.fail(codes::STORE, &key, node, msg))?;
        let call = MemberCall {
            key: key.clone(),
            body: serde_json::to_value(&sent).unwrap_or(Json::Null),
        };
        let report = tokio::select! {
            biased;
            r = members.run(call) => r,
            // The member sees its run stop (the owner lets the run go) and stops too.
            () = self.cancel.cancelled() => return Err(Failure::Cancelled { key }),
        };
        self.meter.replace_under(&key, &report.usage);
        match report.result {
            MemberResult::Done(v) => Ok(v.map(|v| Value::from_json(&v))),
            MemberResult::Failed(e) => Err(RunError::from(e).into()),
            MemberResult::Cancelled { key } => Err(Failure::Cancelled { key }),
            MemberResult::Stopped {
                budget,
                limit,
                spent,
            } => {
                self.meter.stop(exhausted(&budget, limit, spent));
                Err(Failure::Cancelled { key })
            }
            MemberResult::Broken(msg) => Err(self
                .fail(
                    codes::STORE,
                    &key,
                    node,
                    format!("fan-out member {key} could not run: {msg}"),
                )
                .into()),
        }
    }
}

/// Runs a member sent from its run: the other side of [`Interp::run_elsewhere`].
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
            return MemberReport::broken(format!("a member this pipewright does not read: {e}"))
        }
    };
    let Some(node) = find_fan_out(&program, sent.fan_out.into()) else {
        return MemberReport::broken(format!(
            "no fan-out step of run {run_id} at the place it was sent from: the worker's files differ from the run's"
        ));
    };
    let Some(body) = member_body(node, sent.branch.as_deref()) else {
        return MemberReport::broken(format!(
            "the fan-out step of member {} has no such body",
            call.key
        ));
    };
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
        "the pipeline files",
        String::new(),
    ) {
        Ok(j) => j,
        Err(why) => return MemberReport::broken(why),
    };
    let interp = Interp::new(program.clone(), sources, opts, session);
    let frame = Frame::from(&sent.frame);
    let r = interp
        .run_member(node, body, &frame, call.key.clone(), sent.attempts)
        .await;
    let failed_write = interp.session.close();
    members::report(
        &call.key,
        &meter,
        MemberResult::of(r, meter.exhausted()),
        failed_write,
        |e| RunError::new(codes::STORE, &call.key, node.kind.name(), node.span, e),
    )
}
