use pipewright_ir::export::{dot, json, mermaid, ExportOptions};
use pipewright_ir::{Program, WorkflowId};
use pipewright_pipeline::lower;
use pipewright_syntax::SourceMap;
use std::path::Path;

fn load(name: &str) -> (Program, SourceMap) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/run")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut sources = SourceMap::new();
    let file = sources.add(format!("testdata/run/{name}"), text.as_str());
    let mut diags = Vec::new();
    let f = pipewright_pipeline::load_source(file, &text, &mut diags);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:#?}");
    let ast = pipewright_pipeline::ast::Program { files: vec![f] };
    let checks = pipewright_pipeline::check_program(&ast, &sources, &Default::default());
    assert!(checks.iter().all(|d| !d.is_error()), "{checks:#?}");
    (lower::pipeline(ast), sources)
}

#[test]
fn lowering_builds_nested_regions_and_resolves_calls() {
    let (p, _) = load("graph_all_kinds.yaml");
    assert_eq!(p.workflows.len(), 3);
    let w = &p.workflows[0];
    let seq = w.body.sequence();
    assert_eq!(seq.len(), 7);
    let kinds: Vec<&str> = seq.iter().map(|n| w.body.graph[*n].kind.name()).collect();
    assert_eq!(
        kinds,
        [
            "transform",
            "tool",
            "shell",
            "for_each",
            "fold",
            "parallel",
            "match"
        ]
    );
    let m = &w.body.graph[seq[6]];
    let calls = m.kind.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].1.resolved, Some(WorkflowId(1)));
    assert_eq!(calls[1].1.resolved, Some(WorkflowId(2)));
}

#[test]
fn dot_snapshot() {
    let (p, _) = load("graph_all_kinds.yaml");
    insta::assert_snapshot!(dot::dot(&p, &ExportOptions::default()));
}

#[test]
fn mermaid_snapshot() {
    let (p, _) = load("graph_all_kinds.yaml");
    let m = mermaid::mermaid(&p, &ExportOptions::default());
    assert_mermaid_shape(&m);
    insta::assert_snapshot!(m);
}

#[test]
fn json_snapshot() {
    let (p, s) = load("graph_all_kinds.yaml");
    let v = json::json(&p, &s, &ExportOptions::default());
    insta::assert_json_snapshot!(v);
}

#[test]
fn root_option_limits_to_reachable_workflows() {
    let (p, s) = load("graph_all_kinds.yaml");
    let v = json::json(
        &p,
        &s,
        &ExportOptions {
            root: Some(WorkflowId(1)),
        },
    );
    assert_eq!(v["workflows"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["workflows"][0]["name"], "report");
    let d = dot::dot(
        &p,
        &ExportOptions {
            root: Some(WorkflowId(0)),
        },
    );
    assert!(d.contains("cluster_w1") && d.contains("cluster_w2"));
}

#[test]
fn output_is_deterministic() {
    let (p, s) = load("graph_all_kinds.yaml");
    let (q, _) = load("graph_all_kinds.yaml");
    assert_eq!(
        dot::dot(&p, &ExportOptions::default()),
        dot::dot(&q, &ExportOptions::default())
    );
    assert_eq!(
        json::json(&p, &s, &ExportOptions::default()).to_string(),
        json::json(&q, &s, &ExportOptions::default()).to_string()
    );
}

/// `dot -Tsvg` accepts the output. CI installs graphviz; locally the test is skipped when
/// `dot` is missing.
#[test]
fn dot_renders_with_graphviz() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    if Command::new("dot").arg("-V").output().is_err() {
        eprintln!("skipping dot_renders_with_graphviz: graphviz `dot` is not installed");
        return;
    }
    let (p, _) = load("graph_all_kinds.yaml");
    let text = dot::dot(&p, &ExportOptions::default());
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn dot: {e}"));
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(text.as_bytes())
            .unwrap_or_else(|e| panic!("write: {e}"));
    }
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("dot: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "dot failed: {stderr}\n{text}");
    assert!(
        !stderr.contains("Warning") && !stderr.contains("Error"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("<svg"));
}

/// No Mermaid parser is available offline; this checks the structure that the flowchart
/// grammar depends on: balanced subgraphs, plain identifiers, labels with nothing that could
/// end a quoted string.
fn assert_mermaid_shape(m: &str) {
    let mut depth = 0i32;
    let mut lines = m.lines();
    assert_eq!(lines.next(), Some("flowchart TD"));
    for line in lines {
        let t = line.trim();
        if t.starts_with("subgraph ") {
            depth += 1;
        } else if t == "end" {
            depth -= 1;
            assert!(depth >= 0, "unbalanced end: {m}");
        }
        let quotes = t.matches('"').count();
        assert!(quotes % 2 == 0, "odd quotes in {t}");
    }
    assert_eq!(depth, 0, "unbalanced subgraphs");
}

/// `graph` streams the document; the bytes must be those of the value tree pretty-printed.
#[test]
fn streamed_json_equals_the_pretty_printed_value() {
    for name in ["graph_all_kinds.yaml", "graph_calls.yaml", "fan_gate.yaml"] {
        let (p, s) = load(name);
        for root in [None, Some(WorkflowId(0))] {
            let opts = ExportOptions { root };
            let mut streamed = Vec::new();
            json::write_pretty(&p, &s, &opts, &mut streamed)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let tree = serde_json::to_string_pretty(&json::json(&p, &s, &opts))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(String::from_utf8_lossy(&streamed), tree, "{name} {root:?}");
        }
    }
}
