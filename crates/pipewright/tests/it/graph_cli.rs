//! End-to-end tests of `pipewright graph` through the real binary.

use crate::common;
use crate::common::*;
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
    common::runs("dot", "-V")
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

/// A recipe's DOT is the reference's `recipe_to_dot`, byte for byte (no trailing newline, as
/// the reference writes it); the drawing itself is tested against hand-derived files in the
/// recipe crate (tests/dot.rs).
#[test]
fn recipe_dot_is_the_reference_drawing_exactly() {
    let dir = testdata("recipe/ok");
    let mut drawn = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{e}")) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        if path.extension().and_then(|x| x.to_str()) != Some("yaml") {
            continue;
        }
        let source = read(&path);
        let (docs, _) = pipewright_yaml::load(
            pipewright_syntax::FileId(0),
            &source,
            pipewright_yaml::Limits::default(),
        );
        let Some(root) = docs.iter().find_map(|d| d.root.as_ref()) else {
            continue;
        };
        let want = pipewright_recipe::dot::recipe_to_dot(root)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let o = run_in(&dir, &["graph", name, "--format", "dot"]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o));
        assert_eq!(stdout(&o), want, "{name}");
        drawn += 1;
    }
    assert!(drawn >= 5, "only {drawn} recipes drawn");
}

/// Mermaid and JSON draw the lowered recipe: stages with their steps nested, the gate after
/// its stage, loops with their body, step names.
#[test]
fn recipe_mermaid_and_json_show_stages_gates_and_loops() {
    let dir = testdata("recipe/ok");
    let o = run_in(&dir, &["graph", "staged.yaml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    let w = &v["workflows"][0];
    assert_eq!(w["dialect"], "recipe");
    let nodes = w["body"]["nodes"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = nodes.iter().filter_map(|n| n["kind"].as_str()).collect();
    assert_eq!(kinds, ["stage", "gate", "stage"], "{w}");
    assert_eq!(nodes[1]["details"]["stage"], "planning phase");
    assert_eq!(nodes[1]["details"]["default"], "deny");
    assert_eq!(nodes[1]["details"]["timeout_secs"], 3600);
    let exec = &nodes[2]["regions"][0]["region"]["nodes"];
    let names: Vec<&str> = exec
        .as_array()
        .map(|a| a.iter().filter_map(|n| n["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["execute", "loop", "summary"], "{exec}");
    assert_eq!(exec[1]["kind"], "loop");
    assert_eq!(exec[1]["details"]["each"], "{{plan.items}}");
    assert_eq!(exec[1]["details"]["collect"], "results");
    let o = run_in(&dir, &["graph", "staged.yaml", "--format", "mermaid"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = stdout(&o);
    assert!(m.contains("planning phase approval (gate)"), "{m}");
    // A step is labelled with the recipe's own word for it (`agent`, `bash`), not the IR's.
    assert!(m.contains("inner (agent)"), "{m}");
    assert!(!m.contains("(ask)") && !m.contains("(command)"), "{m}");
}

/// Graphs use each dialect's word for a step (`agent`, `bash`, `recipe`, MEOW's `branch`);
/// the JSON keeps the IR's `kind` and adds the dialect's as `dialect_kind`. A stage's
/// subgraph is titled with its name, not "stage stage".
#[test]
fn graphs_use_the_dialects_words_and_title_stages_by_name() {
    let tmp = tempdir();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("sub")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        dir.join("sub/child.yaml"),
        "name: child\ndescription: c\nversion: \"1.0.0\"\nsteps:\n  - id: c\n    type: bash\n    command: echo c\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        dir.join("kinds.yaml"),
        "name: kinds\ndescription: k\nversion: \"1.0.0\"\nsteps:\n  - id: compile\n    type: bash\n    command: make\n  - id: review\n    agent: foundation:zen-architect\n    prompt: Review it.\n  - id: docs\n    type: recipe\n    recipe: sub/child.yaml\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(dir, &["graph", "kinds.yaml", "--format", "mermaid"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = stdout(&o);
    for label in ["compile (bash)", "review (agent)", "docs (recipe)"] {
        assert!(m.contains(label), "{label}: {m}");
    }
    let o = run_in(dir, &["graph", "kinds.yaml", "--format", "json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}"));
    let n = &v["workflows"][0]["body"]["nodes"][0];
    assert_eq!(
        (&n["kind"], &n["dialect_kind"]),
        (&Value::from("command"), &Value::from("bash")),
        "{n}"
    );

    let o = run_in(
        &testdata("recipe/ok"),
        &["graph", "staged.yaml", "--format", "mermaid"],
    );
    let m = stdout(&o);
    assert!(!m.contains("stage stage"), "{m}");
    assert!(m.contains("[\"stage execution\"]"), "{m}");
    // The IR's DOT (the reference's is for the whole file only).
    let o = run_in(
        &testdata("recipe/ok"),
        &[
            "graph",
            "staged.yaml",
            "--pipeline",
            "staged_review",
            "--format",
            "dot",
        ],
    );
    let dot = stdout(&o);
    assert!(dot.contains("label=\"stage execution\";"), "{}", text(&o));
    assert!(!dot.contains("stage stage"), "{dot}");
}

/// `graph --format json` marks the steps that ask an agent (`agent: true`), in every dialect
/// whose steps do: a pipeline's `agent`, a recipe's agent step (`kind: ask`).
#[test]
fn graph_json_marks_the_steps_that_ask_an_agent() {
    let d = tempdir();
    std::fs::write(
        d.path().join("p.yaml"),
        "pipeline: p\nsteps:\n  - transform: {value: \"1\"}\n  - agent: {prompt: \"hi\"}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        d.path().join("r.recipe.yaml"),
        "name: r\ndescription: r\nversion: \"1.0.0\"\nsteps:\n  - id: ask\n    agent: \"x:y\"\n    prompt: \"hi\"\n  - id: sh\n    type: bash\n    command: \"true\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for (file, asking) in [("p.yaml", "agent"), ("r.recipe.yaml", "ask")] {
        let o = run_in(d.path(), &["graph", file, "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{file}: {e}: {}", text(&o)));
        let nodes = v["workflows"][0]["body"]["nodes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(nodes.len(), 2, "{file}: {v}");
        for n in &nodes {
            let marked = n.get("agent") == Some(&serde_json::Value::Bool(true));
            assert_eq!(marked, n["kind"] == asking, "{file}: {n}");
        }
    }
}
