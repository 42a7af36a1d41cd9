//! Crash trials: `pipewright run` killed with SIGKILL at pseudo-random points (the first
//! milliseconds included) over side-effecting shell steps that append a line to `log`, then
//! resumed. Every trial must resume; a step whose landing the store holds at the kill has
//! done its side effect exactly once, before and after the resume; the final output equals an
//! uninterrupted run's.
//!
//! CI runs a short series; `PW_CRASH_TRIALS=500 cargo test -p pipewright --test crash` runs a
//! long one.

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// Every side effect is one line naming its step: `s0` is step 0, `iK` the for_each item K,
/// `s2` step 2.
const CRASH: &str = "pipeline: crash\nsteps:\n  - shell: {command: \"echo s0 >> log; echo s0\", output: a}\n  - for_each:\n      items: [i0, i1, i2, i3, i4, i5, i6, i7]\n      max_parallel: 3\n      on_error: abort\n      do: {shell: {command: !expr \"'sleep 0.01; echo ' + item + ' >> log; echo ' + item\"}}\n      collect: {transform: {value: \"map(pipe, r -> r.text)\"}}\n      output: items\n  - shell: {command: \"echo s2 >> log; echo s2\", output: c}\n  - transform: {value: \"ctx.a.text + join(ctx.items, '') + ctx.c.text\"}\n";

const EXPECTED: &str = "s0\ni0\ni1\ni2\ni3\ni4\ni5\ni6\ni7\ns2\n";

fn key_of(line: &str) -> String {
    match line {
        "s0" => "0".into(),
        "s2" => "2".into(),
        item => format!("1.for_each.{}", item.trim_start_matches('i')),
    }
}

fn counts(dir: &Path) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for line in std::fs::read_to_string(dir.join("log"))
        .unwrap_or_default()
        .lines()
    {
        *m.entry(key_of(line)).or_insert(0) += 1;
    }
    m
}

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(o)))
}

/// The run's landed keys, or `None` when the kill came before the run row existed.
fn landed(dir: &Path) -> Option<(String, Vec<String>)> {
    let list = json_of(&run_in(dir, &["runs", "--format", "json"]));
    let id = list.as_array()?.first()?["run_id"].as_str()?.to_string();
    let o = run_in(dir, &["runs", "show", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let keys = json_of(&o)["completed"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    Some((id, keys))
}

/// A deterministic spread of kill delays: the first trials hit the first milliseconds
/// (before and while the store is created), the rest fall anywhere in a run.
fn delay_ms(trial: u64) -> u64 {
    match trial {
        0 => 0,
        1 => 1,
        2 => 3,
        3 => 6,
        _ => {
            let mut x = trial.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef;
            x ^= x >> 29;
            x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x ^= x >> 32;
            5 + x % 115
        }
    }
}

#[test]
fn kill_9_at_random_points_then_resume_is_exactly_once() {
    let trials: u64 = std::env::var("PW_CRASH_TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(10);
    let mut resumed = 0;
    let mut before_start = 0;
    for trial in 0..trials {
        let d = tempdir();
        std::fs::write(d.path().join("crash.yaml"), CRASH).unwrap_or_else(|e| panic!("{e}"));
        let mut child = bin()
            .current_dir(d.path())
            .args(["run", "crash.yaml", "--format", "json"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn: {e}"));
        std::thread::sleep(Duration::from_millis(delay_ms(trial)));
        let _ = child.kill();
        let _ = child.wait();
        // The children died with it (PR_SET_PDEATHSIG); give a straggler no chance to write
        // after the snapshot.
        std::thread::sleep(Duration::from_millis(30));
        let at_kill = counts(d.path());
        let ctx = format!("trial {trial} (kill after {} ms)", delay_ms(trial));
        assert!(
            at_kill.values().all(|n| *n == 1),
            "{ctx}: a step ran twice in one run: {at_kill:?}"
        );
        let Some((id, landed_keys)) = landed(d.path()) else {
            // Killed before the run row: it must also have been before any step.
            assert!(
                at_kill.is_empty(),
                "{ctx}: side effects without a run: {at_kill:?}"
            );
            before_start += 1;
            continue;
        };
        for k in landed_keys.iter().filter(|k| !k.contains("collect")) {
            if k == "1" || k == "3" {
                continue; // the for_each and the transform have no side effect of their own
            }
            assert_eq!(
                at_kill.get(k),
                Some(&1),
                "{ctx}: landed {k} without its effect"
            );
        }
        let o = run_in(d.path(), &["run", "--resume", &id, "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{ctx}: {}", text(&o));
        let v = json_of(&o);
        assert_eq!(v["output"], EXPECTED, "{ctx}: {v}");
        assert_eq!(v["run_id"], id.as_str());
        resumed += 1;
        let after = counts(d.path());
        for (k, n) in &after {
            let was_landed = landed_keys.contains(k);
            let ran_before = at_kill.contains_key(k);
            let expected = if was_landed || !ran_before { 1 } else { 2 };
            assert_eq!(
                *n, expected,
                "{ctx}: {k} ran {n} times (landed before the kill: {was_landed}, ran before: {ran_before})"
            );
        }
        assert_eq!(after.len(), 10, "{ctx}: every step ran: {after:?}");
    }
    eprintln!("{trials} trials: {resumed} resumed, {before_start} killed before the run existed");
    assert!(resumed > 0);
}
