//! `pipewright cancel RUN_ID`: Ctrl-C for a run started elsewhere.

use crate::common::*;
use serde_json::Value;
use std::time::Duration;

fn runs(dir: &std::path::Path) -> Value {
    let o = run_in(dir, &["runs", "--format", "json"]);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
}

#[test]
fn cancel_stops_a_running_run_as_ctrl_c_and_resume_finishes_it() {
    let d = tempdir();
    copy_into(&testdata("run").join("cancel_wait.yaml"), d.path());
    let child = spawn_run(d.path(), &["cancel_wait.yaml"]);
    wait_for(Duration::from_secs(30), "the waiting step", || {
        d.path().join("started").exists().then_some(())
    });
    let id = runs(d.path())[0]["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let o = run_in(d.path(), &["cancel", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        stdout(&o).contains(&format!("cancelling run {id}")),
        "{}",
        text(&o)
    );

    // The run's own process ends as on Ctrl-C: exit 130, status cancelled at the waiting step.
    let out = finish(child);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report["status"], "cancelled", "{report}");
    assert_eq!(report["cancelled_at"], "1", "{report}");
    assert_eq!(runs(d.path())[0]["status"], "cancelled");

    // Nothing runs it now: a second cancel is refused in one sentence, and no process is hit.
    let o = run_in(d.path(), &["cancel", &id]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(
        stderr(&o).trim(),
        format!("error: run {id} is not running (cancelled): there is nothing to cancel")
    );

    std::fs::write(d.path().join("go"), "").unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["run", "--resume", &id, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["output"], "one\ntwo\n", "{r}");
    // The first step stayed landed: it ran once.
    assert_eq!(read(&d.path().join("log")), "first\nsecond\nsecond\n");
}

#[test]
fn cancel_refuses_a_finished_run_and_an_unknown_one() {
    let d = tempdir();
    copy_into(&testdata("run").join("divide.yaml"), d.path());
    let o = run_in(d.path(), &["run", "divide.yaml"]);
    let id = runs(d.path())[0]["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let status = runs(d.path())[0]["status"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let c = run_in(d.path(), &["cancel", &id]);
    assert_eq!(c.status.code(), Some(1), "{} / {}", text(&o), text(&c));
    assert!(
        stderr(&c).contains(&format!("run {id} is not running ({status})")),
        "{}",
        text(&c)
    );
    let c = run_in(d.path(), &["cancel", "0000"]);
    assert_eq!(c.status.code(), Some(1), "{}", text(&c));
    assert!(stderr(&c).contains("no run 0000"), "{}", text(&c));
}
