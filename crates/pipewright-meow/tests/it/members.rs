//! A MEOW run's fan-out members run apart from it (issue 24's seam,
//! `pipewright_runtime::members`): each sent as JSON to a runner that runs it under the run's
//! owner, in the run's store, as another worker of an engine would. The run's report is the
//! one it gives when nothing is sent; what is sent is what docs/engines.md ("MEOW members")
//! says; a member that cannot run fails its steps; a resume replays what members landed.

use pipewright_dialect::Member;
use pipewright_runtime::backend::BoxFuture;
use pipewright_runtime::members::{MemberCall, MemberReport, MemberResult, Members};
use pipewright_runtime::store::{RunLock, SqliteStore, Store};
use pipewright_runtime::RunOptions;
use pipewright_syntax::SourceMap;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Joins the run's owner: records without a lock of its own (the run holds it).
struct Joined;
impl RunLock for Joined {}

/// `text`, checked and lowered as the file at `path` (`members.meow.toml` when `None`).
fn load(
    text: &str,
    path: Option<&Path>,
) -> (
    Arc<pipewright_ir::Program>,
    Arc<pipewright_meow::ast::Module>,
    SourceMap,
) {
    let path = path.unwrap_or(Path::new("members.meow.toml"));
    let mut sources = SourceMap::new();
    let file = sources.add(path.display().to_string(), text);
    let (program, module) = pipewright_meow::check_and_lower(file, path, text)
        .unwrap_or_else(|d| panic!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>()));
    (Arc::new(program), Arc::new(module), sources)
}

/// What the runner does with a member.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Run,
    /// Run with the run's budget: at most two agent calls.
    Budgeted,
    /// No worker could run it.
    Broken,
    /// Its worker let it go before it ran.
    Cancelled,
    /// Its worker dies once its step `b` has started (the member is stopped there), and the
    /// engine retries it.
    Retried,
}

/// Runs each member as a worker of an engine would: from the call as it travels (JSON), with
/// options of its own, in the run's store. `answer` says what becomes of a member by its key.
struct Elsewhere {
    text: String,
    /// Where the run's file is, when it names others.
    source: Option<PathBuf>,
    dir: PathBuf,
    run_id: String,
    store: Arc<dyn Store>,
    sent: Arc<Mutex<Vec<String>>>,
    answer: fn(&str) -> Answer,
}

impl Members for Elsewhere {
    fn run(&self, call: MemberCall) -> BoxFuture<'static, MemberReport> {
        self.sent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call.key.clone());
        let answer = (self.answer)(&call.key);
        let wire = serde_json::to_string(&call).unwrap_or_default();
        let source = self.source.clone();
        let (text, dir, run_id, store) = (
            self.text.clone(),
            self.dir.clone(),
            self.run_id.clone(),
            self.store.clone(),
        );
        Box::pin(async move {
            let call: MemberCall =
                serde_json::from_str(&wire).unwrap_or_else(|e| panic!("{e}: {wire}"));
            let report = match answer {
                Answer::Broken => MemberReport::broken("no worker took it"),
                Answer::Cancelled => MemberReport {
                    result: MemberResult::Cancelled {
                        key: call.key.clone(),
                    },
                    usage: Vec::new(),
                },
                Answer::Run => {
                    run_member(&text, source.as_deref(), &dir, &run_id, &store, call, None).await
                }
                Answer::Budgeted => {
                    let o = two_calls(RunOptions::new(dir.clone()));
                    run_member(
                        &text,
                        source.as_deref(),
                        &dir,
                        &run_id,
                        &store,
                        call,
                        Some(o),
                    )
                    .await
                }
                Answer::Retried => {
                    let o = RunOptions::new(dir.clone());
                    let cancel = o.cancel.clone();
                    let log = dir.join("items.log");
                    let started = format!("b-{}-start", call.key.rsplit('.').next().unwrap_or(""));
                    let first = run_member(
                        &text,
                        source.as_deref(),
                        &dir,
                        &run_id,
                        &store,
                        call.clone(),
                        Some(o),
                    );
                    let kill = async {
                        while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains(&started)) {
                            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        }
                        cancel.cancel();
                    };
                    let (first, ()) = tokio::join!(first, kill);
                    assert!(
                        matches!(first.result, MemberResult::Cancelled { .. }),
                        "{first:?}"
                    );
                    run_member(&text, source.as_deref(), &dir, &run_id, &store, call, None).await
                }
            };
            // And back, as it travels.
            let wire = serde_json::to_string(&report).unwrap_or_default();
            serde_json::from_str(&wire).unwrap_or_else(|e| panic!("{e}: {wire}"))
        })
    }
}

/// Runs a member as a worker does, with `o` (fresh options when `None`).
async fn run_member(
    text: &str,
    source: Option<&Path>,
    dir: &Path,
    run_id: &str,
    store: &Arc<dyn Store>,
    call: MemberCall,
    o: Option<RunOptions>,
) -> MemberReport {
    let (program, module, sources) = load(text, source);
    let mut o = o.unwrap_or_else(|| RunOptions::new(dir.to_path_buf()));
    o.source_path = source.map(Path::to_path_buf);
    o.store = Some(store.clone());
    metered(&mut o);
    let member = Member {
        run_id: run_id.to_string(),
        call,
        lock: Box::new(Joined),
    };
    pipewright_meow::run::member(program, module, &sources, o, member).await
}

/// `o` with a budget of two agent calls.
fn two_calls(mut o: RunOptions) -> RunOptions {
    let budgets = pipewright_runtime::usage::Budgets {
        max_agent_calls: Some(2),
        ..Default::default()
    };
    o.meter = Arc::new(pipewright_runtime::usage::Meter::new(
        budgets,
        o.cancel.clone(),
    ));
    o
}

/// Agent calls counted in `o`'s meter, as `pipewright run` counts them.
fn metered(o: &mut RunOptions) {
    o.backend = Arc::new(pipewright_runtime::usage::Metered::new(
        o.backend.clone(),
        o.meter.clone(),
    ));
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn store_at(dir: &Path) -> Arc<dyn Store> {
    Arc::new(SqliteStore::open(&dir.join("runs.db")).unwrap_or_else(|e| panic!("{e}")))
}

/// Runs `text` with `o`: the report, its run id and what its agent calls took blanked.
fn run(text: &str, o: RunOptions) -> Value {
    let (program, module, sources) = load(text, o.source_path.as_deref());
    let out = rt()
        .block_on(pipewright_meow::run::run(program, module, &sources, o))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut v = out.to_json(&sources);
    v["run_id"] = Value::Null;
    if v["usage"].is_object() {
        v["usage"]["wall_ms"] = Value::Null;
        for s in v["usage"]["steps"]
            .as_object_mut()
            .into_iter()
            .flat_map(|m| m.values_mut())
        {
            s["wall_ms"] = Value::Null;
        }
    }
    v
}

/// A run of `text` whose members run elsewhere: its report, the keys sent, and its run id.
fn with_members(
    text: &str,
    dir: &Path,
    resume: Option<&str>,
    answer: fn(&str) -> Answer,
) -> (Value, Vec<String>, String) {
    let store = store_at(dir);
    let run_id = resume
        .map(str::to_string)
        .unwrap_or_else(pipewright_runtime::store::new_run_id);
    let sent = Arc::new(Mutex::new(Vec::new()));
    let mut o = RunOptions::new(dir.to_path_buf());
    o.store = Some(store.clone());
    metered(&mut o);
    match resume {
        Some(id) => o.resume = Some(id.to_string()),
        None => o.run_id = Some(run_id.clone()),
    }
    o.members = Some(Arc::new(Elsewhere {
        text: text.to_string(),
        source: None,
        dir: dir.to_path_buf(),
        run_id: run_id.clone(),
        store,
        sent: sent.clone(),
        answer,
    }));
    let v = run(text, o);
    let mut sent = sent.lock().unwrap_or_else(|p| p.into_inner()).clone();
    sent.sort();
    (v, sent, run_id)
}

fn here(text: &str, dir: &Path) -> Value {
    let mut o = RunOptions::new(dir.to_path_buf());
    o.store = Some(store_at(dir));
    metered(&mut o);
    run(text, o)
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

/// Report `v` of a run in directory `d`, with `d` written `DIR`: agents work where they were
/// spawned, under each run's own directory.
fn in_dir(v: &Value, d: &Path) -> Value {
    let text = v.to_string().replace(&d.display().to_string(), "DIR");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Iterations of shell steps (a failure under `continue`, a failure that fails the
/// iteration, a dependent skipped), `max_concurrent`, `join = false`, a wildcard need on the
/// iterations, steps side by side reading another's output, an iteration with an agent step
/// (offline), a sequential foreach; and what stays in the run: a lone step's chain.
const MODULE: &str = r#"[main]
[[main.steps]]
id = "setup"
executor = "shell"
command = "echo pre"
[main.steps.outputs]
tag = { source = "stdout" }

[[main.steps]]
id = "each"
executor = "foreach"
needs = ["setup"]
items = "[0, 1, 2, 3, 4, 5]"
item_var = "n"
index_var = "i"
template = ".work"
max_concurrent = 2
variables = { tag = "{{setup.outputs.tag}}" }

[[main.steps]]
id = "loose"
executor = "foreach"
items = "[1, 2]"
item_var = "x"
join = false
template = ".tick"

[[main.steps]]
id = "seq"
executor = "foreach"
items = "[1, 2]"
item_var = "x"
parallel = false
template = ".tick"

[[main.steps]]
id = "asks"
executor = "foreach"
items = "[1]"
item_var = "x"
template = ".ask"

[[main.steps]]
id = "left"
executor = "shell"
needs = ["setup"]
command = "echo left-{{setup.outputs.tag}}"
[main.steps.outputs]
said = { source = "stdout" }

[[main.steps]]
id = "right"
executor = "shell"
needs = ["setup"]
command = "echo right >> items.log; echo right"
[main.steps.outputs]
said = { source = "stdout" }

[[main.steps]]
id = "works"
executor = "shell"
needs = ["each.*.a"]
command = "echo works"

[[main.steps]]
id = "after"
executor = "shell"
needs = ["each", "left", "right"]
command = "echo {{left.outputs.said}}"
[main.steps.outputs]
said = { source = "stdout" }

[work]
[work.variables]
tag = { required = true }

[[work.steps]]
id = "a"
executor = "shell"
command = "echo a-{{n}} >> items.log; echo {{tag}}-{{n}}"
[work.steps.outputs]
got = { source = "stdout" }

[[work.steps]]
id = "b"
executor = "shell"
needs = ["a"]
on_error = "continue"
command = "test {{n}} != 1 || { echo one >&2; exit 3; }; echo {{a.outputs.got}}-{{i}}"
[work.steps.outputs]
said = { source = "stdout" }

[[work.steps]]
id = "c"
executor = "shell"
needs = ["b"]
command = "test {{n}} != 4"

[[work.steps]]
id = "d"
executor = "shell"
needs = ["c"]
command = "echo d-{{n}}"

[tick]
[[tick.steps]]
id = "t"
executor = "shell"
command = "echo {{x}}"

[ask]
[[ask.steps]]
id = "q"
executor = "agent"
agent = "a"
prompt = "Item {{x}}"
"#;

/// The report a run gives when its members run elsewhere is the one it gives when nothing is
/// sent, and what is sent is what runs side by side and alone.
#[test]
fn members_run_elsewhere_come_to_what_they_come_to_here() {
    let d = tempdir();
    let (there, sent, _) = with_members(MODULE, d.path(), None, |_| Answer::Run);
    let here = here(MODULE, tempdir().path());
    assert_eq!(there, here);
    assert_eq!(there["status"], "failed", "{there}");
    assert_eq!(there["steps"]["each.1.b"], "done", "{there}");
    assert_eq!(there["stores"]["each.1.b"]["error"], "one", "{there}");
    assert_eq!(there["stores"]["each.3.b"]["said"], "pre-3-3", "{there}");
    assert_eq!(there["steps"]["each.4.c"], "failed", "{there}");
    assert_eq!(there["steps"]["each.4.d"], "skipped", "{there}");
    assert_eq!(there["steps"]["each"], "failed", "{there}");
    assert_eq!(there["steps"]["after"], "skipped", "{there}");
    assert_eq!(there["steps"]["works"], "done", "{there}");
    assert_eq!(there["stores"]["left"]["said"], "left-pre", "{there}");
    let mut want: Vec<String> = (0..6).map(|n| format!("each.{n}")).collect();
    want.extend(
        [
            "loose.0", "loose.1", "seq.0", "seq.1", "left", "right", "asks.0",
        ]
        .map(String::from),
    );
    // `works` runs alone when the last iteration it waits for ends with nothing else in
    // flight, else beside what is.
    let sent: Vec<String> = sent.into_iter().filter(|k| k != "works").collect();
    want.sort();
    assert_eq!(sent, want);
    // Each step ran once, where it was sent.
    let log = std::fs::read_to_string(d.path().join("items.log")).unwrap_or_default();
    let mut lines: Vec<&str> = log.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["a-0", "a-1", "a-2", "a-3", "a-4", "a-5", "right"],
        "{log}"
    );
}

/// Iterations that spawn an agent of their own, ask it and kill it; iterations whose second
/// step asks an agent the run spawned; a last step that asks it too.
const AGENTS: &str = r#"[main]
[[main.steps]]
id = "lead"
executor = "spawn"
agent = "lead"

[[main.steps]]
id = "each"
executor = "foreach"
needs = ["lead"]
items = "[0, 1, 2, 3]"
item_var = "n"
template = ".own"

[[main.steps]]
id = "mixed"
executor = "foreach"
needs = ["each"]
items = "[0, 1, 2]"
item_var = "n"
template = ".mixed"

[[main.steps]]
id = "review"
executor = "agent"
agent = "lead"
needs = ["mixed"]
prompt = "Review"
[main.steps.outputs]
verdict = { required = true, type = "string" }

[own]
[[own.steps]]
id = "up"
executor = "spawn"
agent = "w{{n}}"

[[own.steps]]
id = "ask"
executor = "agent"
agent = "w{{n}}"
needs = ["up"]
prompt = "Item {{n}}"
[own.steps.outputs]
answer = { required = true, type = "string" }

[[own.steps]]
id = "log"
executor = "shell"
needs = ["ask"]
command = "echo own-{{n}} >> items.log"

[[own.steps]]
id = "down"
executor = "kill"
agent = "w{{n}}"
needs = ["log"]

[mixed]
[[mixed.steps]]
id = "s"
executor = "shell"
command = "echo mixed-{{n}} >> items.log"

[[mixed.steps]]
id = "q"
executor = "agent"
agent = "lead"
needs = ["s"]
prompt = "Mixed {{n}}"
[mixed.steps.outputs]
answer = { required = true, type = "string" }
"#;

/// Offline, iterations with agent, spawn and kill steps go with the agents they name. An
/// iteration that names an agent another one has taken runs in the run instead, its agent
/// step waiting for the agent to be back; the report is the one a run that sends nothing gives.
#[test]
fn iterations_go_with_their_agents_and_wait_for_one_taken() {
    let (d, elsewhere) = (tempdir(), tempdir());
    let (there, sent, _) = with_members(AGENTS, d.path(), None, |_| Answer::Run);
    let here = here(AGENTS, elsewhere.path());
    // A spawn's output names its working directory: each run's own project.
    let project = |v: &Value, dir: &Path| {
        let text = v
            .to_string()
            .replace(&dir.display().to_string(), "[project]");
        serde_json::from_str::<Value>(&text).unwrap_or_else(|e| panic!("{e}"))
    };
    let there = project(&there, d.path());
    assert_eq!(there, project(&here, elsewhere.path()));
    assert_eq!(
        there["stores"]["each.2.up"]["workdir"], "[project]",
        "{there}"
    );
    // The calls made in members count in the run's usage.
    assert_eq!(there["usage"]["agent_calls"], 8, "{there}");
    assert_eq!(
        there["usage"]["steps"]["each.3.ask"]["agent_calls"], 1,
        "{there}"
    );
    assert_eq!(there["status"], "ok", "{there}");
    assert_eq!(there["steps"]["each.3.down"], "done", "{there}");
    assert_eq!(there["steps"]["mixed.2.q"], "done", "{there}");
    assert_eq!(there["steps"]["review"], "done", "{there}");
    // The first `mixed` iteration took `lead`; the others, which name it too, stayed.
    assert_eq!(sent, ["each.0", "each.1", "each.2", "each.3", "mixed.0"]);
    let log = std::fs::read_to_string(d.path().join("items.log")).unwrap_or_default();
    let mut lines: Vec<&str> = log.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["mixed-0", "mixed-1", "mixed-2", "own-0", "own-1", "own-2", "own-3"],
        "{log}"
    );
}

/// A member that a budget stops before an agent call stops the run, as the budget stops a
/// run that reaches it itself: the run is `stopped`, its error names the budget.
#[test]
fn a_member_stopped_by_a_budget_stops_the_run() {
    let d = tempdir();
    let store = store_at(d.path());
    let run_id = pipewright_runtime::store::new_run_id();
    let mut o = two_calls(RunOptions::new(d.path().to_path_buf()));
    o.store = Some(store.clone());
    o.run_id = Some(run_id.clone());
    metered(&mut o);
    o.members = Some(Arc::new(Elsewhere {
        text: AGENTS.to_string(),
        source: None,
        dir: d.path().to_path_buf(),
        run_id,
        store,
        sent: Arc::default(),
        answer: |_| Answer::Budgeted,
    }));
    let v = run(AGENTS, o);
    assert_eq!(v["status"], "stopped", "{v}");
    let error = v["error"]["message"].as_str().unwrap_or_default();
    assert!(error.contains("agent call"), "{v}");
    assert_eq!(v["steps"]["review"], "pending", "{v}");
}

/// A foreach written in another file than the run's sends its iterations too, naming their
/// template by its file from the project's root; the report is a local run's.
#[test]
fn a_foreach_of_another_file_sends_its_iterations() {
    let main = "[main]\n[[main.steps]]\nid = \"outer\"\nexecutor = \"foreach\"\nitems = \"[1]\"\nitem_var = \"x\"\ntemplate = \"./lib/steps.meow.toml#outer\"\n";
    let lib = r#"[outer]
[[outer.steps]]
id = "each"
executor = "foreach"
items = "[0, 1, 2]"
item_var = "n"
template = ".work"

[work]
[[work.steps]]
id = "a"
executor = "shell"
command = "echo lib-{{n}} >> items.log; echo {{n}}"
[work.steps.outputs]
said = { source = "stdout" }
"#;
    let files = |dir: &Path| {
        std::fs::create_dir_all(dir.join("lib")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.join("lib/steps.meow.toml"), lib).unwrap_or_else(|e| panic!("{e}"));
        let root = dir.join("main.meow.toml");
        std::fs::write(&root, main).unwrap_or_else(|e| panic!("{e}"));
        root
    };
    let (d, elsewhere) = (tempdir(), tempdir());
    let root = files(d.path());
    let store = store_at(d.path());
    let run_id = pipewright_runtime::store::new_run_id();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let mut o = RunOptions::new(d.path().to_path_buf());
    o.store = Some(store.clone());
    o.run_id = Some(run_id.clone());
    o.source_path = Some(root.clone());
    o.members = Some(Arc::new(Elsewhere {
        text: main.to_string(),
        source: Some(root),
        dir: d.path().to_path_buf(),
        run_id,
        store,
        sent: sent.clone(),
        answer: |_| Answer::Run,
    }));
    let there = run(main, o);
    let mut o = RunOptions::new(elsewhere.path().to_path_buf());
    o.source_path = Some(files(elsewhere.path()));
    let here = run(main, o);
    assert_eq!(there, here);
    assert_eq!(there["status"], "ok", "{there}");
    assert_eq!(there["stores"]["outer.0.each.2.a"]["said"], "2", "{there}");
    let mut sent = sent.lock().unwrap_or_else(|p| p.into_inner()).clone();
    sent.sort();
    assert_eq!(sent, ["outer.0.each.0", "outer.0.each.1", "outer.0.each.2"]);
    let log = std::fs::read_to_string(d.path().join("items.log")).unwrap_or_default();
    let mut lines: Vec<&str> = log.lines().collect();
    lines.sort();
    assert_eq!(lines, ["lib-0", "lib-1", "lib-2"], "{log}");
}

/// A sequential foreach's iterations are sent one at a time: each once the whole previous one
/// has ended, and the report is a local run's.
#[test]
fn a_sequential_foreach_sends_one_iteration_at_a_time() {
    const SEQ: &str = r#"[main]
[[main.steps]]
id = "seq"
executor = "foreach"
items = "[0, 1, 2]"
item_var = "n"
parallel = false
template = ".two"

[two]
[[two.steps]]
id = "a"
executor = "shell"
command = "echo start-{{n}} >> order.log; sleep 0.05"

[[two.steps]]
id = "b"
executor = "shell"
needs = ["a"]
command = "sleep 0.05; echo end-{{n}} >> order.log"
"#;
    let d = tempdir();
    let (there, sent, _) = with_members(SEQ, d.path(), None, |_| Answer::Run);
    assert_eq!(there, here(SEQ, tempdir().path()));
    assert_eq!(sent, ["seq.0", "seq.1", "seq.2"]);
    let log = std::fs::read_to_string(d.path().join("order.log")).unwrap_or_default();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        ["start-0", "end-0", "start-1", "end-1", "start-2", "end-2"],
        "{log}"
    );
}

/// A member no worker could run fails the steps it held: the first with why, the rest
/// skipped after it; the run fails so.
#[test]
fn a_member_that_cannot_run_fails_its_steps() {
    let d = tempdir();
    let (v, _, _) = with_members(MODULE, d.path(), None, |key| match key {
        "each.2" => Answer::Broken,
        _ => Answer::Run,
    });
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["steps"]["each.2.a"], "failed", "{v}");
    assert_eq!(v["steps"]["each.2.b"], "skipped", "{v}");
    assert_eq!(v["steps"]["each.3.d"], "done", "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("iteration each.2 could not run: no worker took it"),
        "{v}"
    );
}

/// A member its worker let go stops the run `cancelled`; the resume replays the iterations
/// that landed whole (not sent again) and sends the rest.
#[test]
fn a_cancelled_member_stops_the_run_and_the_resume_sends_only_what_did_not_land() {
    let text = r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[0, 1, 2, 3]"
item_var = "n"
template = ".one"
max_concurrent = 1

[one]
[[one.steps]]
id = "a"
executor = "shell"
command = "echo a-{{n}} >> items.log"

[[one.steps]]
id = "b"
executor = "shell"
needs = ["a"]
command = "echo b-{{n}} >> items.log; echo {{n}}"
[one.steps.outputs]
n = { source = "stdout" }
"#;
    let d = tempdir();
    let (v, sent, id) = with_members(text, d.path(), None, |key| match key {
        "each.2" => Answer::Cancelled,
        _ => Answer::Run,
    });
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(v["steps"]["each.2.a"], "pending", "{v}");
    assert_eq!(sent, ["each.0", "each.1", "each.2"]);
    let (v, sent, _) = with_members(text, d.path(), Some(&id), |_| Answer::Run);
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["stores"]["each.3.b"]["n"], "3", "{v}");
    assert_eq!(sent, ["each.2", "each.3"]);
    let log = std::fs::read_to_string(d.path().join("items.log")).unwrap_or_default();
    assert_eq!(
        log, "a-0\nb-0\na-1\nb-1\na-2\nb-2\na-3\nb-3\n",
        "every step ran once"
    );
}

/// A member retried after its worker died replays the steps it landed and runs the rest: only
/// the step in flight ran twice, and the report is a local run's.
#[test]
fn a_retried_member_replays_what_it_landed() {
    let text = r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[0, 1, 2]"
item_var = "n"
template = ".one"

[one]
[one.variables]
n = { required = true }

[[one.steps]]
id = "a"
executor = "shell"
command = "echo a-{{n}} >> items.log; echo {{n}}"
[one.steps.outputs]
got = { source = "stdout" }

[[one.steps]]
id = "b"
executor = "shell"
needs = ["a"]
command = "echo b-{{n}}-start >> items.log; sleep 0.3; echo b-{{n}} >> items.log; echo {{a.outputs.got}}"
[one.steps.outputs]
got = { source = "stdout" }
"#;
    let d = tempdir();
    let (v, sent, _) = with_members(text, d.path(), None, |key| match key {
        "each.1" => Answer::Retried,
        _ => Answer::Run,
    });
    assert_eq!(sent, ["each.0", "each.1", "each.2"]);
    assert_eq!(v, here(text, tempdir().path()));
    assert_eq!(v["stores"]["each.1.b"]["got"], "1", "{v}");
    let log = std::fs::read_to_string(d.path().join("items.log")).unwrap_or_default();
    let count = |line: &str| log.lines().filter(|l| *l == line).count();
    assert_eq!(count("a-1"), 1, "{log}");
    assert_eq!(count("b-1-start"), 2, "{log}");
    assert_eq!(count("b-1"), 1, "{log}");
}

/// Iterations with expand and branch steps: an expand of a template of shell steps, a branch
/// whose outcome expands an inline step or a template, a step that needs a step under an
/// expansion, a failure inside an expansion that skips what follows. Each such iteration is
/// sent whole (its branch's condition and every shell step run once, in the member), and the
/// pass inserts the same steps from what it hands back, so the report is a local run's. An
/// iteration whose expand names its template through a variable stays in the run.
const EXPANSIONS: &str = r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[0, 1, 2, 3]"
item_var = "n"
template = ".work"
max_concurrent = 2

[[main.steps]]
id = "named"
executor = "foreach"
items = "[0]"
item_var = "n"
template = ".dynamic"
variables = { which = ".inner" }

[[main.steps]]
id = "relayed"
executor = "foreach"
items = "[0]"
item_var = "n"
template = ".relay"
variables = { to = ".inner" }

[[main.steps]]
id = "picked"
executor = "foreach"
items = "[0]"
item_var = "n"
template = ".pick"

[work]
[[work.steps]]
id = "a"
executor = "shell"
command = "echo a-{{n}} >> items.log; echo {{n}}"
[work.steps.outputs]
got = { source = "stdout" }

[[work.steps]]
id = "x"
executor = "expand"
template = ".inner"
needs = ["a"]
variables = { v = "{{a.outputs.got}}" }

[[work.steps]]
id = "br"
executor = "branch"
needs = ["a"]
condition = "echo cond-{{n}} >> items.log; test {{n}} -gt 1"
[work.steps.on_true]
inline = [{ id = "high", executor = "shell", command = "echo high >> items.log; echo high" }]
[work.steps.on_false]
template = ".low"
variables = { n = "{{n}}" }

[[work.steps]]
id = "z"
executor = "shell"
needs = ["x.s2", "br"]
command = "echo z-{{n}} >> items.log; echo {{x.s2.outputs.out}}"
[work.steps.outputs]
said = { source = "stdout" }

[inner]
[inner.variables]
v = { default = "none" }

[[inner.steps]]
id = "s1"
executor = "shell"
command = "echo s1-{{v}} >> items.log; test {{v}} != 2"

[[inner.steps]]
id = "s2"
executor = "shell"
needs = ["s1"]
command = "echo s2-{{v}} >> items.log; echo inner-{{v}}"
[inner.steps.outputs]
out = { source = "stdout" }

[low]
[low.variables]
n = { required = true }

[[low.steps]]
id = "l"
executor = "shell"
command = "echo low-{{n}} >> items.log"

[dynamic]
[dynamic.variables]
which = { required = true }

[[dynamic.steps]]
id = "e"
executor = "expand"
template = "{{which}}"

[relay]
[relay.variables]
to = { required = true }

[[relay.steps]]
id = "r"
executor = "expand"
template = ".dynamic"
variables = { which = "{{to}}" }

[pick]
[[pick.steps]]
id = "p"
executor = "shell"
command = "echo picked >> items.log; echo .inner"
[pick.steps.outputs]
name = { source = "stdout" }

[[pick.steps]]
id = "e"
executor = "expand"
needs = ["p"]
template = "{{p.outputs.name}}"
"#;

#[test]
fn iterations_with_expansions_are_sent_whole_and_mirrored_in_the_run() {
    let d = tempdir();
    let (there, sent, _) = with_members(EXPANSIONS, d.path(), None, |_| Answer::Run);
    let elsewhere = tempdir();
    let here = here(EXPANSIONS, elsewhere.path());
    assert_eq!(there, here);
    assert_eq!(there["status"], "failed", "{there}");
    assert_eq!(there["stores"]["each.3.z"]["said"], "inner-3", "{there}");
    assert_eq!(there["steps"]["each.3.br.high"], "done", "{there}");
    assert_eq!(there["steps"]["each.0.br.l"], "done", "{there}");
    assert_eq!(there["steps"]["each.2.x.s1"], "failed", "{there}");
    assert_eq!(there["steps"]["each.2.x.s2"], "skipped", "{there}");
    assert_eq!(there["steps"]["each.2.z"], "skipped", "{there}");
    assert_eq!(there["steps"]["named.0.e.s2"], "done", "{there}");
    assert_eq!(there["steps"]["relayed.0.r.e.s2"], "done", "{there}");
    assert_eq!(there["steps"]["picked.0.e.s2"], "done", "{there}");
    // Templates named through variables known when the iteration leaves go with it, however
    // deep; one named by an output of a step of the iteration goes once that step has ended
    // (in the run), with the rest of it.
    let expected = [
        "each.0",
        "each.1",
        "each.2",
        "each.3",
        "named.0",
        "picked.0",
        "relayed.0",
    ];
    assert_eq!(sent, expected);
    // Every effect once: the pass ran no condition and no step of a sent iteration again.
    let sorted = |dir: &Path| {
        let log = std::fs::read_to_string(dir.join("items.log")).unwrap_or_default();
        let mut lines: Vec<String> = log.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    assert_eq!(sorted(d.path()), sorted(elsewhere.path()));
}

/// A member with a branch, retried after its worker stopped it in a step after the branch,
/// replays the branch's outcome and hands it back with the rest: the pass inserts the
/// branch's steps as a local run does, and the condition ran once.
#[test]
fn a_retried_member_hands_back_the_branch_outcome_it_replayed() {
    let text = r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[0, 1]"
item_var = "n"
template = ".one"

[one]
[[one.steps]]
id = "br"
executor = "branch"
condition = "echo cond-{{n}} >> items.log; test {{n}} = 1"
[one.steps.on_true]
inline = [{ id = "yes", executor = "shell", command = "echo yes" }]
[one.steps.on_false]
inline = [{ id = "no", executor = "shell", command = "echo no" }]

[[one.steps]]
id = "b"
executor = "shell"
needs = ["br"]
command = "echo b-{{n}}-start >> items.log; sleep 0.3; echo b-{{n}} >> items.log"
"#;
    let d = tempdir();
    let (v, sent, _) = with_members(text, d.path(), None, |key| match key {
        "each.1" => Answer::Retried,
        _ => Answer::Run,
    });
    assert_eq!(sent, ["each.0", "each.1"]);
    assert_eq!(v, here(text, tempdir().path()));
    assert_eq!(v["steps"]["each.1.br.yes"], "done", "{v}");
    assert_eq!(v["steps"]["each.0.br.no"], "done", "{v}");
    let log = std::fs::read_to_string(d.path().join("items.log")).unwrap_or_default();
    let count = |line: &str| log.lines().filter(|l| *l == line).count();
    assert_eq!(count("cond-1"), 1, "{log}");
    assert_eq!(count("b-1-start"), 2, "{log}");
}

/// A run whose iterations with expansions were sent, stopped by a cancelled member, resumes:
/// the iterations that landed whole replay in the pass, their branches from the outcomes the
/// members landed (no condition runs again), the rest are sent again, and the report is a
/// local run's.
#[test]
fn a_run_of_iterations_with_expansions_resumes_from_what_its_members_landed() {
    // One iteration at a time, and nothing beside them: the cancel finds none in flight.
    let text = EXPANSIONS.replace("max_concurrent = 2", "max_concurrent = 1");
    let (named, work) = match (
        text.find("[[main.steps]]\nid = \"named\""),
        text.find("[work]"),
    ) {
        (Some(named), Some(work)) => (named, work),
        _ => panic!("EXPANSIONS has `named` before `[work]`"),
    };
    let text = format!("{}{}", &text[..named], &text[work..]);
    let text = text.as_str();
    let d = tempdir();
    let (v, sent, id) = with_members(text, d.path(), None, |key| match key {
        "each.2" => Answer::Cancelled,
        _ => Answer::Run,
    });
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(sent, ["each.0", "each.1", "each.2"]);
    let (v, sent, _) = with_members(text, d.path(), Some(&id), |_| Answer::Run);
    assert_eq!(sent, ["each.2", "each.3"]);
    let elsewhere = tempdir();
    assert_eq!(v, here(text, elsewhere.path()));
    let log = |dir: &Path| {
        let log = std::fs::read_to_string(dir.join("items.log")).unwrap_or_default();
        let mut lines: Vec<String> = log.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    assert_eq!(log(d.path()), log(elsewhere.path()), "every effect once");
}

/// Iterations whose steps have `on_error` recovery templates: a failed step recovers in the
/// iteration's member, or its recovery fails there too.
const RECOVERIES: &str = r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[0, 1, 2]"
item_var = "n"
template = ".one"

[one]
[one.variables]
n = { required = true }

[[one.steps]]
id = "a"
executor = "shell"
command = "echo a-{{n}} >> items.log; test {{n}} = 0"
on_error = ".fix"

[[one.steps]]
id = "b"
executor = "shell"
needs = ["a"]
command = "echo b-{{n}}-start >> items.log; sleep 0.3; echo b-{{n}} >> items.log"

[fix]
[fix.variables]
n = { required = true }

[[fix.steps]]
id = "mend"
executor = "shell"
command = "echo mend-{{n}}-{{_failed_step.id}} >> items.log; test {{n}} = 1"

[[fix.steps]]
id = "check"
executor = "branch"
condition = "echo check-{{n}} >> items.log; true"
[fix.steps.on_true]
inline = [{ id = "ok", executor = "shell", command = "echo ok >> items.log" }]
"#;

/// Iterations whose steps recover from a failure with an `on_error` template are sent whole:
/// the member runs the recovery, and the pass inserts the same recovery steps from the
/// failure it hands back, so the iteration recovers (or fails) as in a local run. A member
/// retried after its worker stopped it past the recovery replays it and hands it back with
/// the rest: no recovery step runs twice.
#[test]
fn iterations_with_recoveries_are_sent_whole_and_recover_in_the_run() {
    let d = tempdir();
    let (there, sent, _) = with_members(RECOVERIES, d.path(), None, |key| match key {
        "each.1" => Answer::Retried,
        _ => Answer::Run,
    });
    let elsewhere = tempdir();
    assert_eq!(there, here(RECOVERIES, elsewhere.path()));
    assert_eq!(sent, ["each.0", "each.1", "each.2"]);
    assert_eq!(there["status"], "failed", "{there}");
    assert_eq!(there["steps"]["each.1.a"], "recovered", "{there}");
    assert_eq!(there["steps"]["each.1.a.on_error.mend"], "done", "{there}");
    assert_eq!(
        there["steps"]["each.1.a.on_error.check.ok"], "done",
        "{there}"
    );
    assert_eq!(there["steps"]["each.1.b"], "done", "{there}");
    assert_eq!(there["steps"]["each.2.a"], "failed", "{there}");
    assert_eq!(there["steps"]["each.2.b"], "skipped", "{there}");
    let log = std::fs::read_to_string(d.path().join("items.log")).unwrap_or_default();
    let count = |line: &str| log.lines().filter(|l| *l == line).count();
    for once in [
        "a-1",
        "mend-1-each.1.a",
        "check-1",
        "mend-2-each.2.a",
        "check-2",
    ] {
        assert_eq!(count(once), 1, "{once}: {log}");
    }
    assert_eq!(count("ok"), 2, "{log}");
    assert_eq!(count("b-1-start"), 2, "{log}");
    assert_eq!(count("b-1"), 1, "{log}");
}

/// Offline, an iteration whose expansions spawn, ask and kill agents is sent whole: the agents
/// those steps name (in a template named through a variable too) are known from the
/// variables the expansions get when the iteration goes, and go with it, so an iteration
/// naming an agent another has taken is not sent. The run's own agent is asked after them, and the report (usage included)
/// is a local run's.
#[test]
fn iterations_whose_expansions_name_agents_go_with_those_agents() {
    const TEXT: &str = r#"[main]
[[main.steps]]
id = "lead"
executor = "spawn"
agent = "lead"

[[main.steps]]
id = "each"
executor = "foreach"
needs = ["lead"]
items = "[0, 1, 2, 3]"
item_var = "n"
template = ".work"
variables = { own = ".own" }

[[main.steps]]
id = "review"
executor = "agent"
agent = "lead"
needs = ["each"]
prompt = "Review it all"

[work]
[work.variables]
own = { required = true }

[[work.steps]]
id = "x"
executor = "expand"
template = "{{own}}"
variables = { who = "w{{n}}" }

[[work.steps]]
id = "y"
executor = "expand"
needs = ["x.down"]
template = "{{own}}"
variables = { who = "shared" }

[[work.steps]]
id = "br"
executor = "branch"
needs = ["x.down"]
condition = "test {{n}} = 0"
[work.steps.on_true]
template = ".own"
variables = { who = "again{{n}}" }
[work.steps.on_false]
inline = []

[own]
[own.variables]
who = { required = true }

[[own.steps]]
id = "up"
executor = "spawn"
agent = "{{who}}"
workdir = "w/{{who}}"

[[own.steps]]
id = "ask"
executor = "agent"
agent = "{{who}}"
needs = ["up"]
prompt = "Item {{who}}"

[[own.steps]]
id = "log"
executor = "shell"
needs = ["ask"]
command = "echo {{who}} >> items.log; pwd"
[own.steps.outputs]
at = { source = "stdout" }

[[own.steps]]
id = "down"
executor = "kill"
agent = "{{who}}"
needs = ["log"]
"#;
    let d = tempdir();
    let (there, sent, _) = with_members(TEXT, d.path(), None, |_| Answer::Run);
    let elsewhere = tempdir();
    let here = here(TEXT, elsewhere.path());
    assert_eq!(in_dir(&there, d.path()), in_dir(&here, elsewhere.path()));
    assert_eq!(there["status"], "ok", "{there}");
    // Every iteration also names `shared`: the first to go takes it, and the others, which
    // cannot while it is out, run in the run.
    let iterations: Vec<&String> = sent.iter().filter(|k| k.starts_with("each.")).collect();
    assert_eq!(iterations.len(), 1, "{sent:?}");
    assert_eq!(there["steps"]["each.0.br.ask"], "done", "{there}");
    assert_eq!(there["steps"]["each.3.y.ask"], "done", "{there}");
    assert_eq!(there["usage"]["agent_calls"], 10, "{there}");
}

/// Offline, an iteration whose expansion expands a template that asks the agent it spawned
/// (a track and its protocol, two expansions deep) is sent whole with that agent, as are
/// its siblings with theirs; the report (usage included) is a local run's.
#[test]
fn iterations_whose_deeper_expansions_name_agents_go_with_those_agents() {
    const TEXT: &str = r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[0, 1, 2, 3]"
item_var = "n"
template = ".work"
variables = { protocol = ".protocol" }

[work]
[work.variables]
protocol = { required = true }

[[work.steps]]
id = "track"
executor = "expand"
template = ".track"
variables = { who = "t{{n}}", protocol = "{{protocol}}" }

[track]
[track.variables]
who = { required = true }
protocol = { required = true }

[[track.steps]]
id = "up"
executor = "spawn"
agent = "{{who}}"

[[track.steps]]
id = "work"
executor = "expand"
needs = ["up"]
template = "{{protocol}}"
variables = { agent = "{{who}}" }

[[track.steps]]
id = "down"
executor = "kill"
agent = "{{who}}"
needs = ["work.review"]

[protocol]
[protocol.variables]
agent = { required = true }

[[protocol.steps]]
id = "ask"
executor = "agent"
agent = "{{agent}}"
prompt = "Work as {{agent}}"

[[protocol.steps]]
id = "review"
executor = "branch"
needs = ["ask"]
condition = "true"
[protocol.steps.on_true]
inline = [{ id = "again", executor = "agent", agent = "{{agent}}", prompt = "Check it" }]
"#;
    let d = tempdir();
    let (there, sent, _) = with_members(TEXT, d.path(), None, |_| Answer::Run);
    let elsewhere = tempdir();
    let local = here(TEXT, elsewhere.path());
    assert_eq!(in_dir(&there, d.path()), in_dir(&local, elsewhere.path()));
    assert_eq!(there["status"], "ok", "{there}");
    assert_eq!(sent, ["each.0", "each.1", "each.2", "each.3"]);
    assert_eq!(there["steps"]["each.2.track.work.ask"], "done", "{there}");
    assert_eq!(there["usage"]["agent_calls"], 8, "{there}");

    // When the protocol asks the run's own agent, two expansions down, the iteration takes
    // it too: one iteration at a time can, and the others run in the run.
    let text = TEXT
        .replace(
            "[[main.steps]]\nid = \"each\"",
            "[[main.steps]]\nid = \"lead\"\nexecutor = \"spawn\"\nagent = \"lead\"\n\n[[main.steps]]\nid = \"each\"\nneeds = [\"lead\"]",
        )
        .replace("agent = \"{{agent}}\"\nprompt", "agent = \"lead\"\nprompt");
    let d = tempdir();
    let (there, sent, _) = with_members(&text, d.path(), None, |_| Answer::Run);
    let elsewhere = tempdir();
    assert_eq!(
        in_dir(&there, d.path()),
        in_dir(&here(&text, elsewhere.path()), elsewhere.path())
    );
    assert_eq!(there["steps"]["each.3.track.work.ask"], "done", "{there}");
    let iterations: Vec<&String> = sent.iter().filter(|k| k.starts_with("each.")).collect();
    assert_eq!(iterations.len(), 1, "{sent:?}");
}

/// An iteration whose track expands a protocol named by an output of its first step (the
/// corpus's sprint shape): that step runs in the run, and once it has ended the rest of the
/// iteration goes, with the agent its track spawns, asks and kills; the member replays the
/// step that ran in the run from its landing. A member retried after its worker stopped it
/// replays what its first attempt landed. Each effect once (but the step in flight at the
/// stop), and the report, usage included, is a local run's.
#[test]
fn an_iteration_whose_expansion_an_output_names_goes_once_that_output_is_known() {
    const TEXT: &str = r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[0, 1, 2]"
item_var = "n"
template = ".wrapper"

[wrapper]
[wrapper.variables]
n = { required = true }

[[wrapper.steps]]
id = "resolve"
executor = "shell"
command = "echo resolve-{{n}} >> items.log; if test {{n}} = 1; then echo review; else echo build; fi"
[wrapper.steps.outputs]
protocol = { source = "stdout" }

[[wrapper.steps]]
id = "track"
executor = "expand"
needs = ["resolve"]
template = ".track"
variables = { who = "t{{n}}", protocol = "{{resolve.outputs.protocol}}", n = "{{n}}" }

[track]
[track.variables]
who = { required = true }
protocol = { required = true }
n = { required = true }

[[track.steps]]
id = "up"
executor = "spawn"
agent = "{{who}}"

[[track.steps]]
id = "work"
executor = "expand"
needs = ["up"]
template = ".{{protocol}}"
variables = { agent = "{{who}}", n = "{{n}}" }

[[track.steps]]
id = "down"
executor = "kill"
agent = "{{who}}"
needs = ["work.b"]

[build]
[build.variables]
agent = { required = true }
n = { required = true }

[[build.steps]]
id = "ask"
executor = "agent"
agent = "{{agent}}"
prompt = "Build {{n}}"

[[build.steps]]
id = "b"
executor = "shell"
needs = ["ask"]
command = "echo b-{{n}}-start >> items.log; sleep 0.3; echo b-{{n}} >> items.log"

[review]
[review.variables]
agent = { required = true }
n = { required = true }

[[review.steps]]
id = "ask"
executor = "agent"
agent = "{{agent}}"
prompt = "Review {{n}}"

[[review.steps]]
id = "b"
executor = "shell"
needs = ["ask"]
command = "echo b-{{n}}-start >> items.log; sleep 0.3; echo b-{{n}} >> items.log"
"#;
    let d = tempdir();
    let (there, sent, _) = with_members(TEXT, d.path(), None, |key| match key {
        "each.1" => Answer::Retried,
        _ => Answer::Run,
    });
    let elsewhere = tempdir();
    let local = here(TEXT, elsewhere.path());
    assert_eq!(in_dir(&there, d.path()), in_dir(&local, elsewhere.path()));
    assert_eq!(there["status"], "ok", "{there}");
    assert_eq!(sent, ["each.0", "each.1", "each.2"]);
    assert_eq!(there["steps"]["each.1.track.work.ask"], "done", "{there}");
    assert_eq!(there["usage"]["agent_calls"], 3, "{there}");
    let log = std::fs::read_to_string(d.path().join("items.log")).unwrap_or_default();
    let count = |line: &str| log.lines().filter(|l| *l == line).count();
    for once in ["resolve-0", "resolve-1", "resolve-2", "b-0", "b-1", "b-2"] {
        assert_eq!(count(once), 1, "{once}: {log}");
    }
    assert_eq!(count("b-1-start"), 2, "{log}");
}

/// Offline, an iteration whose step recovers by asking the iteration's agent is sent whole
/// with that agent: the recovery's agents are known from the failing workflow's variables
/// when the iteration goes. The report, usage included, is a local run's.
#[test]
fn iterations_whose_recoveries_ask_agents_go_with_those_agents() {
    const TEXT: &str = r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[0, 1, 2]"
item_var = "n"
template = ".one"
variables = { who = "w{{n}}" }

[one]
[one.variables]
n = { required = true }
who = { required = true }

[[one.steps]]
id = "up"
executor = "spawn"
agent = "{{who}}"

[[one.steps]]
id = "a"
executor = "shell"
needs = ["up"]
command = "echo a-{{n}} >> items.log; test {{n}} != 1"
on_error = ".fix"

[[one.steps]]
id = "down"
executor = "kill"
agent = "{{who}}"
needs = ["a"]

[fix]
[fix.variables]
who = { required = true }

[[fix.steps]]
id = "ask"
executor = "agent"
agent = "{{who}}"
prompt = "Fix it, {{who}}"
"#;
    let d = tempdir();
    let (there, sent, _) = with_members(TEXT, d.path(), None, |_| Answer::Run);
    let elsewhere = tempdir();
    let local = here(TEXT, elsewhere.path());
    assert_eq!(in_dir(&there, d.path()), in_dir(&local, elsewhere.path()));
    assert_eq!(there["status"], "ok", "{there}");
    assert_eq!(sent, ["each.0", "each.1", "each.2"]);
    assert_eq!(there["steps"]["each.1.a"], "recovered", "{there}");
    assert_eq!(there["steps"]["each.1.a.on_error.ask"], "done", "{there}");
    assert_eq!(there["usage"]["agent_calls"], 1, "{there}");

    // A recovery that would ask the run's own agent takes it too, should it run: one
    // iteration at a time can go, and the others run in the run.
    let text = TEXT
        .replace(
            "[[main.steps]]\nid = \"each\"",
            "[[main.steps]]\nid = \"lead\"\nexecutor = \"spawn\"\nagent = \"lead\"\n\n[[main.steps]]\nid = \"each\"\nneeds = [\"lead\"]",
        )
        .replace("agent = \"{{who}}\"\nprompt", "agent = \"lead\"\nprompt");
    let d = tempdir();
    let (there, sent, _) = with_members(&text, d.path(), None, |_| Answer::Run);
    let elsewhere = tempdir();
    assert_eq!(
        in_dir(&there, d.path()),
        in_dir(&here(&text, elsewhere.path()), elsewhere.path())
    );
    assert_eq!(there["steps"]["each.1.a.on_error.ask"], "done", "{there}");
    let iterations: Vec<&String> = sent.iter().filter(|k| k.starts_with("each.")).collect();
    assert_eq!(iterations.len(), 1, "{sent:?}");
}

/// Offline, an iteration whose track names its agent from what the run's agent answered in
/// the iteration's first step cannot take that agent when it would go: the first step runs in
/// the run, and once it has ended the rest goes with the agent it names (its worker replays
/// the agent's answer from its landing). The report, usage included, is a local run's.
#[test]
fn an_iteration_whose_agent_an_answer_names_goes_once_the_answer_is_known() {
    const TEXT: &str = r#"[main]
[[main.steps]]
id = "lead"
executor = "spawn"
agent = "lead"

[[main.steps]]
id = "each"
executor = "foreach"
needs = ["lead"]
items = "[0, 1, 2]"
item_var = "n"
template = ".wrapper"

[wrapper]
[wrapper.variables]
n = { required = true }

[[wrapper.steps]]
id = "plan"
executor = "agent"
agent = "lead"
prompt = "Plan {{n}}"
[wrapper.steps.outputs]
size = { required = true, type = "number" }

[[wrapper.steps]]
id = "track"
executor = "expand"
needs = ["plan"]
template = ".track"
variables = { who = "w{{plan.outputs.size}}-{{n}}" }

[track]
[track.variables]
who = { required = true }

[[track.steps]]
id = "up"
executor = "spawn"
agent = "{{who}}"

[[track.steps]]
id = "ask"
executor = "agent"
agent = "{{who}}"
needs = ["up"]
prompt = "Work, {{who}}"

[[track.steps]]
id = "log"
executor = "shell"
needs = ["ask"]
command = "echo {{who}} >> items.log"

[[track.steps]]
id = "down"
executor = "kill"
agent = "{{who}}"
needs = ["log"]
"#;
    let d = tempdir();
    let (there, sent, _) = with_members(TEXT, d.path(), None, |_| Answer::Run);
    let elsewhere = tempdir();
    let local = here(TEXT, elsewhere.path());
    assert_eq!(in_dir(&there, d.path()), in_dir(&local, elsewhere.path()));
    assert_eq!(there["status"], "ok", "{there}");
    assert_eq!(sent, ["each.0", "each.1", "each.2"]);
    assert_eq!(there["steps"]["each.2.track.ask"], "done", "{there}");
    assert_eq!(there["usage"]["agent_calls"], 6, "{there}");
    let log = std::fs::read_to_string(d.path().join("items.log")).unwrap_or_default();
    assert_eq!(log.lines().count(), 3, "{log}");
}
