//! `pipewright check` and `graph` on MEOW templates through the real binary.

use crate::common::*;
use serde_json::Value;

fn meow_files(kind: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(testdata("meow").join(kind))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".meow.toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn ok_fixtures_check_clean() {
    let files = meow_files("ok");
    assert!(!files.is_empty());
    for f in files {
        let o = run_in(&testdata("meow").join("ok"), &["check", &f]);
        assert_eq!(o.status.code(), Some(0), "{f}: {}", text(&o));
        assert!(!stdout(&o).contains("PW0007"), "{f}");
    }
}

#[test]
fn err_fixtures_exit_1_only_with_errors() {
    let mut failing = 0;
    for f in meow_files("err") {
        let o = run_in(
            &testdata("meow").join("err"),
            &["check", "--format", "json", &f],
        );
        let out = stdout(&o);
        let has_error =
            out.contains("\"severity\": \"error\"") || out.contains("\"severity\":\"error\"");
        let want = if has_error { 1 } else { 0 };
        failing += want;
        assert_eq!(o.status.code(), Some(want), "{f}: {}", text(&o));
        assert!(out.contains("PW06"), "{f}: no MEOW code in {out}");
    }
    assert!(failing >= 20, "only {failing} err fixtures fail the check");
}

#[test]
fn warnings_alone_exit_0() {
    let o = run_in(
        &testdata("meow").join("err"),
        &["check", "PW0631-unknown-adapter.meow.toml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("PW0631"));
}

#[test]
fn legacy_format_is_an_error_that_names_the_module_format() {
    let o = run_in(
        &testdata("meow").join("err"),
        &["check", "PW0600-legacy.meow.toml"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("[[main.steps]]"), "{}", text(&o));
}

#[test]
fn graph_json_has_clusters_executors_needs_and_outcomes() {
    let o = run_in(
        &testdata("meow").join("ok"),
        &["graph", "--format", "json", "all-executors.meow.toml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    let wfs = v["workflows"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = wfs.iter().filter_map(|w| w["name"].as_str()).collect();
    assert_eq!(names, ["main", "per-task", "finish"]);
    assert!(wfs.iter().all(|w| w["dialect"] == "meow"));
    let main = &wfs[0]["body"];
    let kinds: Vec<(&str, &str)> = main["nodes"]
        .as_array()
        .map(|n| {
            n.iter()
                .map(|n| {
                    (
                        n["name"].as_str().unwrap_or(""),
                        n["kind"].as_str().unwrap_or(""),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        kinds,
        [
            ("prepare", "shell"),
            ("spawn", "spawn"),
            ("work", "agent"),
            ("setup", "expand"),
            ("each", "foreach"),
            ("check", "match"),
            ("stop", "kill"),
        ]
    );
    // MEOW's own word for the step, which graphs label it with.
    assert_eq!(main["nodes"][5]["dialect_kind"], "branch", "{main}");
    let edges = main["edges"].as_array().cloned().unwrap_or_default();
    assert!(edges.iter().any(|e| e["kind"] == "needs"), "{edges:?}");
    let out = stdout(&o);
    assert!(
        out.contains("\"true\"") && out.contains("\"false\""),
        "branch outcomes missing: {out}"
    );
}

#[test]
fn graph_links_a_step_to_its_on_error_recovery_template() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = d.path().join("r.meow.toml");
    std::fs::write(
        &file,
        "[main]\n[[main.steps]]\nid = \"build\"\nexecutor = \"shell\"\ncommand = \"false\"\non_error = \".rescue\"\n\n[[main.steps]]\nid = \"soft\"\nexecutor = \"shell\"\ncommand = \"false\"\non_error = \"continue\"\n\n[rescue]\n[[rescue.steps]]\nid = \"say\"\nexecutor = \"shell\"\ncommand = \"echo rescued\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["graph", "--format", "json", "r.meow.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    // Only the step whose `on_error` names a template: `continue` is a policy.
    assert_eq!(
        v["calls"],
        serde_json::json!([{
            "from": "w0.s0",
            "role": "on_error",
            "case": null,
            "target": ".rescue",
            "workflow": "w1",
        }]),
        "{}",
        text(&o)
    );
    let dot = stdout(&run_in(d.path(), &["graph", "r.meow.toml"]));
    assert!(
        dot.contains("label=\"on_error\", lhead=cluster_w1"),
        "{dot}"
    );
    let mermaid = stdout(&run_in(
        d.path(),
        &["graph", "--format", "mermaid", "r.meow.toml"],
    ));
    assert!(mermaid.contains("-.->|\"on_error\"| w1"), "{mermaid}");
}

#[test]
fn graph_of_a_file_with_errors_fails() {
    let o = run_in(
        &testdata("meow").join("err"),
        &["graph", "PW0618-needs-cycle.meow.toml"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn diagnostics_point_at_the_value_in_every_format() {
    let dir = testdata("meow").join("err");
    let f = "PW0617-needs-unknown.meow.toml";
    let o = run_in(&dir, &["check", "--format", "json", f]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "PW0617");
    assert_eq!(
        (
            d["span"]["start_line"].as_u64(),
            d["span"]["start_col"].as_u64()
        ),
        (Some(10), Some(10))
    );
    assert_eq!(d["help"], "did you mean `build`?");
    let o = run_in(&dir, &["check", "--format", "sarif", f]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    let r = &v["runs"][0]["results"][0];
    assert_eq!(r["ruleId"], "PW0617", "{v}");
    let o = run_in(&dir, &["check", "--format", "github", f]);
    assert!(
        stdout(&o).starts_with("::error file=PW0617-needs-unknown.meow.toml,line=10,col=10"),
        "{}",
        stdout(&o)
    );
}
