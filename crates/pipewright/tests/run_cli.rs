//! End-to-end tests of `pipewright run` through the real binary. Every test runs in its own
//! temporary directory holding copies of the fixtures, so `.pipewright/runs` lands there.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::Duration;

/// A temporary project holding copies of the named fixtures of `testdata/run`.
fn project(fixtures: &[&str]) -> tempfile::TempDir {
    let d = tempdir();
    for f in fixtures {
        copy_into(&testdata("run").join(f), d.path());
    }
    d
}

fn parse(o: &Output) -> Value {
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("`--format json` does not parse: {e}\n{}", text(o)))
}

/// Runs with `--format json` and returns the exit code and the parsed report.
fn run_json(dir: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let o = run_in(dir, &all);
    (o.status.code(), parse(&o))
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn run_ids(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join(".pipewright/runs"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn state(dir: &Path, id: &str) -> Value {
    let path = dir.join(".pipewright/runs").join(id).join("state.json");
    serde_json::from_str(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn hello_example_prints_its_result() {
    let d = tempdir();
    copy_into(&examples().join("hello.yaml"), d.path());
    let o = run_in(d.path(), &["run", "hello.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(stdout(&o), "\"Hello, world! All reviews passed.\"\n");
    let ids = run_ids(d.path());
    assert_eq!(ids.len(), 1, "one run stored in the working directory");
    let s = state(d.path(), &ids[0]);
    assert_eq!(s["status"], "ok");
    assert_eq!(s["file"], "hello.yaml");
    assert_eq!(s["workflow"], "hello");
    assert_eq!(s["output"], "Hello, world! All reviews passed.");
    assert!(d
        .path()
        .join(".pipewright/runs")
        .join(&ids[0])
        .join("events.jsonl")
        .is_file());
}

#[test]
fn json_report_has_exactly_the_documented_fields() {
    let d = tempdir();
    copy_into(&examples().join("hello.yaml"), d.path());
    let (code, v) = run_json(d.path(), &["hello.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(keys(&v), ["status", "run_id", "output", "stores"], "{v}");
    assert_eq!(v["status"], "ok");
    assert_eq!(v["output"], "Hello, world! All reviews passed.");
    assert_eq!(run_ids(d.path()), [v["run_id"].as_str().unwrap_or("?")]);
    let stores = &v["stores"];
    assert_eq!(
        keys(stores),
        ["name", "greeting", "reviews", "passed", "verdict"],
        "{v}"
    );
    assert_eq!(stores["name"], "world");
    assert_eq!(stores["greeting"], "Hello, world!");
    assert_eq!(stores["passed"], 3);
    assert_eq!(stores["reviews"].as_array().map(Vec::len), Some(3));
    assert_eq!(stores["verdict"], v["output"]);
}

#[test]
fn input_from_the_command_line_and_from_a_file() {
    let d = tempdir();
    copy_into(&examples().join("hello.yaml"), d.path());
    let (code, v) = run_json(d.path(), &["hello.yaml", "--input", r#"{"name":"Ada"}"#]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["output"], "Hello, Ada! All reviews passed.");
    assert_eq!(v["stores"]["name"], "Ada");

    std::fs::write(d.path().join("input.json"), r#"{"name": "Grace"}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = run_json(d.path(), &["hello.yaml", "--input-file", "input.json"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["output"], "Hello, Grace! All reviews passed.");
    let s = state(d.path(), v["run_id"].as_str().unwrap_or("?"));
    assert_eq!(
        s["input"],
        json!({"name": "Grace"}),
        "the input is stored for --resume"
    );
}

#[test]
fn input_that_is_not_an_object_exits_2() {
    let d = tempdir();
    copy_into(&examples().join("hello.yaml"), d.path());
    std::fs::write(d.path().join("list.json"), "[1, 2]").unwrap_or_else(|e| panic!("{e}"));
    for args in [
        &["run", "hello.yaml", "--input", "[1, 2]"][..],
        &["run", "hello.yaml", "--input", "\"Ada\""],
        &["run", "hello.yaml", "--input", "{not json"],
        &["run", "hello.yaml", "--input-file", "list.json"],
        &["run", "hello.yaml", "--input-file", "missing.json"],
    ] {
        let o = run_in(d.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
        assert!(stderr(&o).starts_with("error: "), "{args:?}: {}", text(&o));
    }
    assert!(run_ids(d.path()).is_empty(), "nothing ran");
}

#[test]
fn a_failing_transform_points_at_its_step() {
    let d = project(&["divide.yaml"]);
    let o = run_in(d.path(), &["run", "divide.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(err.contains("error[PW0800]"), "{err}");
    assert!(err.contains("division by zero"), "{err}");
    assert!(err.contains("divide.yaml:5:25"), "{err}");
    assert!(err.contains(" failed\n"), "{err}");

    let (code, v) = run_json(d.path(), &["divide.yaml"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        keys(&v),
        ["status", "run_id", "output", "stores", "error"],
        "{v}"
    );
    assert_eq!(v["status"], "failed");
    assert_eq!(v["output"], Value::Null);
    let e = &v["error"];
    assert_eq!(e["code"], "PW0800");
    assert_eq!(e["step"], "1");
    assert_eq!(e["step_kind"], "transform");
    assert_eq!(
        (&e["file"], &e["line"], &e["column"]),
        (&json!("divide.yaml"), &json!(5), &json!(25))
    );
    // With a non-zero divisor it succeeds.
    let (code, v) = run_json(d.path(), &["divide.yaml", "--input", r#"{"n": 4}"#]);
    assert_eq!((code, &v["output"]), (Some(0), &json!(2.5)), "{v}");
}

#[test]
fn reading_a_missing_file_fails_the_tool_step() {
    let d = project(&["read_missing.yaml"]);
    let o = run_in(d.path(), &["run", "read_missing.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = stderr(&o);
    assert!(err.contains("error[PW0801]"), "{err}");
    assert!(err.contains("read_missing.yaml:5:5"), "{err}");
    assert!(err.contains("no/such/file.txt"), "{err}");
    let (_, v) = run_json(d.path(), &["read_missing.yaml"]);
    assert_eq!(v["error"]["code"], "PW0801");
    assert_eq!(v["error"]["step_kind"], "tool");
    assert_eq!(v["error"]["value"], json!({"path": "no/such/file.txt"}));
}

#[test]
fn a_file_with_check_errors_is_refused_before_running() {
    let d = project(&["check_error.yaml"]);
    let o = run_in(d.path(), &["run", "check_error.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("error[PW0204]"), "{}", text(&o));
    assert!(stderr(&o).contains("check_error.yaml:5:5"), "{}", text(&o));
    assert!(
        !d.path().join("ran.txt").exists(),
        "its first step did not run"
    );
    assert!(run_ids(d.path()).is_empty());
    // The same with --format json: diagnostics on stderr, nothing on stdout.
    let o = run_in(d.path(), &["run", "check_error.yaml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(stdout(&o), "");
}

#[test]
fn unknown_pipeline_exits_2() {
    let d = project(&["on_error.yaml"]);
    let o = run_in(d.path(), &["run", "on_error.yaml", "--pipeline", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("no pipeline named `nope`"),
        "{}",
        text(&o)
    );
}

#[test]
fn for_each_continue_drops_failed_items() {
    let d = project(&["on_error.yaml"]);
    let (code, v) = run_json(d.path(), &["on_error.yaml", "--pipeline", "drops"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["output"], json!([10, 5]));
    assert_eq!(v["stores"]["ratios"], json!([10, 5]));
    let s = state(d.path(), v["run_id"].as_str().unwrap_or("?"));
    assert_eq!(
        s["completed"]["0.for_each.1"]["__fan_out_dropped__"], true,
        "{s}"
    );
}

#[test]
fn for_each_abort_fails_the_run() {
    let d = project(&["on_error.yaml"]);
    let (code, v) = run_json(d.path(), &["on_error.yaml", "--pipeline", "aborts"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["status"], "failed");
    let e = &v["error"];
    assert_eq!(e["code"], "PW0806");
    assert_eq!(e["step_kind"], "for_each");
    assert_eq!((&e["line"], &e["column"]), (&json!(13), &json!(5)));
    let msg = e["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("item 1 failed (on_error='abort')") && msg.contains("division by zero"),
        "{msg}"
    );
    // max_parallel 1: the item after the failing one never started.
    let s = state(d.path(), v["run_id"].as_str().unwrap_or("?"));
    assert!(s["completed"].get("0.for_each.2").is_none(), "{s}");
    let o = run_in(d.path(), &["run", "on_error.yaml", "--pipeline", "aborts"]);
    assert!(stderr(&o).contains("error[PW0806]"), "{}", text(&o));
    assert!(stderr(&o).contains("on_error.yaml:13:5"), "{}", text(&o));
}

#[test]
fn for_each_retry_reruns_a_flaky_step_until_it_succeeds() {
    let d = project(&["on_error.yaml"]);
    let (code, v) = run_json(d.path(), &["on_error.yaml", "--pipeline", "retries"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["output"], json!(["ok\n"]));
    assert_eq!(
        read(&d.path().join("attempts")).trim(),
        "3",
        "two failures, then success"
    );

    // retry(1) allows two attempts, not enough.
    std::fs::remove_file(d.path().join("attempts")).unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = run_json(
        d.path(),
        &["on_error.yaml", "--pipeline", "retries_exhausted"],
    );
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["error"]["code"], "PW0806");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("retry(1)"),
        "{v}"
    );
    assert_eq!(read(&d.path().join("attempts")).trim(), "2");
}

#[test]
fn script_backend_answers_from_a_reply_file() {
    let d = project(&["agents.yaml", "replies.yaml"]);
    let (code, v) = run_json(
        d.path(),
        &[
            "agents.yaml",
            "--backend",
            "script",
            "--script",
            "replies.yaml",
        ],
    );
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["output"], "all good");
    assert_eq!(v["stores"]["verdict"], json!({"passed": true}));
    // Without the reply file: a usage error before anything runs.
    let o = run_in(d.path(), &["run", "agents.yaml", "--backend", "script"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr(&o).contains("--script"), "{}", text(&o));
}

fn executable(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap_or_else(|e| panic!("{e}"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn command_backend_runs_the_argv_from_pipewright_toml() {
    let d = project(&["agents.yaml"]);
    // Reads the prompt on stdin (no {prompt} in argv), logs the step key it was given.
    executable(
        &d.path().join("fake-agent.sh"),
        "prompt=$(cat)\necho \"$1\" >> calls\ncase \"$prompt\" in *Review*) echo '{\"passed\": false}';; *) echo \"summary from step $1\";; esac",
    );
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[backend.command]\nargv = [\"./fake-agent.sh\", \"{step}\"]\ntimeout_secs = 20\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = run_json(d.path(), &["agents.yaml", "--backend", "command"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["output"], "summary from step 1");
    assert_eq!(v["stores"]["verdict"], json!({"passed": false}));
    assert_eq!(read(&d.path().join("calls")), "0\n1\n");
}

#[test]
fn command_backend_claude_profile_is_the_default() {
    let d = project(&["agents.yaml"]);
    let bin_dir = d.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap_or_else(|e| panic!("{e}"));
    // A stand-in for `claude -p --output-format json`: prompt on stdin, a JSON envelope out.
    executable(
        &bin_dir.join("claude"),
        "prompt=$(cat)\necho \"$*\" >> claude-args\ncase \"$prompt\" in *Review*) r='{\\\"passed\\\": true}';; *) r='from claude';; esac\nprintf '{\"type\":\"result\",\"is_error\":false,\"result\":\"%s\"}' \"$r\"",
    );
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = bin()
        .current_dir(d.path())
        .env("PATH", path)
        .args([
            "run",
            "agents.yaml",
            "--backend",
            "command",
            "--format",
            "json",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = parse(&o);
    assert_eq!(v["output"], "from claude");
    assert_eq!(v["stores"]["verdict"], json!({"passed": true}));
    let args = read(&d.path().join("claude-args"));
    assert!(args.starts_with("-p --output-format json"), "{args}");
}

#[test]
fn openai_backend_without_config_exits_2() {
    let d = project(&["agents.yaml"]);
    let o = run_in(d.path(), &["run", "agents.yaml", "--backend", "openai"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(stdout(&o), "");
    assert!(
        stderr(&o).contains("[backend.openai]") && stderr(&o).contains("pipewright.toml"),
        "{}",
        text(&o)
    );
    assert!(run_ids(d.path()).is_empty(), "nothing ran");
}

fn spawn_run(dir: &Path, args: &[&str]) -> Child {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    bin()
        .current_dir(dir)
        .args(&all)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("the pipewright binary runs: {e}"))
}

fn finish(child: Child) -> Output {
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("wait: {e}"))
}

#[test]
fn sigint_cancels_at_a_step_boundary_and_resume_finishes() {
    // The uninterrupted run goes on in parallel, to compare with.
    let reference = project(&["slow.yaml"]);
    let reference_run = spawn_run(reference.path(), &["slow.yaml"]);

    let d = project(&["slow.yaml"]);
    let child = spawn_run(d.path(), &["slow.yaml"]);
    let started = d.path().join("started");
    wait_for(Duration::from_secs(10), "the first step to start", || {
        started.exists().then_some(())
    });
    let pid = child.id().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(kill.success());
    let o = finish(child);
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let v = parse(&o);
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(
        v["cancelled_at"], "1",
        "the running step finished, the next did not start"
    );
    let id = v["run_id"].as_str().unwrap_or("?").to_string();
    let s = state(d.path(), &id);
    assert_eq!(s["status"], "cancelled");
    assert_eq!(s["completed"]["0"]["text"], "one\n", "{s}");

    let (code, resumed) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{resumed}");
    assert_eq!(resumed["run_id"], id.as_str());
    assert_eq!(
        read(&d.path().join("log")),
        "first\nsecond\n",
        "step 0 was not run again"
    );

    let r = finish(reference_run);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    let reference = parse(&r);
    assert_eq!(resumed["output"], "one\ntwo\n");
    assert_eq!(resumed["output"], reference["output"]);
    assert_eq!(resumed["stores"], reference["stores"]);
    assert_eq!(run_ids(d.path()), [id], "the resume continued the same run");
}

#[test]
fn kill_9_mid_fan_out_then_resume_gives_the_uninterrupted_result() {
    let reference = project(&["fan_gate.yaml"]);
    std::fs::write(reference.path().join("gate"), "").unwrap_or_else(|e| panic!("{e}"));
    let reference_run = spawn_run(reference.path(), &["fan_gate.yaml"]);

    let d = project(&["fan_gate.yaml"]);
    let mut child = spawn_run(d.path(), &["fan_gate.yaml"]);
    // Items a and b land; c and d then wait for the gate, so the run cannot end before the kill.
    let id = wait_for(Duration::from_secs(10), "two landed items on disk", || {
        let id = run_ids(d.path()).into_iter().next()?;
        let path = d
            .path()
            .join(".pipewright/runs")
            .join(&id)
            .join("state.json");
        let s: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
        let items = s["completed"]
            .as_object()?
            .keys()
            .filter(|k| k.starts_with("1.for_each.") && *k != "1.for_each.collect")
            .count();
        (items >= 2).then_some(id)
    });
    child.kill().unwrap_or_else(|e| panic!("kill -9: {e}"));
    let o = finish(child);
    assert_eq!(o.status.code(), None, "killed by a signal");
    let s = state(d.path(), &id);
    assert_eq!(s["status"], "running", "{s}");
    assert_eq!(s["completed"]["1.for_each.0"]["text"], "a\n", "{s}");
    assert_eq!(s["completed"]["1.for_each.1"]["text"], "b\n", "{s}");
    assert!(s["completed"].get("1.for_each.2").is_none(), "{s}");

    std::fs::write(d.path().join("gate"), "").unwrap_or_else(|e| panic!("{e}"));
    let (code, resumed) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{resumed}");
    assert_eq!(resumed["run_id"], id.as_str());

    let r = finish(reference_run);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    let reference = parse(&r);
    assert_eq!(resumed["output"], "a\nb\nc\nd\ne\nf\n");
    assert_eq!(resumed["output"], reference["output"]);
    assert_eq!(resumed["stores"], reference["stores"]);
    assert_eq!(state(d.path(), &id)["status"], "ok");
    // Landed items were replayed, not run again (c and d may have run twice: their shells
    // outlived the killed process).
    let log = read(&d.path().join("log"));
    for item in ["a", "b", "e", "f"] {
        assert_eq!(
            log.lines().filter(|l| *l == item).count(),
            1,
            "{item}: {log}"
        );
    }
}
