//! A failed or cancelled run reports the stores and pipe as they were when it stopped, at
//! whatever nesting level it stopped.

use crate::run::common::*;
use serde_json::json;
use std::sync::Arc;

#[test]
fn a_top_level_failure_keeps_the_stores_written_before_it() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.input = json!({"n": 0});
    let v = run_json(
        "pipeline: p\nsteps:\n  - transform: {value: \"ctx.n + 5\", output: five}\n  - transform: {value: \"'x'\", output: x}\n  - transform: {value: \"10 / ctx.n\", output: ratio}\n  - transform: {value: \"'never'\", output: never}\n",
        o,
    );
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["error"]["step"], "2");
    assert_eq!(v["stores"], json!({"n": 0, "five": 5, "x": "x"}), "{v}");
    assert_eq!(v["output"], "x", "the pipe when the run stopped");
}

#[test]
fn a_failure_in_the_first_step_has_a_null_output_and_the_input_stores() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.input = json!({"n": 0});
    let v = run_json(
        "pipeline: p\nsteps:\n  - transform: {value: \"1 / ctx.n\", output: r}\n",
        o,
    );
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["output"], serde_json::Value::Null);
    assert_eq!(v["stores"], json!({"n": 0}));
}

#[test]
fn a_failure_inside_a_called_pipeline_reports_the_callers_stores() {
    let d = tempdir();
    let v = run_json(
        "pipeline: main\nsteps:\n  - transform: {value: \"0\", output: zero}\n  - transform: {value: \"'before'\", output: before}\n  - call: {pipeline: sub, pass: [zero], output: r}\n  - transform: {value: \"'after'\", output: after}\n---\npipeline: sub\nsteps:\n  - transform: {value: \"'inner'\", output: inner}\n  - transform: {value: \"1 / ctx.zero\"}\n",
        opts(d.path()),
    );
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["error"]["step"], "2.call.1", "{v}");
    assert_eq!(
        v["stores"],
        json!({"zero": 0, "before": "before"}),
        "the caller's stores, not the callee's `inner`: {v}"
    );
    assert_eq!(v["output"], "before");
}

#[test]
fn a_failure_inside_a_for_each_item_reports_the_stores_before_the_fan_out() {
    let d = tempdir();
    let v = run_json(
        "pipeline: p\nsteps:\n  - transform: {value: \"[1, 0, 2]\", output: xs}\n  - for_each:\n      over: ctx.xs\n      max_parallel: 1\n      on_error: abort\n      do: {transform: {value: \"10 / item\", output: r}}\n      collect: {transform: {value: \"pipe\"}}\n      output: rs\n  - transform: {value: \"'after'\", output: after}\n",
        opts(d.path()),
    );
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["error"]["code"], "PW0806", "{v}");
    assert_eq!(v["stores"], json!({"xs": [1, 0, 2]}), "{v}");
    assert_eq!(v["output"], json!([1, 0, 2]));
}

#[test]
fn a_cancelled_run_reports_the_stores_written_before_the_boundary() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.sinks = vec![Arc::new(CancelAt(o.cancel.clone(), "1"))];
    let (out, s) = exec(
        "pipeline: p\nsteps:\n  - transform: {value: \"'a'\", output: a}\n  - transform: {value: \"'b'\", output: b}\n  - transform: {value: \"'c'\", output: c}\n",
        o,
    );
    let v = out.to_json(&s);
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(v["cancelled_at"], "2", "{v}");
    assert_eq!(v["stores"], json!({"a": "a", "b": "b"}), "{v}");
    assert_eq!(v["output"], "b");
    assert!(out.store.is_some());
    let (id, state) = only_run(d.path()).unwrap_or_else(|| panic!("no run in the store"));
    assert_eq!(id, out.run_id);
    assert_eq!(state["stores"], v["stores"], "{state}");
    assert_eq!(state["output"], "b", "{state}");
}
