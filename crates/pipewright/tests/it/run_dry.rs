//! `pipewright run --dry-run` (issue 22, item 4): the plan of a run in every dialect, with
//! commands and prompts rendered from the input and run-time values marked, and nothing
//! executed: no command, no agent, no file written, no run store.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("write {name}: {e}"));
}

fn assert_nothing_ran(dir: &Path, made: &str) {
    assert!(!dir.join(made).exists(), "{made} was written: a step ran");
    assert!(
        !dir.join(".pipewright").exists(),
        "a dry run created the run store"
    );
}

const PIPELINE: &str = r#"pipeline: summarise
steps:
  - shell: {command: !expr "'echo ' + shell_quote(ctx.doc) + ' > made.txt'", output: made}
  - transform: {value: "'Doc: ' + ctx.doc", output: title}
  - agent: {prompt: "Summarise {ctx.title}; the shell said {ctx.made}."}
  - for_each:
      over: "['a', 'b']"
      on_error: abort
      do: {shell: {command: !expr "'touch ' + item"}}
      collect: {transform: {value: "pipe"}}
"#;

#[test]
fn a_pipeline_dry_run_renders_the_plan_and_runs_nothing() {
    let d = tempdir();
    write(d.path(), "doc.yaml", PIPELINE);
    let o = run_in(
        d.path(),
        &["run", "doc.yaml", "--dry-run", "--var", "doc=it's"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = stdout(&o);
    assert!(
        out.contains("dry run of pipeline `summarise` in doc.yaml"),
        "{out}"
    );
    // The command as the shell would get it, from the input.
    assert!(
        out.contains("command: echo 'it'\"'\"'s' > made.txt"),
        "{out}"
    );
    // A pure transform is evaluated; what a shell step prints is known only at run time.
    assert!(
        out.contains(
            "prompt: Summarise Doc: it's; the shell said <ctx.made: output of step 1 (shell)>."
        ),
        "{out}"
    );
    assert!(out.contains("items: 2"), "{out}");
    assert!(
        out.contains("command: <'touch ' + item: each item of step 4>"),
        "{out}"
    );
    assert_nothing_ran(d.path(), "made.txt");
    assert!(!d.path().join("a").exists());
}

#[test]
fn a_pipeline_dry_run_in_json_has_the_documented_shape() {
    let d = tempdir();
    write(d.path(), "doc.yaml", PIPELINE);
    let o = run_in(
        d.path(),
        &[
            "run",
            "doc.yaml",
            "--dry-run",
            "--format",
            "json",
            "--var",
            "doc=x",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["dialect"], "pipeline");
    assert_eq!(v["workflow"], "summarise");
    assert_eq!(v["input"]["doc"], "x");
    assert_eq!(v["steps"][0]["kind"], "shell");
    assert_eq!(v["steps"][0]["line"], 3);
    assert_eq!(v["steps"][0]["fields"]["command"], "echo x > made.txt");
    assert_eq!(v["steps"][0]["fields"]["output"], "ctx.made");
    assert_eq!(v["steps"][3]["regions"]["do"][0]["kind"], "shell");
    assert_eq!(v["missing"], serde_json::json!([]));
    assert_nothing_ran(d.path(), "made.txt");
}

#[test]
fn a_dry_run_lacking_an_input_marks_it_and_exits_as_the_run_would() {
    let d = tempdir();
    write(d.path(), "doc.yaml", PIPELINE);
    let o = run_in(
        d.path(),
        &["run", "doc.yaml", "--dry-run", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let v: Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["missing"][0]["name"], "doc", "{v}");
    let cmd = v["steps"][0]["fields"]["command"].as_str().unwrap_or("");
    assert!(cmd.contains("not given>"), "{cmd}");
    assert!(
        stderr(&o).contains("needs `doc`, which nothing gives it"),
        "{}",
        text(&o)
    );
    assert_nothing_ran(d.path(), "made.txt");
}

#[test]
fn a_recipe_dry_run_renders_templates_and_gates_and_runs_nothing() {
    let d = tempdir();
    write(
        d.path(),
        "staged.yaml",
        r#"name: staged
description: staged with a gate
version: "1.0.0"
context:
  target: {type: string, required: true, description: "what to build"}
stages:
  - name: plan
    steps:
      - id: plan
        type: bash
        command: "echo plan-for-{{target}} > made.txt"
        output: plan
    approval:
      required: true
      prompt: "Approve {{plan}}?"
  - name: build
    steps:
      - id: build
        agent: self
        prompt: "Build {{target}} with {{plan}}"
        output: built
"#,
    );
    let o = run_in(
        d.path(),
        &["run", "staged.yaml", "--dry-run", "--var", "target=src"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = stdout(&o);
    assert!(out.contains("stage `plan`"), "{out}");
    assert!(
        out.contains("command: echo plan-for-src > made.txt"),
        "{out}"
    );
    assert!(out.contains("approval gate after stage `plan`"), "{out}");
    assert!(
        out.contains("prompt: Approve <{{plan}}: output of step `plan.plan`>?"),
        "{out}"
    );
    assert!(
        out.contains("prompt: Build src with <{{plan}}: output of step `plan.plan`>"),
        "{out}"
    );
    assert_nothing_ran(d.path(), "made.txt");
}

#[test]
fn a_meow_dry_run_orders_steps_by_needs_and_runs_nothing() {
    let d = tempdir();
    write(
        d.path(),
        "w.meow.toml",
        r#"[main]
[main.variables]
target = { required = true }

[[main.steps]]
id = "second"
executor = "shell"
needs = ["first"]
command = "echo {{first.outputs.stdout}} > made2.txt"

[[main.steps]]
id = "first"
executor = "shell"
command = "echo {{target}} > made.txt"
"#,
    );
    let o = run_in(
        d.path(),
        &["run", "w.meow.toml", "--dry-run", "--var", "target=a b"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = stdout(&o);
    let first = out.find("first [shell]").unwrap_or(usize::MAX);
    let second = out.find("second [shell]").unwrap_or(0);
    assert!(first < second, "{out}");
    assert!(out.contains("command: echo 'a b' > made.txt"), "{out}");
    assert!(
        out.contains("<{{first.outputs.stdout}}: output of step `first`>"),
        "{out}"
    );
    assert_nothing_ran(d.path(), "made.txt");
}

#[test]
fn a_state_machine_dry_run_prints_the_specs_structure_and_runs_nothing() {
    let d = tempdir();
    write(
        d.path(),
        "r.json",
        r#"{
  "id": "review",
  "label": "Review",
  "description": "Review and commit",
  "initialStep": "review",
  "guardrails": {"maxStepVisits": 3, "maxTotalSteps": 100, "exitOnOther": true},
  "steps": {
    "review": {
      "prompt": "Review the change.",
      "outcomes": ["ok", "other"],
      "onOutcome": {"ok": {"nextStep": "commit"}, "other": {"action": "exit", "reason": "stuck"}}
    },
    "commit": {
      "prompt": "Commit it.",
      "model": "haiku",
      "outcomes": ["committed", "other"],
      "onOutcome": {"committed": {"action": "exit", "reason": "done"}, "other": {"action": "exit", "reason": "stuck"}}
    }
  }
}
"#,
    );
    let o = run_in(d.path(), &["run", "r.json", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = stdout(&o);
    for want in [
        "Recipe: review\n",
        "  Label: Review\n",
        "  Description: Review and commit\n",
        "  Guardrails: maxStepVisits=3, maxTotalSteps=100, exitOnOther=true\n",
        "    review (initial)\n      Outcomes: ok → commit, other → EXIT\n      Model: (default)\n",
        "    commit\n      Outcomes: committed → EXIT, other → EXIT\n      Model: haiku\n",
        "      | Review the change.\n",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    assert!(!d.path().join(".pipewright").exists(), "{out}");
    let o = run_in(
        d.path(),
        &["run", "r.json", "--dry-run", "--format", "json"],
    );
    let v: Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["dialect"], "state-machine");
    assert!(v["steps"][0]["fields"]["Prompt"]
        .as_str()
        .unwrap_or("")
        .contains("{\"outcome\": \"ok\"}"));
}
