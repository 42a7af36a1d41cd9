//! The interpreter over the IR. Regions run their nodes along `Next` edges; fan-outs run
//! their items as concurrent futures on the current task (bounded by `max_parallel`), which
//! needs no `'static` copies of the program and cancels every pending item when dropped.

mod fanout;
mod frame;
mod steps;

use crate::backend::{mock::MockBackend, AgentBackend, BoxFuture};
use crate::cancel::CancelToken;
use crate::failure::{Failure, RunError};
use crate::outcome::{RunOutcome, RunStatus};
use crate::store::{self, Event, EventKind, EventSink, RunStore};
use crate::tools::Tools;
use frame::Frame;
use indexmap::IndexMap;
use pipewright_ir::{Node, Program, Region, WorkflowId};
use pipewright_r1::Value;
use pipewright_syntax::SourceMap;
use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Operator caps (`[safety.spawn]`); 0 means unlimited.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub max_fan_out_depth: u64,
    pub max_spawns: u64,
}

impl Default for Caps {
    fn default() -> Caps {
        Caps {
            max_fan_out_depth: 5,
            max_spawns: 100,
        }
    }
}

pub struct RunOptions {
    /// The workflow to run; `None`: the first pipeline of the first file.
    pub workflow: Option<String>,
    /// The initial named stores: a JSON object, or null for none.
    pub input: serde_json::Value,
    pub backend: Arc<dyn AgentBackend>,
    pub tools: Tools,
    pub caps: Caps,
    /// Where runs are stored (`.pipewright/runs`); `None` runs without a store (no resume).
    pub store_root: Option<PathBuf>,
    /// Resume this run from `store_root`: its input is reused and landed steps are replayed.
    pub resume: Option<String>,
    /// The file name recorded in `state.json` (what `--resume` reloads).
    pub file_label: String,
    pub cancel: CancelToken,
    pub sinks: Vec<Arc<dyn EventSink>>,
    /// The invoker's identity, used by agent steps without `identity:`.
    pub identity: String,
    /// The invoker's tool envelope; agent capabilities are narrowed to it. `None`: every tool.
    pub envelope: Option<Vec<String>>,
    /// `for_each` concurrency when `max_parallel` is omitted (capped by the item count).
    pub default_max_parallel: usize,
}

impl RunOptions {
    /// Defaults: mock backend, built-in tools in `workdir`, default caps, no store.
    pub fn new(workdir: PathBuf) -> RunOptions {
        RunOptions {
            workflow: None,
            input: serde_json::Value::Null,
            backend: Arc::new(MockBackend),
            tools: Tools::new(workdir),
            caps: Caps::default(),
            store_root: None,
            resume: None,
            file_label: String::new(),
            cancel: CancelToken::new(),
            sinks: Vec::new(),
            identity: "pipewright".into(),
            envelope: None,
            default_max_parallel: 8,
        }
    }
}

pub(crate) struct Interp {
    program: Arc<Program>,
    sources: SourceMap,
    backend: Arc<dyn AgentBackend>,
    tools: Tools,
    caps: Caps,
    spawns: AtomicU64,
    cancel: CancelToken,
    /// Every landed step of this run (and, on resume, of the earlier attempt) by key, so a
    /// retry or a resume replays instead of re-running.
    journal: Mutex<HashMap<String, Value>>,
    store: Option<Arc<RunStore>>,
    sinks: Vec<Arc<dyn EventSink>>,
    run_id: String,
    identity: String,
    envelope: Option<Vec<String>>,
    default_max_parallel: usize,
    started: Instant,
}

/// Runs one workflow. `Err` is a setup problem (unknown workflow, bad input, unreadable run
/// store) reported before anything runs; everything after that is in the [`RunOutcome`].
pub async fn run(
    program: Arc<Program>,
    sources: &SourceMap,
    opts: RunOptions,
) -> Result<RunOutcome, String> {
    let mut input = opts.input;
    let mut journal = HashMap::new();
    let run_id = match &opts.resume {
        Some(id) => {
            let root = opts
                .store_root
                .as_ref()
                .ok_or("--resume needs a run store")?;
            let rec = store::load_run(root, id)?;
            input = rec.input;
            journal = rec
                .completed
                .iter()
                .map(|(k, v)| (k.clone(), Value::from_json(v)))
                .collect();
            rec.run_id
        }
        None => store::new_run_id(),
    };
    let wid = match &opts.workflow {
        Some(name) => program.find(name).ok_or_else(|| {
            let names: Vec<&str> = program.workflows.iter().map(|w| w.name.as_str()).collect();
            format!(
                "no pipeline named `{name}` (this file declares: {})",
                names.join(", ")
            )
        })?,
        None if program.workflows.is_empty() => return Err("the file declares no pipeline".into()),
        None => WorkflowId(0),
    };
    let stores = match &input {
        serde_json::Value::Null => Value::Object(IndexMap::new()),
        v @ serde_json::Value::Object(_) => Value::from_json(v),
        other => {
            return Err(format!(
                "the input must be a JSON object (its keys become named stores), got {other}"
            ))
        }
    };
    let workflow = program
        .workflow(wid)
        .ok_or("internal: workflow index out of range")?;
    let wf_name = workflow.name.clone();
    let store = match &opts.store_root {
        Some(root) => {
            let mut meta = IndexMap::new();
            meta.insert("version".into(), json!(store::STATE_VERSION));
            meta.insert("run_id".into(), json!(run_id));
            meta.insert("status".into(), json!("running"));
            meta.insert("file".into(), json!(opts.file_label));
            meta.insert("workflow".into(), json!(wf_name));
            meta.insert("input".into(), input.clone());
            meta.insert(
                "source_hash".into(),
                json!(store::source_hash(sources.files().map(|f| &*f.text))),
            );
            let completed = journal
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect();
            Some(Arc::new(RunStore::open(
                store::run_dir(root, &run_id),
                &run_id,
                meta,
                completed,
            )?))
        }
        None => None,
    };
    let interp = Interp {
        program: program.clone(),
        sources: sources.clone(),
        backend: opts.backend,
        tools: opts.tools,
        caps: opts.caps,
        spawns: AtomicU64::new(0),
        cancel: opts.cancel,
        journal: Mutex::new(journal),
        store: store.clone(),
        sinks: opts.sinks,
        run_id: run_id.clone(),
        identity: opts.identity,
        envelope: opts.envelope,
        default_max_parallel: opts.default_max_parallel.max(1),
        started: Instant::now(),
    };
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
    if let Some(s) = &store {
        s.set_meta("status", json!(outcome.status.name()));
        s.set_meta("output", outcome.output.to_json());
        s.set_meta("stores", outcome.stores.to_json());
        if let Some(e) = &outcome.error {
            s.set_meta(
                "error",
                json!({"code": e.code, "key": e.key, "message": e.message}),
            );
        }
        if let Some(k) = &outcome.cancelled_at {
            s.set_meta("cancelled_at", json!(k));
        }
        outcome.run_dir = Some(s.dir().to_path_buf());
        if let Err(e) = s.close() {
            outcome.store_error = Some(e);
        }
    }
    Ok(outcome)
}

pub(crate) fn child_key(prefix: &str, j: usize) -> String {
    if prefix.is_empty() {
        j.to_string()
    } else {
        format!("{prefix}.{j}")
    }
}

impl Interp {
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
            if let Some(v) = self.replayed(&key) {
                self.emit(EventKind::Replayed, &key, node, frame, None, None);
                return Ok(v);
            }
            let t0 = Instant::now();
            self.emit(EventKind::Started, &key, node, frame, None, None);
            let r = self.dispatch(node, frame, &key).await;
            let elapsed = Some(t0.elapsed().as_secs_f64() * 1000.0);
            match &r {
                Ok(v) => {
                    self.land(&key, v);
                    self.emit(EventKind::Completed, &key, node, frame, elapsed, None);
                }
                Err(Failure::Step(e)) => self.emit(
                    EventKind::Failed,
                    &key,
                    node,
                    frame,
                    elapsed,
                    Some(e.message.clone()),
                ),
                Err(Failure::Cancelled { .. }) => {
                    self.emit(EventKind::Cancelled, &key, node, frame, elapsed, None)
                }
            }
            r
        })
    }

    fn replayed(&self, key: &str) -> Option<Value> {
        self.journal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    pub(crate) fn land(&self, key: &str, v: &Value) {
        self.journal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), v.clone());
        if let Some(s) = &self.store {
            s.land(key, v.to_json());
        }
    }

    /// Drops a landing so a retry runs the step again (an error-flagged tool result landed
    /// as a value but fails its fan-out item).
    pub(crate) fn forget(&self, key: &str) {
        self.journal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    fn emit(
        &self,
        kind: EventKind,
        key: &str,
        node: &Node,
        frame: &Frame,
        elapsed_ms: Option<f64>,
        error: Option<String>,
    ) {
        if self.sinks.is_empty() && self.store.is_none() {
            return;
        }
        let e = Event {
            kind,
            key: key.to_string(),
            step_kind: node.kind.name(),
            workflow: self
                .program
                .workflow(frame.workflow)
                .map(|w| w.name.clone())
                .unwrap_or_default(),
            at_ms: self.started.elapsed().as_secs_f64() * 1000.0,
            elapsed_ms,
            error,
            summary: node.summary(),
        };
        if let Some(s) = &self.store {
            s.event(&e);
        }
        for s in &self.sinks {
            s.event(&e);
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
