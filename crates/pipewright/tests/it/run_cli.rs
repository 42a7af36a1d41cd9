//! End-to-end tests of `pipewright run` through the real binary. Every test runs in its own
//! temporary directory holding copies of the fixtures, so `.pipewright/runs` lands there.

use crate::common::*;
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

/// The runs of the project's store (`pipewright runs --format json`), oldest first.
fn run_ids(dir: &Path) -> Vec<String> {
    let o = run_in(dir, &["runs", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = parse(&o);
    let mut ids: Vec<String> = v
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r["run_id"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    ids.reverse();
    ids
}

/// `pipewright runs show ID`: the fields `state.json` had.
fn state(dir: &Path, id: &str) -> Value {
    let o = run_in(dir, &["runs", "show", id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    parse(&o)
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
    assert!(d.path().join(".pipewright/runs.db").is_file());
    assert!(!events(d.path(), &ids[0]).is_empty());
}

#[test]
fn json_report_has_exactly_the_documented_fields() {
    let d = tempdir();
    copy_into(&examples().join("hello.yaml"), d.path());
    let (code, v) = run_json(d.path(), &["hello.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    // `usage`: the example calls agents (docs/run.md, "Usage and budgets").
    assert_eq!(
        keys(&v),
        ["status", "run_id", "output", "stores", "usage"],
        "{v}"
    );
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
    assert!(err.contains("ctx.n was: 0"), "the offending value: {err}");
    assert!(
        err.contains("stores when it stopped:\n  n = 0\n"),
        "the stores written before the failure: {err}"
    );

    let (code, v) = run_json(d.path(), &["divide.yaml"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        keys(&v),
        ["status", "run_id", "output", "stores", "error"],
        "{v}"
    );
    assert_eq!(v["status"], "failed");
    // The pipe and stores as they were when the run stopped: step 0 had written `n`.
    assert_eq!(v["output"], 0, "{v}");
    assert_eq!(v["stores"], json!({"n": 0}), "{v}");
    let e = &v["error"];
    assert_eq!(e["code"], "PW0800");
    assert_eq!(
        e["value"],
        json!({"ctx.n": 0}),
        "what the expression read: {v}"
    );
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
fn a_file_with_check_errors_could_not_start_exit_2() {
    // Exit 2 is "could not start" (docs/run.md): nothing ran, no run was recorded. (It was 1,
    // the exit of a run that failed.)
    let d = project(&["check_error.yaml"]);
    let o = run_in(d.path(), &["run", "check_error.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
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
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
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
    assert!(
        s["dropped"]["0.for_each.1"]
            .as_str()
            .is_some_and(|e| e.contains("division by zero")),
        "{s}"
    );
    assert!(s["completed"].get("0.for_each.1").is_none(), "{s}");
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
fn command_backend_claude_profile() {
    // `profile = "claude"` is said, no longer assumed (an unconfigured `command` exits 2).
    let d = project(&["agents.yaml"]);
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[backend.command]\nprofile = \"claude\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
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

/// A backend or a flag one dialect declares for its own runs (the state machine's coding-agent
/// CLIs, its `--max-visits`) is refused on another dialect's file, in that dialect's words, before
/// anything runs; the alias of such a backend is the same backend. A dry run uses no backend, so
/// only the flag is refused there.
#[test]
fn another_dialects_backend_or_flag_is_refused_before_anything_runs() {
    let d = project(&["agents.yaml"]);
    for backend in ["claude", "claude-code", "copilot"] {
        let o = run_in(d.path(), &["run", "agents.yaml", "--backend", backend]);
        assert_eq!(o.status.code(), Some(2), "{backend}: {}", text(&o));
        assert_eq!(stdout(&o), "");
        assert!(
            stderr(&o).contains(
                "the coding-agent CLI backends run state-machine recipes only; for a pipeline file use --backend command"
            ),
            "{backend}: {}",
            text(&o)
        );
    }
    let o = run_in(
        d.path(),
        &["run", "agents.yaml", "--dry-run", "--backend", "claude"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run_in(d.path(), &["run", "agents.yaml", "--dry-run", "--verbose"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("--verbose is for state-machine recipes only"),
        "{}",
        text(&o)
    );
    assert!(run_ids(d.path()).is_empty(), "nothing ran");
    assert!(!d.path().join(".pipewright/runs.db").exists(), "no store");
}

#[test]
fn command_backend_without_config_exits_2_naming_what_to_add() {
    // It meant `claude` silently, then failed at the first agent step (exit 1, a run
    // recorded) where `claude` is not installed.
    let d = project(&["agents.yaml"]);
    let o = run_in(d.path(), &["run", "agents.yaml", "--backend", "command"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    for needed in ["[backend.command]", "pipewright.toml", "argv", "profile"] {
        assert!(err.contains(needed), "names `{needed}`: {err}");
    }
    assert!(run_ids(d.path()).is_empty(), "nothing ran");
}

#[test]
fn a_script_file_of_the_wrong_shape_is_answered_with_the_format() {
    let d = project(&["agents.yaml"]);
    std::fs::write(d.path().join("replies.yaml"), "- \"hi\"\n").unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(
        d.path(),
        &[
            "run",
            "agents.yaml",
            "--backend",
            "script",
            "--script",
            "replies.yaml",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = stderr(&o);
    for shown in ["replies:", "contains:", "reply:", "error:", "default:"] {
        assert!(err.contains(shown), "shows `{shown}`: {err}");
    }
    // `run --help` says where the format is, and what it is.
    let help = stdout(&run_in(d.path(), &["run", "--help"]));
    assert!(
        help.contains("replies:") && help.contains("docs/run.md"),
        "{help}"
    );
}

#[test]
fn sigint_cancels_the_running_step_and_resume_finishes() {
    // The uninterrupted run goes on in parallel, to compare with.
    let reference = project(&["slow.yaml"]);
    let reference_run = spawn_run(reference.path(), &["slow.yaml"]);

    let d = project(&["slow.yaml"]);
    let child = spawn_run(d.path(), &["slow.yaml"]);
    let started = d.path().join("started");
    wait_for(Duration::from_secs(10), "the second step to start", || {
        started.exists().then_some(())
    });
    let t0 = std::time::Instant::now();
    let pid = child.id().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(kill.success());
    let o = finish(child);
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    let v = parse(&o);
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(
        v["cancelled_at"], "1",
        "the running step was stopped, the landed one kept"
    );
    // The stores and pipe as they were at the boundary: step 0's `a`, not the empty input.
    assert_eq!(keys(&v["stores"]), ["a"], "{v}");
    assert_eq!(v["stores"]["a"]["text"], "one\n", "{v}");
    assert_eq!(v["output"], v["stores"]["a"], "{v}");
    let id = v["run_id"].as_str().unwrap_or("?").to_string();
    let s = state(d.path(), &id);
    assert_eq!(s["status"], "cancelled");
    assert_eq!(s["completed"]["0"]["text"], "one\n", "{s}");
    assert_eq!(s["stores"], v["stores"], "{s}");
    assert_eq!(s["cancelled_at"], "1", "{s}");

    let (code, resumed) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{resumed}");
    assert_eq!(resumed["run_id"], id.as_str());
    assert_eq!(
        read(&d.path().join("log")),
        "first\nsecond\nsecond\n",
        "step 0 was replayed, the cancelled step 1 ran again"
    );
    assert!(s["completed"].get("1").is_none(), "{s}");

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
        let s = state(d.path(), &id);
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
    // Landed items were replayed, not run again, and c and d, in flight at the kill, died
    // with it (PR_SET_PDEATHSIG) instead of writing their line when the gate opened.
    let log = read(&d.path().join("log"));
    #[cfg(target_os = "linux")]
    let every: &[&str] = &["a", "b", "c", "d", "e", "f"];
    #[cfg(not(target_os = "linux"))]
    let every: &[&str] = &["a", "b", "e", "f"];
    for item in every {
        assert_eq!(
            log.lines().filter(|l| l == item).count(),
            1,
            "{item}: {log}"
        );
    }
}

/// Writes `name` with `text` into `dir`.
fn fixture(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("write {name}: {e}"));
}

/// A run that fails two levels down: in a pipeline called from a for_each item.
const NESTED_FAIL: &str = "\
pipeline: main
steps:
  - transform: {value: \"[2, 0, 1]\", output: xs}
  - shell: {command: \"echo side\", output: side}
  - for_each:
      over: ctx.xs
      max_parallel: 1
      on_error: abort
      do: {call: {pipeline: divide, pass: {d: item}}}
      collect: {transform: {value: \"pipe\"}}
      output: ratios
  - transform: {value: \"'never'\", output: never}
---
pipeline: divide
steps:
  - transform: {value: \"'inner'\", output: inner}
  - transform: {value: \"10 / ctx.d\"}
";

#[test]
fn a_failed_run_reports_the_stores_written_before_the_failure() {
    let d = tempdir();
    fixture(d.path(), "nested.yaml", NESTED_FAIL);
    let (code, v) = run_json(d.path(), &["nested.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["status"], "failed");
    assert_eq!(v["error"]["code"], "PW0806", "{v}");
    assert_eq!(v["error"]["step"], "2", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("item 1 failed"),
        "{v}"
    );
    assert_eq!(
        v["error"]["value"],
        json!({"ctx.d": 0}),
        "the value the inner expression read: {v}"
    );
    // The caller's stores as the failing step found them: not the initial (empty) stores, not
    // the callee's `inner`, nothing after the failure.
    assert_eq!(keys(&v["stores"]), ["xs", "side"], "{v}");
    assert_eq!(v["stores"]["xs"], json!([2, 0, 1]));
    assert_eq!(v["stores"]["side"]["text"], "side\n");
    assert_eq!(v["output"], v["stores"]["side"], "the pipe when it failed");
    let s = state(d.path(), v["run_id"].as_str().unwrap_or("?"));
    assert_eq!(s["status"], "failed");
    assert_eq!(s["stores"], v["stores"], "{s}");
    assert_eq!(s["output"], v["output"], "{s}");
    assert_eq!(s["completed"]["2.for_each.0"], 5, "item 0 landed: {s}");

    // Human format: the diagnostic points at the inner step with the value, then the stores.
    let o = run_in(d.path(), &["run", "nested.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(stdout(&o), "", "no output for a failed run");
    let err = stderr(&o);
    assert!(err.contains("error[PW0806]"), "{err}");
    assert!(err.contains("nested.yaml:5:5"), "the for_each step: {err}");
    assert!(
        err.contains("10 / ctx.d"),
        "the inner expression is shown: {err}"
    );
    assert!(err.contains("ctx.d was: 0"), "{err}");
    let summary = err
        .split("stores when it stopped:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no stores summary: {err}"));
    assert!(
        summary.starts_with(
            "  xs = [2,0,1]\n  side = {\"text\":\"side\\n\"}\nfull state: pipewright runs show "
        ),
        "{err}"
    );
}

#[test]
fn a_failure_in_the_first_step_reports_a_null_output_and_the_input() {
    let d = tempdir();
    fixture(
        d.path(),
        "first.yaml",
        "pipeline: first\nsteps:\n  - transform: {value: \"ctx.n / 0\", output: r}\n",
    );
    let (code, v) = run_json(d.path(), &["first.yaml", "--input", r#"{"n": 3}"#]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["output"], Value::Null, "no step completed: {v}");
    assert_eq!(v["stores"], json!({"n": 3}), "{v}");
    // Without input (and reading none, so the run starts): no stores at all.
    fixture(
        d.path(),
        "bare.yaml",
        "pipeline: bare\nsteps:\n  - transform: {value: \"1 / 0\", output: r}\n",
    );
    let o = run_in(d.path(), &["run", "bare.yaml"]);
    assert!(
        stderr(&o).contains("stores when it stopped: none\n"),
        "{}",
        text(&o)
    );
}

#[test]
fn sigint_in_human_format_exits_130_and_shows_the_stores() {
    let d = project(&["slow.yaml"]);
    let child = bin()
        .current_dir(d.path())
        .args(["run", "slow.yaml"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("the pipewright binary runs: {e}"));
    let started = d.path().join("started");
    wait_for(Duration::from_secs(10), "the slow step to start", || {
        started.exists().then_some(())
    });
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(kill.success());
    let o = finish(child);
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert_eq!(stdout(&o), "", "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains(" cancelled; continue it with `pipewright run --resume "),
        "{err}"
    );
    assert!(
        err.contains("stores when it stopped:\n  a = {\"text\":\"one\\n\"}\n"),
        "{err}"
    );
    assert!(!err.contains('\u{1b}'), "stderr is not a terminal: {err:?}");
}

/// `pipewright runs events ID`, parsed.
fn events(dir: &Path, id: &str) -> Vec<Value> {
    let o = run_in(dir, &["runs", "events", id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn events_jsonl_records_every_step_with_timings() {
    let d = tempdir();
    fixture(
        d.path(),
        "timed.yaml",
        "pipeline: timed\nsteps:\n  - shell: {command: \"sleep 0.3; echo slept\", output: s}\n  - for_each:\n      items: [1, 0]\n      on_error: continue\n      do: {transform: {value: \"10 / item\"}}\n      collect: {transform: {value: \"pipe\"}}\n  - transform: {value: \"10 / (count(pipe) - 1)\"}\n",
    );
    let (code, v) = run_json(d.path(), &["timed.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    let id = v["run_id"].as_str().unwrap_or("?").to_string();
    let evs = events(d.path(), &id);
    let fields = ["event", "run_id", "key", "step_kind", "workflow", "at_ms"];
    for e in &evs {
        for f in fields {
            assert!(!e[f].is_null(), "{f} missing: {e}");
        }
        assert_eq!(e["run_id"], id.as_str());
        assert_eq!(e["workflow"], "timed");
        assert!(e["at_ms"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
    }
    let find = |event: &str, key: &str| -> Value {
        evs.iter()
            .find(|e| e["event"] == event && e["key"] == key)
            .cloned()
            .unwrap_or_else(|| panic!("no {event} for {key}: {evs:#?}"))
    };
    // Every started step ends exactly once, after it started.
    for s in evs.iter().filter(|e| e["event"] == "step_started") {
        let key = &s["key"];
        let ends: Vec<&Value> = evs
            .iter()
            .filter(|e| {
                e["key"] == *key && (e["event"] == "step_completed" || e["event"] == "step_failed")
            })
            .collect();
        assert_eq!(ends.len(), 1, "{key}: {evs:#?}");
        let end = ends[0];
        assert_eq!(end["step_kind"], s["step_kind"]);
        let (t0, t1) = (
            s["at_ms"].as_f64().unwrap_or(-1.0),
            end["at_ms"].as_f64().unwrap_or(-1.0),
        );
        let elapsed = end["elapsed_ms"].as_f64().unwrap_or(-1.0);
        assert!(t1 >= t0, "{s} {end}");
        assert!(elapsed >= 0.0 && elapsed <= t1 - t0 + 50.0, "{s} {end}");
    }
    let slept = find("step_completed", "0");
    assert_eq!(slept["step_kind"], "shell");
    assert!(
        slept["elapsed_ms"].as_f64().is_some_and(|ms| ms >= 250.0),
        "the shell step slept 0.3 s: {slept}"
    );
    assert_eq!(
        find("step_completed", "1.for_each.0")["step_kind"],
        "transform"
    );
    let dropped = find("step_failed", "1.for_each.1");
    assert!(
        dropped["error"]
            .as_str()
            .is_some_and(|e| e.contains("division by zero")),
        "{dropped}"
    );
    find("step_completed", "1.for_each.collect");
    find("step_completed", "1");
    let failed = find("step_failed", "2");
    assert!(
        failed["error"].is_string() && failed["elapsed_ms"].is_number(),
        "{failed}"
    );
    assert_eq!(
        evs.iter()
            .filter(|e| e["event"] == "step_started" && e["key"] == "0")
            .count(),
        1
    );

    // A resume of the failed run replays what landed and says so.
    let o = run_in(d.path(), &["run", "--resume", &id, "--format", "json"]);
    let again = parse(&o);
    assert_eq!(again["status"], "failed", "{again}");
    assert!(
        !stderr(&o).contains("warning"),
        "unchanged files: {}",
        text(&o)
    );
    let evs = events(d.path(), &id);
    for key in ["0", "1"] {
        assert!(
            evs.iter()
                .any(|e| e["event"] == "step_replayed" && e["key"] == key),
            "{key}: {evs:#?}"
        );
    }
    assert_eq!(
        evs.iter()
            .filter(|e| e["event"] == "step_started" && e["key"] == "0")
            .count(),
        1,
        "the landed shell step did not run again"
    );
}

/// `script` (util-linux) runs a command under a pseudo-terminal; `None` (and a printed
/// reason) when it is missing or cannot allocate one here.
fn under_pty(dir: &Path, command: &str) -> Option<Output> {
    let probe = std::process::Command::new("script")
        .args(["-qec", "test -t 2 && echo tty", "/dev/null"])
        .stdin(Stdio::null())
        .output();
    match probe {
        Ok(o) if String::from_utf8_lossy(&o.stdout).contains("tty") => {}
        Ok(o) => {
            eprintln!(
                "skipped: `script` cannot run a command under a pseudo-terminal here: {}",
                text(&o)
            );
            return None;
        }
        Err(e) => {
            eprintln!("skipped: util-linux `script` is not available: {e}");
            return None;
        }
    }
    let o = std::process::Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .env("COLUMNS", "120")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("script: {e}"));
    Some(o)
}

const SLOW_STEP: &str = "pipeline: nap\nsteps:\n  - shell: {command: \"sleep 1; echo rested\", output: nap}\n  - transform: {value: \"ctx.nap.text + 'done'\"}\n";

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[test]
fn progress_lines_are_drawn_on_a_terminal() {
    let d = tempdir();
    fixture(d.path(), "nap.yaml", SLOW_STEP);
    let exe = shell_quote(env!("CARGO_BIN_EXE_pipewright"));
    let Some(o) = under_pty(d.path(), &format!("{exe} run nap.yaml")) else {
        return;
    };
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        out.contains("step 0 shell sleep 1; echo rested"),
        "a line for the running step: {out:?}"
    );
    assert!(
        out.contains("✓ step 0 shell sleep 1; echo rested"),
        "finished when it completed: {out:?}"
    );
    assert!(out.contains("✓ step 1 transform"), "{out:?}");
    assert!(
        out.contains('\u{1b}'),
        "drawn with terminal controls: {out:?}"
    );
    // The spinner ticked while the step slept: more than one frame was drawn.
    assert!(
        out.matches("step 0 shell").count() >= 3,
        "redrawn while running: {out:?}"
    );
    // The running line was drawn (with its elapsed time) before the step finished, and the
    // final output comes after the finished lines.
    let (running, after) = out
        .split_once("✓ step 0")
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(
        running.contains("step 0 shell sleep 1; echo rested [0s]"),
        "the line appeared while the step was still running: {out:?}"
    );
    assert!(
        after.contains("\"rested\\ndone\""),
        "the final output: {out:?}"
    );
}

#[test]
fn no_progress_and_no_escape_codes_when_stderr_is_not_a_terminal() {
    let d = tempdir();
    fixture(d.path(), "nap.yaml", SLOW_STEP);
    // Plain pipes.
    let o = run_in(d.path(), &["run", "nap.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(stdout(&o), "\"rested\\ndone\"\n");
    assert_eq!(stderr(&o), "", "no progress lines in a log");
    // stdout a terminal, stderr a file: still no progress.
    let exe = shell_quote(env!("CARGO_BIN_EXE_pipewright"));
    let Some(o) = under_pty(d.path(), &format!("{exe} run nap.yaml 2>err.txt")) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = read(&d.path().join("err.txt"));
    assert_eq!(err, "", "{err:?}");
    assert!(!err.contains('\u{1b}'));
    assert!(stdout(&o).contains("\"rested\\ndone\""), "{}", text(&o));
    assert!(!stdout(&o).contains("step 0"), "{}", text(&o));
}

#[test]
fn resuming_after_the_file_changed_is_refused_unless_forced() {
    let d = project(&["divide.yaml"]);
    let (code, v) = run_json(d.path(), &["divide.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    let id = v["run_id"].as_str().unwrap_or("?").to_string();
    // Fix the divisor's default: the landed step 0 (n = 0) is unchanged and replayed.
    let path = d.path().join("divide.yaml");
    let fixed = read(&path).replace("10 / ctx.n", "10 / (ctx.n + 1)");
    std::fs::write(&path, fixed).unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["run", "--resume", &id, "--format", "json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!(
            "error: the pipeline files changed since run {id} started"
        )) && stderr(&o).contains("--force"),
        "{}",
        text(&o)
    );
    assert_eq!(stdout(&o), "");
    assert_eq!(state(d.path(), &id)["status"], "failed", "nothing ran");
    let o = run_in(
        d.path(),
        &["run", "--resume", &id, "--force", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = parse(&o);
    assert_eq!(v["output"], 10, "{v}");
    assert_eq!(v["stores"], json!({"n": 0, "ratio": 10}), "{v}");
}

/// With --force after a step was inserted, every key after it names a different step: a
/// landing is replayed only into the step (kind and text) that landed it, never by position.
#[test]
fn forced_resume_after_an_inserted_step_replays_by_identity_not_position() {
    let d = tempdir();
    let file = "pipeline: ins\nsteps:\n  - shell: {command: \"echo one >> log; echo one\", output: a}\n  - shell: {command: \"echo two >> log; echo two\", output: b}\n  - transform: {value: \"1 / 0\"}\n";
    fixture(d.path(), "ins.yaml", file);
    let (code, v) = run_json(d.path(), &["ins.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    let id = v["run_id"].as_str().unwrap_or("?").to_string();
    let edited = file
        .replace(
            "steps:\n",
            "steps:\n  - transform: {value: \"'new'\", output: z}\n",
        )
        .replace("1 / 0", "ctx.a.text + ctx.b.text");
    fixture(d.path(), "ins.yaml", &edited);
    let (code, v) = run_json(d.path(), &["--resume", &id, "--force"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["stores"]["a"]["text"], "one\n", "{v}");
    assert_eq!(v["stores"]["b"]["text"], "two\n", "{v}");
    assert_eq!(v["output"], "one\ntwo\n", "{v}");
}

#[test]
fn resume_refuses_another_pipeline_and_an_input() {
    let d = project(&["on_error.yaml"]);
    let (code, v) = run_json(d.path(), &["on_error.yaml", "--pipeline", "aborts"]);
    assert_eq!(code, Some(1), "{v}");
    let id = v["run_id"].as_str().unwrap_or("?").to_string();
    let o = run_in(d.path(), &["run", "--resume", &id, "--pipeline", "drops"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!(
            "run {id} runs pipeline `aborts`; it cannot be resumed as pipeline `drops`"
        )),
        "{}",
        text(&o)
    );
    let o = run_in(d.path(), &["run", "--resume", &id, "--input", "{}"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("--input cannot be given with --resume"),
        "{}",
        text(&o)
    );
    // The same pipeline named explicitly is fine.
    let o = run_in(d.path(), &["run", "--resume", &id, "--pipeline", "aborts"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(stderr(&o).contains("error[PW0806]"), "{}", text(&o));
}

/// Two `--resume` of one run at once: exactly one proceeds, the other is refused at once with
/// a clear message, and no landed item runs twice. The kill -9 before them left no lock behind.
#[test]
fn two_concurrent_resumes_exactly_one_proceeds() {
    let d = project(&["fan_gate.yaml"]);
    let mut child = spawn_run(d.path(), &["fan_gate.yaml"]);
    let id = wait_for(Duration::from_secs(10), "two landed items", || {
        let id = run_ids(d.path()).into_iter().next()?;
        let s = state(d.path(), &id);
        let items = s["completed"]
            .as_object()?
            .keys()
            .filter(|k| k.starts_with("1.for_each.") && *k != "1.for_each.collect")
            .count();
        (items >= 2).then_some(id)
    });
    child.kill().unwrap_or_else(|e| panic!("kill -9: {e}"));
    finish(child);
    // A step's process being forked at the moment of the kill can hold the run's lock until it execs
    // (the lock is close-on-exec): under load that is visible for a moment, so the listing is
    // asked until it says interrupted (seen once at load 8-10).
    wait_for(
        Duration::from_secs(10),
        "the killed run to be listed as interrupted",
        || {
            let o = run_in(d.path(), &["runs"]);
            stdout(&o)
                .starts_with(&format!("{id}  interrupted "))
                .then_some(())
        },
    );

    let mut a = spawn_run(d.path(), &["--resume", &id]);
    let mut b = spawn_run(d.path(), &["--resume", &id]);
    // The loser is refused at once; the winner waits for the gate.
    let a_first = wait_for(Duration::from_secs(10), "one resume to be refused", || {
        if matches!(a.try_wait(), Ok(Some(_))) {
            Some(true)
        } else if matches!(b.try_wait(), Ok(Some(_))) {
            Some(false)
        } else {
            None
        }
    });
    let (winner, loser) = if a_first { (b, a) } else { (a, b) };
    let o = run_in(d.path(), &["runs", "--format", "json"]);
    assert_eq!(parse(&o)[0]["in_progress"], true, "{}", text(&o));
    assert_eq!(parse(&o)[0]["status"], "running", "{}", text(&o));
    let refused = finish(loser);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        stderr(&refused).contains(&format!(
            "run {id} is in progress in another process (process "
        )),
        "{}",
        text(&refused)
    );
    assert_eq!(stdout(&refused), "");
    std::fs::write(d.path().join("gate"), "").unwrap_or_else(|e| panic!("{e}"));
    let o = finish(winner);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(parse(&o)["output"], "a\nb\nc\nd\ne\nf\n");
    let log = read(&d.path().join("log"));
    // c and d were in flight at the kill; on Linux they died with it.
    #[cfg(target_os = "linux")]
    let every: &[&str] = &["a", "b", "c", "d", "e", "f"];
    #[cfg(not(target_os = "linux"))]
    let every: &[&str] = &["a", "b", "e", "f"];
    for item in every {
        assert_eq!(
            log.lines().filter(|l| l == item).count(),
            1,
            "{item} ran once: {log}"
        );
    }
}

#[test]
fn runs_lists_shows_prints_events_and_removes() {
    let d = tempdir();
    let o = run_in(d.path(), &["runs"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stderr(&o).contains("no runs yet"), "{}", text(&o));
    assert!(
        !d.path().join(".pipewright").exists(),
        "listing creates no store"
    );
    let o = run_in(d.path(), &["runs", "show", "0123"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));

    fixture(
        d.path(),
        "ok.yaml",
        "pipeline: ok\nsteps:\n  - transform: {value: \"1\"}\n",
    );
    fixture(
        d.path(),
        "bad.yaml",
        "pipeline: bad\nsteps:\n  - transform: {value: \"1 / 0\"}\n",
    );
    let (_, first) = run_json(d.path(), &["ok.yaml"]);
    let (_, second) = run_json(d.path(), &["bad.yaml"]);
    let (first, second) = (
        first["run_id"].as_str().unwrap_or("?").to_string(),
        second["run_id"].as_str().unwrap_or("?").to_string(),
    );
    let o = run_in(d.path(), &["runs"]);
    let lines: Vec<String> = stdout(&o).lines().map(String::from).collect();
    assert_eq!(lines.len(), 2, "{}", text(&o));
    assert!(
        lines[0].starts_with(&format!("{second}  failed ")) && lines[0].ends_with("bad.yaml (bad)"),
        "newest first: {lines:?}"
    );
    assert!(lines[1].starts_with(&format!("{first}  ok ")), "{lines:?}");

    let s = state(d.path(), &second);
    let fields = [
        "version",
        "run_id",
        "status",
        "file",
        "workflow",
        "input",
        "source_hash",
        "completed",
        "dropped",
        "spawns",
        "created_ms",
        "updated_ms",
        "output",
        "stores",
        "error",
    ];
    assert_eq!(keys(&s), fields, "{s}");
    assert_eq!(s["error"]["code"], "PW0800", "{s}");

    let evs = events(d.path(), &first);
    let kinds: Vec<&str> = evs.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(kinds, ["step_started", "step_completed"]);

    let o = run_in(d.path(), &["runs", "rm", &first]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(run_ids(d.path()), [second.as_str()]);
    let o = run_in(d.path(), &["runs", "rm", &first]);
    assert_eq!(o.status.code(), Some(1), "removing twice: {}", text(&o));
    let o = run_in(d.path(), &["runs", "rm", "--older-than", "1h"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(run_ids(d.path()), [second.as_str()], "a fresh run stays");
    std::thread::sleep(Duration::from_millis(1100));
    let o = run_in(d.path(), &["runs", "rm", "--older-than", "1s"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stderr(&o).contains("removed 1 run "), "{}", text(&o));
    assert!(run_ids(d.path()).is_empty());
    let o = run_in(d.path(), &["runs", "rm", "--older-than", "soon"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(stderr(&o).contains("is not a duration"), "{}", text(&o));
}

#[test]
fn store_path_in_pipewright_toml_moves_the_store() {
    let d = tempdir();
    fixture(
        d.path(),
        "pipewright.toml",
        "[store]\npath = \"state/all-runs.db\"\n",
    );
    fixture(
        d.path(),
        "ok.yaml",
        "pipeline: ok\nsteps:\n  - transform: {value: \"1\"}\n",
    );
    let (code, v) = run_json(d.path(), &["ok.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    assert!(d.path().join("state/all-runs.db").is_file());
    assert!(!d.path().join(".pipewright").exists());
    assert_eq!(run_ids(d.path()), [v["run_id"].as_str().unwrap_or("?")]);
}

fn signal(child: &Child, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(ok.success());
}

/// SIGTERM is handled like Ctrl-C: the running step is stopped (not landed), exit 143; the
/// store says cancelled and a resume finishes it.
#[test]
fn sigterm_cancels_like_ctrl_c_and_exits_143() {
    let d = project(&["slow.yaml"]);
    let child = spawn_run(d.path(), &["slow.yaml"]);
    let started = d.path().join("started");
    wait_for(Duration::from_secs(10), "the slow step to start", || {
        started.exists().then_some(())
    });
    signal(&child, "-TERM");
    let o = finish(child);
    assert_eq!(o.status.code(), Some(143), "{}", text(&o));
    let v = parse(&o);
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(v["cancelled_at"], "1", "{v}");
    let id = v["run_id"].as_str().unwrap_or("?").to_string();
    assert_eq!(state(d.path(), &id)["status"], "cancelled");
    let (code, v) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["output"], "one\ntwo\n");
}

/// The pids of the processes whose command line is exactly `argv` (not zombies).
fn pids_running(argv: &[&str]) -> Vec<u32> {
    let want = argv.join("\0") + "\0";
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'));
        if cmd == want.as_bytes() && !zombie {
            out.push(pid);
        }
    }
    out
}

/// The first SIGINT stops a running shell step at once (issue 11: it used to wait out the
/// command): the child's process group is killed, the step is cancelled, not completed, and a
/// resume runs it again.
#[cfg(target_os = "linux")]
#[test]
fn the_first_sigint_kills_a_running_shell_step() {
    let d = tempdir();
    // A duration no other process on the machine sleeps for, to find this one.
    fixture(
        d.path(),
        "sleepy.yaml",
        "pipeline: sleepy\nsteps:\n  - shell: {command: [touch, started], output: a}\n  - shell: {command: [sleep, \"30.0417\"]}\n",
    );
    let child = spawn_run(d.path(), &["sleepy.yaml"]);
    let started = d.path().join("started");
    let sleeper = wait_for(Duration::from_secs(10), "the sleep to start", || {
        started.exists().then_some(())?;
        pids_running(&["sleep", "30.0417"]).first().copied()
    });
    let t0 = std::time::Instant::now();
    signal(&child, "-INT");
    let o = finish(child);
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    // SIGKILL is sent before the run exits, but a loaded machine may take a moment to tear the
    // process down: gone within a second, not 30.
    wait_for(
        Duration::from_secs(1),
        "the sleep to be killed with the cancel",
        || (!pids_running(&["sleep", "30.0417"]).contains(&sleeper)).then_some(()),
    );
    let v = parse(&o);
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(v["cancelled_at"], "1", "{v}");
    let id = v["run_id"].as_str().unwrap_or("?").to_string();
    let s = state(d.path(), &id);
    assert_eq!(s["status"], "cancelled", "{s}");
    assert!(s["completed"].get("0").is_some(), "{s}");
    assert!(s["completed"].get("1").is_none(), "{s}");
    let evs = events(d.path(), &id);
    assert!(
        evs.iter()
            .any(|e| e["event"] == "step_cancelled" && e["key"] == "1"),
        "{evs:?}"
    );

    // The resume runs step 1 again (and is stopped the same way).
    let child = spawn_run(d.path(), &["--resume", &id]);
    let again = wait_for(Duration::from_secs(10), "the sleep to start again", || {
        pids_running(&["sleep", "30.0417"])
            .into_iter()
            .find(|p| *p != sleeper)
    });
    signal(&child, "-INT");
    let o = finish(child);
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(!pids_running(&["sleep", "30.0417"]).contains(&again));
}

/// A second signal does not wait: the children's process groups are killed and the process
/// exits at once; nothing the killed step would have done later happens.
#[test]
fn a_second_signal_kills_the_children_and_exits_at_once() {
    let d = tempdir();
    fixture(
        d.path(),
        "long.yaml",
        "pipeline: long\nsteps:\n  - shell: {command: \"touch started; sleep 2; echo late >> log\"}\n",
    );
    let child = spawn_run(d.path(), &["long.yaml"]);
    let started = d.path().join("started");
    wait_for(Duration::from_secs(10), "the step to start", || {
        started.exists().then_some(())
    });
    let t0 = std::time::Instant::now();
    signal(&child, "-TERM");
    std::thread::sleep(Duration::from_millis(100));
    signal(&child, "-TERM");
    let o = finish(child);
    assert_eq!(o.status.code(), Some(143), "{}", text(&o));
    assert!(
        t0.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!d.path().join("log").exists(), "the killed step went on");
}

/// kill -9 of pipewright takes its children with it (Linux: PR_SET_PDEATHSIG): a shell step
/// cannot go on writing while a resume runs the same step again.
#[cfg(target_os = "linux")]
#[test]
fn kill_9_takes_the_children_with_it() {
    let d = tempdir();
    fixture(
        d.path(),
        "long.yaml",
        "pipeline: long\nsteps:\n  - shell: {command: \"touch started; sleep 1; echo late >> log\"}\n",
    );
    let mut child = spawn_run(d.path(), &["long.yaml"]);
    let started = d.path().join("started");
    wait_for(Duration::from_secs(10), "the step to start", || {
        started.exists().then_some(())
    });
    child.kill().unwrap_or_else(|e| panic!("kill -9: {e}"));
    finish(child);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!d.path().join("log").exists(), "the orphaned shell went on");
}

/// A step's foreground grandchild (here python, which bash forks because a command follows it)
/// outlives a kill -9 of pipewright: the kernel kills only the direct child. The next run in
/// the same store kills what the dead run left of its step's process group before anything
/// runs again, so the resumed step does not run beside its orphan.
#[test]
fn kill_9_then_resume_kills_the_orphaned_grandchild_first() {
    let d = tempdir();
    fixture(
        d.path(),
        "grandchild.py",
        "import os, time\npid = os.getpid()\nopen('started-%d' % pid, 'w').close()\ntime.sleep(2)\nopen('late-%d' % pid, 'w').close()\n",
    );
    fixture(
        d.path(),
        "orphan.yaml",
        "pipeline: orphan\nsteps:\n  - shell: {command: \"python3 grandchild.py; true\"}\n",
    );
    let mut child = spawn_run(d.path(), &["orphan.yaml"]);
    let first = wait_for(Duration::from_secs(10), "the step to start", || {
        std::fs::read_dir(d.path())
            .ok()?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .find_map(|n| n.strip_prefix("started-").map(str::to_string))
    });
    child.kill().unwrap_or_else(|e| panic!("kill -9: {e}"));
    finish(child);
    let list: Value =
        serde_json::from_str(&stdout(&run_in(d.path(), &["runs", "--format", "json"])))
            .unwrap_or_else(|e| panic!("{e}"));
    let id = list[0]["run_id"].as_str().unwrap_or_default().to_string();
    let o = run_in(d.path(), &["run", "--resume", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The orphan would have written by now (2 s after it started; the resumed step took 2 s).
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !d.path().join(format!("late-{first}")).exists(),
        "the orphaned grandchild {first} went on beside the resumed step"
    );
}

/// A tmpfs mounted for the test, unmounted when dropped (even when the test fails).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// `None` (and a printed reason) where this process may not mount (not root, a container
    /// without the capability).
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).ok()?;
        let o = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .ok()?;
        if !o.status.success() {
            eprintln!("skipped: cannot mount a tmpfs here: {}", text(&o));
            return None;
        }
        Some(Tmpfs(at.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let ok = std::process::Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "remount {}", self.0.display());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// The store on a disk that fills up (a 512 KiB tmpfs): the run fails loudly — exit 1, PW0811
/// naming the store, no output — and once there is room again, the resume repeats no step whose
/// landing was committed.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_fails_the_run_loudly_and_the_resume_repeats_no_landed_step() {
    let d = tempdir();
    let Some(disk) = Tmpfs::mount(&d.path().join("disk"), "512k") else {
        return;
    };
    fixture(
        d.path(),
        "pipewright.toml",
        "[store]\npath = \"disk/runs.db\"\n",
    );
    let steps: String = (0..8)
        .map(|i| format!("  - shell: {{command: \"echo s{i} >> log; yes x | head -c 100000\"}}\n"))
        .collect();
    fixture(
        d.path(),
        "fill.yaml",
        &format!("pipeline: fill\nsteps:\n{steps}"),
    );
    let o = run_in(d.path(), &["run", "fill.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(stdout(&o), "", "no output for a failed run");
    let err = stderr(&o);
    assert!(err.contains("error[PW0811]"), "{err}");
    assert!(err.contains("disk/runs.db"), "the store is named: {err}");
    assert!(err.contains("full"), "{err}");
    let ran_before = read(&d.path().join("log"));
    assert!(
        ran_before.lines().count() < 8,
        "the disk filled before the end: {ran_before}"
    );

    disk.resize("16m");
    let id = run_ids(d.path()).into_iter().next().unwrap_or_default();
    let s = state(d.path(), &id);
    let landed: Vec<String> = s["completed"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    assert!(!landed.is_empty(), "{s}");
    let (code, v) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{v}");
    let log = read(&d.path().join("log"));
    for i in 0..8 {
        let n = log.lines().filter(|l| *l == format!("s{i}")).count();
        let expected =
            if landed.contains(&i.to_string()) || !ran_before.contains(&format!("s{i}\n")) {
                1
            } else {
                2
            };
        assert_eq!(n, expected, "s{i}: landed {landed:?}, log {log}");
    }
}

/// Several runs of one project at once share the store: each commits between the others'
/// transactions (SQLite's write lock, waited for), and every one ends `ok` with its own landings.
#[test]
fn concurrent_runs_share_the_store() {
    let d = tempdir();
    fixture(
        d.path(),
        "many.yaml",
        "pipeline: many\nsteps:\n  - for_each:\n      items: [a, b, c, d, e, f, g, h, i, j, k, l]\n      max_parallel: 4\n      on_error: abort\n      do: {shell: {command: !expr \"'echo ' + item\"}}\n      collect: {transform: {value: \"count(pipe)\"}}\n",
    );
    let children: Vec<Child> = (0..4)
        .map(|_| spawn_run(d.path(), &["many.yaml"]))
        .collect();
    let mut ids = Vec::new();
    for c in children {
        let o = finish(c);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let v = parse(&o);
        assert_eq!(v["output"], 12, "{v}");
        ids.push(v["run_id"].as_str().unwrap_or("?").to_string());
    }
    let mut listed = run_ids(d.path());
    listed.sort();
    ids.sort();
    assert_eq!(listed, ids);
    for id in &ids {
        let s = state(d.path(), id);
        assert_eq!(s["status"], "ok", "{s}");
        assert_eq!(
            s["completed"].as_object().map(|m| m.len()),
            Some(12 + 2),
            "{s}"
        );
    }
}

/// `pipewright ARGS` in `dir` with extra environment variables.
fn run_env(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = bin();
    c.current_dir(dir).args(args).stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_run_store_belongs_to_the_project_root_not_the_working_directory() {
    let d = tempdir();
    let root = d.path();
    fixture(root, "pipewright.toml", "");
    let sub = root.join("deep/er");
    std::fs::create_dir_all(&sub).unwrap_or_else(|e| panic!("{e}"));
    fixture(
        root,
        "ok.yaml",
        "pipeline: ok\nsteps:\n  - transform: {value: \"1\"}\n",
    );
    // `run FILE` from a subdirectory: the file's project's store.
    let o = run_in(&sub, &["run", "../../ok.yaml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let id = parse(&o)["run_id"].as_str().unwrap_or("?").to_string();
    assert!(root.join(".pipewright/runs.db").is_file());
    assert!(
        !sub.join(".pipewright").exists(),
        "no store where the command ran"
    );
    // Every verb from anywhere in the project finds it.
    assert_eq!(run_ids(&sub), [id.as_str()]);
    assert_eq!(run_ids(root), [id.as_str()]);
    // A git root is a project root too (no pipewright.toml).
    let g = tempdir();
    std::fs::create_dir_all(g.path().join(".git")).unwrap_or_else(|e| panic!("{e}"));
    let gsub = g.path().join("src");
    std::fs::create_dir_all(&gsub).unwrap_or_else(|e| panic!("{e}"));
    fixture(
        &gsub,
        "ok.yaml",
        "pipeline: ok\nsteps:\n  - transform: {value: \"1\"}\n",
    );
    let (code, _) = run_json(&gsub, &["ok.yaml"]);
    assert_eq!(code, Some(0));
    assert!(g.path().join(".pipewright/runs.db").is_file());
    assert!(!gsub.join(".pipewright").exists());
    // Messages name the store by its full path.
    let o = run_in(&sub, &["approve", "0123-abcd"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let full = root
        .canonicalize()
        .unwrap_or_else(|e| panic!("{e}"))
        .join(".pipewright/runs.db");
    assert!(
        stderr(&o).contains(&format!(
            "no run 0123-abcd in the run store {}",
            full.display()
        )),
        "{}",
        text(&o)
    );
}

#[test]
fn pipewright_store_overrides_where_the_store_is() {
    let d = tempdir();
    fixture(
        d.path(),
        "ok.yaml",
        "pipeline: ok\nsteps:\n  - transform: {value: \"1\"}\n",
    );
    let db = d.path().join("elsewhere/my.db");
    let env = [("PIPEWRIGHT_STORE", db.as_path())];
    let o = run_env(d.path(), &["run", "ok.yaml", "--format", "json"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(db.is_file());
    assert!(!d.path().join(".pipewright").exists());
    let o = run_env(d.path(), &["runs", "show", "0123-abcd"], &env);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!("in the run store {}", db.display())),
        "{}",
        text(&o)
    );
}

#[test]
fn approve_deny_and_resume_create_no_store_where_there_is_none() {
    let d = tempdir();
    for args in [
        &["approve", "0123-abcd"][..],
        &["deny", "0123-abcd", "--reason", "no"],
        &["run", "--resume", "0123-abcd"],
    ] {
        let o = run_in(d.path(), args);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        let err = stderr(&o);
        assert!(
            err.contains("no run 0123-abcd") && err.contains("runs.db does not exist"),
            "{args:?}: {err}"
        );
        let left: Vec<_> = std::fs::read_dir(d.path())
            .map(|r| r.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
}

#[test]
fn a_damaged_store_is_named_and_said_to_be_damaged() {
    let d = tempdir();
    fixture(
        d.path(),
        "ok.yaml",
        "pipeline: ok\nsteps:\n  - transform: {value: \"1\"}\n",
    );
    let (code, v) = run_json(d.path(), &["ok.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    let id = v["run_id"].as_str().unwrap_or("?").to_string();
    let db = d.path().join(".pipewright/runs.db");
    // A value of the wrong type in a row: what a scribbled page can leave.
    {
        let c = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
        c.execute("UPDATE runs SET created_ms = 'scribbled'", [])
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let o = run_in(d.path(), &["runs", "show", &id]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let full = d
        .path()
        .canonicalize()
        .unwrap_or_else(|e| panic!("{e}"))
        .join(".pipewright/runs.db");
    let err = stderr(&o);
    assert!(
        err.contains(&format!("the run store {} is damaged", full.display())),
        "{err}"
    );
    // Bytes written over the file's header: not a database any more.
    let mut bytes = std::fs::read(&db).unwrap_or_else(|e| panic!("{e}"));
    bytes[..16].copy_from_slice(b"scribbled-over!!");
    std::fs::write(&db, bytes).unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["runs", "show", &id]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stderr(&o).contains("is damaged"), "{}", text(&o));
}

/// A step's child process carries the run id and its step key, the idempotency key of its own
/// side effects (a step in flight when its process dies runs again: docs/engines.md), in every
/// dialect that starts processes.
#[test]
fn a_steps_process_knows_its_run_and_step() {
    let d = tempdir();
    std::fs::write(
        d.path().join("ids.yaml"),
        "pipeline: ids\nsteps:\n  - transform: {value: \"1\"}\n  - shell: {command: \"echo $PIPEWRIGHT_RUN_ID $PIPEWRIGHT_STEP_KEY\"}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        d.path().join("ids.recipe.yaml"),
        "name: ids\ndescription: ids\nversion: \"1.0.0\"\nsteps:\n  - id: show\n    type: bash\n    command: \"echo $PIPEWRIGHT_RUN_ID $PIPEWRIGHT_STEP_KEY\"\n    output: ids\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        d.path().join("ids.meow.toml"),
        "[main]\n[[main.steps]]\nid = \"show\"\nexecutor = \"shell\"\ncommand = \"echo $PIPEWRIGHT_RUN_ID $PIPEWRIGHT_STEP_KEY\"\n[main.steps.outputs]\nids = { source = \"stdout\" }\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for (file, ids_at) in [
        ("ids.yaml", "/output/text"),
        ("ids.recipe.yaml", "/stores/ids"),
        ("ids.meow.toml", "/output/ids"),
    ] {
        let o = run_in(d.path(), &["run", file, "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{file}: {}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{file}: {e}: {}", text(&o)));
        let ids = v
            .pointer(ids_at)
            .and_then(|x| x.as_str())
            .unwrap_or_default();
        let run_id = v["run_id"].as_str().unwrap_or_default();
        let (got_run, got_key) = ids.trim().split_once(' ').unwrap_or_default();
        assert_eq!(got_run, run_id, "{file}: {v}");
        assert!(!got_key.is_empty(), "{file}: {v}");
        if file == "ids.yaml" {
            assert_eq!(got_key, "1", "{file}: the second top-level step");
        }
    }
}
