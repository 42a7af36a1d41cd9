//! The pipeline interpreter, over the lowered IR. Regions run their nodes along `Next` edges; fan-outs run
//! their items as concurrent futures on the current task (bounded by `max_parallel`), which
//! needs no `'static` copies of the program and cancels every pending item when dropped.

mod fanout;
mod frame;
mod given;
mod member;
pub mod plan;
pub mod prerun;
mod stack;
mod steps;

use frame::Frame;
use indexmap::IndexMap;
pub use member::member;
use pipewright_ir::{Node, NodeKind, Program, Region, WorkflowId};
use pipewright_r1::Value;
use pipewright_runtime::backend::{AgentBackend, BoxFuture};
use pipewright_runtime::cancel::CancelToken;
use pipewright_runtime::codes;
use pipewright_runtime::failure::{Failure, RunError};
use pipewright_runtime::outcome::{RunOutcome, RunStatus};
use pipewright_runtime::session::{
    finish_record, Begun, Caps, ResumeOf, RunOptions, RunSession, RunStart,
};
use pipewright_runtime::store::{self, Event, EventKind, Landed, StoreError};
use pipewright_runtime::tools::Tools;
use pipewright_syntax::SourceMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

pub(crate) struct Interp {
    program: Arc<Program>,
    sources: SourceMap,
    backend: Arc<dyn AgentBackend>,
    tools: Tools,
    caps: Caps,
    spawns: AtomicU64,
    cancel: CancelToken,
    /// The run's lock, journal and replayed landings (see [`RunSession`]).
    session: RunSession,
    identity: String,
    envelope: Option<Vec<String>>,
    default_max_parallel: usize,
    /// Where fan-out members run; `None`: here (see `run::member`).
    members: Option<Arc<dyn pipewright_runtime::members::Members>>,
    /// The run's meter: what members run elsewhere spent is counted here.
    meter: Arc<pipewright_runtime::usage::Meter>,
    /// Whether a member of each fan-out body (by address) is sent to `members`.
    sent_bodies: std::sync::Mutex<std::collections::HashMap<usize, bool>>,
}

/// Why a run of a pipeline file cannot start (besides what the run store says).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    #[error("no pipeline named `{name}` (this file declares: {})", .declared.join(", "))]
    NoSuchPipeline { name: String, declared: Vec<String> },
    #[error("the file declares no pipeline")]
    NoPipeline,
    /// The input as JSON.
    #[error("the input must be a JSON object (its keys become named stores), got {0}")]
    InputNotAnObject(String),
}

impl From<StartError> for String {
    fn from(e: StartError) -> String {
        e.to_string()
    }
}

/// The workflow a run runs: the one `name`d, else the file's first.
fn pick(program: &Program, name: Option<&str>) -> Result<WorkflowId, StartError> {
    match name {
        Some(name) => program
            .find(name)
            .ok_or_else(|| StartError::NoSuchPipeline {
                name: name.to_string(),
                declared: program.workflows.iter().map(|w| w.name.clone()).collect(),
            }),
        None if program.workflows.is_empty() => Err(StartError::NoPipeline),
        None => Ok(WorkflowId(0)),
    }
}

/// The named stores a run starts with: the input's keys.
fn stores_of(input: &serde_json::Value) -> Result<Value, StartError> {
    match input {
        serde_json::Value::Null => Ok(Value::Object(IndexMap::new())),
        v @ serde_json::Value::Object(_) => Ok(Value::from_json(v)),
        other => Err(StartError::InputNotAnObject(other.to_string())),
    }
}

/// Runs one workflow. `Err` is a setup problem (unknown workflow, bad input, unreadable run
/// store, a resume the store refuses) reported before anything runs; everything after that
/// is in the [`RunOutcome`].
pub async fn run(
    program: Arc<Program>,
    sources: &SourceMap,
    mut opts: RunOptions,
) -> Result<RunOutcome, String> {
    let source_hash = store::source_hash(sources.files().map(|f| &*f.text));
    let resume = opts.resume.as_deref().map(|id| ResumeOf {
        id,
        what: "the pipeline files",
        kind: "pipeline",
        workflow: opts.workflow.as_deref(),
    });
    let begun = Begun::new(&opts, resume, opts.input.clone(), &source_hash)?;
    let resumed_workflow = begun.resumed.as_ref().map(|r| r.workflow.clone());
    let workflow_name = opts.workflow.clone().or(resumed_workflow);
    let wid = pick(&program, workflow_name.as_deref())?;
    let input = begun.input.clone();
    let stores = stores_of(&input)?;
    let workflow = program
        .workflow(wid)
        .ok_or("internal: workflow index out of range")?;
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
    let interp = Interp::new(program.clone(), sources, opts, session);
    let run_id = interp.session.run_id().to_string();
    let mut frame = Frame {
        ctx: Arc::new(stores),
        pipe: Arc::new(Value::Null),
        item: None,
        acc: None,
        depth: 0,
        workflow: wid,
    };
    let result = interp.exec_region_in(&workflow.body, &mut frame, "").await;
    // Failed or not, `frame` holds the top-level stores and pipe as they were when the run
    // stopped: everything the steps before the failing (or cancelled) one wrote. Nested
    // frames (calls, fan-out items) are isolated and never write the caller's stores.
    let output = (*frame.pipe).clone();
    let stores = (*frame.ctx).clone();
    let mut outcome = match result {
        Ok(()) => RunOutcome::new(RunStatus::Ok, run_id, output, stores),
        Err(Failure::Step(e)) => {
            let mut o = RunOutcome::new(RunStatus::Failed, run_id, output, stores);
            o.error = Some(*e);
            o
        }
        Err(Failure::Cancelled { key }) => {
            let mut o = RunOutcome::new(RunStatus::Cancelled, run_id, output, stores);
            o.cancelled_at = Some(key);
            o
        }
    };
    if outcome.status == RunStatus::Cancelled {
        outcome.signal = interp.cancel.signal();
    }
    interp.session.finish(
        &mut outcome,
        workflow.span,
        |o| store::Finish {
            // The input is stored once, at the start.
            stores: store::stores_delta(&input, &o.stores.to_json()),
            ..finish_record(o)
        },
        |o, msg| o.fail_store(msg, workflow.span),
    );
    Ok(outcome)
}

/// Steps whose effects reach outside the run: their landings commit at once.
fn has_side_effects(node: &Node) -> bool {
    !matches!(
        node.kind,
        NodeKind::Transform { .. }
            | NodeKind::Call(_)
            | NodeKind::Match { .. }
            | NodeKind::Fold { .. }
            | NodeKind::ForEach { .. }
            | NodeKind::Parallel { .. }
    )
}

pub(crate) fn child_key(prefix: &str, j: usize) -> String {
    if prefix.is_empty() {
        j.to_string()
    } else {
        format!("{prefix}.{j}")
    }
}

impl Interp {
    fn new(
        program: Arc<Program>,
        sources: &SourceMap,
        opts: RunOptions,
        session: RunSession,
    ) -> Interp {
        Interp {
            program,
            sources: sources.clone(),
            backend: opts.backend,
            tools: opts.tools,
            caps: opts.caps,
            spawns: AtomicU64::new(session.spawns_before()),
            cancel: opts.cancel,
            session,
            identity: opts.identity,
            envelope: opts.envelope,
            default_max_parallel: opts.default_max_parallel.max(1),
            members: opts.members,
            meter: opts.meter,
            sent_bodies: Default::default(),
        }
    }

    /// Runs a region's nodes in `Next` order; the returned frame holds the final pipe and
    /// stores.
    pub(crate) fn exec_region<'a>(
        &'a self,
        region: &'a Region,
        mut frame: Frame,
        prefix: &'a str,
    ) -> BoxFuture<'a, Result<Frame, Failure>> {
        Box::pin(async move {
            self.exec_region_in(region, &mut frame, prefix).await?;
            Ok(frame)
        })
    }

    /// [`Interp::exec_region`] on a frame the caller keeps: when a step fails (or the run is
    /// cancelled) the frame still holds the stores and the pipe as they were at that point.
    pub(crate) async fn exec_region_in(
        &self,
        region: &Region,
        frame: &mut Frame,
        prefix: &str,
    ) -> Result<(), Failure> {
        let mut cur = region.entry;
        let mut j = 0;
        // A pipeline region is a chain; the bound keeps a cyclic region (a future dialect)
        // from looping here before its interpreter exists.
        while let Some(n) = cur.filter(|_| j <= region.graph.node_count()) {
            let node = &region.graph[n];
            let v = self.exec_node(node, frame, child_key(prefix, j)).await?;
            frame.land(node.output.as_deref(), v);
            cur = region.next(n);
            j += 1;
        }
        Ok(())
    }

    /// Runs the body of a fold/for_each/parallel, whose single step has the recovery key `key`.
    pub(crate) async fn exec_body(
        &self,
        region: &Region,
        frame: &Frame,
        key: String,
    ) -> Result<(Value, Option<String>), Failure> {
        let seq = region.sequence();
        match seq.as_slice() {
            [one] => {
                let node = &region.graph[*one];
                Ok((self.exec_node(node, frame, key).await?, node.output.clone()))
            }
            _ => {
                let f = self.exec_region(region, frame.clone(), &key).await?;
                Ok(((*f.pipe).clone(), None))
            }
        }
    }

    pub(crate) fn exec_node<'a>(
        &'a self,
        node: &'a Node,
        frame: &'a Frame,
        key: String,
    ) -> BoxFuture<'a, Result<Value, Failure>> {
        Box::pin(async move {
            if self.cancel.is_cancelled() {
                return Err(Failure::Cancelled { key });
            }
            let hash = self.step_hash(node);
            if let Some(v) = self.replayed(&key, &hash) {
                let e = self.event(EventKind::Replayed, &key, node, frame, None, None);
                self.report(e);
                return Ok(v);
            }
            let t0 = Instant::now();
            let e = self
                .event(EventKind::Started, &key, node, frame, None, None)
                .map(|e| Event {
                    given: self.given(node, frame, &key).map(Box::new),
                    ..e
                });
            self.report(e);
            let effects = has_side_effects(node);
            if effects {
                // Nothing staged may be lost to a crash during a side effect that follows it.
                if let Err(msg) = self.flush() {
                    let failed = self.event(
                        EventKind::Failed,
                        &key,
                        node,
                        frame,
                        Some(0.0),
                        Some(msg.to_string()),
                    );
                    self.report(failed);
                    return Err(self.fail(codes::STORE, &key, node, msg).into());
                }
            }
            let r = if effects {
                // A step in flight stops with the run: dropping its future kills the child's
                // process group and drops the HTTP call or back-off sleep. It has not landed,
                // so a resume runs it again.
                let step = pipewright_runtime::tools::process::for_step(
                    self.session.run_id(),
                    &key,
                    self.dispatch(node, frame, &key),
                );
                tokio::select! {
                    biased;
                    r = step => r,
                    () = self.cancel.cancelled() => Err(Failure::Cancelled { key: key.clone() }),
                }
            } else {
                self.dispatch(node, frame, &key).await
            };
            let elapsed = Some(t0.elapsed().as_secs_f64() * 1000.0);
            match &r {
                Ok(v) => {
                    let e = self.event(EventKind::Completed, &key, node, frame, elapsed, None);
                    // The landing and its event commit together, before anyone hears of it.
                    if let Err(msg) = self.land(&key, hash, Landed::Value(v.to_json()), e, effects)
                    {
                        let failed = self.event(
                            EventKind::Failed,
                            &key,
                            node,
                            frame,
                            elapsed,
                            Some(msg.to_string()),
                        );
                        self.report(failed);
                        return Err(self.fail(codes::STORE, &key, node, msg).into());
                    }
                }
                Err(Failure::Step(err)) => {
                    let e = self.event(
                        EventKind::Failed,
                        &key,
                        node,
                        frame,
                        elapsed,
                        Some(err.message.clone()),
                    );
                    self.report(e);
                }
                Err(Failure::Cancelled { .. }) => {
                    let e = self.event(EventKind::Cancelled, &key, node, frame, elapsed, None);
                    self.report(e);
                }
            }
            r
        })
    }

    /// A step's identity beside its key: a hash of its kind and its source text, so after an
    /// edit (`--resume --force`) a landing is never replayed into a different step that now
    /// has its key.
    pub(crate) fn step_hash(&self, node: &Node) -> String {
        let text = self
            .sources
            .get(node.span.file)
            .and_then(|f| f.text.get(node.span.start as usize..node.span.end as usize))
            .unwrap_or("");
        store::source_hash([node.kind.name(), text].into_iter())
    }

    fn replayed(&self, key: &str, hash: &str) -> Option<Value> {
        self.session
            .replayed(key, hash)
            .map(|v| Value::from_json(&v))
    }

    /// The drop recorded for a fan-out member in an earlier attempt by the fan-out `node`, if
    /// any. (The node's hash is computed only when there is a drop to compare it with.)
    pub(crate) fn dropped(&self, key: &str, node: &Node) -> Option<String> {
        match self.session.landing(key)? {
            (h, Landed::Dropped(e)) => (h == self.step_hash(node)).then_some(e),
            _ => None,
        }
    }

    /// Records a landing with the event that reports it, in one transaction: at once when
    /// `now` (a step with side effects), else with the next commit. The event reaches the
    /// sinks after the commit; a failed write also fails the run at its end.
    pub(crate) fn land(
        &self,
        key: &str,
        hash: String,
        landed: Landed,
        event: Option<Event>,
        now: bool,
    ) -> Result<(), StoreError> {
        self.session.land(key, &hash, landed, event, now)
    }

    /// Forgets the landing at `key` and every landing under it, so the next attempt of a
    /// fan-out item (a retry) runs its whole body again.
    pub(crate) fn forget_under(&self, key: &str) -> Result<(), StoreError> {
        self.session.forget_under(key, true)
    }

    /// Commits everything staged.
    pub(crate) fn flush(&self) -> Result<(), StoreError> {
        self.session.flush()
    }

    /// Persists the spawn count before the agent runs, so a resume counts on from it.
    pub(crate) fn record_spawns(&self, n: u64) -> Result<(), StoreError> {
        self.session.spawns(n)
    }

    fn event(
        &self,
        kind: EventKind,
        key: &str,
        node: &Node,
        frame: &Frame,
        elapsed_ms: Option<f64>,
        error: Option<String>,
    ) -> Option<Event> {
        if !self.session.observed() {
            return None;
        }
        Some(Event {
            kind,
            key: key.to_string(),
            step_kind: node.kind.name(),
            workflow: self
                .program
                .workflow(frame.workflow)
                .map(|w| w.name.clone())
                .unwrap_or_default(),
            at_ms: self.session.elapsed_ms(),
            elapsed_ms,
            error,
            // Only displays read it; the store does not keep it.
            summary: if self.session.displayed() {
                node.summary()
            } else {
                String::new()
            },
            usage: None,
            given: None,
        })
    }

    /// An event that reports nothing landed: the sinks hear of it at once, the store with its
    /// next commit.
    fn report(&self, e: Option<Event>) {
        if let Some(e) = e {
            self.session.report(&e);
        }
    }

    /// Maps a byte range of an expression to a file span.
    pub(crate) fn expr_span(
        &self,
        e: &pipewright_ir::Expr,
        range: std::ops::Range<usize>,
    ) -> pipewright_syntax::Span {
        match self.sources.get(e.span.file) {
            Some(f) => e.span_of(&f.text, range),
            None => e.span,
        }
    }

    pub(crate) fn fail(
        &self,
        code: &'static str,
        key: &str,
        node: &Node,
        message: impl Into<String>,
    ) -> RunError {
        RunError::new(code, key, node.kind.name(), node.span, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_its_pipeline_or_with_a_list_for_input_does_not_start() {
        let empty = Program::default();
        assert_eq!(pick(&empty, None), Err(StartError::NoPipeline));
        assert_eq!(
            pick(&empty, Some("build")),
            Err(StartError::NoSuchPipeline {
                name: "build".into(),
                declared: vec![]
            })
        );
        let e = stores_of(&serde_json::json!([1])).unwrap_err();
        assert_eq!(e, StartError::InputNotAnObject("[1]".into()));
        assert_eq!(
            e.to_string(),
            "the input must be a JSON object (its keys become named stores), got [1]"
        );
    }
}
