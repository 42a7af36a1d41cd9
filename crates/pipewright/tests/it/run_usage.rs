//! What agent calls cost (issue 25) through the real binary: every dialect that calls agents
//! through the shared backends reports tokens and calls per run and per step (the offline
//! backends count a token per four characters, so totals are exact); a budget stops a run
//! before the call that would go past it, nothing past it is called, and a resume with a higher
//! budget finishes with the totals an uninterrupted run has, nothing counted twice.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn json_run(dir: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let o = run_in(dir, args);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("a JSON report ({e}): {}", text(&o)));
    (o.status.code(), v)
}

const THREE: &str = "pipeline: three\nsteps:\n  - agent: {prompt: \"first question\", output: a}\n  - agent: {prompt: \"second question\", output: b}\n  - agent: {prompt: \"third\", output: c}\n";

/// The run's totals are the sum of its steps', which are each call's; unknown cost is null.
#[test]
fn a_pipelines_agent_calls_are_summed_per_step_and_per_run() {
    let d = tempdir();
    std::fs::write(d.path().join("three.yaml"), THREE).unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = json_run(d.path(), &["run", "three.yaml", "--format", "json"]);
    assert_eq!(code, Some(0), "{v}");
    let u = &v["usage"];
    assert_eq!(u["agent_calls"], 3, "{u}");
    assert_eq!(
        u["cost_usd"],
        Value::Null,
        "unknown stays null, never 0: {u}"
    );
    // "first question" is 14 characters: 4 tokens; the mock's reply
    // "mock reply for step 0 of three" is 30: 8 tokens.
    assert_eq!(u["steps"]["0"]["input_tokens"], 4, "{u}");
    assert_eq!(u["steps"]["0"]["output_tokens"], 8, "{u}");
    let steps = u["steps"].as_object().cloned().unwrap_or_default();
    let sum = |k: &str| {
        steps
            .values()
            .map(|s| s[k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    assert_eq!(u["input_tokens"], sum("input_tokens"));
    assert_eq!(u["output_tokens"], sum("output_tokens"));
    // The store keeps them too: `runs show` says the same.
    let id = v["run_id"].as_str().unwrap_or_default();
    let shown = run_in(d.path(), &["runs", "show", id]);
    let state: Value = serde_json::from_slice(&shown.stdout).unwrap_or_default();
    assert_eq!(state["usage"]["agent_calls"], 3, "{state}");
    assert_eq!(state["usage"]["input_tokens"], u["input_tokens"], "{state}");
}

/// `--max-agent-calls 2` stops a three-agent run before its third call (exit 4, PW0814);
/// resuming with a higher budget finishes it, with the totals of an uninterrupted run.
#[test]
fn a_budget_stops_a_run_before_the_call_past_it_and_a_resume_finishes_it() {
    let d = tempdir();
    std::fs::write(d.path().join("three.yaml"), THREE).unwrap_or_else(|e| panic!("{e}"));
    let (_, whole) = json_run(d.path(), &["run", "three.yaml", "--format", "json"]);
    let (code, v) = json_run(
        d.path(),
        &[
            "run",
            "three.yaml",
            "--format",
            "json",
            "--max-agent-calls",
            "2",
        ],
    );
    assert_eq!(code, Some(4), "{v}");
    assert_eq!(v["status"], "stopped", "{v}");
    assert_eq!(v["error"]["code"], "PW0814", "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("--max-agent-calls 2: 2 agent calls made"),
        "{message}"
    );
    assert_eq!(v["usage"]["agent_calls"], 2, "{v}");
    assert!(
        v["stores"].get("c").is_none(),
        "the third agent was not called: {v}"
    );
    let id = v["run_id"].as_str().unwrap_or_default().to_string();
    // The same budget stops it again at once: nothing more is called.
    let (code, again) = json_run(
        d.path(),
        &[
            "run",
            "--resume",
            &id,
            "--format",
            "json",
            "--max-agent-calls",
            "2",
        ],
    );
    assert_eq!(code, Some(4), "{again}");
    assert_eq!(again["usage"]["agent_calls"], 2, "{again}");
    let (code, done) = json_run(
        d.path(),
        &[
            "run",
            "--resume",
            &id,
            "--format",
            "json",
            "--max-agent-calls",
            "5",
        ],
    );
    assert_eq!(code, Some(0), "{done}");
    assert_eq!(done["usage"]["agent_calls"], 3, "{done}");
    for k in ["input_tokens", "output_tokens"] {
        assert_eq!(done["usage"][k], whole["usage"][k], "{k}: {done}");
    }
}

/// A budget reached in the middle of a fan-out: the items already admitted finish, none past
/// the budget is called, and the resume calls only the rest.
#[test]
fn a_budget_reached_mid_fan_out_calls_nothing_past_it() {
    let d = tempdir();
    std::fs::write(
        d.path().join("fan.yaml"),
        "pipeline: fan\nsteps:\n  - transform: {value: \"['a', 'b', 'c', 'd', 'e', 'f']\", output: xs}\n  - for_each:\n      over: ctx.xs\n      max_parallel: 1\n      on_error: abort\n      do: {agent: {prompt: \"item\"}}\n      collect: {transform: {value: \"count(pipe)\"}}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = json_run(
        d.path(),
        &[
            "run",
            "fan.yaml",
            "--format",
            "json",
            "--max-agent-calls",
            "4",
        ],
    );
    assert_eq!(
        (code, &v["status"]),
        (Some(4), &Value::from("stopped")),
        "{v}"
    );
    assert_eq!(v["usage"]["agent_calls"], 4, "{v}");
    let id = v["run_id"].as_str().unwrap_or_default().to_string();
    let (code, done) = json_run(
        d.path(),
        &[
            "run",
            "--resume",
            &id,
            "--format",
            "json",
            "--max-agent-calls",
            "100",
        ],
    );
    assert_eq!(code, Some(0), "{done}");
    assert_eq!(done["output"], 6, "{done}");
    assert_eq!(done["usage"]["agent_calls"], 6, "{done}");
}

/// A recipe's and a MEOW template's agent steps are counted the same way.
#[test]
fn recipes_and_meow_templates_report_their_agent_calls() {
    let d = tempdir();
    std::fs::write(
        d.path().join("two.recipe.yaml"),
        "name: two\ndescription: two agents\nversion: \"1.0.0\"\nsteps:\n  - id: one\n    agent: \"x:y\"\n    prompt: \"first\"\n    output: one\n  - id: two\n    agent: \"x:y\"\n    prompt: \"second\"\n    output: two\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = json_run(d.path(), &["run", "two.recipe.yaml", "--format", "json"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["usage"]["agent_calls"], 2, "{v}");
    let (code, stopped) = json_run(
        d.path(),
        &[
            "run",
            "two.recipe.yaml",
            "--format",
            "json",
            "--max-tokens",
            "1",
        ],
    );
    assert_eq!(code, Some(4), "{stopped}");
    assert_eq!(stopped["usage"]["agent_calls"], 1, "{stopped}");
    assert!(
        stopped["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("--max-tokens 1")),
        "{stopped}"
    );

    let meow = copy_into(&testdata("meow/run/agents.meow.toml"), d.path());
    let (code, v) = json_run(d.path(), &["run", &meow, "--format", "json"]);
    assert_eq!(code, Some(0), "{v}");
    // plan and build each ask the agent once (a fire-and-forget nudge asks nothing back).
    assert_eq!(v["usage"]["agent_calls"], 2, "{v}");
    let steps = v["usage"]["steps"].as_object().cloned().unwrap_or_default();
    assert_eq!(steps.keys().collect::<Vec<_>>(), ["plan", "build"], "{v}");
    // A MEOW run stops at its budget too, before `build` asks.
    let (code, stopped) = json_run(
        d.path(),
        &["run", &meow, "--format", "json", "--max-agent-calls", "1"],
    );
    assert_eq!(code, Some(4), "{stopped}");
    assert_eq!(stopped["error"]["code"], "PW0814", "{stopped}");
    assert_eq!(stopped["usage"]["agent_calls"], 1, "{stopped}");
}

/// A state machine's agent turns are metered too: `--max-agent-calls` stops it before the turn
/// past the budget, and a resume with a higher one finishes it.
#[test]
fn a_state_machines_turns_are_budgeted() {
    let d = tempdir();
    copy_tree(&testdata("statemachine/ok"), d.path());
    let script = copy_into(
        &testdata("statemachine/run/review-and-commit.yaml"),
        d.path(),
    );
    let args = [
        "run",
        "review-and-commit.json",
        "--backend",
        "script",
        "--script",
        &script,
        "--format",
        "json",
    ];
    let (code, whole) = json_run(d.path(), &args);
    assert_eq!(code, Some(0), "{whole}");
    let calls = whole["usage"]["agent_calls"].as_u64().unwrap_or(0);
    assert!(calls > 2, "{whole}");
    let mut limited = args.to_vec();
    limited.extend(["--max-agent-calls", "2"]);
    let (code, stopped) = json_run(d.path(), &limited);
    assert_eq!(code, Some(4), "{stopped}");
    assert_eq!(stopped["status"], "stopped", "{stopped}");
    assert_eq!(stopped["usage"]["agent_calls"], 2, "{stopped}");
    let id = stopped["run_id"].as_str().unwrap_or_default().to_string();
    let (code, done) = json_run(
        d.path(),
        &[
            "run",
            "--resume",
            &id,
            "--backend",
            "script",
            "--script",
            &script,
            "--format",
            "json",
            "--max-agent-calls",
            "50",
        ],
    );
    assert_eq!(code, Some(0), "{done}");
    // The turn that landed before the stop is replayed, not asked again: counted once. (The
    // turn the stop interrupted was asked once before it, and is asked again: both count. The
    // script's replies follow its call counts, which start over in the resuming process, so
    // the whole run's total is not the figure to compare with.)
    assert_eq!(done["usage"]["steps"]["turn.1"]["agent_calls"], 1, "{done}");
    assert!(
        done["usage"]["agent_calls"].as_u64().unwrap_or(0) >= calls,
        "{done}"
    );
}

/// `[prices]` turns a backend's tokens into cost for the model a step names; a model without a
/// price keeps its cost unknown (null), and `--max-cost` then counts what is known.
#[test]
fn prices_turn_tokens_into_cost_and_a_cost_budget_stops_the_run() {
    let d = tempdir();
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[prices]\n\"m1\" = { input_per_mtok = 1000000, output_per_mtok = 2000000 }\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        d.path().join("priced.yaml"),
        "pipeline: priced\nsteps:\n  - agent: {prompt: \"first question\", model: m1, output: a}\n  - agent: {prompt: \"second question\", model: m2, output: b}\n  - agent: {prompt: \"third question\", model: m1, output: c}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = json_run(d.path(), &["run", "priced.yaml", "--format", "json"]);
    assert_eq!(code, Some(0), "{v}");
    let steps = &v["usage"]["steps"];
    // 4 tokens in at $1 each, 8 out at $2 each (the price is per million tokens).
    assert_eq!(steps["0"]["cost_usd"], 20.0, "{v}");
    assert_eq!(steps["1"]["cost_usd"], Value::Null, "no price for m2: {v}");
    assert_eq!(v["usage"]["cost_usd"], 40.0, "the known costs: {v}");
    // `runs` lists what each run cost.
    let listed = run_in(d.path(), &["runs", "--format", "json"]);
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap_or_default();
    assert_eq!(runs[0]["usage"]["cost_usd"], 40.0, "{runs}");
    assert_eq!(runs[0]["usage"]["agent_calls"], 3, "{runs}");
    let table = stdout(&run_in(d.path(), &["runs"]));
    assert!(table.contains("  $40.0000  priced.yaml"), "{table}");
    let (code, stopped) = json_run(
        d.path(),
        &["run", "priced.yaml", "--format", "json", "--max-cost", "15"],
    );
    assert_eq!(code, Some(4), "{stopped}");
    assert_eq!(stopped["usage"]["agent_calls"], 1, "{stopped}");
    assert!(
        stopped["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("--max-cost 15: $20.000000 spent")),
        "{stopped}"
    );
}

/// A person reads the totals in one line at the end of the run.
#[test]
fn the_human_report_ends_with_one_line_of_usage() {
    let d = tempdir();
    std::fs::write(d.path().join("three.yaml"), THREE).unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["run", "three.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("usage: "))
        .unwrap_or_else(|| panic!("{}", text(&o)));
    assert!(
        line.starts_with("usage: 3 agent calls, 10 tokens in, 24 out, cost unknown, "),
        "{line}"
    );
}

/// kill -9 between agent calls, then a resume: the calls that landed are replayed, not made
/// again, so the totals are an uninterrupted run's.
#[test]
fn a_killed_run_resumed_counts_each_call_once() {
    let wait = "i=0; while [ ! -f gate ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done";
    let pipeline = format!(
        "pipeline: gated\nsteps:\n  - agent: {{prompt: \"first question\", output: a}}\n  - agent: {{prompt: \"second question\", output: b}}\n  - shell: {{command: \"{wait}\"}}\n  - agent: {{prompt: \"third\", output: c}}\n"
    );
    let recipe = format!(
        "name: gated\ndescription: killed mid-run\nversion: \"1.0.0\"\nsteps:\n  - id: one\n    agent: \"x:y\"\n    prompt: \"first question\"\n    output: a\n  - id: two\n    agent: \"x:y\"\n    prompt: \"second question\"\n    output: b\n  - id: wait\n    type: bash\n    command: \"{wait}\"\n  - id: three\n    agent: \"x:y\"\n    prompt: \"third\"\n    output: c\n"
    );
    let meow = format!(
        "[main]\n[[main.steps]]\nid = \"one\"\nexecutor = \"agent\"\nagent = \"w\"\nprompt = \"first question\"\n\n[[main.steps]]\nid = \"two\"\nexecutor = \"agent\"\nagent = \"w\"\nneeds = [\"one\"]\nprompt = \"second question\"\n\n[[main.steps]]\nid = \"wait\"\nexecutor = \"shell\"\nneeds = [\"two\"]\ncommand = '{wait}'\n\n[[main.steps]]\nid = \"three\"\nexecutor = \"agent\"\nagent = \"w\"\nneeds = [\"wait\"]\nprompt = \"third\"\n"
    );
    for (file, text) in [
        ("gated.yaml", pipeline),
        ("gated.recipe.yaml", recipe),
        ("gated.meow.toml", meow),
    ] {
        let d = tempdir();
        std::fs::write(d.path().join(file), text).unwrap_or_else(|e| panic!("{e}"));
        let mut child = spawn_run(d.path(), &[file]);
        let id = wait_for(
            std::time::Duration::from_secs(20),
            "two agent calls landed",
            || {
                let o = run_in(d.path(), &["runs", "--format", "json"]);
                let runs: Value = serde_json::from_slice(&o.stdout).ok()?;
                let r = runs.get(0)?;
                (r["usage"]["agent_calls"] == 2)
                    .then(|| r["run_id"].as_str().map(str::to_string))?
            },
        );
        child.kill().unwrap_or_else(|e| panic!("kill -9: {e}"));
        let _ = finish(child);
        std::fs::write(d.path().join("gate"), "").unwrap_or_else(|e| panic!("{e}"));
        let (code, done) = json_run(d.path(), &["run", "--resume", &id, "--format", "json"]);
        assert_eq!(code, Some(0), "{file}: {done}");
        assert_eq!(done["usage"]["agent_calls"], 3, "{file}: {done}");
        let steps = done["usage"]["steps"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(steps.len(), 3, "{file}: {done}");
        assert!(
            steps.values().all(|s| s["agent_calls"] == 1),
            "{file}: {done}"
        );
        let sum: u64 = steps
            .values()
            .map(|s| s["input_tokens"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(done["usage"]["input_tokens"], sum, "{file}: {done}");
    }
}

/// A cost budget nothing can enforce (no cost reported, no price to compute one) is said once,
/// before the run starts; with a price table it is not.
#[test]
fn an_unenforceable_cost_budget_is_warned_of_once() {
    let d = tempdir();
    std::fs::write(d.path().join("three.yaml"), THREE).unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["run", "three.yaml", "--max-cost", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let warned = stderr(&o)
        .matches("--max-cost 1 cannot be enforced")
        .count();
    assert_eq!(warned, 1, "{}", text(&o));
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[prices]\n\"gpt\" = { input_per_mtok = 1, output_per_mtok = 1 }\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["run", "three.yaml", "--max-cost", "1"]);
    assert!(!stderr(&o).contains("cannot be enforced"), "{}", text(&o));
}

/// A state machine's turns go through its own session backends: the same warning, once.
#[test]
fn an_unenforceable_cost_budget_is_warned_of_once_in_a_state_machine() {
    let d = tempdir();
    let sm = copy_into(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/worst_case/review-fix.json"),
        d.path(),
    );
    let o = run_in(d.path(), &["run", &sm, "--max-cost", "1"]);
    let warned = stderr(&o)
        .matches("--max-cost 1 cannot be enforced: the mock backend reports no cost")
        .count();
    assert_eq!(warned, 1, "{}", text(&o));
}

/// A stand-in for `claude -p --output-format json` that reports what each turn cost, as Claude
/// Code does: tokens (cache reads and writes apart) and `total_cost_usd`.
fn fake_claude(dir: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin_dir = dir.join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap_or_else(|e| panic!("{e}"));
    let claude = bin_dir.join("claude");
    std::fs::write(
        &claude,
        "#!/bin/sh\ncat > /dev/null\necho call >> claude-calls\nprintf '{\"type\":\"result\",\"is_error\":false,\"result\":\"ok\",\"usage\":{\"input_tokens\":100,\"output_tokens\":20,\"cache_read_input_tokens\":1000,\"cache_creation_input_tokens\":50},\"total_cost_usd\":0.25}'\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        dir.join("pipewright.toml"),
        "[backend.command]\nprofile = \"claude\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn run_with_path(dir: &Path, path: &str, args: &[&str]) -> std::process::Output {
    bin()
        .current_dir(dir)
        .env("PATH", path)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The command backend's claude profile reads Claude Code's `usage` and `total_cost_usd`: the
/// run's totals are the sum of its three turns, cache tokens included, and the cost is known.
#[test]
fn claude_codes_reported_usage_and_cost_are_summed() {
    let d = tempdir();
    std::fs::write(d.path().join("three.yaml"), THREE).unwrap_or_else(|e| panic!("{e}"));
    let path = fake_claude(d.path());
    let o = run_with_path(
        d.path(),
        &path,
        &[
            "run",
            "three.yaml",
            "--backend",
            "command",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}"));
    let u = &v["usage"];
    assert_eq!(u["agent_calls"], 3, "{u}");
    assert_eq!(u["input_tokens"], 300, "{u}");
    assert_eq!(u["output_tokens"], 60, "{u}");
    assert_eq!(u["cache_read_tokens"], 3000, "{u}");
    assert_eq!(u["cache_write_tokens"], 150, "{u}");
    assert_eq!(u["cost_usd"], 0.75, "{u}");
    assert_eq!(u["steps"]["1"]["cost_usd"], 0.25, "{u}");
}

/// Its cost is known, so `--max-cost` is enforced without a warning: $0.25 a turn under a
/// $0.50 budget stops the run before its third turn.
#[test]
fn a_cost_budget_stops_a_claude_run_before_the_turn_past_it() {
    let d = tempdir();
    std::fs::write(d.path().join("three.yaml"), THREE).unwrap_or_else(|e| panic!("{e}"));
    let path = fake_claude(d.path());
    let o = run_with_path(
        d.path(),
        &path,
        &[
            "run",
            "three.yaml",
            "--backend",
            "command",
            "--max-cost",
            "0.5",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert!(!stderr(&o).contains("cannot be enforced"), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v["status"], "stopped", "{v}");
    assert_eq!(v["usage"]["cost_usd"], 0.5, "{v}");
    assert_eq!(read(&d.path().join("claude-calls")).lines().count(), 2);
}

/// `runs events` carries what each finished step cost: an agent step its own calls, a fan-out
/// the sum of its items'; steps that called nothing carry nothing.
#[test]
fn events_carry_each_steps_usage_and_a_fan_out_its_items_sum() {
    let d = tempdir();
    std::fs::write(
        d.path().join("fan.yaml"),
        "pipeline: fan\nsteps:\n  - transform: {value: \"1\", output: one}\n  - for_each:\n      items: [a, bb, ccc]\n      on_error: continue\n      do:\n        agent: {prompt: \"Review {item}.\"}\n      collect: {transform: {value: pipe}}\n      output: reviews\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = json_run(d.path(), &["run", "fan.yaml", "--format", "json"]);
    assert_eq!(code, Some(0), "{v}");
    let id = v["run_id"].as_str().unwrap_or_default();
    let o = run_in(d.path(), &["runs", "events", id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let completed: Vec<Value> = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "step_completed")
        .collect();
    let of = |key: &str| {
        completed
            .iter()
            .find(|e| e["key"] == key)
            .cloned()
            .unwrap_or_else(|| panic!("no step_completed for {key}: {}", stdout(&o)))
    };
    assert_eq!(of("0").get("usage"), None, "a transform calls nothing");
    let items: Vec<Value> = (0..3)
        .map(|i| of(&format!("1.for_each.{i}"))["usage"].clone())
        .collect();
    for (i, u) in items.iter().enumerate() {
        assert_eq!(u["agent_calls"], 1, "item {i}: {u}");
        assert_eq!(
            u,
            &v["usage"]["steps"][format!("1.for_each.{i}")],
            "the report agrees"
        );
    }
    let fan = of("1")["usage"].clone();
    assert_eq!(fan["agent_calls"], 3, "{fan}");
    let sum: u64 = items
        .iter()
        .map(|u| u["input_tokens"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(fan["input_tokens"], sum, "{fan}");
    assert_eq!(fan["input_tokens"], v["usage"]["input_tokens"], "{fan}");
}
