//! Fan-out members run apart from their run (issue 24's seam, `pipewright_runtime::members`):
//! sent as JSON to a runner that runs each under the run's owner, in the run's store, as
//! another worker of an engine would. The run comes to what it comes to when its members run
//! in its own process: values, drops, failures, budgets, and a resume replays what members
//! landed.

use crate::run::common::*;
use pipewright_dialect::Member;
use pipewright_runtime::backend::BoxFuture;
use pipewright_runtime::members::{MemberCall, MemberReport, Members};
use pipewright_runtime::store::{RunLock, Store};
use pipewright_runtime::usage::{Budgets, Meter, Metered};
use pipewright_runtime::RunOptions;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Joins the run's owner: records without a lock of its own (the run holds it).
struct Joined;
impl RunLock for Joined {}

/// Runs each member as a worker of an engine would: from the call as it travels (JSON), with
/// options of its own, in the run's store.
struct Elsewhere {
    text: String,
    dir: PathBuf,
    run_id: String,
    store: Arc<dyn Store>,
    budgets: Budgets,
    sent: Arc<AtomicUsize>,
}

impl Members for Elsewhere {
    fn run(&self, call: MemberCall) -> BoxFuture<'static, MemberReport> {
        self.sent.fetch_add(1, Ordering::SeqCst);
        let wire = serde_json::to_string(&call).unwrap_or_default();
        let (text, dir, run_id, store, budgets) = (
            self.text.clone(),
            self.dir.clone(),
            self.run_id.clone(),
            self.store.clone(),
            self.budgets,
        );
        Box::pin(async move {
            let call: MemberCall =
                serde_json::from_str(&wire).unwrap_or_else(|e| panic!("{e}: {wire}"));
            let (program, sources) = load(&text);
            let mut o = metered(opts(&dir), budgets);
            o.store = Some(store);
            let member = Member {
                run_id,
                call,
                lock: Box::new(Joined),
            };
            let report = pipewright_pipeline::run::member(program, &sources, o, member).await;
            // And back, as it travels.
            let wire = serde_json::to_string(&report).unwrap_or_default();
            serde_json::from_str(&wire).unwrap_or_else(|e| panic!("{e}: {wire}"))
        })
    }
}

fn metered(mut o: RunOptions, budgets: Budgets) -> RunOptions {
    let meter = Arc::new(Meter::new(budgets, o.cancel.clone()));
    o.backend = Arc::new(Metered::new(o.backend.clone(), meter.clone()));
    o.meter = meter;
    o
}

/// The report, without what differs from run to run.
fn settled(mut v: serde_json::Value) -> serde_json::Value {
    v["run_id"] = serde_json::Value::Null;
    if let Some(u) = v.get_mut("usage") {
        u["wall_ms"] = serde_json::Value::Null;
        if let Some(steps) = u["steps"].as_object_mut() {
            for s in steps.values_mut() {
                s["wall_ms"] = serde_json::Value::Null;
            }
        }
    }
    v
}

/// Runs `text` with a store, its members sent elsewhere; the report and how many were sent.
fn with_members(text: &str, budgets: Budgets) -> (serde_json::Value, usize, tempfile::TempDir) {
    let d = tempdir();
    let store = store_at(d.path());
    let run_id = pipewright_runtime::store::new_run_id();
    let sent = Arc::new(AtomicUsize::new(0));
    let mut o = metered(opts(d.path()), budgets);
    o.store = Some(store.clone());
    o.run_id = Some(run_id.clone());
    o.members = Some(Arc::new(Elsewhere {
        text: text.to_string(),
        dir: d.path().to_path_buf(),
        run_id,
        store,
        budgets,
        sent: sent.clone(),
    }));
    let v = run_json(text, o);
    (settled(v), sent.load(Ordering::SeqCst), d)
}

fn here(text: &str, budgets: Budgets) -> serde_json::Value {
    let d = tempdir();
    let mut o = metered(opts(d.path()), budgets);
    o.store = Some(store_at(d.path()));
    settled(run_json(text, o))
}

const FAN_OUTS: &str = r#"pipeline: p
steps:
  - transform: {value: "[1, 2, 0, 4]", output: xs}
  - for_each:
      over: ctx.xs
      max_parallel: 2
      on_error: continue
      do: {call: {pipeline: quotient, pass: {n: item}}}
      collect: {transform: {value: "pipe"}}
      output: quotients
  - parallel:
      on_error: continue
      branches:
        one: {shell: {command: "echo one"}}
        two: {transform: {value: "1 / 0"}}
        three: {transform: {value: "ctx.quotients"}}
      collect: {transform: {value: "pipe"}}
---
pipeline: quotient
steps:
  - shell: {command: "echo quotient"}
  - transform: {value: "ctx.n * 10", output: tens}
  - transform: {value: "100 / ctx.n + ctx.tens"}
"#;

/// Values, drops under `continue`, a failed branch: as when the members run in the run. Only
/// members that reach outside the run are sent (a pure one runs where the run is).
#[test]
fn members_run_elsewhere_come_to_what_they_come_to_here() {
    let (elsewhere, sent, _d) = with_members(FAN_OUTS, Budgets::default());
    assert_eq!(sent, 5, "four items and the shell branch were sent");
    assert_eq!(elsewhere, here(FAN_OUTS, Budgets::default()));
    assert_eq!(elsewhere["status"], "ok", "{elsewhere}");
    assert_eq!(
        elsewhere["stores"]["quotients"],
        serde_json::json!([110, 70, 65])
    );
}

const ABORTS: &str = r#"pipeline: p
steps:
  - transform: {value: "['0', '2', '0']", output: xs}
  - for_each:
      over: ctx.xs
      max_parallel: 1
      on_error: abort
      do: {shell: {command: !expr "['sh', '-c', 'echo no >&2; exit $1', 'x', item]"}}
      collect: {transform: {value: "pipe"}}
"#;

/// A member's failure comes back whole: the run fails with the diagnostic it fails with here.
#[test]
fn a_member_that_fails_elsewhere_fails_the_run_as_here() {
    let (elsewhere, sent, _d) = with_members(ABORTS, Budgets::default());
    assert_eq!(sent, 2, "the run stopped at the second item");
    assert_eq!(elsewhere["status"], "failed", "{elsewhere}");
    assert_eq!(elsewhere["error"]["code"], "PW0806", "{elsewhere}");
    assert_eq!(elsewhere, here(ABORTS, Budgets::default()));
}

const PURE: &str = r#"pipeline: p
steps:
  - transform: {value: "[1, 2, 3]", output: xs}
  - for_each:
      over: ctx.xs
      on_error: abort
      do: {call: {pipeline: twice, pass: {n: item}}}
      collect: {transform: {value: "pipe"}}
---
pipeline: twice
steps:
  - transform: {value: "ctx.n * 2"}
"#;

/// A fan-out whose members cannot reach outside the run keeps them: nothing is sent.
#[test]
fn pure_members_are_not_sent() {
    let (elsewhere, sent, _d) = with_members(PURE, Budgets::default());
    assert_eq!(sent, 0);
    assert_eq!(
        elsewhere["output"],
        serde_json::json!([2, 4, 6]),
        "{elsewhere}"
    );
}

const AGENTS: &str = r#"pipeline: p
steps:
  - transform: {value: "['a', 'b', 'c', 'd']", output: xs}
  - for_each:
      over: ctx.xs
      max_parallel: 1
      on_error: abort
      do: {agent: {prompt: "say {item}"}}
      collect: {transform: {value: "pipe"}}
"#;

/// A member's agent calls count against the run's budget, and the run reports them: with one
/// member at a time, `--max-agent-calls` stops the run where it stops here.
#[test]
fn members_elsewhere_spend_the_runs_budget() {
    let budgets = Budgets {
        max_agent_calls: Some(2),
        ..Budgets::default()
    };
    let (elsewhere, _, d) = with_members(AGENTS, budgets);
    assert_eq!(elsewhere["status"], "stopped", "{elsewhere}");
    assert_eq!(elsewhere["usage"]["agent_calls"], 2, "{elsewhere}");
    assert_eq!(elsewhere, here(AGENTS, budgets));
    // What the members spent is recorded with the run (a resume counts on from it).
    let (id, _) = only_run(d.path()).unwrap_or_else(|| panic!("the run"));
    let rec = store_at(d.path())
        .load_run(&id)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec.usage.len(), 2, "{:?}", rec.usage);
    let unbounded = with_members(AGENTS, Budgets::default()).0;
    assert_eq!(unbounded["usage"]["agent_calls"], 4, "{unbounded}");
}

const RESUMED: &str = r#"pipeline: p
steps:
  - transform: {value: "['a', 'b']", output: xs}
  - for_each:
      over: ctx.xs
      max_parallel: 1
      on_error: abort
      do: {call: {pipeline: two, pass: {x: item}}}
      collect: {transform: {value: "count(pipe)"}}
---
pipeline: two
steps:
  - shell: {command: !expr "['sh', '-c', 'echo $1 >> log', 'x', ctx.x]"}
  - shell: {command: "test -f ok && echo done", on_error: abort}
"#;

/// A resumed run's members replay, where they run, the steps they landed in its earlier
/// attempt: only the step that failed runs again.
#[test]
fn a_resumed_runs_members_replay_what_they_landed() {
    let d = tempdir();
    let store = store_at(d.path());
    let attempt = |resume: Option<String>| {
        let run_id = resume
            .clone()
            .unwrap_or_else(pipewright_runtime::store::new_run_id);
        let mut o = opts(d.path());
        o.store = Some(store.clone());
        o.run_id = Some(run_id.clone());
        o.resume = resume;
        o.members = Some(Arc::new(Elsewhere {
            text: RESUMED.to_string(),
            dir: d.path().to_path_buf(),
            run_id: run_id.clone(),
            store: store.clone(),
            budgets: Budgets::default(),
            sent: Arc::new(AtomicUsize::new(0)),
        }));
        (run_id, run_json(RESUMED, o))
    };
    let (id, first) = attempt(None);
    assert_eq!(first["status"], "failed", "{first}");
    std::fs::write(d.path().join("ok"), "").unwrap_or_else(|e| panic!("{e}"));
    let (_, second) = attempt(Some(id));
    assert_eq!(second["status"], "ok", "{second}");
    assert_eq!(second["output"], 2, "{second}");
    let log = std::fs::read_to_string(d.path().join("log")).unwrap_or_default();
    assert_eq!(log, "a\nb\n");
}
