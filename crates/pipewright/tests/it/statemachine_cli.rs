//! `pipewright check`, `fmt` and `graph` on state-machine recipes through the real binary.

use crate::common::*;
use serde_json::Value;

fn sm(kind: &str) -> std::path::PathBuf {
    testdata("statemachine").join(kind)
}

fn json_files(kind: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(sm(kind))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".json"))
        .collect();
    v.sort();
    v
}

#[test]
fn the_catalogue_checks_clean_as_a_directory_and_file_by_file() {
    let o = run_in(&sm("ok"), &["check", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        stdout(&o).contains("checked 8 files: no problems"),
        "{}",
        text(&o)
    );
    let files = json_files("ok");
    assert_eq!(files.len(), 8);
    for f in files {
        let o = run_in(&sm("ok"), &["check", &f]);
        assert_eq!(o.status.code(), Some(0), "{f}: {}", text(&o));
        assert!(!stdout(&o).contains("PW0007"), "{f}");
    }
}

#[test]
fn err_cases_exit_1_exactly_when_they_have_errors() {
    let mut failing = 0;
    for f in json_files("err") {
        let o = run_in(&sm("err"), &["check", "--format", "json", &f]);
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
        let diags = v["diagnostics"].as_array().cloned().unwrap_or_default();
        let has_error = diags.iter().any(|d| d["severity"] == "error");
        let want = i32::from(has_error);
        failing += want;
        assert_eq!(o.status.code(), Some(want), "{f}: {}", text(&o));
        let code = &f[..6];
        assert!(
            diags.iter().any(|d| d["code"] == code),
            "{f}: no {code} diagnostic in {}",
            stdout(&o)
        );
    }
    assert!(failing >= 20, "only {failing} err cases fail the check");
}

#[test]
fn warnings_alone_exit_0() {
    let o = run_in(&sm("err"), &["check", "PW0721-unreachable.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("PW0721"));
}

#[test]
fn duplicate_ids_are_found_when_checked_together() {
    let o = run_in(&sm("err"), &["check", "PW0728-duplicate-id"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("PW0728"), "{}", text(&o));
}

#[test]
fn restart_targets_resolve_through_include_directories() {
    let dir = tempdir();
    let recipe = r#"{
  "id": "then-rebase",
  "label": "Then rebase",
  "description": "Hands over to the rebase recipe",
  "initialStep": "go",
  "guardrails": {
    "maxStepVisits": 3,
    "maxTotalSteps": 100,
    "exitOnOther": true
  },
  "steps": {
    "go": {
      "prompt": "Get ready.",
      "outcomes": [
        "ready",
        "other"
      ],
      "onOutcome": {
        "ready": {
          "action": "restart-new-session",
          "recipeId": "rebase"
        },
        "other": {
          "action": "exit",
          "reason": "user-provided-other"
        }
      }
    }
  }
}
"#;
    std::fs::write(dir.path().join("then-rebase.json"), recipe).unwrap_or_default();
    let o = run_in(dir.path(), &["check", "then-rebase.json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("PW0723"), "{}", text(&o));
    let include = sm("ok");
    let include = include.to_string_lossy();
    let o = run_in(dir.path(), &["check", "-I", &include, "then-rebase.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Sibling recipes resolve without -I.
    copy_into(&sm("ok").join("rebase.json"), dir.path());
    let o = run_in(dir.path(), &["check", "then-rebase.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn fmt_check_accepts_the_catalogue_and_fmt_canonicalises_key_order() {
    let o = run_in(&sm("ok"), &["fmt", "--check", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let dir = tempdir();
    let scrambled = r#"{"steps": {"a": {"onOutcome": {"other": {"reason": "user-provided-other", "action": "exit"}, "done": {"reason": "finished", "action": "exit"}}, "outcomes": ["done", "other"], "prompt": "Do it.\n\n- \u00e9"}},
"guardrails": {"exitOnOther": true, "maxTotalSteps": 100, "maxStepVisits": 3}, "initialStep": "a", "description": "d", "label": "L", "id": "x"}"#;
    let path = dir.path().join("x.json");
    std::fs::write(&path, scrambled).unwrap_or_default();
    let o = run_in(
        dir.path(),
        &["fmt", "--key-order", "canonical", "--check", "x.json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let o = run_in(dir.path(), &["fmt", "--key-order", "canonical", "x.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = read(&path);
    let pos = |k: &str| out.find(k).unwrap_or(usize::MAX);
    assert!(pos("\"id\"") < pos("\"label\"") && pos("\"label\"") < pos("\"initialStep\""));
    assert!(pos("\"guardrails\"") < pos("\"steps\""));
    assert!(pos("\"maxStepVisits\"") < pos("\"exitOnOther\""));
    assert!(pos("\"prompt\"") < pos("\"outcomes\"") && pos("\"outcomes\"") < pos("\"onOutcome\""));
    assert!(
        pos("\"finished\"") < pos("\"user-provided-other\""),
        "{out}"
    );
    assert!(out.contains(r#""prompt": "Do it.\n\n- \u00e9""#), "{out}");
    let before: Value = serde_json::from_str(scrambled).unwrap_or_default();
    let after: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    assert_eq!(before, after);
    let o = run_in(dir.path(), &["fmt", "--check", "x.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run_in(dir.path(), &["check", "x.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn graph_json_has_steps_outcome_edges_exits_and_the_restart() {
    let o = run_in(
        &sm("ok"),
        &["graph", "--format", "json", "implement-and-review-all.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    let w = &v["workflows"][0];
    assert_eq!(w["dialect"], "state-machine");
    assert_eq!(w["name"], "implement-and-review-all");
    let nodes = w["body"]["nodes"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = nodes.iter().filter_map(|n| n["name"].as_str()).collect();
    assert_eq!(names, ["implement", "code-review", "fix", "commit"]);
    let kinds: Vec<&str> = nodes.iter().filter_map(|n| n["kind"].as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "exit").count(),
        4,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "call").count(),
        1,
        "{kinds:?}"
    );
    let edges = w["body"]["edges"].as_array().cloned().unwrap_or_default();
    assert_eq!(edges.len(), 12);
    assert!(edges.iter().all(|e| e["kind"] == "outcome"), "{edges:?}");
    assert_eq!(w["body"]["entry"], nodes[0]["id"]);
}

#[test]
fn graph_dot_and_mermaid_label_the_outcomes_and_draw_the_review_fix_cycle() {
    let o = run_in(&sm("ok"), &["graph", "rebase.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let dot = stdout(&o);
    assert!(dot.contains("label=\"state-machine rebase\""), "{dot}");
    assert!(dot.contains("label=\"issues-found\""), "{dot}");
    assert!(
        dot.contains("exit\\nrebase-complete\", shape=doublecircle"),
        "{dot}"
    );
    let o = run_in(&sm("ok"), &["graph", "--format", "mermaid", "rebase.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = stdout(&o);
    // review -> fix and fix -> review: n1 is review, n2 fix.
    assert!(m.contains("n1 -->|\"issues-found\"| n2"), "{m}");
    assert!(m.contains("n2 -->|\"complete\"| n1"), "{m}");
}

#[test]
fn graph_refuses_a_recipe_with_errors() {
    let o = run_in(&sm("err"), &["graph", "PW0710-initial-step.json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("PW0710"));
}

#[test]
fn every_code_is_explained() {
    for c in pipewright_statemachine_codes() {
        let o = run_in(&sm("ok"), &["explain", c]);
        assert_eq!(o.status.code(), Some(0), "{c}: {}", text(&o));
        assert!(stdout(&o).contains("Wrong:"), "{c}");
    }
}

fn pipewright_statemachine_codes() -> Vec<&'static str> {
    pipewright_statemachine::CODES
        .iter()
        .map(|c| c.code)
        .collect()
}

/// A minimal valid recipe with `id` and `other`'s transition as given (`exitOnOther` true).
fn small_recipe(id: &str, other: Value) -> String {
    let v = serde_json::json!({
        "id": id,
        "label": "Small",
        "description": "One step",
        "initialStep": "work",
        "guardrails": {"maxStepVisits": 3, "maxTotalSteps": 100, "exitOnOther": true},
        "steps": {
            "work": {
                "prompt": "Work.",
                "outcomes": ["done", "other"],
                "onOutcome": {"done": {"action": "exit", "reason": "finished"}, "other": other}
            },
            "triage": {
                "prompt": "Triage.",
                "outcomes": ["done"],
                "onOutcome": {"done": {"action": "exit", "reason": "triaged"}}
            }
        }
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

fn check_one(text: &str) -> (i32, Vec<Value>) {
    let dir = tempdir();
    std::fs::write(dir.path().join("r.json"), text).unwrap_or_default();
    let o = run_in(dir.path(), &["check", "--format", "json", "r.json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    let diags = v["diagnostics"].as_array().cloned().unwrap_or_default();
    (o.status.code().unwrap_or(-1), diags)
}

fn severity_of(diags: &[Value], code: &str) -> Option<String> {
    diags
        .iter()
        .find(|d| d["code"] == code)
        .and_then(|d| d["severity"].as_str().map(str::to_string))
}

#[test]
fn a_recipe_id_that_is_not_kebab_case_is_an_error() {
    let exit = serde_json::json!({"action": "exit", "reason": "user-provided-other"});
    for bad in [
        "Review_Loop",
        "reviewLoop",
        "review--loop",
        "-review",
        "review loop",
    ] {
        let (code, diags) = check_one(&small_recipe(bad, exit.clone()));
        assert_eq!(code, 1, "{bad}: {diags:?}");
        assert_eq!(
            severity_of(&diags, "PW0705").as_deref(),
            Some("error"),
            "{bad}"
        );
    }
    let (code, diags) = check_one(&small_recipe("review-loop-2", exit));
    assert_eq!(code, 0, "{diags:?}");
}

#[test]
fn every_other_transition_needs_a_reason_whatever_exit_on_other_says() {
    // Rule 5 holds with `exitOnOther` true too: the reason is what the run exits with.
    let (code, diags) = check_one(&small_recipe(
        "small",
        serde_json::json!({"nextStep": "triage"}),
    ));
    assert_eq!(code, 1, "{diags:?}");
    assert_eq!(severity_of(&diags, "PW0714").as_deref(), Some("error"));
    // With a reason it checks; the next step is still never taken (a warning).
    let (code, diags) = check_one(&small_recipe(
        "small",
        serde_json::json!({"nextStep": "triage", "reason": "needs-triage"}),
    ));
    assert_eq!(code, 0, "{diags:?}");
    assert_eq!(severity_of(&diags, "PW0714"), None);
    assert_eq!(severity_of(&diags, "PW0727").as_deref(), Some("warning"));
}

#[test]
fn a_step_defined_by_two_included_files_is_still_an_error() {
    let o = run_in(&sm("err"), &["check", "PW0726-two-includes.json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("PW0726"), "{}", text(&o));
}
