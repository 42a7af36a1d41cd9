//! `pipewright run` on MEOW templates through the real binary: each executor on its fixture in
//! testdata/meow/run, failures and limits, resume, and the corpus.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

/// Copies the fixtures into a fresh directory (runs write files and a run store there).
fn fixtures() -> tempfile::TempDir {
    let d = tempdir();
    for e in std::fs::read_dir(testdata("meow").join("run"))
        .unwrap_or_else(|e| panic!("testdata/meow/run: {e}"))
        .flatten()
    {
        copy_into(&e.path(), d.path());
    }
    d
}

fn run_json(dir: &Path, args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let o = run_in(dir, &all);
    let v = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    (o.status.code(), v, text(&o))
}

fn statuses(v: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v["steps"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, s)| (k.clone(), s.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = list
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    v.sort();
    v
}

#[test]
fn shell_steps_capture_apply_workdir_and_env_and_quote_values() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["shell.meow.toml"]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["status"], "ok");
    let s = &v["stores"];
    assert_eq!(s["setup"]["out"], "out");
    assert_eq!(s["setup"]["err"], "err");
    assert_eq!(s["setup"]["code"], 0);
    assert_eq!(s["setup"]["data"], serde_json::json!({"n": 2}));
    assert_eq!(s["where"]["dir"], "sub\nn=2");
    // The quote inside the value reaches printf as one argument.
    assert_eq!(s["quoted"]["text"], "Ada 'the first' Lovelace");
    assert_eq!(s["tolerated"]["exit_code"], 3);
    assert_eq!(s["tolerated"]["error"], "broken");
    assert_eq!(v["steps"]["tolerated"], "done");
}

#[test]
fn branches_expand_templates_inline_steps_and_timeouts() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["branch.meow.toml"]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(
        statuses(&v),
        pairs(&[
            ("yes", "done"),
            ("yes.say", "done"),
            ("no", "done"),
            ("no.first", "done"),
            ("no.second", "done"),
            ("slow", "done"),
            ("slow.late", "done"),
            ("after", "done"),
        ])
    );
    assert_eq!(v["stores"]["yes.say"]["line"], "hello true-side");
    assert_eq!(v["stores"]["no"]["outcome"], "false");
    assert_eq!(v["stores"]["slow"]["outcome"], "timeout");
    assert_eq!(v["stores"]["slow"]["exit_code"], -1);
}

#[test]
fn foreach_iterates_in_order_with_limits_and_wildcard_needs() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["foreach.meow.toml"]);
    assert_eq!(code, Some(0), "{all}");
    for id in [
        "each.0.run",
        "each.1.run",
        "each.2.run",
        "seq.0.t",
        "seq.1.t",
        "loose.0.t",
        "loose.1.t",
    ] {
        assert_eq!(v["steps"][id], "done", "{id}: {all}");
    }
    assert_eq!(v["stores"]["each.2.run"]["label"], "c-2");
    // max_concurrent = 1: each iteration ends before the next starts.
    let log = read(&d.path().join("running.log"));
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "start-a-0",
            "end-a-0",
            "start-b-1",
            "end-b-1",
            "start-c-2",
            "end-c-2"
        ],
        "{log}"
    );
    // The wildcard need waited for every iteration's `run`.
    assert_eq!(
        v["stores"]["all-work"]["log"]
            .as_str()
            .map(|s| s.lines().count()),
        Some(6)
    );
    assert_eq!(read(&d.path().join("seq.log")), "1\n2\n");
}

/// Issue 22 item 17: a foreach's `variables` use its item and index, and the template declares
/// the item and index as required (check accepts it, so the run must too). Item 18: quotes
/// ended around a placeholder keep a value with a space one word.
#[test]
fn foreach_variables_see_the_item_and_a_template_may_require_it() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["foreach_vars.meow.toml"]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(
        v["stores"]["each.0.run"]["line"], "worker-0/a b/0\nMerge a b track",
        "{all}"
    );
    assert_eq!(
        v["stores"]["each.1.run"]["line"],
        "worker-1/c/1\nMerge c track"
    );
    let o = run_in(d.path(), &["check", "foreach_vars.meow.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn expand_passes_typed_variables_and_children_are_prefixed() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["expand.meow.toml"]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["stores"]["impl.first"]["line"], "y task 7 impl.");
    assert_eq!(v["stores"]["done"]["line"], "got y task 7 impl.");
    assert_eq!(v["output"]["line"], "got y task 7 impl.");
}

#[test]
fn agents_answered_by_the_mock_backend_give_outputs_of_their_declared_types() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["agents.meow.toml", "--backend", "mock"]);
    assert_eq!(code, Some(0), "{all}");
    let plan = &v["stores"]["plan"];
    assert!(plan["title"].is_string(), "{all}");
    assert!(plan["size"].is_number(), "{all}");
    assert!(plan["ok"].is_boolean(), "{all}");
    assert!(plan["spec"].is_object(), "{all}");
    assert_eq!(plan["file"], ".");
    for id in ["start", "plan", "nudge", "build", "stop"] {
        assert_eq!(v["steps"][id], "done", "{id}");
    }
}

/// Runs the agents fixture with the script backend answering from `replies` (YAML).
fn run_script(dir: &Path, replies: &str) -> (Option<i32>, Value, String) {
    std::fs::write(dir.join("replies.yaml"), replies).unwrap_or_else(|e| panic!("{e}"));
    run_json(
        dir,
        &[
            "agents.meow.toml",
            "--backend",
            "script",
            "--script",
            "replies.yaml",
        ],
    )
}

#[test]
fn invalid_agent_outputs_are_sent_back_and_retried_then_fail() {
    let d = fixtures();
    let (code, v, all) = run_script(
        d.path(),
        "replies:\n  - contains: \"Plan the work\"\n    replies:\n      - {title: \"\", size: \"lots\"}\n      - {title: \"T\", size: \"12\"}\n  - contains: \"Build\"\n    reply: {}\n",
    );
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["stores"]["plan"]["size"], 12, "{all}");
    assert_eq!(v["stores"]["plan"]["title"], "T");

    let (code, v, all) = run_script(
        d.path(),
        "replies:\n  - contains: \"Plan the work\"\n    reply: {size: \"lots\"}\ndefault: \"{}\"\n",
    );
    assert_eq!(code, Some(1), "{all}");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("output validation failed after 3 answers"),
        "{msg}"
    );
    assert!(msg.contains("missing required output `title`"), "{msg}");
    assert_eq!(v["error"]["code"], "PW0830");
    assert_eq!(v["steps"]["build"], "skipped");
    assert_eq!(v["steps"]["stop"], "skipped");
}

#[test]
fn a_failed_step_skips_its_dependents_and_the_run_exits_1() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["failure.meow.toml"]);
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(v["status"], "failed");
    assert_eq!(
        statuses(&v),
        pairs(&[
            ("bad", "failed"),
            ("child", "skipped"),
            ("grandchild", "skipped"),
            ("independent", "done"),
        ])
    );
    assert_eq!(v["error"]["step"], "bad");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("exited with status 4: nope"));
    // Human output: the failure as a diagnostic on stderr, exit 1.
    let o = run_in(d.path(), &["run", "failure.meow.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("PW0830"), "{}", text(&o));
}

#[test]
fn runaway_recursion_stops_at_the_depth_limit_and_the_limit_is_configurable() {
    let d = fixtures();
    // The error message of loop.meow.toml's run under `config` (pipewright.toml).
    let message_with = |config: &str| {
        std::fs::write(d.path().join("pipewright.toml"), config).unwrap_or_else(|e| panic!("{e}"));
        let (code, v, all) = run_json(d.path(), &["loop.meow.toml"]);
        assert_eq!(code, Some(1), "{all}");
        assert_eq!(v["error"]["code"], "PW0831", "{all}");
        v["error"]["message"].as_str().unwrap_or("").to_string()
    };
    let msg = message_with("");
    assert!(msg.contains("over the limit of 10"), "{msg}");
    let msg = message_with("[meow]\nmax_expansion_depth = 3\n");
    assert!(msg.contains("over the limit of 3"), "{msg}");
    let msg = message_with("[meow]\nmax_total_steps = 4\n");
    assert!(
        msg.contains("the run would have 5 steps, over the limit of 4"),
        "{msg}"
    );
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[meow]\nmax_total_steps = 0\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["run", "loop.meow.toml"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        stderr(&o).contains("`meow.max_total_steps` must be at least 1"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_need_no_step_provides_fails_instead_of_hanging() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["missing_need.meow.toml"]);
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(v["steps"]["waits"], "failed");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("it needs `e.nothing`, which no step of the run provides"));
}

#[test]
fn missing_required_variables_stop_the_run_before_anything_runs() {
    let d = fixtures();
    let o = run_in(d.path(), &["run", "required.meow.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("workflow `main` needs `target`, which nothing gives it")
            && stderr(&o).contains("help: give it with --var target=VALUE"),
        "{}",
        text(&o)
    );
    assert!(!d.path().join("started-x").exists());
    let o = run_in(
        d.path(),
        &["run", "required.meow.toml", "--var", "targte=x"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `target`?"),
        "{}",
        text(&o)
    );
    let (code, _, all) = run_json(d.path(), &["required.meow.toml", "--var", "target=x"]);
    assert_eq!(code, Some(0), "{all}");
    assert!(d.path().join("started-x").exists());
}

#[test]
fn a_workflow_is_chosen_with_a_fragment() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["branch.meow.toml#greet", "--var", "name=Bo"]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["stores"]["say"]["line"], "hello Bo");
    let o = run_in(d.path(), &["run", "branch.meow.toml#nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no workflow named `nope`"),
        "{}",
        text(&o)
    );
}

/// The run id of the only run in the store of `dir`.
fn only_run(dir: &Path) -> String {
    let o = run_in(dir, &["runs", "--format", "json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    let runs = v.as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 1, "{}", text(&o));
    runs[0]["run_id"].as_str().unwrap_or("").to_string()
}

#[test]
fn resume_after_kill_9_reruns_what_was_in_flight_and_refuses_a_second_orchestrator() {
    let d = fixtures();
    let mut child = spawn_run(d.path(), &["resume.meow.toml"]);
    let trace = d.path().join("trace.log");
    wait_for(
        std::time::Duration::from_secs(20),
        "the in-flight step",
        || {
            std::fs::read_to_string(&trace)
                .ok()
                .filter(|t| t.contains("wait"))
        },
    );
    let id = only_run(d.path());
    // The owner is alive: a second orchestrator is refused.
    let o = run_in(d.path(), &["run", "--resume", &id]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("in progress in another process"),
        "{}",
        text(&o)
    );
    child.kill().unwrap_or_else(|e| panic!("kill: {e}"));
    let _ = child.wait();
    std::fs::write(d.path().join("go"), "").unwrap_or_else(|e| panic!("{e}"));
    let (code, v, all) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["run_id"], id.as_str());
    assert_eq!(v["steps"]["last"], "done", "{all}");
    // `first` landed before the kill and is not run again; `wait` was in flight and is.
    assert_eq!(read(&trace), "first\nwait\nwait\nlast\n");
    // The agent's answer is the one that landed (or the repeated one, if it had not).
    assert!(
        v["stores"]["last"]["line"]
            .as_str()
            .is_some_and(|s| s.starts_with("mock")),
        "{all}"
    );
    // An ended run is not resumed.
    let o = run_in(d.path(), &["run", "--resume", &id]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr(&o).contains("has ended"), "{}", text(&o));
}

/// Shell steps land with the scheduler's one commit of a pass, not one commit each (issue
/// 27): a step that ended while another still runs must be durable before the scheduler waits
/// for the other, and so is not run again after a kill -9.
#[test]
fn a_shell_step_that_ended_lands_while_another_still_runs() {
    let d = tempdir();
    std::fs::write(
        d.path().join("two.meow.toml"),
        "[main]\n[[main.steps]]\nid = \"quick\"\nexecutor = \"shell\"\ncommand = \"echo quick >> trace.log\"\n\n[[main.steps]]\nid = \"slow\"\nexecutor = \"shell\"\ncommand = \"echo slow >> trace.log; while [ ! -e go ]; do sleep 0.05; done\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut child = spawn_run(d.path(), &["two.meow.toml"]);
    let id = wait_for(
        std::time::Duration::from_secs(20),
        "`quick` to land while `slow` runs",
        || {
            let trace = std::fs::read_to_string(d.path().join("trace.log")).ok()?;
            if !trace.contains("slow") {
                return None;
            }
            let o = run_in(d.path(), &["runs", "--format", "json"]);
            let runs: Value = serde_json::from_str(&stdout(&o)).ok()?;
            let id = runs[0]["run_id"].as_str()?.to_string();
            let shown: Value =
                serde_json::from_str(&stdout(&run_in(d.path(), &["runs", "show", &id]))).ok()?;
            (shown["completed"]["quick"]["status"] == "done").then_some(id)
        },
    );
    child.kill().unwrap_or_else(|e| panic!("kill: {e}"));
    let _ = child.wait();
    std::fs::write(d.path().join("go"), "").unwrap_or_else(|e| panic!("{e}"));
    let (code, v, all) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["steps"]["slow"], "done", "{all}");
    let trace = read(&d.path().join("trace.log"));
    assert_eq!(trace.matches("quick").count(), 1, "{trace}");
    assert_eq!(trace.matches("slow").count(), 2, "{trace}");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for e in std::fs::read_dir(from)
        .unwrap_or_else(|e| panic!("{}: {e}", from.display()))
        .flatten()
    {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        }
    }
}

/// The names a "needs `a`, `b`, which nothing gives it" refusal lists.
fn required_names(err: &str) -> Vec<String> {
    let Some(start) = err.find(" needs `") else {
        return Vec::new();
    };
    let rest = &err[start + 7..];
    let end = rest.find(", which nothing gives it").unwrap_or(0);
    rest[..end]
        .split(", ")
        .map(|n| n.trim_matches('`').to_string())
        .collect()
}

/// Every corpus template that checks clean runs offline with the mock backend (given a dummy
/// `x` for each required variable), or stops with a clear reason: exit 1 with the failing step
/// and why, or exit 2 with an `error:` line. Which ones end `ok` is pinned, so a regression
/// shows. The corpus lives beside the repository; without it the test has nothing to run.
#[test]
fn corpus_templates_run_offline_or_stop_with_a_reason() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    let Ok(expected) = std::fs::read_to_string(corpus.join("EXPECTED.tsv")) else {
        eprintln!("no corpus at {}: nothing to run", corpus.display());
        return;
    };
    let d = tempdir();
    copy_tree(&corpus.join("meow"), d.path());
    let mut ok = Vec::new();
    let mut ran = 0;
    for line in expected.lines() {
        let mut cols = line.split('\t');
        let (Some(path), Some("ok")) = (cols.next(), cols.next()) else {
            continue;
        };
        let Some(rel) = path.strip_prefix("meow/") else {
            continue;
        };
        ran += 1;
        let mut args: Vec<String> =
            vec!["run".into(), rel.into(), "--format".into(), "json".into()];
        let mut o = run_in(
            d.path(),
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let names = required_names(&stderr(&o));
        if o.status.code() == Some(2) && !names.is_empty() {
            for n in names {
                args.push("--var".into());
                args.push(format!("{n}=x"));
            }
            o = run_in(
                d.path(),
                &args.iter().map(String::as_str).collect::<Vec<_>>(),
            );
        }
        match o.status.code() {
            Some(0) => ok.push(rel.to_string()),
            Some(1) => {
                let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
                assert_eq!(v["status"], "failed", "{rel}: {}", text(&o));
                let msg = v["error"]["message"].as_str().unwrap_or("");
                assert!(msg.starts_with("step `"), "{rel}: {msg}");
            }
            Some(2) => assert!(stderr(&o).starts_with("error: "), "{rel}: {}", text(&o)),
            other => panic!("{rel}: exit {other:?}: {}", text(&o)),
        }
    }
    assert_eq!(ran, 37, "the corpus lists 37 MEOW files that check clean");
    ok.sort();
    assert_eq!(
        ok,
        [
            ".meow/workflows/agent-demo.meow.toml",
            ".meow/workflows/lib/integration-agent.meow.toml",
            ".meow/workflows/lib/merge-agent.meow.toml",
            ".meow/workflows/lib/protocols/integration.meow.toml",
            ".meow/workflows/merge-agent-only.meow.toml",
            ".meow/workflows/shell-demo.meow.toml",
            ".meow/workflows/tests/core-test.meow.toml",
            ".meow/workflows/tests/hello-test.meow.toml",
            ".meow/workflows/tests/manual-task.meow.toml",
            ".meow/workflows/tests/output-test.meow.toml",
            // Its monitor calls `meow step-status` by the reference's name.
            ".meow/workflows/tests/ralph-wiggum-demo.meow.toml",
            ".meow/workflows/tests/test-context-monitor.meow.toml",
            ".meow/workflows/tests/test-rw.meow.toml",
            ".meow/workflows/tests/test-worktree.meow.toml",
            "examples/simple.meow.toml",
            "examples/tdd.meow.toml",
        ]
    );
}

#[test]
fn the_orchestrator_channel_carries_approvals_and_events_on_an_owner_only_socket() {
    let d = fixtures();
    let pw = format!("pw={}", env!("CARGO_BIN_EXE_pipewright"));
    let (code, v, all) = run_json(d.path(), &["channel.meow.toml", "--var", &pw]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["steps"]["gate.approved"], "done", "{all}");
    // The event with k=2 did not match the filter; the one with k=1 did.
    assert_eq!(v["stores"]["listen"]["data"]["k"], "1", "{all}");
    assert_eq!(v["stores"]["listen"]["data"]["note"], "hi");
    // A rejection decided before anyone waited is still seen.
    assert_eq!(v["stores"]["refused"]["outcome"], "false");
    assert!(v["stores"]["refused"]["error"]
        .as_str()
        .is_some_and(|e| e.contains("rejected: no")));
    assert_eq!(v["stores"]["perm"]["modes"], "600\n700", "{all}");
    // The socket is gone with the run.
    let id = v["run_id"].as_str().unwrap_or("");
    assert!(!d
        .path()
        .join(".pipewright/runs")
        .join(id)
        .join("orch.sock")
        .exists());
}

#[test]
fn meow_commands_outside_a_run_are_silent_no_ops() {
    let d = tempdir();
    for args in [
        &["done", "--output", "a=1"][..],
        &["event", "ping", "k=v"],
        &["event", "ping", "--data", "k=v"],
        &["await-event", "ping"],
        // A human's `approve`/`reject` fails instead (meow_channel.rs).
        &["await-approval", "g"],
    ] {
        assert_meow_is_a_silent_no_op(d.path(), args);
    }
    // With a socket nobody listens on: a clear error.
    let o = bin()
        .current_dir(d.path())
        .env("MEOW_ORCH_SOCK", d.path().join("nobody.sock"))
        .args(["meow", "event", "ping"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot reach the orchestrator"),
        "{}",
        text(&o)
    );
}

#[test]
fn cleanup_scripts_run_on_success_and_on_ctrl_c() {
    let d = fixtures();
    let (code, _, all) = run_json(d.path(), &["stop.meow.toml", "--var", "who=me"]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(read(&d.path().join("cleanup.txt")), "done-me\n");
    std::fs::remove_file(d.path().join("started")).unwrap_or_else(|e| panic!("{e}"));
    let child = spawn_run(
        d.path(),
        &["stop.meow.toml", "--var", "who=me", "--var", "wait=30"],
    );
    wait_for(std::time::Duration::from_secs(20), "the long step", || {
        d.path().join("started").exists().then_some(())
    });
    let pid = child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .is_ok_and(|s| s.success());
    assert!(killed);
    let o = finish(child);
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    assert_eq!(v["status"], "cancelled", "{}", text(&o));
    assert_eq!(v["steps"]["long"], "cancelled");
    assert_eq!(read(&d.path().join("cleanup.txt")), "stopped-me\n");
}

#[test]
fn resume_keeps_a_branch_outcome_and_foreach_items_from_the_first_attempt() {
    let d = fixtures();
    std::fs::write(d.path().join("items.json"), "[1, 2]").unwrap_or_else(|e| panic!("{e}"));
    let mut child = spawn_run(d.path(), &["resume_expand.meow.toml"]);
    let trace = d.path().join("trace.log");
    wait_for(
        std::time::Duration::from_secs(20),
        "both iterations",
        || {
            let t = std::fs::read_to_string(&trace).ok()?;
            (t.contains("work-1") && t.contains("work-2")).then_some(())
        },
    );
    child.kill().unwrap_or_else(|e| panic!("kill: {e}"));
    let _ = child.wait();
    let id = only_run(d.path());
    std::fs::write(d.path().join("items.json"), "[7, 8, 9]").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(d.path().join("go"), "").unwrap_or_else(|e| panic!("{e}"));
    let (code, v, all) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["steps"]["each.1.work"], "done", "{all}");
    assert!(v["steps"].get("each.2.work").is_none(), "{all}");
    let t = read(&trace);
    assert_eq!(t.matches("cond").count(), 1, "{t}");
    assert_eq!(t.matches("inner").count(), 1, "{t}");
    assert_eq!(t.matches("work-1").count(), 2, "{t}");
    assert!(!t.contains("work-7"), "{t}");
}

#[test]
fn under_a_deep_project_directory_the_socket_moves_to_a_private_runtime_directory() {
    let d = tempdir();
    let deep = d.path().join("a".repeat(60)).join("b".repeat(60));
    std::fs::create_dir_all(&deep).unwrap_or_else(|e| panic!("{e}"));
    copy_into(
        &testdata("meow").join("run").join("channel.meow.toml"),
        &deep,
    );
    let runtime = d.path().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap_or_else(|e| panic!("{e}"));
    let pw = format!("pw={}", env!("CARGO_BIN_EXE_pipewright"));
    let o = bin()
        .current_dir(&deep)
        .env("XDG_RUNTIME_DIR", &runtime)
        .args(["run", "channel.meow.toml", "--format", "json", "--var", &pw])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    assert_eq!(v["steps"]["gate.approved"], "done", "{}", text(&o));
    assert_eq!(v["stores"]["perm"]["modes"], "600\n700", "{}", text(&o));
    let dirs: Vec<_> = std::fs::read_dir(&runtime)
        .map(|r| r.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    assert!(dirs[0].to_string_lossy().starts_with("pw-meow-"));
}

#[test]
fn a_failed_step_with_an_on_error_template_is_recovered_and_its_dependents_run() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["recovery.meow.toml"]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["status"], "ok");
    assert_eq!(
        statuses(&v),
        pairs(&[
            ("build", "recovered"),
            ("build.on_error.report", "done"),
            ("after", "done"),
        ])
    );
    // `_failed_step` and the failing workflow's variable `who`, as the recovery saw them.
    let line = v["stores"]["build.on_error.report"]["line"]
        .as_str()
        .unwrap_or("");
    let f: Vec<&str> = line.split('|').collect();
    assert_eq!(
        f[..6],
        [
            "build",
            "shell",
            "command_failed",
            "exited with status 3: broke",
            "0",
            "ada"
        ],
        "{all}"
    );
    // started_at is a UTC timestamp, duration a Go-style duration, agent empty for a shell.
    assert!(
        f[6].len() == 20 && f[6].ends_with('Z') && f[6].as_bytes()[10] == b'T',
        "{line}"
    );
    assert!(f[7].ends_with("ms") || f[7].ends_with('s'), "{line}");
    assert_eq!(f[8], "", "{line}");
    assert_eq!(v["stores"]["after"]["line"], "after");
    // The store has the failure with its error, then the recovery's verdict.
    let show = run_in(
        d.path(),
        &["runs", "show", v["run_id"].as_str().unwrap_or("")],
    );
    let rec: Value = serde_json::from_str(&stdout(&show)).unwrap_or(Value::Null);
    assert_eq!(
        rec["completed"]["build"]["status"],
        "recovered",
        "{}",
        text(&show)
    );
    assert_eq!(
        rec["completed"]["build"]["error"],
        "exited with status 3: broke"
    );
    assert_eq!(
        rec["completed"]["build#recovery"]["error_type"],
        "command_failed"
    );
    // A recovery's steps count against the run's step limit.
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[meow]\nmax_total_steps = 2\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (code, v, all) = run_json(d.path(), &["recovery.meow.toml"]);
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(v["error"]["code"], "PW0831", "{all}");
    assert!(
        v["error"]["message"].as_str().is_some_and(|m| m.contains(
            "its `on_error` recovery `.fix` could not start: the run would have 3 steps"
        )),
        "{all}"
    );
    assert_eq!(
        statuses(&v),
        pairs(&[("build", "failed"), ("after", "skipped")])
    );
}

#[test]
fn a_failed_recovery_skips_the_dependents_and_the_run_exits_1() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["recovery.meow.toml#broken"]);
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(v["status"], "failed");
    assert_eq!(
        statuses(&v),
        pairs(&[
            ("build", "failed"),
            ("build.on_error.abort", "failed"),
            ("after", "skipped"),
        ])
    );
    assert_eq!(v["error"]["code"], "PW0830");
    assert_eq!(v["error"]["step"], "build.on_error.abort", "{all}");
    // Outputs of a recovered step are an error, not the failed command's leftovers.
    let (code, v, all) = run_json(d.path(), &["recovery.meow.toml#reads"]);
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(v["steps"]["build"], "recovered");
    assert_eq!(v["steps"]["after"], "failed");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains(
            "step `build` failed and its `on_error` recovery stood in for it, so it has no outputs"
        ),
        "{msg}"
    );
    // A kill step has no `on_error`: nothing recovers it.
    let (code, v, all) = run_json(d.path(), &["recovery.meow.toml#killer"]);
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(
        statuses(&v),
        pairs(&[("start", "done"), ("stop", "failed")]),
        "{all}"
    );
}

#[test]
fn nested_recoveries_count_retries_and_stop_at_the_recovery_depth_limit() {
    let d = fixtures();
    let log = d.path().join("retries.log");
    // Every retry fails: three recoveries, then PW0832.
    let (code, v, all) = run_json(d.path(), &["recovery.meow.toml#chain"]);
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(v["error"]["code"], "PW0832", "{all}");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains(
            "recoveries would nest 4 deep, over the limit of 3 (`[meow] max_recovery_depth`"
        ),
        "{msg}"
    );
    assert_eq!(
        v["error"]["step"],
        "flaky.on_error.retry.on_error.retry.on_error.retry"
    );
    assert_eq!(v["steps"]["flaky"], "failed");
    assert_eq!(read(&log), "0\n1\n2\n");
    // The limit is configurable.
    std::fs::remove_file(&log).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[meow]\nmax_recovery_depth = 1\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (code, v, all) = run_json(d.path(), &["recovery.meow.toml#chain"]);
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(v["error"]["code"], "PW0832", "{all}");
    assert_eq!(v["error"]["step"], "flaky.on_error.retry");
    assert_eq!(read(&log), "0\n");
    std::fs::remove_file(d.path().join("pipewright.toml")).unwrap_or_else(|e| panic!("{e}"));
    // The second attempt (retries = 1) succeeds: the chain is recovered bottom up.
    std::fs::remove_file(&log).unwrap_or_else(|e| panic!("{e}"));
    let (code, v, all) = run_json(
        d.path(),
        &["recovery.meow.toml#chain", "--var", "pass_at=1"],
    );
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(
        statuses(&v),
        pairs(&[
            ("flaky", "recovered"),
            ("flaky.on_error.retry", "recovered"),
            ("flaky.on_error.retry.on_error.retry", "done"),
        ])
    );
    assert_eq!(read(&log), "0\n1\n");
    // `explain` knows the code.
    let o = run_in(d.path(), &["explain", "PW0832"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stdout(&o).contains("max_recovery_depth"), "{}", text(&o));
}

#[test]
fn every_executor_that_fails_is_recovered_with_its_error_type() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["recovery.meow.toml#kinds"]);
    assert_eq!(code, Some(0), "{all}");
    let s = &v["stores"];
    assert_eq!(
        s["ex.on_error.note"]["line"], "ex:expand:template_not_found",
        "{all}"
    );
    assert_eq!(s["fe.on_error.note"]["line"], "fe:foreach:invalid_items");
    assert_eq!(
        s["fe-child.on_error.note"]["line"],
        "fe-child:foreach:child_failed"
    );
    assert_eq!(s["br.on_error.note"]["line"], "br:branch:condition_error");
    assert_eq!(
        s["br-missing.on_error.note"]["line"],
        "br-missing:branch:template_not_found"
    );
    assert_eq!(
        s["fe-missing.on_error.note"]["line"],
        "fe-missing:foreach:template_not_found"
    );
    for id in ["ex", "fe", "fe-child", "br", "br-missing", "fe-missing"] {
        assert_eq!(v["steps"][id], "recovered", "{id}: {all}");
    }
    // The iteration that failed stays failed; its foreach's recovery stood in for it.
    assert_eq!(v["steps"]["fe-child.0.abort"], "failed");
    assert_eq!(v["steps"]["done"], "done");

    // An agent step: its agent and prompt.
    std::fs::write(
        d.path().join("replies.yaml"),
        "replies: []\ndefault: \"{}\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let script = ["--backend", "script", "--script", "replies.yaml"];
    let mut args = vec!["recovery_agent.meow.toml"];
    args.extend(script);
    let (code, v, all) = run_json(d.path(), &args);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["steps"]["plan"], "recovered");
    assert_eq!(
        v["stores"]["plan.on_error.say"]["line"], "agent|agent_crashed|worker|Plan the work",
        "{all}"
    );
    // `on_error = "continue"` works on an agent step too.
    let mut args = vec!["recovery_agent.meow.toml#tolerant"];
    args.extend(script);
    let (code, v, all) = run_json(d.path(), &args);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["steps"]["plan"], "done");
    assert_eq!(v["steps"]["after"], "done");
    assert!(
        v["stores"]["plan"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("output validation failed")),
        "{all}"
    );
}

#[test]
fn resume_after_kill_9_during_a_recovery_finishes_it_with_the_first_failure() {
    let d = fixtures();
    let mut child = spawn_run(d.path(), &["recovery_resume.meow.toml"]);
    let trace = d.path().join("trace.log");
    wait_for(
        std::time::Duration::from_secs(20),
        "the recovery's in-flight step",
        || {
            std::fs::read_to_string(&trace)
                .ok()
                .filter(|t| t.contains("wait"))
        },
    );
    child.kill().unwrap_or_else(|e| panic!("kill: {e}"));
    let _ = child.wait();
    let id = only_run(d.path());
    let before = read(&trace);
    std::fs::write(d.path().join("go"), "").unwrap_or_else(|e| panic!("{e}"));
    let (code, v, all) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(
        statuses(&v),
        pairs(&[
            ("first", "done"),
            ("build", "recovered"),
            ("build.on_error.note", "done"),
            ("build.on_error.wait", "done"),
            ("after", "done"),
        ])
    );
    // `build` and the recovery's `note` landed and are not run again; `wait` was in flight.
    let t = read(&trace);
    assert_eq!(t.matches("build\n").count(), 1, "{t}");
    assert_eq!(t.matches("fix-build-0-").count(), 1, "{t}");
    assert_eq!(t.matches("wait").count(), 2, "{t}");
    assert!(
        t.starts_with(&before) && t.ends_with("wait\nafter\n"),
        "{t}"
    );
}

#[test]
fn steps_call_meow_by_the_references_name() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["meow_command.meow.toml"]);
    assert_eq!(code, Some(0), "{all}");
    // `meow event TYPE --data k=v`, the reference's form, carries its data.
    assert_eq!(v["stores"]["listen"]["data"]["k"], "1", "{all}");
    assert_eq!(v["stores"]["listen"]["data"]["who"], "ref", "{all}");
    assert_eq!(v["stores"]["status"]["said"], "listen-done", "{all}");
    // The step's own PATH is kept after the run's `meow`.
    let id = v["run_id"].as_str().unwrap_or("");
    let bin = d.path().join(".pipewright/runs").join(id).join("bin");
    let found = v["stores"]["own-path"]["found"].as_str().unwrap_or("");
    let lines: Vec<&str> = found.lines().collect();
    assert_eq!(lines.len(), 2, "{found}");
    assert_eq!(Path::new(lines[0]), bin.join("meow"), "{all}");
    assert!(
        lines[1] == "/usr/bin/sh" || lines[1] == "/bin/sh",
        "{found}"
    );
}

#[test]
fn the_binary_called_meow_is_pipewright_meow() {
    let d = tempdir();
    let link = d.path().join("meow");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_pipewright"), &link)
        .unwrap_or_else(|e| panic!("{e}"));
    let o = std::process::Command::new(&link)
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stdout(&o).contains("await-approval"), "{}", text(&o));
    // Outside a run it does nothing, like `pipewright meow done`.
    let o = std::process::Command::new(&link)
        .args(["done", "--output", "x=1"])
        .env_remove("MEOW_ORCH_SOCK")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", text(&o));
}

#[test]
fn a_run_is_resumed_only_as_the_workflow_it_runs() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["expand.meow.toml"]);
    assert_eq!(code, Some(0), "{all}");
    let id = v["run_id"].as_str().unwrap_or("").to_string();
    let o = run_in(d.path(), &["run", "expand.meow.toml#impl", "--resume", &id]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!(
            "run {id} runs workflow `main`; it cannot be resumed as workflow `impl`"
        )),
        "{}",
        text(&o)
    );
}
