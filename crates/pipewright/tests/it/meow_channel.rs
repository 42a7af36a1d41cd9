//! The agent-side `pipewright meow` commands against a real run's orchestrator channel, offline:
//! shell steps and branch conditions reach it through `MEOW_ORCH_SOCK` (testdata/meow/channel).
//! Agents in tmux (prime, interactive steps, spawn session ids) are in meow_tmux.rs.

use crate::common::*;
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

/// The id of the one run in `dir`'s store, once it is recorded.
fn the_run(dir: &Path) -> String {
    wait_for(Duration::from_secs(20), "the run to be recorded", || {
        let o = run_in(dir, &["runs", "--format", "json"]);
        let v: Value = serde_json::from_str(&stdout(&o)).ok()?;
        v[0]["run_id"].as_str().map(str::to_string)
    })
}

#[test]
fn approve_decides_a_live_meow_runs_approval_steps_from_anywhere_in_the_project() {
    let d = fixtures();
    // The project root: `approve` from a subdirectory finds the run recorded at the root.
    std::fs::write(d.path().join("pipewright.toml"), "").unwrap_or_else(|e| panic!("{e}"));
    let sub = d.path().join("sub");
    std::fs::create_dir_all(&sub).unwrap_or_else(|e| panic!("{e}"));
    let child = spawn_run(d.path(), &["approvals.meow.toml", "--var", &pw()]);
    let id = the_run(d.path());
    // Until both gates wait, a `--step` naming neither lists those that do.
    let listed = wait_for(Duration::from_secs(20), "both gates waiting", || {
        let o = run_in(&sub, &["approve", &id, "--step", "nosuch"]);
        let err = stderr(&o);
        (err.contains("`release`") && err.contains("`docs`")).then_some(o)
    });
    assert_eq!(listed.status.code(), Some(1), "{}", text(&listed));
    // Without --step: both are named, nothing is decided.
    let o = run_in(&sub, &["approve", &id]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains("waits for approval at 2 gates")
            && err.contains("step `release`")
            && err.contains("step `docs` (gate `docs-gate`)")
            && err.contains("--step"),
        "{err}"
    );
    let o = run_in(
        &sub,
        &["approve", &id, "--step", "release", "--message", "go"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        stdout(&o).contains(&format!("approved step `release` of run {id}")),
        "{}",
        text(&o)
    );
    // The spec's form, by gate id, from the subdirectory too.
    let o = run_in(
        &sub,
        &["meow", "reject", &id, "docs-gate", "--reason", "later"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = finish(child);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    assert_eq!(v["steps"]["release.shipped"], "done", "{}", text(&o));
    assert_eq!(v["steps"]["docs.dropped"], "done", "{}", text(&o));
    assert!(v["steps"].get("docs.published").is_none(), "{}", text(&o));
    // Nothing waits any more, and the run is over: `approve` says so.
    let o = run_in(&sub, &["approve", &id]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stderr(&o).contains("is a MEOW run that is not running (ok)"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_humans_approve_or_reject_outside_any_run_fails_with_a_message() {
    let d = tempdir();
    for args in [&["approve", "g"][..], &["reject", "g", "--reason", "no"]] {
        let o = bin()
            .current_dir(d.path())
            .env_remove("MEOW_ORCH_SOCK")
            .arg("meow")
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = stderr(&o);
        assert!(
            err.contains("no run to decide a gate of") && err.contains("pipewright approve RUN_ID"),
            "{err}"
        );
    }
    // A run id that is not running here is named as such.
    let o = run_in(d.path(), &["meow", "approve", "0199aaaa-bbbb", "g"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("run 0199aaaa-bbbb is not running in this project"),
        "{}",
        text(&o)
    );
}

#[test]
fn the_socket_keeps_answering_after_the_orchestrator_ran_out_of_file_descriptors() {
    use std::os::unix::net::UnixStream;
    let d = fixtures();
    // The orchestrator under a 256-descriptor limit.
    let child = std::process::Command::new("sh")
        .current_dir(d.path())
        .args(["-c", "ulimit -n 256 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_pipewright"))
        .args(["run", "fds.meow.toml", "--format", "json", "--var", &pw()])
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    wait_for(Duration::from_secs(20), "the holding step", || {
        d.path().join("ready").exists().then_some(())
    });
    let id = the_run(d.path());
    let sock = d
        .path()
        .join(".pipewright/runs")
        .join(&id)
        .join("orch.sock");
    // 400 idle connections: more than the orchestrator has descriptors for.
    let mut held = Vec::new();
    for _ in 0..400 {
        match UnixStream::connect(&sock) {
            Ok(c) => held.push(c),
            Err(_) => break,
        }
    }
    assert_eq!(held.len(), 400, "the socket took every connection");
    // Give the orchestrator time to hit the limit, then let them all go.
    std::thread::sleep(Duration::from_millis(500));
    drop(held);
    std::fs::write(d.path().join("go"), "").unwrap_or_else(|e| panic!("{e}"));
    let o = finish(child);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    assert_eq!(v["stores"]["after"]["status"], "done", "{}", text(&o));
}

#[test]
fn a_message_over_the_size_limit_is_refused_and_the_socket_goes_on() {
    let d = fixtures();
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[meow]\nmax_message_bytes = 1000\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (code, v, all) = run_json(d.path(), &["big.meow.toml", "--var", &pw()]);
    assert_eq!(code, Some(0), "{all}");
    let said = v["stores"]["big"]["said"].as_str().unwrap_or("");
    assert!(
        said.contains("the message is longer than 1000 bytes") && said.contains("exit=1"),
        "{said}"
    );
    assert_eq!(v["stores"]["small"]["status"], "done", "{all}");
}

/// A socket that answers every request `ack` and keeps each request's `type`, until `n` came
/// or ten seconds passed.
fn acking(path: &Path, n: usize) -> std::thread::JoinHandle<Vec<String>> {
    use std::io::{BufRead, Write};
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap_or_else(|e| panic!("{e}"));
    listener
        .set_nonblocking(true)
        .unwrap_or_else(|e| panic!("{e}"));
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut got = Vec::new();
        while got.len() < n && std::time::Instant::now() < deadline {
            let Ok((conn, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            let _ = conn.set_nonblocking(false);
            let mut line = String::new();
            let mut r = std::io::BufReader::new(&conn);
            let _ = r.read_line(&mut line);
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            got.push(v["type"].as_str().unwrap_or("?").to_string());
            let _ = (&conn).write_all(b"{\"type\":\"ack\",\"success\":true}\n");
        }
        got
    })
}

/// In a member of a run on the engine, which has an orchestrator of its own
/// (`MEOW_ORCH_SOCK`), an agent's `done` goes there, its approvals to the run's
/// (`MEOW_RUN_SOCK`), and an event to both: the run's waiters hear it, and the member's
/// orchestrator learns the session it may name. A step's status is asked of the member's
/// first, and of the run's when the member's does not answer with one (a step outside it).
#[test]
fn in_a_member_done_goes_to_its_own_orchestrator_and_approvals_to_the_runs() {
    let d = tempdir();
    let (own, run) = (d.path().join("own.sock"), d.path().join("run.sock"));
    let (own_got, run_got) = (acking(&own, 3), acking(&run, 3));
    for args in [
        vec!["meow", "done", "--output", "a=1"],
        vec!["meow", "approve", "go"],
        vec!["meow", "event", "started", "session_id=s1"],
        vec!["meow", "step-status", "elsewhere"],
    ] {
        let o = bin()
            .current_dir(d.path())
            .args(&args)
            .env("MEOW_ORCH_SOCK", &own)
            .env("MEOW_RUN_SOCK", &run)
            .env("MEOW_WORKFLOW", "0123")
            .env("MEOW_AGENT", "w1")
            .env("MEOW_STEP", "each.1.ask")
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
    }
    let own_got = own_got.join().unwrap_or_default();
    let run_got = run_got.join().unwrap_or_default();
    assert_eq!(own_got, ["step_done", "event", "get_step_status"]);
    assert_eq!(run_got, ["approval", "event", "get_step_status"]);
}
