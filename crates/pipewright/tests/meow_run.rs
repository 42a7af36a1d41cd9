//! `pipewright run` on MEOW templates through the real binary: each executor on its fixture in
//! testdata/meow/run, failures and limits, resume, and the corpus.

mod common;
use common::*;
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

#[test]
fn invalid_agent_outputs_are_sent_back_and_retried_then_fail() {
    let d = fixtures();
    std::fs::write(
        d.path().join("replies.yaml"),
        "replies:\n  - contains: \"Plan the work\"\n    replies:\n      - {title: \"\", size: \"lots\"}\n      - {title: \"T\", size: \"12\"}\n  - contains: \"Build\"\n    reply: {}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (code, v, all) = run_json(
        d.path(),
        &[
            "agents.meow.toml",
            "--backend",
            "script",
            "--script",
            "replies.yaml",
        ],
    );
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["stores"]["plan"]["size"], 12, "{all}");
    assert_eq!(v["stores"]["plan"]["title"], "T");

    std::fs::write(
        d.path().join("bad.yaml"),
        "replies:\n  - contains: \"Plan the work\"\n    reply: {size: \"lots\"}\ndefault: \"{}\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (code, v, all) = run_json(
        d.path(),
        &[
            "agents.meow.toml",
            "--backend",
            "script",
            "--script",
            "bad.yaml",
        ],
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
    let (code, v, all) = run_json(d.path(), &["loop.meow.toml"]);
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(v["error"]["code"], "PW0831", "{all}");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(msg.contains("over the limit of 10"), "{msg}");
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[meow]\nmax_expansion_depth = 3\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (_, v, all) = run_json(d.path(), &["loop.meow.toml"]);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("over the limit of 3"),
        "{all}"
    );
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[meow]\nmax_total_steps = 4\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (_, v, all) = run_json(d.path(), &["loop.meow.toml"]);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("the run would have 5 steps, over the limit of 4"),
        "{all}"
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
        stderr(&o).contains("workflow `main` needs `target` (required, no default): give them with --var NAME=VALUE"),
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
