//! `pipewright run` on state-machine recipes through the real binary: the eight catalogue
//! recipes with the script backend (JSON reports snapshotted), the guardrail and restart flags,
//! the human and verbose lines, the coding-agent CLI profiles against fake executables that
//! record their argv and answer in their CLI's JSON shape, configuration errors, and kill -9
//! then `--resume`.

use crate::common::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

fn catalogue(name: &str) -> String {
    testdata("statemachine")
        .join("ok")
        .join(format!("{name}.json"))
        .display()
        .to_string()
}

fn script(name: &str) -> String {
    testdata("statemachine")
        .join("run")
        .join(format!("{name}.yaml"))
        .display()
        .to_string()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("the report is JSON ({e}): {}", text(o)))
}

/// Runs a catalogue recipe with its reply script, in a fresh directory (its own run store).
fn run_script(name: &str, extra: &[&str]) -> Output {
    let d = tempdir();
    let (recipe, script) = (catalogue(name), script(name));
    let mut args = vec![
        "run",
        recipe.as_str(),
        "--backend",
        "script",
        "--script",
        script.as_str(),
    ];
    args.extend_from_slice(extra);
    run_in(d.path(), &args)
}

/// The report with what changes between runs replaced: the run id, and each session id by
/// its order of appearance.
fn redacted(mut v: Value) -> String {
    v["run_id"] = Value::String("[run-id]".into());
    let mut sessions: HashMap<String, String> = HashMap::new();
    let mut name = |id: &str| {
        let n = sessions.len() + 1;
        sessions
            .entry(id.to_string())
            .or_insert_with(|| format!("[session-{n}]"))
            .clone()
    };
    if let Some(trace) = v["trace"].as_array_mut() {
        for t in trace {
            if let Some(id) = t["session"].as_str().map(str::to_string) {
                t["session"] = Value::String(name(&id));
            }
        }
    }
    if let Some(list) = v["stores"]["sessions"].as_array_mut() {
        for s in list {
            if let Some(id) = s["id"].as_str().map(str::to_string) {
                s["id"] = Value::String(name(&id));
            }
        }
    }
    // How long the turns took differs from run to run.
    if v["usage"].is_object() {
        v["usage"]["wall_ms"] = Value::String("[ms]".into());
        if let Some(steps) = v["usage"]["steps"].as_object_mut() {
            for s in steps.values_mut() {
                s["wall_ms"] = Value::String("[ms]".into());
            }
        }
    }
    // Its file name is a path into this checkout.
    if v["error"].is_object() {
        v["error"]["file"] = Value::String("[file]".into());
    }
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

// ---- the catalogue with the script backend ------------------------------------------------

/// (recipe, exit code, exit reason)
const CATALOGUE: &[(&str, i32, &str)] = &[
    ("review-and-commit", 0, "changes-committed"),
    ("document-design", 0, "no-changes-to-commit"),
    (
        "break-down-tasks",
        1,
        "max-step-visits-exceeded:review-tasks",
    ),
    ("implement-and-review", 0, "user-provided-other"),
    ("implement-and-review-all", 0, "no-tasks"),
    ("rebase", 1, "orchestration-error"),
    ("retrospective", 0, "retrospective-complete"),
    ("refine-design", 0, "changes-committed"),
];

#[test]
fn the_catalogue_recipes_run_end_to_end_with_the_script_backend() {
    for (name, code, reason) in CATALOGUE {
        let o = run_script(name, &["--format", "json"]);
        assert_eq!(o.status.code(), Some(*code), "{name}: {}", text(&o));
        let v = json(&o);
        assert_eq!(v["exit_reason"], *reason, "{name}");
        assert_eq!(
            v["status"],
            if *code == 0 { "ok" } else { "failed" },
            "{name}"
        );
        insta::assert_snapshot!(format!("statemachine_run_{name}"), redacted(v));
    }
}

#[test]
fn a_reminder_is_one_more_call_in_the_same_session() {
    // fix's first reply has no outcome; the second reply of its rule answers the reminder.
    let v = json(&run_script("review-and-commit", &["--format", "json"]));
    let trace = v["trace"].as_array().cloned().unwrap_or_default();
    let steps: Vec<&str> = trace.iter().filter_map(|t| t["step"].as_str()).collect();
    assert_eq!(steps, ["code-review", "fix", "code-review", "commit"]);
    assert_eq!(trace[1]["outcome"], "complete");
    let sessions: std::collections::HashSet<&str> =
        trace.iter().filter_map(|t| t["session"].as_str()).collect();
    assert_eq!(sessions.len(), 1, "{v}");
}

#[test]
fn an_orchestration_error_names_its_finer_code() {
    let v = json(&run_script("rebase", &["--format", "json"]));
    assert_eq!(v["error"]["code"], "PW0840");
    assert_eq!(v["error"]["spec_code"], 2);
    assert_eq!(v["error"]["step"], "complete");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(msg.contains("Invalid outcome 'finished'"), "{msg}");
    // The step that failed is in the trace without an outcome.
    assert_eq!(v["trace"][2]["outcome"], Value::Null);
}

#[test]
fn restart_new_session_starts_a_new_session_for_the_recipe() {
    let v = json(&run_script(
        "implement-and-review-all",
        &["--format", "json"],
    ));
    let trace = v["trace"].as_array().cloned().unwrap_or_default();
    assert_eq!(trace.len(), 4, "{v}");
    assert_eq!(trace[0]["session"], trace[2]["session"]);
    assert_ne!(trace[2]["session"], trace[3]["session"]);
    assert_eq!(trace[3]["step"], "implement");
    assert_eq!(v["stores"]["restarts"], 1);
    // Fresh state: the new session's implement is its first visit, its first step.
    assert_eq!(v["stores"]["state"]["step_count"], 1);
    assert_eq!(
        v["stores"]["state"]["visits"],
        serde_json::json!({"implement": 1})
    );
}

// ---- guardrail flags -------------------------------------------------------------------

#[test]
fn max_visits_and_max_steps_override_the_recipe() {
    let o = run_script(
        "review-and-commit",
        &["--format", "json", "--max-visits", "1"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["exit_reason"], "max-step-visits-exceeded:code-review");
    assert_eq!(v["error"]["code"], "PW0841");
    assert_eq!(v["error"]["spec_code"], 3);
    let o = run_script(
        "review-and-commit",
        &["--format", "json", "--max-steps", "2"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["exit_reason"], "max-total-steps");
    assert_eq!(v["trace"].as_array().map(Vec::len), Some(2));
    let o = run_script("review-and-commit", &["--max-visits", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn max_restarts_caps_restart_new_session() {
    let o = run_script(
        "implement-and-review-all",
        &["--format", "json", "--max-restarts", "0"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["exit_reason"], "max-restarts");
    assert_eq!(v["error"]["code"], "PW0841");
    assert_eq!(v["trace"].as_array().map(Vec::len), Some(3));
}

#[test]
fn the_mock_backend_dry_runs_a_recipe_that_restarts() {
    let d = tempdir();
    let o = run_in(
        d.path(),
        &[
            "run",
            &catalogue("implement-and-review-all"),
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    // First pass commits and restarts; the second avoids the restart and ends.
    assert_eq!(v["exit_reason"], "no-changes-to-commit", "{v}");
    assert_eq!(v["stores"]["restarts"], 1);
}

// ---- human output ------------------------------------------------------------------------

#[test]
fn human_output_has_a_line_per_step_with_outcome_and_transition() {
    let o = run_script("review-and-commit", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(stdout(&o), "exit: changes-committed\n");
    let err = stderr(&o);
    for line in [
        "code-review (visit 1/3, total 1/100)",
        "  outcome: issues-found",
        "  → fix",
        "fix (visit 1/3, total 2/100)",
        "  no outcome (No JSON block found in response); reminder sent",
        "code-review (visit 2/3, total 3/100)",
        "commit (visit 1/3, total 4/100) [model: haiku]",
        "  → exit: changes-committed",
    ] {
        assert!(
            err.lines().any(|l| l == line),
            "missing {line:?} in:\n{err}"
        );
    }
    assert!(!err.contains("[orchestration]"), "{err}");
}

#[test]
fn verbose_prints_the_orchestration_log() {
    let o = run_script("review-and-commit", &["--verbose", "--model", "opus"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.starts_with("[orchestration] Starting recipe: review-and-commit (session: "),
        "{err}"
    );
    for needle in [
        "[orchestration] Step: code-review (visit 1/3, total 1/100)\n",
        "to script [opus]\n",
        "[orchestration] Outcome extracted: issues-found\n",
        "[orchestration] Transition: code-review → fix\n",
        "[orchestration] Outcome extraction failed: No JSON block found in response; sending a reminder\n",
        "[orchestration] Exit: changes-committed\n",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
    let failed = run_script("break-down-tasks", &[]);
    assert_eq!(failed.status.code(), Some(1));
    let err = stderr(&failed);
    assert!(err.contains("PW0841"), "{err}");
    assert!(
        err.contains("failed: max-step-visits-exceeded:review-tasks"),
        "{err}"
    );
}

// ---- refusals --------------------------------------------------------------------------

#[test]
fn state_machine_flags_and_agent_backends_are_refused_elsewhere() {
    let d = tempdir();
    std::fs::write(
        d.path().join("p.yaml"),
        "pipeline: p\nsteps:\n  - transform: {value: \"1\"}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["run", "p.yaml", "--max-visits", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("--max-visits is for state-machine recipes only"),
        "{}",
        text(&o)
    );
    let o = run_in(d.path(), &["run", "p.yaml", "--backend", "claude"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("state-machine recipes only"),
        "{}",
        text(&o)
    );
}

#[test]
fn configuration_errors_exit_2_with_pw0843_in_json() {
    let o = run_script(
        "retrospective",
        &["--format", "json", "--system-prompt", "hi"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["error"]["code"], "PW0843");
    assert_eq!(v["error"]["spec_code"], 5);
    assert_eq!(v["exit_reason"], "configuration-error");
    assert!(
        stderr(&o).contains("cannot pass a system prompt"),
        "{}",
        text(&o)
    );
    let o = run_script("retrospective", &["--model", "gpt-4"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr(&o).contains("not a model tier"), "{}", text(&o));
    let o = run_script("retrospective", &["--working-dir", "/nonexistent/dir"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr(&o).contains("is not a directory"), "{}", text(&o));
    let o = run_script("retrospective", &["--var", "a=b"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr(&o).contains("takes no input"), "{}", text(&o));
}

/// The retrospective recipe as `id`, its `complete` outcome leading to `complete`.
fn retrospective_as(dir: &Path, id: &str, complete: Value) {
    let src = read(Path::new(&catalogue("retrospective")));
    let mut v: Value = serde_json::from_str(&src).unwrap_or_else(|e| panic!("{e}"));
    v["id"] = Value::String(id.into());
    v["steps"]["reflect"]["onOutcome"]["complete"] = complete;
    std::fs::write(dir.join(format!("{id}.json")), v.to_string()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_restart_runs_the_recipe_it_names_from_a_sibling_file() {
    let d = tempdir();
    let restart = |id: &str| serde_json::json!({"action": "restart-new-session", "recipeId": id});
    retrospective_as(d.path(), "a", restart("b"));
    retrospective_as(
        d.path(),
        "b",
        serde_json::json!({"action": "exit", "reason": "b-done"}),
    );
    let script = script("retrospective");
    let args = [
        "run",
        "a.json",
        "--backend",
        "script",
        "--script",
        &script,
        "--format",
        "json",
    ];
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["exit_reason"], "b-done");
    let recipes: Vec<&str> = v["trace"]
        .as_array()
        .map(|t| t.iter().filter_map(|e| e["recipe"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(recipes, ["a", "b"]);
    assert_ne!(v["trace"][0]["session"], v["trace"][1]["session"]);
    // A recipe that restarts itself is found too (and --max-restarts bounds it).
    retrospective_as(d.path(), "c", restart("c"));
    let o = run_in(
        d.path(),
        &["run", "c.json", "--max-restarts", "1", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(json(&o)["exit_reason"], "max-restarts");
    // The target must check clean before anything runs; `check a.json` reads only its id.
    let broken = read(&d.path().join("b.json"))
        .replace("\"initialStep\":\"reflect\"", "\"initialStep\":\"nope\"");
    std::fs::write(d.path().join("b.json"), broken).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        run_in(d.path(), &["check", "a.json"]).status.code(),
        Some(0)
    );
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr(&o).contains("recipe `b`"), "{}", text(&o));
    assert!(stderr(&o).contains("has errors"), "{}", text(&o));
    assert_eq!(json(&o)["error"]["code"], "PW0843");
}

// ---- coding-agent CLIs against fake executables ------------------------------------------

/// A directory holding a fake agent CLI named `program`, which logs each call (one line per
/// argument, its first line only, after a `CALL` line) to `calls.log`, answers with the
/// outcome of the first `substring=outcome` line of `answers` whose substring is in the
/// prompt, and, while `block` exists and its text is in the prompt, hangs (until killed). The
/// fake claude answers under the id it was told to create, or under the resumed id with a `+`
/// appended (Claude Code gives a resumed conversation a new id).
struct Fake {
    dir: tempfile::TempDir,
}

/// The answer in each CLI's JSON shape; `$sid` is the session id, `$out` the outcome.
const CLAUDE_REPLY: &str = r#"printf '{"type":"result","subtype":"success","is_error":false,"session_id":"%s","result":"Done.\\n{\\"outcome\\": \\"%s\\"}","usage":{"input_tokens":100,"output_tokens":20},"total_cost_usd":0.01}\n' "$sid" "$out""#;
const OPENCODE_REPLY: &str = r#"printf '{"type":"step_start","sessionID":"ses_fake7","part":{}}\n{"type":"text","sessionID":"ses_fake7","part":{"type":"text","text":"Done.\\n{\\"outcome\\": \\"%s\\"}"}}\n{"type":"step_finish","sessionID":"ses_fake7","part":{"tokens":{"input":10,"output":2},"cost":0.5}}\n' "$out""#;
const CURSOR_REPLY: &str = r#"printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":5,"duration_api_ms":5,"result":"Done.\\n{\\"outcome\\": \\"%s\\"}","session_id":"chat-42","request_id":"r1"}\n' "$out""#;
const COPILOT_REPLY: &str = r#"printf 'Done.\n{"outcome": "%s"}\n' "$out""#;

impl Fake {
    fn new(program: &str, reply: &str, answers: &str) -> Fake {
        let dir = tempdir();
        let d = dir.path().display().to_string();
        let body = format!(
            r#"#!/bin/sh
d='{d}'
{{ echo CALL; for a in "$@"; do printf '%s\n' "$a" | head -n 1; done; if [ -n "$CLAUDECODE" ]; then echo CLAUDECODE=set; fi; }} >> "$d/calls.log"
sid=""; prev=""; last=""
for a in "$@"; do
  case "$prev" in --session-id) sid="$a";; --resume) sid="$a+";; esac
  prev="$a"; last="$a"
done
if [ -e "$d/block" ] && case "$last" in *"$(cat "$d/block")"*) true;; *) false;; esac; then
  touch "$d/blocked"
  exec sleep 60
fi
out=""
while IFS= read -r line; do
  key="${{line%%=*}}"; val="${{line#*=}}"
  case "$last" in *"$key"*) out="$val"; break;; esac
done < "$d/answers"
{reply}
"#
        );
        let path = dir.path().join(program);
        std::fs::write(&path, body).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("answers"), answers).unwrap_or_else(|e| panic!("{e}"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        Fake { dir }
    }

    /// The calls so far: each its arguments (first lines).
    fn calls(&self) -> Vec<Vec<String>> {
        let log = std::fs::read_to_string(self.dir.path().join("calls.log")).unwrap_or_default();
        let mut calls: Vec<Vec<String>> = Vec::new();
        for l in log.lines() {
            if l == "CALL" {
                calls.push(Vec::new());
            } else if let Some(c) = calls.last_mut() {
                c.push(l.to_string());
            }
        }
        calls
    }

    fn command(&self, cwd: &Path, args: &[&str]) -> std::process::Command {
        let mut c = bin();
        let path = format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        // The catalogue's recipes are in this repository, whose project store `run FILE`
        // would use: each test keeps its runs in its own directory, where `runs` looks.
        c.current_dir(cwd)
            .args(args)
            .env("PIPEWRIGHT_STORE", cwd.join(".pipewright/runs.db"))
            .env("PATH", path)
            .env("HOME", self.dir.path())
            .env_remove("CLAUDE_CLI_PATH")
            .env("CLAUDECODE", "1")
            .stdin(Stdio::null());
        c
    }

    /// `run --resume ID --backend claude --format json`.
    fn resume(&self, cwd: &Path, id: &str) -> Output {
        self.run(
            cwd,
            &[
                "run",
                "--resume",
                id,
                "--backend",
                "claude",
                "--format",
                "json",
            ],
        )
    }

    fn run(&self, cwd: &Path, args: &[&str]) -> Output {
        self.command(cwd, args)
            .output()
            .unwrap_or_else(|e| panic!("the pipewright binary runs: {e}"))
    }
}

const REVIEW_ANSWERS: &str =
    "Perform a thorough code review=no-issues\nCommit and push=committed\n";

fn after<'a>(call: &'a [String], flag: &str) -> Option<&'a str> {
    call.iter()
        .position(|a| a == flag)
        .and_then(|i| call.get(i + 1))
        .map(String::as_str)
}

#[test]
fn claude_creates_the_session_then_resumes_it() {
    let fake = Fake::new("claude", CLAUDE_REPLY, REVIEW_ANSWERS);
    let d = tempdir();
    let o = fake.run(
        d.path(),
        &[
            "run",
            &catalogue("review-and-commit"),
            "--backend",
            "claude",
            "--system-prompt",
            "Be terse.",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["exit_reason"], "changes-committed");
    let calls = fake.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let session = v["trace"][0]["session"].as_str().unwrap_or("").to_string();
    assert_eq!(
        &calls[0][..4],
        [
            "--print",
            "--output-format",
            "json",
            "--dangerously-skip-permissions"
        ]
    );
    assert_eq!(after(&calls[0], "--session-id"), Some(session.as_str()));
    assert_eq!(after(&calls[0], "--resume"), None);
    assert_eq!(after(&calls[1], "--resume"), Some(session.as_str()));
    assert_eq!(after(&calls[1], "--session-id"), None);
    // Tiers: the review has none (the backend's default), the commit is haiku.
    assert_eq!(after(&calls[0], "--model"), None);
    assert_eq!(after(&calls[1], "--model"), Some("haiku"));
    assert_eq!(
        after(&calls[0], "--append-system-prompt"),
        Some("Be terse.")
    );
    // The prompt is the last argument; the nested-session variables are not passed on.
    assert_eq!(
        calls[0].last().map(String::as_str),
        Some("Perform a thorough code review of the uncommitted changes.")
    );
    assert!(!calls.iter().flatten().any(|a| a == "CLAUDECODE=set"));
    // Usage and cost are summed over the turns.
    assert_eq!(v["stores"]["usage"]["input_tokens"], 200);
    assert_eq!(v["stores"]["usage"]["output_tokens"], 40);
    assert_eq!(v["stores"]["usage"]["cost_usd"], 0.02);
    // A resumed conversation answers under a new id (the fake appends `+`, as Claude Code
    // gives it a new UUID): the store keeps the latest, which the next turn would resume.
    assert_eq!(
        v["stores"]["sessions"][0]["backend_session"],
        format!("{session}+").as_str()
    );
}

#[test]
fn human_output_ends_with_the_total_cost_when_the_backend_reports_one() {
    let fake = Fake::new("claude", CLAUDE_REPLY, REVIEW_ANSWERS);
    let d = tempdir();
    let o = fake.run(
        d.path(),
        &[
            "run",
            &catalogue("review-and-commit"),
            "--backend",
            "claude",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(stdout(&o), "exit: changes-committed\n");
    assert!(
        stderr(&o).contains("usage: 200 input tokens, 40 output tokens, $0.0200\n"),
        "{}",
        text(&o)
    );
    // The script backend reports none: no usage line.
    let o = run_script("retrospective", &[]);
    assert!(!stderr(&o).contains("usage:"), "{}", text(&o));
}

#[test]
fn a_restart_gives_claude_a_new_session_id() {
    let fake = Fake::new(
        "claude",
        CLAUDE_REPLY,
        "Implement the next available task=complete\nPerform a thorough code review=no-issues\nCommit and push=committed\n",
    );
    let d = tempdir();
    let o = fake.run(
        d.path(),
        &[
            "run",
            &catalogue("implement-and-review-all"),
            "--backend",
            "claude",
            "--max-restarts",
            "1",
            "--model",
            "opus",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(json(&o)["exit_reason"], "max-restarts");
    let calls = fake.calls();
    assert_eq!(calls.len(), 6, "{calls:?}");
    let first = after(&calls[0], "--session-id").unwrap_or("");
    let second = after(&calls[3], "--session-id").unwrap_or("");
    assert!(
        !first.is_empty() && !second.is_empty() && first != second,
        "{calls:?}"
    );
    // --model is every step's tier, the commit's own haiku included.
    assert!(
        calls.iter().all(|c| after(c, "--model") == Some("opus")),
        "{calls:?}"
    );
    // Each turn resumes the id the previous one answered under.
    assert_eq!(after(&calls[1], "--resume"), Some(first));
    assert_eq!(
        after(&calls[2], "--resume"),
        Some(format!("{first}+").as_str())
    );
    assert_eq!(after(&calls[4], "--resume"), Some(second));
}

#[test]
fn opencode_cursor_and_copilot_continue_their_sessions() {
    let cases = [
        (
            "opencode",
            "opencode",
            OPENCODE_REPLY,
            "--session",
            Some("ses_fake7"),
        ),
        (
            "cursor",
            "cursor-agent",
            CURSOR_REPLY,
            "--resume",
            Some("chat-42"),
        ),
        ("copilot", "copilot", COPILOT_REPLY, "--continue", None),
    ];
    for (backend, program, reply, flag, id) in cases {
        let fake = Fake::new(program, reply, REVIEW_ANSWERS);
        let d = tempdir();
        let o = fake.run(
            d.path(),
            &[
                "run",
                &catalogue("review-and-commit"),
                "--backend",
                backend,
                "--format",
                "json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{backend}: {}", text(&o));
        let v = json(&o);
        assert_eq!(v["exit_reason"], "changes-committed", "{backend}");
        let calls = fake.calls();
        assert_eq!(calls.len(), 2, "{backend}: {calls:?}");
        assert!(!calls[0].iter().any(|a| a == flag), "{backend}: {calls:?}");
        match id {
            Some(id) => {
                assert_eq!(after(&calls[1], flag), Some(id), "{backend}: {calls:?}");
                assert_eq!(v["stores"]["sessions"][0]["backend_session"], id);
            }
            None => assert!(calls[1].iter().any(|a| a == flag), "{backend}: {calls:?}"),
        }
    }
    // OpenCode's usage comes from its step_finish events.
    let fake = Fake::new("opencode", OPENCODE_REPLY, REVIEW_ANSWERS);
    let d = tempdir();
    let o = fake.run(
        d.path(),
        &[
            "run",
            &catalogue("review-and-commit"),
            "--backend",
            "opencode",
            "--format",
            "json",
        ],
    );
    assert_eq!(json(&o)["stores"]["usage"]["cost_usd"], 1.0, "{}", text(&o));
}

#[test]
fn a_missing_cli_is_a_configuration_error_naming_it() {
    for (backend, program) in [
        ("claude", "claude"),
        ("opencode", "opencode"),
        ("cursor", "cursor-agent"),
        ("copilot", "copilot"),
    ] {
        let empty = tempdir();
        let d = tempdir();
        let o = bin()
            .current_dir(d.path())
            .args([
                "run",
                &catalogue("retrospective"),
                "--backend",
                backend,
                "--format",
                "json",
            ])
            .env("PATH", empty.path())
            .env("HOME", empty.path())
            .env_remove("CLAUDE_CLI_PATH")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.status.code(), Some(2), "{backend}: {}", text(&o));
        assert!(
            stderr(&o).contains(&format!(
                "needs the `{program}` command, which was not found"
            )),
            "{backend}: {}",
            text(&o)
        );
        assert_eq!(json(&o)["error"]["code"], "PW0843", "{backend}");
    }
}

#[test]
fn a_failing_agent_is_a_backend_error() {
    let fake = Fake::new("claude", "echo 'quota exceeded' >&2; exit 3", "");
    let d = tempdir();
    let o = fake.run(
        d.path(),
        &[
            "run",
            &catalogue("retrospective"),
            "--backend",
            "claude",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["exit_reason"], "backend-error");
    assert_eq!(v["error"]["code"], "PW0842");
    assert_eq!(v["error"]["spec_code"], 4);
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("quota exceeded")),
        "{v}"
    );
}

// ---- kill -9 and resume ------------------------------------------------------------------

fn run_id_of(cwd: &Path) -> String {
    let o = run_in(cwd, &["runs", "--format", "json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    v[0]["run_id"].as_str().unwrap_or_default().to_string()
}

/// Starts a review-and-commit run with the fake claude and waits until the fake hangs on the
/// prompt holding `block`.
fn spawn_until_blocked(fake: &Fake, cwd: &Path, block: &str) -> std::process::Child {
    std::fs::write(fake.dir.path().join("block"), block).unwrap_or_else(|e| panic!("{e}"));
    let recipe = catalogue("review-and-commit");
    let args = [
        "run",
        recipe.as_str(),
        "--backend",
        "claude",
        "--format",
        "json",
    ];
    let child = fake
        .command(cwd, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    wait_for(Duration::from_secs(60), "the fake agent to hang", || {
        fake.dir.path().join("blocked").exists().then_some(())
    });
    child
}

/// Kills pipewright with SIGKILL while the fake hangs (the child dies with it); the run id.
fn kill_while_asking(fake: &Fake, cwd: &Path, block: &str) -> String {
    let mut child = spawn_until_blocked(fake, cwd, block);
    child.kill().unwrap_or_else(|e| panic!("kill -9: {e}"));
    let o = finish(child);
    assert_eq!(o.status.code(), None, "killed by a signal: {}", text(&o));
    std::fs::remove_file(fake.dir.path().join("block")).unwrap_or_else(|e| panic!("{e}"));
    let id = run_id_of(cwd);
    assert!(!id.is_empty(), "the run is recorded");
    id
}

fn steps_of(v: &Value) -> Vec<String> {
    v["trace"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|e| e["step"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn kill_9_then_resume_asks_no_landed_step_again_in_the_same_session() {
    let fake = Fake::new(
        "claude",
        CLAUDE_REPLY,
        "Perform a thorough code review=issues-found\nAddress the issues=complete\n",
    );
    let d = tempdir();
    // The review lands; the fix hangs and is killed.
    let id = kill_while_asking(&fake, d.path(), "Address the issues");
    let before = fake.calls();
    assert_eq!(before.len(), 2, "{before:?}");
    let session = after(&before[0], "--session-id").unwrap_or("").to_string();
    assert_eq!(after(&before[1], "--resume"), Some(session.as_str()));
    std::fs::write(
        fake.dir.path().join("answers"),
        "Perform a thorough code review=no-issues\nAddress the issues=complete\nCommit and push=committed\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = fake.resume(d.path(), &id);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["run_id"], id.as_str());
    assert_eq!(v["exit_reason"], "changes-committed");
    assert_eq!(
        steps_of(&v),
        ["code-review", "fix", "code-review", "commit"]
    );
    let calls = fake.calls();
    // The landed review was not asked again: the resume asked the fix, the review, the commit.
    assert_eq!(calls.len(), before.len() + 3, "{calls:?}");
    let firsts: Vec<&str> = calls[2..]
        .iter()
        .filter_map(|c| c.last().map(String::as_str))
        .collect();
    assert_eq!(
        firsts,
        [
            "Address the issues found in the code review.",
            "Perform a thorough code review of the uncommitted changes.",
            "Commit and push the changes."
        ]
    );
    // The session its first turn created goes on, each turn resuming the id the last landed
    // one answered under (the killed fix's answer never came).
    let chain: Vec<Option<&str>> = calls[2..].iter().map(|c| after(c, "--resume")).collect();
    let (s1, s2) = (format!("{session}+"), format!("{session}++"));
    assert_eq!(
        chain,
        [Some(session.as_str()), Some(s1.as_str()), Some(s2.as_str())]
    );
    for t in v["trace"].as_array().into_iter().flatten() {
        assert_eq!(t["session"], session.as_str());
    }
    // Another backend cannot take the run over.
    let o = run_in(d.path(), &["run", "--resume", &id, "--format", "json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("ran with the claude-code backend"),
        "{}",
        text(&o)
    );
    assert_eq!(json(&o)["error"]["code"], "PW0843");
    // A finished run resumed again asks nothing and reports the same end.
    let o = fake.resume(d.path(), &id);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json(&o)["exit_reason"], "changes-committed");
    assert_eq!(fake.calls().len(), calls.len());
}

#[test]
fn kill_9_during_the_first_turn_resumes_in_a_fresh_session() {
    let fake = Fake::new(
        "claude",
        CLAUDE_REPLY,
        "Perform a thorough code review=no-issues\nCommit and push=committed\n",
    );
    let d = tempdir();
    let id = kill_while_asking(&fake, d.path(), "Perform a thorough code review");
    let before = fake.calls();
    assert_eq!(before.len(), 1, "{before:?}");
    let killed = after(&before[0], "--session-id").unwrap_or("").to_string();
    let o = fake.resume(d.path(), &id);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let calls = fake.calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    // Whether the killed turn created its session at the backend is unknown: a new id
    // cannot collide with it.
    let fresh = after(&calls[1], "--session-id").unwrap_or("");
    assert!(!fresh.is_empty() && fresh != killed, "{calls:?}");
    assert_eq!(after(&calls[2], "--resume"), Some(fresh));
    assert_eq!(json(&o)["trace"][0]["session"], fresh);
}

#[test]
fn ctrl_c_cancels_with_130_and_the_run_resumes() {
    let fake = Fake::new(
        "claude",
        CLAUDE_REPLY,
        "Perform a thorough code review=no-issues\nCommit and push=committed\n",
    );
    let d = tempdir();
    let child = spawn_until_blocked(&fake, d.path(), "Commit and push");
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(sent.success());
    let o = finish(child);
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["status"], "cancelled");
    assert_eq!(v["exit_reason"], "cancelled");
    assert_eq!(steps_of(&v), ["code-review"]);
    std::fs::remove_file(fake.dir.path().join("block")).unwrap_or_else(|e| panic!("{e}"));
    let id = v["run_id"].as_str().unwrap_or_default().to_string();
    let o = fake.resume(d.path(), &id);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(steps_of(&json(&o)), ["code-review", "commit"]);
    // The review was asked once; the commit twice (cancelled, then resumed).
    assert_eq!(fake.calls().len(), 3, "{:?}", fake.calls());
}

/// A two-step cycle of `steps` turns that ends at its `maxTotalSteps` guardrail.
fn cycle_recipe(steps: u64) -> Value {
    let step = |next: &str| {
        serde_json::json!({
            "prompt": "Do the work, then report.",
            "outcomes": ["next", "blocked"],
            "onOutcome": {
                "next": {"nextStep": next},
                "blocked": {"action": "exit", "reason": "blocked"}
            }
        })
    };
    serde_json::json!({
        "id": "cycle",
        "label": "Cycle",
        "description": "a two-step cycle",
        "initialStep": "a",
        "guardrails": {"maxStepVisits": steps, "maxTotalSteps": steps},
        "steps": {"a": step("b"), "b": step("a")}
    })
}

/// The numbers N of the `turn.N` landings the run's record holds, in order.
fn landed_turns(cwd: &Path, id: &str) -> Vec<u64> {
    let o = run_in(cwd, &["runs", "show", id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut turns: Vec<u64> = json(&o)["completed"]
        .as_object()
        .map(|m| {
            m.keys()
                .filter_map(|k| k.strip_prefix("turn.")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    turns.sort_unstable();
    turns
}

/// The mock backend's turns are not received from anywhere, so they land in batches, not one
/// commit each (issue 27): a kill -9 loses the staged tail. What the store keeps must be a
/// prefix of the run (turns 1..k, none missing), and the resume must compute the rest again:
/// the same report as a run that was never killed.
#[test]
fn kill_9_during_a_mock_run_keeps_a_prefix_of_its_turns_and_the_resume_computes_the_rest() {
    const STEPS: u64 = 15_000;
    let d = tempdir();
    write_json(&d.path().join("cycle.json"), &cycle_recipe(STEPS));
    let whole = run_in(d.path(), &["run", "cycle.json", "--format", "json"]);
    assert_eq!(whole.status.code(), Some(1), "{}", text(&whole));
    let whole = json(&whole);
    assert_eq!(whole["exit_reason"], "max-total-steps");
    assert_eq!(steps_of(&whole).len() as u64, STEPS);

    let k = tempdir();
    write_json(&k.path().join("cycle.json"), &cycle_recipe(STEPS));
    let mut child = spawn_run(k.path(), &["cycle.json"]);
    // Killed once a batch has committed, while later turns are staged. The store is read
    // directly, every 10 ms: two `pipewright runs` a poll took long enough under load (in CI)
    // for the run to end first.
    let db = k.path().join(".pipewright/runs.db");
    let landed = wait_for(Duration::from_secs(120), "a batch of turns to land", || {
        let c =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .ok()?;
        let n: usize = c
            .query_row(
                "SELECT count(*) FROM landings WHERE key LIKE 'turn.%'",
                [],
                |r| r.get(0),
            )
            .ok()?;
        (n > 0).then_some(n)
    });
    child.kill().unwrap_or_else(|e| panic!("kill -9: {e}"));
    let killed = finish(child);
    assert_eq!(
        killed.status.code(),
        None,
        "killed by a signal: {}",
        text(&killed)
    );
    let id = run_id_of(k.path());
    let at_kill = landed_turns(k.path(), &id);
    assert!(at_kill.len() >= landed, "{} < {landed}", at_kill.len());
    assert!(
        (at_kill.len() as u64) < STEPS,
        "the run ended before the kill"
    );
    let prefix: Vec<u64> = (1..=at_kill.len() as u64).collect();
    assert!(
        at_kill == prefix,
        "not a prefix: {:?}…",
        &at_kill[..at_kill.len().min(20)]
    );

    let o = run_in(k.path(), &["run", "--resume", &id, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let resumed = json(&o);
    assert_eq!(resumed["run_id"], id.as_str());
    assert_eq!(redacted(resumed), redacted(whole));
    let all: Vec<u64> = (1..=STEPS).collect();
    assert!(
        landed_turns(k.path(), &id) == all,
        "every turn landed in the end"
    );
}

// ---- issue 22 item 16: overrides, `other`'s reason, backend failures, ids -------------------

/// A one-step recipe `id` whose step `work` reports `done` (exit `finished`) or `other`, with
/// `other_transition` for `other` and `exitOnOther` as given.
fn other_recipe(id: &str, exit_on_other: bool, other_transition: Value) -> Value {
    serde_json::json!({
        "id": id,
        "label": "Other",
        "description": "What other does",
        "initialStep": "work",
        "guardrails": {"maxStepVisits": 3, "maxTotalSteps": 100, "exitOnOther": exit_on_other},
        "steps": {
            "work": {
                "prompt": "Do the work.",
                "outcomes": ["done", "other"],
                "onOutcome": {
                    "done": {"action": "exit", "reason": "finished"},
                    "other": other_transition
                }
            },
            "triage": {
                "prompt": "Triage.",
                "outcomes": ["done"],
                "onOutcome": {"done": {"action": "exit", "reason": "triaged"}}
            }
        }
    })
}

fn write_json(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap_or_default())
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

const OTHER_REPLY: &str = "replies:\n  - step: work\n    reply: \"{\\\"outcome\\\": \\\"other\\\", \\\"otherDescription\\\": \\\"stuck\\\"}\"\n";

#[test]
fn exit_on_other_exits_with_the_other_transitions_own_reason() {
    let d = tempdir();
    std::fs::write(d.path().join("other.yaml"), OTHER_REPLY).unwrap_or_default();
    // exitOnOther true: `other` exits, with the reason its own transition carries whatever its
    // form (spec §1 guardrails, §8 rule 5); the next step is not taken.
    let cases = [
        (
            serde_json::json!({"nextStep": "triage", "reason": "needs-triage"}),
            "needs-triage",
        ),
        (
            serde_json::json!({"action": "exit", "reason": "agent-gave-up"}),
            "agent-gave-up",
        ),
    ];
    for (transition, reason) in cases {
        write_json(
            &d.path().join("other.json"),
            &other_recipe("other", true, transition),
        );
        let o = run_in(
            d.path(),
            &[
                "run",
                "other.json",
                "--backend",
                "script",
                "--script",
                "other.yaml",
                "--format",
                "json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let v = json(&o);
        assert_eq!(v["exit_reason"], reason, "{v}");
        assert_eq!(steps_of(&v), ["work"], "{v}");
    }
    // Without `onOutcome.other` the §6.3 convention gives the reason.
    let mut r = other_recipe("other", true, Value::Null);
    if let Some(on) = r["steps"]["work"]["onOutcome"].as_object_mut() {
        on.remove("other");
    }
    write_json(&d.path().join("other.json"), &r);
    let o = run_in(
        d.path(),
        &[
            "run",
            "other.json",
            "--backend",
            "script",
            "--script",
            "other.yaml",
            "--format",
            "json",
        ],
    );
    assert_eq!(
        json(&o)["exit_reason"],
        "user-provided-other",
        "{}",
        text(&o)
    );
}

#[test]
fn a_backend_failure_is_in_the_trace_as_the_failing_step_without_an_outcome() {
    let fake = Fake::new("claude", "echo 'quota exceeded' >&2; exit 3", "");
    let d = tempdir();
    let o = fake.run(
        d.path(),
        &[
            "run",
            &catalogue("retrospective"),
            "--backend",
            "claude",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["exit_reason"], "backend-error");
    let trace = v["trace"].as_array().cloned().unwrap_or_default();
    assert_eq!(trace.len(), 1, "{v}");
    assert_eq!(trace[0]["step"], "reflect", "{v}");
    assert_eq!(trace[0]["recipe"], "retrospective", "{v}");
    assert!(trace[0]["session"].is_string(), "{v}");
    assert!(
        trace[0]
            .as_object()
            .is_some_and(|t| t.contains_key("outcome"))
            && trace[0]["outcome"].is_null(),
        "{v}"
    );
}

/// `shared.json` defines `work` (exit `from-the-include`) and `triage`; the recipe includes it
/// and defines `work` itself (exit `from-the-recipe`), before or after the `$include`.
fn override_fixture(dir: &Path, inline_first: bool) {
    let shared = serde_json::json!({
        "work": {
            "prompt": "Shared work.",
            "outcomes": ["done", "other"],
            "onOutcome": {
                "done": {"action": "exit", "reason": "from-the-include"},
                "other": {"action": "exit", "reason": "user-provided-other"}
            }
        },
        "triage": {
            "prompt": "Triage.",
            "outcomes": ["done"],
            "onOutcome": {"done": {"action": "exit", "reason": "triaged"}}
        }
    });
    write_json(&dir.join("shared.json"), &shared);
    let work = r#""work": {
      "prompt": "The recipe's own work.",
      "outcomes": ["done", "other"],
      "onOutcome": {
        "done": {"action": "exit", "reason": "from-the-recipe"},
        "other": {"action": "exit", "reason": "user-provided-other"}
      }
    }"#;
    let include = r#""$include": "shared.json""#;
    let (a, b) = if inline_first {
        (work, include)
    } else {
        (include, work)
    };
    let recipe = format!(
        r#"{{
  "id": "override",
  "label": "Override",
  "description": "Overrides one shared step",
  "initialStep": "work",
  "guardrails": {{"maxStepVisits": 3, "maxTotalSteps": 100, "exitOnOther": true}},
  "steps": {{
    {a},
    {b}
  }}
}}
"#
    );
    std::fs::write(dir.join("override.json"), recipe).unwrap_or_default();
}

#[test]
fn an_inline_step_overrides_an_included_step_of_the_same_name() {
    for inline_first in [false, true] {
        let d = tempdir();
        override_fixture(d.path(), inline_first);
        let o = run_in(d.path(), &["check", "override.json"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(!text(&o).contains("PW0726"), "{}", text(&o));
        let o = run_in(d.path(), &["run", "override.json", "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let v = json(&o);
        assert_eq!(v["exit_reason"], "from-the-recipe", "{v}");
        // The prompt sent was the recipe's own.
        let o = run_in(d.path(), &["graph", "--format", "json", "override.json"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(
            stdout(&o).contains("The recipe's own work."),
            "{}",
            text(&o)
        );
        assert!(!stdout(&o).contains("Shared work."), "{}", text(&o));
    }
}
