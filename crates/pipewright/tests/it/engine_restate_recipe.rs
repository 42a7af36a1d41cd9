//! A recipe's foreach loops on the Restate engine, their iterations sent as invocations that
//! any worker takes (issue 24): a sequential foreach (one iteration at a time, each seeing the
//! context the last one left), a parallel one inside a sub-recipe, and a parallel one under
//! `rate_limiting` (each agent turn admitted by the run's limiter). Two workers behind one URL
//! share the iterations and the report is a local run's; kill -9 of either worker in the
//! middle still finishes the run, each side effect once but the iteration in flight.
//!
//! Engine tests: see engine_restate.rs (`PIPEWRIGHT_SLOW_TESTS=1`, run in `unshare -rn`).

use crate::common::*;
use crate::engine_restate::{report, without_wall_times, Engine};
use pipewright_restate::testing::skip_engine_test;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Output;

/// A recipe's report, without what differs from one run to the next (its session, how long
/// its agent calls took).
fn settled(o: &Output) -> Value {
    let mut v = report(o);
    if v["stores"]["session"].is_object() {
        v["stores"]["session"]["id"] = Value::Null;
        v["stores"]["session"]["started"] = Value::Null;
    }
    without_wall_times(&mut v);
    v
}

/// The process ids in `log`'s lines (`ITEM PID`): the workers the iterations ran in.
fn pids(log: &str) -> BTreeSet<u32> {
    log.lines()
        .filter_map(|l| l.split(' ').nth(1)?.trim().parse().ok())
        .collect()
}

/// How many times each item of `log` (`ITEM PID` lines) ran.
fn runs_per_item(log: &str) -> BTreeMap<String, u32> {
    let mut seen = BTreeMap::new();
    for l in log.lines() {
        if let Some(item) = l.split(' ').next() {
            *seen.entry(item.to_string()).or_default() += 1;
        }
    }
    seen
}

/// `items: ["0", …]`, `n` of them.
fn items(n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| format!("\"{i}\"")).collect();
    format!("[{}]", items.join(", "))
}

/// Runs `file` on the engine and locally (each after `items.log` is removed) and asserts the
/// same exit code and report; the engine's run's items.log.
fn same_report_as_local(e: &Engine, file: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", file, "--format", "json"];
    args.extend_from_slice(extra);
    let _ = std::fs::remove_file(e.project.join("items.log"));
    let on_engine = e.pw(&args);
    let log = e.read("items.log");
    let _ = std::fs::remove_file(e.project.join("items.log"));
    let local = e.local(&args);
    assert_eq!(
        on_engine.status.code(),
        local.status.code(),
        "{file}: engine {} / local {}",
        text(&on_engine),
        text(&local)
    );
    assert_eq!(settled(&on_engine), settled(&local), "{file}");
    log
}

/// Each iteration chains onto the context the last one left (`acc`), sets an exit code, and
/// a sub-recipe runs in each iteration of a second loop; one loop's failing iteration goes
/// on (`on_error: continue`).
const SEQUENTIAL: &str = r#"name: seq
description: sequential foreach loops on the engine
version: "1.0.0"
context:
  items: ITEMS
  acc: "start"
  people: ["a", "b"]
steps:
  - id: chain
    foreach: "{{items}}"
    steps:
      - id: link
        type: bash
        command: "echo \"{{item}} $PPID\" >> items.log; sleep 0.05; printf '%s-%s' '{{acc}}' '{{item}}'"
        output: acc
      - id: odd
        type: bash
        command: "test $(( {{item}} % 2 )) = 0"
        output_exit_code: even
        on_error: continue
    collect: links
  - id: tolerant
    type: bash
    foreach: "{{items}}"
    command: "test {{item}} != 3 || exit 4; echo {{item}}"
    on_error: continue
    collect: got
  - id: calls
    foreach: "{{people}}"
    as: who
    steps:
      - id: call
        type: recipe
        recipe: "sub/greet.yaml"
        context:
          who: "{{who}}"
          before: "{{acc}}"
        output: greeted
    collect: greetings
  - id: last
    type: bash
    command: "echo {{acc}}"
    output: final
"#;

const GREET: &str = r#"name: greet
description: a sub-recipe an iteration calls
version: "1.0.0"
context:
  who: ""
  before: ""
steps:
  - id: hello
    type: bash
    command: "echo \"greet-{{who}} $PPID\" >> items.log; echo hello-{{who}}"
    output: hello
"#;

/// An iteration fails under `on_error: fail` after its first step changed the context: the
/// run fails with the iteration's message, its context as the iteration left it.
const SEQUENTIAL_FAIL: &str = r#"name: seqfail
description: a sequential foreach failing in its second iteration
version: "1.0.0"
context:
  items: ["a", "b", "c"]
steps:
  - id: each
    foreach: "{{items}}"
    steps:
      - id: mark
        type: bash
        command: "printf 'marked-{{item}}'"
        output: marked
      - id: boom
        type: bash
        command: "test {{item}} != b || { echo no-{{item}} >&2; exit 5; }; echo ok"
        output: ok
    collect: rounds
"#;

/// Agent steps in a sequential foreach count against the budget: the third turn is refused.
const SEQUENTIAL_BUDGET: &str = r#"name: seqbudget
description: a sequential foreach of agent steps runs into max_total_steps
version: "1.0.0"
recursion:
  max_total_steps: 3
context:
  items: ["a", "b", "c", "d"]
steps:
  - id: first
    agent: "x:y"
    prompt: "first"
    output: first
  - id: each
    foreach: "{{items}}"
    agent: "x:y"
    prompt: "do {{item}} after {{first}}"
    collect: got
"#;

/// A budget (`--max-agent-calls 2`) stops the run in the third iteration, after its first
/// step changed the context.
const SEQUENTIAL_STOPPED: &str = r#"name: seqstop
description: a sequential foreach stopped by a budget
version: "1.0.0"
context:
  items: ["a", "b", "c"]
steps:
  - id: each
    foreach: "{{items}}"
    steps:
      - id: mark
        type: bash
        command: "printf 'marked-{{item}}'"
        output: marked
      - id: ask
        agent: "x:y"
        prompt: "about {{marked}}"
        output: said
    collect: rounds
"#;

/// A sequential foreach on the engine: two workers behind one URL share its iterations, each
/// seeing the context the last one left, and the report (the chained context, exit codes, a
/// failed iteration under `continue` and under `fail`, sub-recipes run by iterations, agent
/// turns counted against the budget) is the one a local run gives.
#[test]
fn a_recipes_sequential_foreach_is_shared_by_two_workers() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    e.write("seq.yaml", &SEQUENTIAL.replace("ITEMS", &items(16)));
    std::fs::create_dir_all(e.project.join("sub")).unwrap_or_else(|err| panic!("{err}"));
    e.write("sub/greet.yaml", GREET);
    e.write("seqfail.yaml", SEQUENTIAL_FAIL);
    e.write("seqbudget.yaml", SEQUENTIAL_BUDGET);
    let log = same_report_as_local(&e, "seq.yaml", &[]);
    let ran = pids(&log);
    for w in e.worker_pids() {
        assert!(ran.contains(&w), "worker {w} ran iterations: {log}");
    }
    let on_engine = e.pw(&["run", "seq.yaml", "--format", "json"]);
    let chained: Vec<String> = (0..16).map(|i| i.to_string()).collect();
    assert_eq!(
        report(&on_engine)["stores"]["acc"],
        format!("start-{}", chained.join("-")),
        "{}",
        text(&on_engine)
    );
    same_report_as_local(&e, "seqfail.yaml", &[]);
    same_report_as_local(&e, "seqbudget.yaml", &[]);
    e.write("seqstop.yaml", SEQUENTIAL_STOPPED);
    same_report_as_local(&e, "seqstop.yaml", &["--max-agent-calls", "2"]);
}

/// A parent whose sub-recipe holds a parallel foreach and a sequential one.
const PARENT: &str = r#"name: parent
description: calls a sub-recipe whose loops are shared
version: "1.0.0"
context:
  items: ITEMS
steps:
  - id: call
    type: recipe
    recipe: "sub/fan.yaml"
    context:
      items: "{{items}}"
    output: fanned
"#;

const FAN: &str = r#"name: fan
description: a sub-recipe's loops
version: "1.0.0"
context:
  items: []
  letters: ["x", "y", "z"]
steps:
  - id: wide
    type: bash
    foreach: "{{items}}"
    parallel: 4
    command: "echo \"{{item}} $PPID\" >> items.log; sleep 0.1; echo wide-{{item}}"
    collect: wide
  - id: narrow
    type: bash
    foreach: "{{letters}}"
    as: letter
    command: "echo \"{{letter}} $PPID\" >> items.log; echo narrow-{{letter}}"
    collect: narrow
"#;

/// A parallel foreach of sub-recipe calls, each with an agent turn.
const PARALLEL_CALLS: &str = r#"name: calls
description: a parallel foreach of sub-recipe calls
version: "1.0.0"
context:
  people: ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"]
steps:
  - id: each
    type: recipe
    foreach: "{{people}}"
    as: who
    parallel: 3
    recipe: "sub/ask.yaml"
    context:
      who: "{{who}}"
    collect: answers
"#;

const ASK: &str = r#"name: ask
description: a sub-recipe with an agent turn
version: "1.0.0"
context:
  who: ""
steps:
  - id: log
    type: bash
    command: "echo \"{{who}} $PPID\" >> items.log; sleep 0.1; echo logged"
    output: logged
  - id: ask
    agent: "x:y"
    prompt: "greet {{who}}"
    output: greeting
"#;

/// A parallel foreach inside a sub-recipe on the engine, and one of sub-recipe calls: their
/// iterations, found by the worker in its own copy of the sub-recipe, are shared by two
/// workers behind one URL, and each report is a local run's.
#[test]
fn a_parallel_foreach_in_a_sub_recipe_is_shared_by_two_workers() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    e.write("parent.yaml", &PARENT.replace("ITEMS", &items(24)));
    std::fs::create_dir_all(e.project.join("sub")).unwrap_or_else(|err| panic!("{err}"));
    e.write("sub/fan.yaml", FAN);
    e.write("calls.yaml", PARALLEL_CALLS);
    e.write("sub/ask.yaml", ASK);
    for file in ["parent.yaml", "calls.yaml"] {
        let log = same_report_as_local(&e, file, &[]);
        let ran = pids(&log);
        for w in e.worker_pids() {
            assert!(ran.contains(&w), "{file}: worker {w} ran iterations: {log}");
        }
    }
}

/// Two workers behind one balancer run `file`, whose iterations log `ITEM PID` lines to
/// items.log; once both have run some, the one running the pass (`the_pass`) or the other is
/// killed with kill -9, and the survivor finishes the run: its output is `n`, every one of
/// the `n` items ran, and at most `in_flight` of them twice.
fn share_and_kill(e: &mut Engine, file: &str, n: usize, the_pass: bool, in_flight: usize) {
    let detached = e.pw(&["run", file, "--detach", "--format", "json"]);
    assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
    let id = stdout(&detached).trim().to_string();
    let workers = e.worker_pids();
    crate::engine_restate::wait_for("both workers to run iterations", 60, || {
        let seen = pids(&e.read("items.log"));
        workers.iter().all(|p| seen.contains(p))
    });
    let before = e.read("items.log").lines().count();
    assert!(
        before < n * 3 / 4,
        "the kill comes in the middle of the run ({before} items)"
    );
    let survivor = e.kill_a_worker(the_pass);
    let followed = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    assert_eq!(report(&followed)["output"], n, "{}", text(&followed));
    let log = e.read("items.log");
    let seen = runs_per_item(&log);
    assert_eq!(seen.len(), n, "every item ran: {log}");
    let twice = seen.values().filter(|&&c| c > 1).count();
    assert!(
        twice <= in_flight,
        "only iterations in flight ran again ({twice}): {log}"
    );
    let after: Vec<&str> = log.lines().skip(before).collect();
    assert!(
        after.iter().any(|l| l.ends_with(&format!(" {survivor}"))),
        "the surviving worker ran iterations after the kill: {log}"
    );
}

/// A sequential foreach of `n` slow iterations; its output counts their results.
fn slow_sequential(n: usize) -> String {
    format!(
        r#"name: slow
description: a sequential foreach to kill a worker in
version: "1.0.0"
context:
  items: {}
steps:
  - id: each
    type: bash
    foreach: "{{{{items}}}}"
    command: "echo \"{{{{item}}}} $PPID\" >> items.log; sleep 0.15; echo {{{{item}}}}"
    collect: got
  - id: count
    type: bash
    command: "echo '{{{{got}}}}' | wc -w"
    output: count
"#,
        items(n)
    )
}

/// A parent whose sub-recipe holds a parallel foreach of `n` slow iterations; its output
/// counts their results.
fn slow_parallel_in_sub(n: usize) -> (String, String) {
    let parent = format!(
        r#"name: parent
description: a sub-recipe's parallel foreach to kill a worker in
version: "1.0.0"
context:
  items: {}
steps:
  - id: call
    type: recipe
    recipe: "sub/wide.yaml"
    context:
      items: "{{{{items}}}}"
    output: called
  - id: count
    type: bash
    command: "echo '{{{{called.got}}}}' | wc -w"
    output: count
"#,
        items(n)
    );
    let sub = r#"name: wide
description: a parallel foreach
version: "1.0.0"
context:
  items: []
steps:
  - id: each
    type: bash
    foreach: "{{items}}"
    parallel: 3
    command: "echo \"{{item}} $PPID\" >> items.log; sleep 0.2; echo {{item}}"
    collect: got
"#;
    (parent, sub.to_string())
}

#[test]
fn a_sequential_foreach_finishes_when_the_worker_of_its_pass_dies() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    e.write("slow.yaml", &slow_sequential(60));
    share_and_kill(&mut e, "slow.yaml", 60, true, 1);
}

#[test]
fn a_sequential_foreach_finishes_when_the_worker_of_an_iteration_dies() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    e.write("slow.yaml", &slow_sequential(60));
    share_and_kill(&mut e, "slow.yaml", 60, false, 1);
}

#[test]
fn a_sub_recipes_parallel_foreach_finishes_when_the_worker_of_its_pass_dies() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    let (parent, sub) = slow_parallel_in_sub(60);
    e.write("parent.yaml", &parent);
    std::fs::create_dir_all(e.project.join("sub")).unwrap_or_else(|err| panic!("{err}"));
    e.write("sub/wide.yaml", &sub);
    share_and_kill(&mut e, "parent.yaml", 60, true, 3);
}

#[test]
fn a_sub_recipes_parallel_foreach_finishes_when_the_worker_of_an_iteration_dies() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    let (parent, sub) = slow_parallel_in_sub(60);
    e.write("parent.yaml", &parent);
    std::fs::create_dir_all(e.project.join("sub")).unwrap_or_else(|err| panic!("{err}"));
    e.write("sub/wide.yaml", &sub);
    share_and_kill(&mut e, "parent.yaml", 60, false, 3);
}

/// An agent CLI that logs when each call starts and ends (ns) and in which worker.
const AGENT: &str = r#"[backend.command]
argv = ["sh", "-c", "echo \"start $(date +%s%N) $PPID\" >> calls.log; sleep 0.2; echo \"end $(date +%s%N) $PPID\" >> calls.log; echo \"did $1\"", "agent", "--", "{prompt}"]
timeout_secs = 60
"#;

/// Agent turns under `rate_limiting`: a parallel foreach's and a sequential one's (each turn
/// admitted by the run's limiter, then sent), and a sequential one of two turns an iteration
/// (run where the run is: its turns cannot be admitted one by one before it is sent).
const RATE_LIMITED: &str = r#"name: limited
description: agent steps in foreach loops under rate_limiting
version: "1.0.0"
rate_limiting:
  max_concurrent_llm: 1
  min_delay_ms: 300
context:
  items: ["a", "b", "c", "d", "e", "f"]
  few: ["g", "h"]
steps:
  - id: wide
    foreach: "{{items}}"
    parallel: true
    agent: "x:y"
    prompt: "do {{item}}"
    collect: wide
  - id: narrow
    foreach: "{{items}}"
    agent: "x:y"
    prompt: "then {{item}}"
    collect: narrow
  - id: pairs
    foreach: "{{few}}"
    steps:
      - id: ask
        agent: "x:y"
        prompt: "ask {{item}}"
        output: asked
      - id: check
        agent: "x:y"
        prompt: "check {{asked}}"
        output: checked
    collect: pairs
"#;

/// Under `rate_limiting` a foreach's agent turns are still sent to the workers, each admitted
/// by the run's limiter first: two workers make the calls, never two at once, and each starts
/// at least `min_delay_ms` after the one before ended; the report is a local run's.
#[test]
fn rate_limits_hold_across_workers() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.write("pipewright.toml", AGENT);
    e.two_workers_behind_a_balancer();
    e.write("limited.yaml", RATE_LIMITED);
    let args = [
        "run",
        "limited.yaml",
        "--backend",
        "command",
        "--format",
        "json",
    ];
    let on_engine = e.pw(&args);
    assert_eq!(on_engine.status.code(), Some(0), "{}", text(&on_engine));
    let calls = e.read("calls.log");
    let _ = std::fs::remove_file(e.project.join("calls.log"));
    let local = e.local(&args);
    assert_eq!(settled(&on_engine), settled(&local));
    let lines: Vec<(String, u128, u32)> = calls
        .lines()
        .filter_map(|l| {
            let mut w = l.split(' ');
            Some((
                w.next()?.to_string(),
                w.next()?.parse().ok()?,
                w.next()?.parse().ok()?,
            ))
        })
        .collect();
    assert_eq!(lines.len(), 2 * (6 + 6 + 4), "{calls}");
    for pair in lines.chunks(2) {
        assert_eq!(
            (pair[0].0.as_str(), pair[1].0.as_str()),
            ("start", "end"),
            "one call at a time: {calls}"
        );
    }
    for (i, w) in lines.windows(2).enumerate().filter(|(i, _)| i % 2 == 1) {
        let gap_ms = w[1].1.saturating_sub(w[0].1) / 1_000_000;
        assert!(
            gap_ms >= 300,
            "call {} started {gap_ms} ms after the last ended: {calls}",
            i / 2 + 1
        );
    }
    let workers: BTreeSet<u32> = lines.iter().map(|l| l.2).collect();
    for w in e.worker_pids() {
        assert!(workers.contains(&w), "worker {w} made calls: {calls}");
    }
}

/// Runs `file` (on the engine or locally, as `pw` runs pipewright) to its end through the
/// gates it pauses at: each approved with its message, then followed until the next gate asks
/// its prompt (`""`: until the run has ended). The last report.
fn through_gates(pw: &dyn Fn(&[&str]) -> Output, file: &str, gates: &[(&str, &str)]) -> Output {
    let paused = pw(&["run", file, "--format", "json"]);
    assert_eq!(paused.status.code(), Some(3), "{}", text(&paused));
    let id = report(&paused)["stores"]["session"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut last = paused;
    for (message, next) in gates {
        let approved = pw(&["approve", &id, "--message", message]);
        assert_eq!(approved.status.code(), Some(0), "{}", text(&approved));
        // Followed until the decision has taken effect (the engine goes on by itself).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            last = pw(&["run", "--resume", &id, "--format", "json"]);
            let done = match *next {
                "" => last.status.code() == Some(0),
                prompt => report(&last)["pending"]["prompt"] == prompt,
            };
            if done {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{}", text(&last));
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    }
    last
}

/// Gates in a sub-recipe that a foreach's iterations call, on the engine: each iteration, sent
/// to a worker, pauses the run at its gate; approved from the client, the run goes on by
/// itself, the iteration keeping its decision when it runs again, and the run ends as a local
/// run approved the same way. A sequential loop (a gate in each iteration) and a parallel one.
#[test]
fn gates_in_iterations_are_decided_on_the_engine() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    std::fs::create_dir_all(e.project.join("sub")).unwrap_or_else(|err| panic!("{err}"));
    copy_into(
        &testdata("recipe/run/sub/gated.yaml"),
        &e.project.join("sub"),
    );
    let cases: [(String, &[(&str, &str)]); 2] = [
        (
            e.copy(&testdata("recipe/run/gated-loop.yaml")),
            &[("one", "child ok c1-y\n?"), ("two", "")],
        ),
        (
            e.copy(&testdata("recipe/run/gated-parallel.yaml")),
            &[("one", "")],
        ),
    ];
    for (file, gates) in cases {
        let on_engine = through_gates(&|args| e.pw(args), &file, gates);
        let local = through_gates(&|args| e.local(args), &file, gates);
        assert_eq!(settled(&on_engine), settled(&local), "{file}");
    }
    let log = e.read("log");
    assert!(log.contains("c2-two"), "{log}");
}
