//! End-to-end tests of `pipewright graph` through the real binary.

mod common;
use common::*;
use serde_json::Value;
use std::process::Stdio;

const FIXTURE: &str = "graph_calls.yaml";

fn graph(args: &[&str]) -> std::process::Output {
    let mut all = vec!["graph"];
    all.extend_from_slice(args);
    run_in(&testdata("run"), &all)
}

fn graph_ok(args: &[&str]) -> String {
    let o = graph(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
    assert_eq!(stderr(&o), "", "{args:?}");
    stdout(&o)
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--format", "json"]);
    let out = graph_ok(&all);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("graph JSON does not parse: {e}\n{out}"))
}

fn workflow_names(v: &Value) -> Vec<String> {
    v["workflows"]
        .as_array()
        .map(|ws| {
            ws.iter()
                .filter_map(|w| w["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn dot_available() -> bool {
    std::process::Command::new("dot")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn dot_output_renders_with_graphviz() {
    if !dot_available() {
        println!("skipped: `dot` (Graphviz) is not installed");
        return;
    }
    for (file, pipeline) in [
        (FIXTURE, None),
        (FIXTURE, Some("main")),
        ("graph_all_kinds.yaml", None),
    ] {
        let mut args = vec![file, "--format", "dot"];
        if let Some(p) = pipeline {
            args.extend(["--pipeline", p]);
        }
        let out = graph_ok(&args);
        assert!(out.starts_with("digraph "), "{out}");
        let mut child = std::process::Command::new("dot")
            .arg("-Tsvg")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("dot: {e}"));
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            stdin
                .write_all(out.as_bytes())
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let o = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
        assert!(o.status.success(), "{file} {pipeline:?}: {}", text(&o));
        assert!(stderr(&o).is_empty(), "dot warned: {}", stderr(&o));
        assert!(stdout(&o).contains("<svg"), "{file}");
    }
}

#[test]
fn dot_is_the_default_format() {
    assert_eq!(
        graph_ok(&[FIXTURE]),
        graph_ok(&[FIXTURE, "--format", "dot"])
    );
}

#[test]
fn mermaid_output_is_a_flowchart() {
    for file in [FIXTURE, "graph_all_kinds.yaml"] {
        let out = graph_ok(&[file, "--format", "mermaid"]);
        assert!(out.starts_with("flowchart"), "{out}");
        assert!(out.ends_with('\n'));
    }
}

#[test]
fn json_output_parses_with_version_1() {
    for file in [FIXTURE, "graph_all_kinds.yaml"] {
        let v = json(&[file]);
        assert_eq!(v["format"], "pipewright-graph");
        assert_eq!(v["version"], 1);
        assert!(v["workflows"].is_array() && v["calls"].is_array(), "{v}");
    }
    let v = json(&[FIXTURE]);
    assert_eq!(workflow_names(&v), ["main", "helper", "big", "unrelated"]);
    assert_eq!(v["workflows"][0]["body"]["nodes"][1]["span"]["line"], 6);
    assert_eq!(
        v["workflows"][0]["body"]["nodes"][1]["span"]["file"],
        FIXTURE
    );
}

#[test]
fn pipeline_restricts_to_it_and_its_callees() {
    let v = json(&[FIXTURE, "--pipeline", "main"]);
    assert_eq!(workflow_names(&v), ["main", "helper", "big"]);
    let v = json(&[FIXTURE, "--pipeline", "helper"]);
    assert_eq!(workflow_names(&v), ["helper"]);
    assert_eq!(v["calls"], serde_json::json!([]));
    let v = json(&[FIXTURE, "--pipeline", "unrelated"]);
    assert_eq!(workflow_names(&v), ["unrelated"]);

    let dot = graph_ok(&[FIXTURE, "--pipeline", "main"]);
    assert!(
        dot.contains("pipeline big") && !dot.contains("pipeline unrelated"),
        "{dot}"
    );
    let mermaid = graph_ok(&[FIXTURE, "--format", "mermaid", "--pipeline", "helper"]);
    assert!(mermaid.contains("pipeline helper"), "{mermaid}");
    assert!(!mermaid.contains("pipeline main"), "{mermaid}");
}

#[test]
fn unknown_pipeline_exits_2() {
    for format in ["dot", "mermaid", "json"] {
        let o = graph(&[FIXTURE, "--format", format, "--pipeline", "nope"]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert_eq!(stdout(&o), "");
        assert!(
            stderr(&o).contains("no pipeline named `nope`")
                && stderr(&o).contains("main, helper, big, unrelated"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn a_file_with_check_errors_is_not_graphed() {
    let o = graph(&["check_error.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("error[PW0204]"), "{}", text(&o));
}

#[test]
fn snapshots_of_the_three_formats() {
    insta::assert_snapshot!("graph_calls_dot", graph_ok(&[FIXTURE, "--format", "dot"]));
    insta::assert_snapshot!(
        "graph_calls_mermaid",
        graph_ok(&[FIXTURE, "--format", "mermaid"])
    );
    insta::assert_snapshot!("graph_calls_json", graph_ok(&[FIXTURE, "--format", "json"]));
}
