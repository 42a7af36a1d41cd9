//! MEOW agents in real tmux sessions (`--backend command`) on the Restate engine (issue 24):
//! a foreach iteration that spawns its agent, asks it and kills it goes to whichever worker
//! takes it, and that worker owns the agent's session from start to end. The agent reports
//! `meow done` to an orchestrator of the member's own; its iteration's approvals reach the
//! run's. Iterations that ask an agent the run spawned stay with the run's pass.
//!
//! Engine tests with tmux: see engine_restate.rs and meow_tmux.rs (`PIPEWRIGHT_SLOW_TESTS=1`).

use crate::common::*;
use crate::engine_restate::{
    every_worker_ran_some, item_pids, report, wait_for, without_wall_times, Engine,
};
use crate::meow_tmux::{log, setup_in, Tmux};
use pipewright_restate::testing::skip_engine_test;

/// A foreach of `items` iterations (at most `max` at once), each spawning agent `wN` in tmux,
/// asking it, logging which process ran it and approving gate `go` (on the run's
/// orchestrator), then killing its agent; a foreach of `nested` iterations doing the same
/// (agent `wxN`) in a template each expands; a branch of the run waiting for that approval;
/// an agent the run spawns itself, asked by a foreach of `shared` iterations (which cannot
/// leave the run's host) and stopped at the end.
fn meow_tmux_agents(items: usize, max: usize, nested: usize, shared: usize) -> String {
    let list = |n: usize| (0..n).map(|k| k.to_string()).collect::<Vec<_>>().join(", ");
    format!(
        r#"[main]
[main.variables]
pw = {{ required = true }}

[[main.steps]]
id = "gate"
executor = "branch"
condition = "{{{{pw}}}} meow await-approval go --timeout 90s"

[[main.steps]]
id = "each"
executor = "foreach"
items = "[{}]"
item_var = "n"
template = ".own"
max_concurrent = {}
variables = {{ pw = "{{{{pw}}}}" }}

[[main.steps]]
id = "wrapped"
executor = "foreach"
items = "[{}]"
item_var = "n"
template = ".wrap"
variables = {{ pw = "{{{{pw}}}}" }}

[[main.steps]]
id = "lead"
executor = "spawn"
agent = "lead"
adapter = "fake"

[[main.steps]]
id = "again"
executor = "foreach"
needs = ["lead"]
items = "[{}]"
item_var = "n"
template = ".shared"

[[main.steps]]
id = "stop"
executor = "kill"
agent = "lead"
needs = ["again"]

[wrap]
[wrap.variables]
pw = {{ required = true }}

[[wrap.steps]]
id = "x"
executor = "expand"
template = ".own"
variables = {{ n = "x{{{{n}}}}", pw = "{{{{pw}}}}" }}

[own]
[own.variables]
pw = {{ required = true }}
n = {{ required = true }}

[[own.steps]]
id = "up"
executor = "spawn"
agent = "w{{{{n}}}}"
adapter = "fake"

[[own.steps]]
id = "ask"
executor = "agent"
agent = "w{{{{n}}}}"
needs = ["up"]
prompt = """Item {{{{n}}}}
FAKE-SLEEP: 0.2
FAKE: --output answer=item-{{{{n}}}}"""
[own.steps.outputs]
answer = {{ required = true, type = "string" }}

[[own.steps]]
id = "log"
executor = "shell"
needs = ["ask"]
command = "echo {{{{n}}}} $PPID ${{MEOW_RUN_SOCK:+member}} >> items.log; {{{{pw}}}} meow approve go; echo '{{{{ask.outputs.answer}}}}'"
[own.steps.outputs]
said = {{ source = "stdout" }}

[[own.steps]]
id = "down"
executor = "kill"
agent = "w{{{{n}}}}"
needs = ["log"]

[shared]
[[shared.steps]]
id = "ask"
executor = "agent"
agent = "lead"
prompt = """Shared item {{{{n}}}}
FAKE: --output answer=shared-{{{{n}}}}"""
[shared.steps.outputs]
answer = {{ required = true, type = "string" }}
"#,
        list(items),
        max,
        list(nested),
        list(shared)
    )
}

/// `run agents.meow.toml` with its agents in tmux and `pw` (`pw=<this pipewright>`), then
/// `more`.
fn run_args<'a>(pw: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "agents.meow.toml",
        "--backend",
        "command",
        "--var",
        pw,
    ];
    args.extend_from_slice(more);
    args
}

fn pw() -> String {
    format!("pw={}", env!("CARGO_BIN_EXE_pipewright"))
}

/// A tmux server of the test's own (`name`), two workers behind one URL that start agents
/// there, and `template` as agents.meow.toml beside the fake agent's adapter; `None` when the
/// slow tests are off.
fn two_workers_with_tmux(name: &str, template: &str) -> Option<(Tmux, Engine)> {
    let t = Tmux::new(name)?;
    let mut e = Engine::start();
    e.env = vec![("PIPEWRIGHT_TMUX_SOCKET".into(), t.0.clone())];
    e.two_workers_behind_a_balancer();
    setup_in(&e.project);
    e.write("agents.meow.toml", template);
    Some((t, e))
}

/// Two workers behind one URL share a foreach whose iterations spawn, ask and kill agents in
/// tmux, directly or in a template they expand: each worker runs some, every agent answers its own iteration, no session is left, the
/// iterations' approval reaches the run's waiting branch, and the report is a local run's.
#[test]
fn a_meow_foreach_of_tmux_agents_is_shared_by_two_workers() {
    if skip_engine_test() {
        return;
    }
    let Some((t, e)) = two_workers_with_tmux("engine", &meow_tmux_agents(8, 8, 4, 2)) else {
        return;
    };
    let pw = pw();
    let args = run_args(&pw, &["--format", "json"]);
    let on_engine = e.pw(&args);
    assert_eq!(
        on_engine.status.code(),
        Some(0),
        "{}\n{}",
        text(&on_engine),
        log(&e.project)
    );
    every_worker_ran_some(&e, "iterations");
    let log = e.read("items.log");
    assert_eq!(log.lines().count(), 12);
    // The iterations that spawn their agents in an expansion are sent too: each ran in a
    // member (whose steps are told the run's socket apart from their own).
    let wrapped: Vec<&str> = log.lines().filter(|l| l.starts_with('x')).collect();
    assert_eq!(wrapped.len(), 4, "{log}");
    assert!(wrapped.iter().all(|l| l.ends_with(" member")), "{log}");
    assert!(t.sessions().is_empty(), "{:?}", t.sessions());
    let a = report(&on_engine);
    assert_eq!(a["stores"]["each.5.log"]["said"], "item-5", "{a}");
    assert_eq!(a["stores"]["wrapped.3.x.log"]["said"], "item-x3", "{a}");
    assert_eq!(a["stores"]["again.1.ask"]["answer"], "shared-1", "{a}");
    assert_eq!(a["steps"]["gate"], "done", "{a}");

    let local = e.local(&args);
    assert_eq!(local.status.code(), Some(0), "{}", text(&local));
    let (mut a, mut b) = (a, report(&local));
    for v in [&mut a, &mut b] {
        without_wall_times(v);
        // The session a spawn reports is named by its run.
        strip_sessions(v);
    }
    assert_eq!(a, b);
}

/// Killing (kill -9) the worker running some of those iterations, not the pass, in the
/// middle: the engine gives its iterations to the other worker, which takes over their agents'
/// sessions (here on the same host), and the run finishes with every iteration done and no
/// session left.
#[test]
fn a_meow_foreach_of_tmux_agents_finishes_when_an_iterations_worker_dies() {
    if skip_engine_test() {
        return;
    }
    let Some((t, mut e)) = two_workers_with_tmux("engine-kill", &meow_tmux_agents(12, 2, 0, 1))
    else {
        return;
    };
    let pw = pw();
    let detached = e.pw(&run_args(&pw, &["--detach", "--format", "json"]));
    assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
    let id = String::from_utf8_lossy(&detached.stdout).trim().to_string();
    let pids = e.worker_pids();
    wait_for("both workers to run iterations", 60, || {
        let seen = item_pids(&e.read("items.log"));
        pids.iter().all(|p| seen.contains(p))
    });
    let before = e.read("items.log").lines().count();
    assert!(
        before < 10,
        "the kill comes in the middle ({before} iterations)"
    );
    e.kill_a_worker(false);
    let followed = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(
        followed.status.code(),
        Some(0),
        "{}\n{}",
        text(&followed),
        log(&e.project)
    );
    let r = report(&followed);
    for n in 0..12 {
        assert_eq!(r["steps"][format!("each.{n}.down")], "done", "{r}");
        assert_eq!(
            r["stores"][format!("each.{n}.log")]["said"],
            format!("item-{n}")
        );
    }
    let logged = e.read("items.log");
    let items: std::collections::BTreeSet<&str> =
        logged.lines().filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(items.len(), 12, "{logged}");
    assert!(t.sessions().is_empty(), "{:?}", t.sessions());
}

/// Removes what differs between two runs of one template in tmux: the sessions' names, which
/// carry the run's id.
fn strip_sessions(v: &mut serde_json::Value) {
    if let Some(stores) = v["stores"].as_object_mut() {
        for store in stores.values_mut() {
            if let Some(o) = store.as_object_mut() {
                o.remove("session");
                o.remove("session_id");
            }
        }
    }
}
