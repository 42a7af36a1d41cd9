use crate::run::common::*;
use pipewright_runtime::{CancelToken, Event, EventKind, EventSink};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const FAN: &str = "pipeline: fan\nsteps:\n  - transform: {value: \"[1, 2, 3, 4, 5, 6, 7, 8]\", output: xs}\n  - for_each:\n      over: ctx.xs\n      max_parallel: 2\n      on_error: abort\n      do: {shell: {command: !expr \"'sleep 0.3; echo ' + join(map([item], i -> 'run'), '') + ' >> log; echo done'\"}}\n      collect: {transform: {value: \"map(pipe, r -> r.text)\"}}\n      output: results\n  - transform: {value: \"count(ctx.results)\"}\n";

fn state(dir: &std::path::Path) -> Option<(String, serde_json::Value)> {
    only_run(dir)
}

#[test]
fn store_records_every_landing_and_events() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.file_label = "fan.yaml".into();
    let v = run_json(FAN, o);
    assert_eq!(v["output"], 8, "{v}");
    let (id, s) = state(d.path()).unwrap_or_else(|| panic!("no state"));
    assert_eq!(s["status"], "ok");
    assert_eq!(s["run_id"], id.as_str());
    assert_eq!(s["file"], "fan.yaml");
    let completed = s["completed"].as_object().map(|m| m.len()).unwrap_or(0);
    assert_eq!(completed, 3 + 8 + 1, "{s}");
    let events = store_at(d.path())
        .events(&id)
        .unwrap_or_else(|e| panic!("{e}"));
    let kinds: Vec<serde_json::Value> = events
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(kinds
        .iter()
        .any(|e| e["event"] == "step_started" && e["key"] == "1.for_each.7"));
    assert!(kinds
        .iter()
        .all(|e| e["event"] != "step_completed" || e["elapsed_ms"].is_number()));
}

#[test]
fn cancellation_stops_at_a_step_boundary_and_resume_finishes() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.sinks = vec![Arc::new(CancelAt(o.cancel.clone(), "1.for_each.2"))];
    let (out, _) = exec(FAN, o);
    assert_eq!(out.status.name(), "cancelled");
    assert_eq!(out.exit_code(), 130);
    let (id, s) = state(d.path()).unwrap_or_else(|| panic!("no state"));
    assert_eq!(s["status"], "cancelled");
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.resume = Some(id.clone());
    let v = run_json(FAN, o);
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["run_id"], id.as_str());
    assert_eq!(v["output"], 8);
    let ran = std::fs::read_to_string(d.path().join("log"))
        .map(|s| s.lines().count())
        .unwrap_or(0);
    // Item 1, in flight when item 2 started, was killed; had it written its line already, the
    // resume wrote it again. Every landed item was replayed, not re-run.
    assert!((8..=9).contains(&ran), "{ran} executions");
}

/// The child half of `kill_9_mid_fan_out_then_resume`: runs only when the parent sets
/// PW_KILL_TEST_DIR.
#[test]
fn child_run_for_kill_test() {
    let Ok(dir) = std::env::var("PW_KILL_TEST_DIR") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let mut o = opts(&dir);
    o.store = Some(store_at(&dir));
    let _ = run_json(FAN, o);
}

#[test]
fn kill_9_mid_fan_out_then_resume() {
    let d = tempdir();
    let mut child = this_test_alone(module_path!(), "child_run_for_kill_test")
        .env("PW_KILL_TEST_DIR", d.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        assert!(
            Instant::now() < deadline,
            "the child never landed two items"
        );
        if let Some((id, s)) = state(d.path()) {
            let items = s["completed"]
                .as_object()
                .map(|m| m.keys().filter(|k| k.starts_with("1.for_each.")).count())
                .unwrap_or(0);
            if items >= 2 {
                break id;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    let (_, s) = state(d.path()).unwrap_or_else(|| panic!("no state"));
    assert_eq!(s["status"], "running", "killed mid-run: {s}");
    let landed_before = s["completed"].as_object().map(|m| m.len()).unwrap_or(0);
    assert!(landed_before < 12, "killed before the end");

    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.resume = Some(id);
    let resumed = run_json(FAN, o);
    let uninterrupted = {
        let d2 = tempdir();
        run_json(FAN, opts(d2.path()))
    };
    assert_eq!(resumed["status"], "ok", "{resumed}");
    assert_eq!(resumed["output"], uninterrupted["output"]);
    assert_eq!(resumed["stores"], uninterrupted["stores"]);
    assert_eq!(resumed["stores"]["results"], json!(vec!["done\n"; 8]));
    // Items that landed before the kill were not run again: at most the two in flight (and
    // their orphaned shells) ran twice.
    std::thread::sleep(Duration::from_millis(400));
    let ran = std::fs::read_to_string(d.path().join("log"))
        .map(|s| s.lines().count())
        .unwrap_or(0);
    assert!((8..=12).contains(&ran), "{ran} executions");
}

/// Item b writes its log line at once and then takes a while; item a completes only once b
/// has started, and its completion cancels the run, so b is in flight with its side effect
/// done. The cancel stops b there: it is recorded cancelled, not completed, and the resume
/// runs it again; a, which landed, is replayed.
#[test]
fn cancellation_stops_in_flight_items_and_resume_runs_them_again() {
    const SIDE: &str = "pipeline: side\nsteps:\n  - for_each:\n      items: [a, b, c]\n      max_parallel: 2\n      on_error: continue\n      do: {shell: {command: !expr \"'case ' + item + ' in a) i=0; while [ ! -f b-started ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; echo a >> log;; b) echo b >> log; touch b-started; sleep 0.4;; *) echo ' + item + ' >> log;; esac; echo done'\"}}\n      collect: {transform: {value: \"pipe\"}}\n      output: results\n";
    struct CancelOnDone(CancelToken);
    impl EventSink for CancelOnDone {
        fn event(&self, e: &Event) {
            if e.kind == EventKind::Completed && e.key == "0.for_each.0" {
                self.0.cancel();
            }
        }
    }
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.sinks = vec![Arc::new(CancelOnDone(o.cancel.clone()))];
    let (out, _) = exec(SIDE, o);
    assert_eq!(out.status.name(), "cancelled");
    let (id, s) = state(d.path()).unwrap_or_else(|| panic!("no state"));
    assert!(
        s["completed"].get("0.for_each.0").is_some(),
        "the item that completed landed: {s}"
    );
    assert!(
        s["completed"].get("0.for_each.1").is_none(),
        "the in-flight item was cancelled, not landed: {s}"
    );
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.resume = Some(id);
    let v = run_json(SIDE, o);
    assert_eq!(v["status"], "ok", "{v}");
    let mut lines: Vec<String> = std::fs::read_to_string(d.path().join("log"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        ["a", "b", "b", "c"],
        "a ran once, the cancelled b again on resume, c once"
    );
}

/// Items that land slower than the disk are each committed before the next one lands: a
/// reader polling the store from another connection sees 1, 2, 3, 4 landed items in turn.
#[test]
fn the_store_is_written_after_each_for_each_item() {
    const ITEMS: &str = "pipeline: items\nsteps:\n  - for_each:\n      items: [a, b, c, d]\n      max_parallel: 1\n      on_error: abort\n      do: {shell: {command: \"sleep 0.4; echo x\"}}\n      collect: {transform: {value: \"count(pipe)\"}}\n";
    let d = tempdir();
    let root = d.path().to_path_buf();
    let worker = std::thread::spawn(move || {
        let mut o = opts(&root);
        o.store = Some(store_at(&root));
        run_json(ITEMS, o)
    });
    let mut seen = std::collections::BTreeSet::new();
    let mut reads = 0;
    while !worker.is_finished() {
        if let Some((_, s)) = state(d.path()) {
            reads += 1;
            let items = s["completed"]
                .as_object()
                .map(|m| {
                    m.keys()
                        .filter(|k| k.starts_with("0.for_each.") && *k != "0.for_each.collect")
                        .count()
                })
                .unwrap_or(0);
            seen.insert(items);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let v = worker.join().unwrap_or_else(|_| panic!("the run panicked"));
    assert_eq!(v["output"], 4, "{v}");
    assert!(reads > 10, "{reads} reads");
    for n in 1..=3 {
        assert!(seen.contains(&n), "never saw {n} landed item(s): {seen:?}");
    }
}
