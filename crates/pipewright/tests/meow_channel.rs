//! The agent-side `pipewright meow` commands against a real run's orchestrator channel, offline:
//! shell steps and branch conditions reach it through `MEOW_ORCH_SOCK` (testdata/meow/channel).
//! Agents in tmux (prime, interactive steps, spawn session ids) are in meow_tmux.rs.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

fn fixtures() -> tempfile::TempDir {
    let d = tempdir();
    for e in std::fs::read_dir(testdata("meow").join("channel"))
        .unwrap_or_else(|e| panic!("testdata/meow/channel: {e}"))
        .flatten()
    {
        copy_into(&e.path(), d.path());
    }
    d
}

fn pw() -> String {
    format!("pw={}", env!("CARGO_BIN_EXE_pipewright"))
}

fn run_json(dir: &Path, args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["run", "--format", "json"];
    all.extend_from_slice(args);
    let o = run_in(dir, &all);
    let v = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    (o.status.code(), v, text(&o))
}

#[test]
fn step_status_answers_shell_steps_and_branch_conditions_as_the_run_goes_on() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["status.meow.toml", "--var", &pw()]);
    // `bad` fails on purpose, so the run does.
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(
        v["stores"]["probe"]["seen"], "bad failed\nnever skipped\nslow running\nlater pending",
        "{all}"
    );
    // `--is done` held once `slow` was done; `--is-not done` did not.
    assert_eq!(v["stores"]["is-done"]["outcome"], "true", "{all}");
    assert_eq!(v["stores"]["is-not-done"]["outcome"], "false", "{all}");
    // From inside the expansion, `a` is its sibling `nested.a`.
    assert_eq!(v["stores"]["nested.b"]["seen"], "done", "{all}");
    let err = v["stores"]["unknown"]["error"].as_str().unwrap_or("");
    assert!(err.contains("no step `nosuch` in this run"), "{all}");
    assert_eq!(v["stores"]["unknown"]["exit_code"], 1, "{all}");
}

#[test]
fn session_id_reads_what_the_agent_reported_and_prime_is_empty_for_an_idle_agent() {
    let d = fixtures();
    let (code, v, all) = run_json(d.path(), &["session.meow.toml", "--var", &pw()]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["stores"]["checkpoint"]["session_id"], "sess-42", "{all}");
    assert_eq!(v["stores"]["own"]["session_id"], "sess-42", "{all}");
    let ghost = v["stores"]["ghost"]["error"].as_str().unwrap_or("");
    assert!(
        ghost.contains("the session id of agent `ghost` is not known"),
        "{all}"
    );
    assert_eq!(v["stores"]["ghost"]["exit_code"], 1);
    let nobody = v["stores"]["nobody"]["error"].as_str().unwrap_or("");
    assert!(nobody.contains("give --agent"), "{all}");
    assert_eq!(v["stores"]["nobody"]["exit_code"], 2);
    // No running step: an empty prompt, and with `--format prompt` not even a newline.
    let said = v["stores"]["idle"]["said"].as_str().unwrap_or("");
    let (json, bytes) = said.split_once('\n').unwrap_or(("", ""));
    let json: Value = serde_json::from_str(json).unwrap_or(Value::Null);
    assert_eq!(
        json,
        serde_json::json!({"step": null, "mode": null, "prompt": ""}),
        "{all}"
    );
    // Neither from `prompt` nor from `stop-hook`: the hook lets the agent stop.
    assert_eq!(
        bytes.split_whitespace().collect::<Vec<_>>(),
        ["0", "0"],
        "{all}"
    );
}

#[test]
fn an_agents_session_id_survives_a_resume() {
    let d = fixtures();
    let mut child = spawn_run(d.path(), &["resume.meow.toml", "--var", &pw()]);
    wait_for(Duration::from_secs(20), "the in-flight step", || {
        d.path().join("waiting").exists().then_some(())
    });
    child.kill().unwrap_or_else(|e| panic!("kill: {e}"));
    let _ = child.wait();
    std::fs::write(d.path().join("resumed"), "").unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["runs", "--format", "json"]);
    let runs: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    let id = runs[0]["run_id"].as_str().unwrap_or("").to_string();
    let (code, v, all) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(v["stores"]["checkpoint"]["session_id"], "sess-7", "{all}");
}

#[test]
fn the_new_meow_commands_outside_a_run_are_silent_no_ops() {
    let d = tempdir();
    for args in [
        &["prime"][..],
        &["prime", "--format", "json"],
        &["prime", "--format", "stop-hook"],
        &["session-id"],
        &["session-id", "--agent", "w"],
        &["step-status", "x"],
        &["step-status", "x", "--is", "done"],
        &["step-status", "x", "--is-not", "done"],
        &["done", "--json", "{}", "--notes", "n"],
    ] {
        assert_meow_is_a_silent_no_op(d.path(), args);
    }
    // A status that does not exist is a usage error, run or no run.
    let o = bin()
        .current_dir(d.path())
        .env_remove("MEOW_ORCH_SOCK")
        .args(["meow", "step-status", "x", "--is", "dnoe"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr(&o).contains("pending"), "{}", text(&o));
}
