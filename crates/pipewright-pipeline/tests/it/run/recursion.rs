//! Call/match recursion is bounded (issue 11): past `max_call_depth` the step fails with a
//! diagnostic, and recursion the cap allows never overflows the native stack (it used to abort
//! the process, exit 134, at n = 1600).

use crate::run::common::*;
use serde_json::json;

/// Counts `n` down to 0 through a `match` (whose default calls back into `down`) and a `call`,
/// so each level is two nested call frames' worth of steps.
const DOWN: &str = "pipeline: down\nsteps:\n  - transform: {value: \"get(ctx, 'n', 0)\", output: n}\n  - match:\n      on: \"ctx.n == 0\"\n      cases:\n        \"True\": {pipeline: done}\n      default: {pipeline: again, pass: {n: \"ctx.n - 1\"}}\n---\npipeline: again\nsteps:\n  - call: {pipeline: down, pass: {n: ctx.n}}\n---\npipeline: done\nsteps:\n  - transform: {value: \"'bottom'\"}\n";

fn down(n: u64, max_call_depth: Option<u64>) -> serde_json::Value {
    let d = tempdir();
    let mut o = opts(d.path());
    o.input = json!({ "n": n });
    if let Some(m) = max_call_depth {
        o.caps.max_call_depth = m;
    }
    run_json(DOWN, o)
}

#[test]
fn recursion_within_the_default_cap_completes() {
    // 30 levels of match + call each: 61 nested calls, under the default 64.
    let v = down(30, None);
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["output"], "bottom");
}

#[test]
fn recursion_past_the_cap_fails_the_step_with_a_diagnostic() {
    let v = down(1600, None);
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["error"]["code"], "PW0812", "{v}");
    let message = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("64") && message.contains("max_call_depth"),
        "{message}"
    );
    let v = down(5, Some(4));
    assert_eq!(v["error"]["code"], "PW0812", "{v}");
}

/// The 64 frames of a runaway recursion are two call sites repeated: each is labelled once.
#[test]
fn the_diagnostic_labels_each_repeated_call_site_once() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.input = json!({ "n": 1000 });
    let (out, _) = exec(DOWN, o);
    let diag = out.diagnostic().unwrap_or_else(|| panic!("no diagnostic"));
    assert_eq!(diag.code, "PW0812");
    assert!(diag.secondary.len() <= 3, "{:#?}", diag.secondary);
    assert!(
        diag.notes.iter().any(|n| n.contains("64 enclosing steps")),
        "{:?}",
        diag.notes
    );
}

/// 1600 levels (3,201 nested calls) with the cap raised: completes, on the ordinary 2 MiB test
/// thread stack.
#[test]
fn deep_allowed_recursion_does_not_overflow_the_stack() {
    let v = down(1600, Some(5000));
    assert_eq!(v["status"], "ok", "{}", v["error"]);
    assert_eq!(v["output"], "bottom");
}
