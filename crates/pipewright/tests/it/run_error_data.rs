//! `pipewright run` end to end for issue 9 finding 12: what a pipeline reads as data about an
//! error is the raw error text, child-process failures are worded (no Rust debug values), and
//! `output: ""` is accepted and writes no store.

use crate::common::*;
use serde_json::{json, Value};
use std::path::Path;

fn project(pipeline: &str) -> tempfile::TempDir {
    let d = tempdir();
    std::fs::write(d.path().join("p.yaml"), pipeline).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[tools.boom]\ncommand = [\"sh\", \"-c\", \"echo bad >&2; exit 1\"]\n\n[tools.killed]\ncommand = [\"sh\", \"-c\", \"kill -9 $$\"]\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    d
}

fn run_json(dir: &Path) -> (Option<i32>, Value) {
    let o = run_in(dir, &["run", "p.yaml", "--format", "json"]);
    let v = serde_json::from_str(&stdout(&o))
        .unwrap_or_else(|e| panic!("`--format json` does not parse: {e}\n{}", text(&o)));
    (o.status.code(), v)
}

#[test]
fn continue_envelope_and_branch_errors_hold_the_raw_error() {
    let d = project(
        "pipeline: p\nsteps:\n  - tool: {name: boom, on_error: continue, output: r}\n  - parallel:\n      on_error: continue\n      branches:\n        b: {tool: {name: boom}}\n        k: {tool: {name: killed}}\n      collect: {transform: {value: \"{envelope: ctx.r.text, branches: pipe.__branch_errors__}\"}}\n",
    );
    let (code, v) = run_json(d.path());
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(
        v["output"],
        json!({
            "envelope": "tool `boom` exited with status 1: bad",
            "branches": {
                "b": "tool `boom` exited with status 1: bad",
                "k": "tool `killed` was killed by signal 9 (SIGKILL)",
            },
        }),
        "{v}"
    );
}

#[test]
fn a_failed_tool_is_worded_in_the_diagnostic() {
    let d = project("pipeline: p\nsteps:\n  - tool: {name: boom}\n");
    let o = run_in(d.path(), &["run", "p.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains("tool `boom` exited with status 1: bad"),
        "{err}"
    );
    assert!(!err.contains("Some("), "{err}");
}

#[test]
fn empty_output_runs_and_writes_no_store() {
    let d = project(
        "pipeline: p\nsteps:\n  - transform: {value: \"1\", output: \"\"}\n  - transform: {value: \"pipe + 1\"}\n",
    );
    let (code, v) = run_json(d.path());
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["output"], 2, "{v}");
    assert_eq!(v["stores"], json!({}), "{v}");
}
