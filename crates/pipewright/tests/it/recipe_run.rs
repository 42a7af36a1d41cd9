//! End-to-end tests of `pipewright run` on recipes, through the real binary, against the
//! reference runner's semantics (specs/notes/recipe-runtime.md §3.6, §4, §5). Every test runs
//! in its own temporary directory holding copies of `testdata/recipe/run`, so the run store
//! and any file a bash step writes land there.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// A temporary project holding a copy of the whole `testdata/recipe/run` tree.
fn project() -> tempfile::TempDir {
    let d = tempdir();
    copy_tree(&testdata("recipe/run"), d.path());
    d
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("mkdir {}: {e}", to.display()));
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("read {}: {e}", from.display()));
        let path = entry.path();
        let dest = to.join(entry.file_name());
        if path.is_dir() {
            copy_tree(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).unwrap_or_else(|e| panic!("copy {}: {e}", path.display()));
        }
    }
}

fn parse(o: &Output) -> Value {
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("`--format json` does not parse: {e}\n{}", text(o)))
}

/// Runs with `--format json` and returns the exit code and the parsed report.
fn run_json(dir: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let o = run_in(dir, &all);
    (o.status.code(), parse(&o))
}

/// Like `run_json`, but kills the run after `limit` and returns `None` then.
fn run_json_within(dir: &Path, args: &[&str], limit: Duration) -> Option<(Option<i32>, Output)> {
    let mut child = spawn_run(dir, args);
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => {
                let o = finish(child);
                return Some((o.status.code(), o));
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = finish(child);
                return None;
            }
        }
    }
}

fn run_id(v: &Value) -> String {
    v["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no run_id in {v}"))
        .to_string()
}

/// The stores without `session` (its id, start time and project differ between runs).
fn stores_but_session(v: &Value) -> Value {
    let mut s = v["stores"].clone();
    if let Some(m) = s.as_object_mut() {
        m.remove("session");
    }
    s
}

// ---- 1. a flat recipe -------------------------------------------------------------------

#[test]
fn flat_recipe_bash_json_foreach_while_agent_and_skipped_step() {
    let d = project();
    let (code, v) = run_json(d.path(), &["flat.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["status"], "ok", "{v}");
    let s = &v["stores"];
    // Bash stdout keeps its trailing newline (§5.3 step 4).
    assert_eq!(s["greeting"], "hello\n", "{v}");
    // Bash JSON output becomes a dict (§5.3 step 3).
    assert_eq!(s["data"], json!({"n": 2, "tags": ["x"]}), "{v}");
    // foreach with `as` and `collect`; the loop variable is gone afterwards.
    assert_eq!(
        s["letters"],
        json!(["item-a\n", "item-b\n", "item-c\n"]),
        "{v}"
    );
    assert!(s.get("letter").is_none(), "{v}");
    // The while loop verified in notes §5.8.
    assert_eq!(
        s["ticks"],
        json!(["tick-0-seen-0\n", "tick-1-seen-1\n", "tick-2-seen-2\n"]),
        "{v}"
    );
    assert_eq!(s["counter"], "3", "{v}");
    assert!(s.get("_loop_index").is_none() && s.get("_loop_iteration").is_none());
    // An agent step on the default mock backend stores its answer.
    assert!(
        s["answer"].as_str().is_some_and(|a| !a.is_empty()),
        "the mock answered: {v}"
    );
    // The skipped conditional step is listed, and its output is not set.
    assert_eq!(s["_skipped_steps"], json!(["maybe"]), "{v}");
    assert!(s.get("never").is_none(), "{v}");
    assert_eq!(s["recipe"]["name"], "flat", "{v}");
    assert_eq!(s["session"]["id"], v["run_id"], "{v}");
    // §5.15: no `final_output`, and the last step's output key is not in the context.
    assert_eq!(v["output"], Value::Null, "{v}");
}

#[test]
fn final_output_in_context_wins_over_the_last_step() {
    let d = project();
    let (code, v) = run_json(d.path(), &["final-output.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["output"], json!({"verdict": "pass"}), "{v}");
    assert_eq!(v["stores"]["later"], "later\n", "{v}");
}

#[test]
fn foreach_edges_and_rendering_by_type() {
    let d = project();
    let (code, v) = run_json(d.path(), &["foreach-edges.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    let s = &v["stores"];
    // A bash iteration failing under `continue` yields its stdout, here "".
    assert_eq!(s["seq"], json!(["x\n", "", "y\n"]), "{v}");
    // Without `collect`, `output` gets the last result.
    assert_eq!(s["lastone"], "y\n", "{v}");
    // The loop variable is deleted afterwards, a same-named context variable with it.
    assert!(s.get("item").is_none(), "{v}");
    // An empty list: the step is skipped, `collect` is [], `output` is not set.
    assert_eq!(s["empties"], json!([]), "{v}");
    assert!(s.get("emptyout").is_none(), "{v}");
    assert_eq!(s["_skipped_steps"], json!(["empty"]), "{v}");
    // A dict renders as Python's json.dumps (non-ASCII escaped), a bool as `true`; the
    // printed text `{…}|true|1.5` is not JSON, so extraction finds the dict in it.
    assert_eq!(s["rendered"], json!({"k": "é", "f": 1.5}), "{v}");
    // update_context values are always strings.
    assert_eq!(s["asjson"], "{\"k\": \"\\u00e9\", \"f\": 1.5}", "{v}");
    assert_eq!(s["b"], "true", "{v}");
    assert_eq!(s["wout"], "x\n", "{v}");
}

#[test]
fn agent_steps_parse_json_keep_text_and_continue_with_null() {
    let d = project();
    let (code, v) = run_json(
        d.path(),
        &[
            "agents.yaml",
            "--backend",
            "script",
            "--script",
            "agents-replies.yaml",
        ],
    );
    assert_eq!(code, Some(1), "{v}");
    let s = &v["stores"];
    // parse_json takes the fenced JSON out of the reply (§5.4).
    assert_eq!(s["js"], json!({"a": 1}), "{v}");
    // A reply that is not JSON is kept unstripped.
    assert_eq!(s["plain"], "just text\n", "{v}");
    // `continue` after the retries stores null, and a later condition reading it fails as
    // undefined (the §5.9 gotcha).
    assert_eq!(s["r"], Value::Null, "{v}");
    assert!(s.as_object().is_some_and(|m| m.contains_key("r")), "{v}");
    assert_eq!(
        v["error"]["message"], "Step 'after': condition error: Undefined variable: r",
        "{v}"
    );
    // One turn each for the first two steps, two attempts (`max_attempts: 2`) for the third.
    let o = run_in(d.path(), &["runs", "show", &run_id(&v)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(parse(&o)["spawns"], 4, "{}", text(&o));
}

// ---- 2. conditions by site --------------------------------------------------------------

#[test]
fn quoted_templates_work_in_while_condition_and_break_when() {
    let d = project();
    let (code, v) = run_json(d.path(), &["while-quoted.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    let s = &v["stores"];
    // `'{{s}}' != 'done'` (rendered first, then evaluated): one round, then s is "done".
    assert_eq!(s["rounds"], json!(["round-1\n"]), "{v}");
    // break_when `'{{s}}' != 'done'` holds after the first update.
    assert_eq!(s["rounds2"], json!(["r\n"]), "{v}");
    assert_eq!(s["n"], "1", "{v}");
    assert_eq!(s["s"], "needs work", "{v}");
}

#[test]
fn a_top_level_condition_error_fails_the_recipe_naming_the_step() {
    let d = project();
    let (code, v) = run_json(d.path(), &["condition-error.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(
        v["error"]["message"],
        "Step 'bad': condition error: Invalid expression: Unexpected character '[' at position 0",
        "{v}"
    );
    // The step before it landed.
    assert_eq!(v["stores"]["hi"], "hi\n", "{v}");
}

#[test]
fn a_quoted_template_in_a_top_level_condition_breaks() {
    let d = project();
    let (code, v) = run_json(d.path(), &["condition-quoted-top.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    // The evaluator quotes the string itself: `''done'' == 'done'` (§3.6).
    assert_eq!(
        v["error"]["message"],
        "Step 'quoted': condition error: Invalid expression: Unexpected token 'done' at position 1",
        "{v}"
    );
}

// ---- 3. on_error for bash ---------------------------------------------------------------

#[test]
fn on_error_continue_keeps_stdout_and_the_exit_code_as_a_string() {
    let d = project();
    let (code, v) = run_json(d.path(), &["on-error-continue.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["stores"]["out"], "partial\n", "{v}");
    assert_eq!(v["stores"]["code"], "7", "{v}");
    assert_eq!(v["stores"]["after"], "after\n", "{v}");
    assert_eq!(v["output"], "after\n", "{v}");
}

#[test]
fn on_error_fail_reports_the_exit_code_and_stderr() {
    let d = project();
    let (code, v) = run_json(d.path(), &["on-error-fail.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(
        v["error"]["message"], "Step 'boom': command failed with exit code 7\nstderr: oops",
        "{v}"
    );
    assert!(v["stores"].get("after").is_none(), "{v}");
}

#[test]
fn on_error_skip_remaining_skips_the_rest_and_the_run_is_ok() {
    let d = project();
    let (code, v) = run_json(d.path(), &["on-error-skip_remaining.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["status"], "ok", "{v}");
    assert!(v["stores"].get("out").is_none(), "{v}");
    assert!(v["stores"].get("after").is_none(), "{v}");
    // §5.9: the skipped steps are not recorded as skipped.
    assert!(v["stores"].get("_skipped_steps").is_none(), "{v}");
    assert_eq!(v["output"], Value::Null, "{v}");
}

#[test]
fn a_bash_timeout_fails_even_under_on_error_continue() {
    let d = project();
    let t0 = Instant::now();
    let (code, v) = run_json(d.path(), &["bash-timeout.yaml"]);
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(
        v["error"]["message"], "Step 'slow': command timed out after 1s",
        "{v}"
    );
    assert!(v["stores"].get("out").is_none(), "{v}");
}

#[test]
fn a_bad_cwd_fails_even_under_on_error_skip_remaining() {
    let d = project();
    let (code, v) = run_json(d.path(), &["bash-bad-cwd.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.starts_with("Step 'where': cwd does not exist: ") && msg.ends_with("no-such-dir"),
        "{v}"
    );
}

// ---- 4. parallel foreach ----------------------------------------------------------------

#[test]
fn parallel_foreach_keeps_input_order() {
    let d = project();
    let (code, v) = run_json(d.path(), &["parallel.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    // The first item sleeps longest: it finishes last but stays first.
    assert_eq!(
        v["stores"]["got"],
        json!(["got-3\n", "got-1\n", "got-2\n", "got-0\n"]),
        "{v}"
    );
}

#[test]
fn parallel_2_runs_at_most_two_iterations_at_a_time() {
    let d = project();
    let (code, v) = run_json(d.path(), &["parallel-bound.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    // Each iteration counted the iterations running beside it (itself included).
    let seen: Vec<i64> = v["stores"]["seen"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    assert_eq!(seen.len(), 5, "{v}");
    assert!(seen.iter().all(|n| (1..=2).contains(n)), "{v}");
    assert!(seen.contains(&2), "the iterations overlapped: {v}");
}

#[test]
fn sequential_agent_steps_stop_one_short_of_the_budget() {
    let d = project();
    let (code, v) = run_json(d.path(), &["budget.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(
        v["error"]["message"], "Total steps 3 exceeds limit 3",
        "{v}"
    );
    assert!(v["stores"].get("a2").is_some(), "{v}");
    assert!(v["stores"].get("a3").is_none(), "{v}");
}

#[test]
fn a_parallel_foreach_of_agents_fits_exactly_its_budget() {
    let d = project();
    // §5.11: pre-counting the batch allows exactly `max_total_steps` (a sequential loop
    // stops one short).
    let (code, v) = run_json(d.path(), &["parallel-budget.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["stores"]["got"].as_array().map(Vec::len), Some(3), "{v}");
    let o = run_in(d.path(), &["runs", "show", &run_id(&v)]);
    assert_eq!(parse(&o)["spawns"], 3, "{}", text(&o));
    let (code, v) = run_json(
        d.path(),
        &[
            "parallel-budget.yaml",
            "--input",
            r#"{"items": ["a", "b", "c", "d"]}"#,
        ],
    );
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(
        v["error"]["message"], "Parallel loop would exceed max_total_steps (0 + 4 > 3)",
        "{v}"
    );
}

#[test]
fn parallel_foreach_failures_aggregate_in_one_message() {
    let d = project();
    let (code, v) = run_json(d.path(), &["parallel-fail.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(
        v["error"]["message"],
        "Step 'each': 2/4 iterations failed: \
         iteration 1: Step 'each': command failed with exit code 3\nstderr: no-bad1; \
         iteration 3: Step 'each': command failed with exit code 3\nstderr: no-bad2",
        "{v}"
    );
    assert!(v["stores"].get("got").is_none(), "{v}");
}

#[test]
fn parallel_foreach_dispatches_a_container_itself_and_fails_each_iteration() {
    let d = project();
    let (code, v) = run_json(d.path(), &["parallel-container.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    // §5.7: the nested `steps:` are ignored; the container is an agent step without a prompt.
    let why = "Step 'each' is an agent step but missing prompt or agent";
    assert_eq!(
        v["error"]["message"],
        format!("Step 'each': 2/2 iterations failed: iteration 0: {why}; iteration 1: {why}"),
        "{v}"
    );
    assert!(v["stores"].get("got").is_none(), "{v}");
    assert!(v["stores"].get("inner").is_none(), "{v}");
}

#[test]
fn min_delay_ms_paces_parallel_agent_calls() {
    let d = project();
    let t0 = Instant::now();
    let (code, v) = run_json(d.path(), &["rate-limit.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["stores"]["got"].as_array().map(Vec::len), Some(4), "{v}");
    // Four calls, each at least 300 ms after the previous one completed.
    assert!(
        t0.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );
}

// ---- 5. sub-recipes ---------------------------------------------------------------------

#[test]
fn sub_recipe_gets_native_context_and_returns_its_delta() {
    let d = project();
    // Run from elsewhere: `sub/child.yaml` resolves against the parent file's directory.
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = run_json(&elsewhere, &["../parent.yaml"]);
    assert_eq!(code, Some(0), "{v}");
    // `cfg: "{{cfg}}"` passed the dict, so `{{cfg.level}}` resolved in the child. The delta
    // holds the child's defaulted key, its outputs and exit code, not the passed `cfg`.
    assert_eq!(
        v["stores"]["result"],
        json!({
            "default_note": "from-child",
            "used": "level=2 tags=[a, b]\n",
            "five": 5,
            "five_code": "0"
        }),
        "{v}"
    );
    // A delta with an `output` key is unwrapped to it (§5.3 step 1).
    assert_eq!(v["stores"]["unwrapped"], json!([1, 2]), "{v}");
    assert_eq!(v["output"], json!([1, 2]), "{v}");
}

#[test]
fn a_sub_recipe_the_runner_refuses_to_load_fails_the_step() {
    let d = project();
    let (code, v) = run_json(d.path(), &["bad-child.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(
        v["error"]["message"],
        "Failed to load recipe bad/not-a-mapping.yaml: Recipe YAML must be a dictionary",
        "{v}"
    );
    // An unknown step key is a load error for the runner, even in an unvalidated sub-recipe.
    let (code, v) = run_json(
        d.path(),
        &["bad-child.yaml", "--var", "which=bad/unknown-key.yaml"],
    );
    assert_eq!(code, Some(1), "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.starts_with("Failed to load recipe bad/unknown-key.yaml: ") && msg.contains("shell"),
        "{v}"
    );
    assert!(v["stores"].get("r").is_none(), "{v}");
    // A sub-recipe's required input comes from the calling step, not the command line.
    let (code, v) = run_json(d.path(), &["bad-child.yaml", "--var", "which=inputs.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(
        v["error"]["message"],
        "recipe `inputs` needs `topic` (declared `required` with no default): pass it in the calling step's `context:`",
        "{v}"
    );
}

#[test]
fn sub_recipe_depth_beyond_the_limit_fails() {
    let d = project();
    let (code, v) = run_json(d.path(), &["deep/r0.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(
        v["error"]["message"], "Recipe recursion depth 2 exceeds limit 2. Stack: r0 -> r1 -> r2",
        "{v}"
    );
}

// ---- 6. approval gates ------------------------------------------------------------------

fn pause(d: &Path, file: &str) -> (String, Value) {
    let (code, v) = run_json(d, &[file]);
    assert_eq!(code, Some(3), "{v}");
    assert_eq!(v["status"], "paused", "{v}");
    (run_id(&v), v)
}

#[test]
fn a_gate_pauses_then_approve_and_resume_finish_the_run() {
    let d = project();
    let (id, v) = pause(d.path(), "staged.yaml");
    assert_eq!(v["pending"]["stage"], "plan", "{v}");
    // The prompt is rendered when the gate is reached.
    assert_eq!(v["pending"]["prompt"], "Approve plan-for-src\n?", "{v}");
    assert!(v["stores"].get("built").is_none(), "{v}");

    // Without a decision a resume pauses again at the same gate.
    let (code, again) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(3), "{again}");
    assert_eq!(again["pending"], v["pending"], "{again}");

    let o = run_in(d.path(), &["approve", &id, "--message", "hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let (code, r) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["run_id"], id.as_str());
    assert_eq!(r["stores"]["_approval_message"], "hi", "{r}");
    assert_eq!(r["stores"]["built"], "built-with-hi\n", "{r}");
    assert_eq!(r["output"], "built-with-hi\n", "{r}");

    // The run is no longer paused: there is nothing to approve.
    let o = run_in(d.path(), &["approve", &id]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(stderr(&o).contains("waits for no approval"), "{}", text(&o));
}

#[test]
fn a_recipe_run_record_reads_as_json_on_one_clock() {
    let d = project();
    let (id, _) = pause(d.path(), "staged.yaml");
    let o = run_in(d.path(), &["approve", &id, "--message", "hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (code, r) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{r}");

    // `runs show`: the landings are JSON, not JSON text inside JSON.
    let o = run_in(d.path(), &["runs", "show", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = parse(&o);
    let c = &s["completed"];
    assert_eq!(c["init"]["target"], "src", "{s}");
    assert_eq!(c["0.0"]["set"]["plan"], "plan-for-src\n", "{s}");
    assert_eq!(c["1"]["status"], "approved", "{s}");
    assert_eq!(c["1"]["message"], "hi", "{s}");

    // `runs events`: the decision counts from the run's start as the steps do, not from 1970.
    let o = run_in(d.path(), &["runs", "events", &id]);
    let events: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
        .collect();
    let decided = events
        .iter()
        .find(|e| e["event"] == "approval_decided")
        .unwrap_or_else(|| panic!("no approval_decided: {events:?}"));
    let at = decided["at_ms"].as_f64().unwrap_or(-1.0);
    let first_step = events[0]["at_ms"].as_f64().unwrap_or(-1.0);
    assert!(
        (first_step..600_000.0).contains(&at),
        "at_ms {at} is on the run's clock: {decided}"
    );
}

#[test]
fn a_denied_gate_fails_the_resume() {
    let d = project();
    let (id, _) = pause(d.path(), "staged.yaml");
    let o = run_in(d.path(), &["deny", &id, "--reason", "nope"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The decision is made: neither a second deny nor an approve can change it.
    for again in [&["deny", &id][..], &["approve", &id][..]] {
        let o = run_in(d.path(), again);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(stderr(&o).contains("waits for no approval"), "{}", text(&o));
    }
    let (code, r) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["error"]["code"], "PW0813", "{r}");
    let msg = r["error"]["message"].as_str().unwrap_or("");
    assert!(msg.starts_with("Execution denied at stage 'plan'"), "{r}");
    assert!(r["stores"].get("built").is_none(), "{r}");
    // Denial is final (unlike the reference's deny, notes §5.13): a second resume fails too.
    let (code, r) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["error"]["code"], "PW0813", "{r}");
}

#[test]
fn a_gate_past_its_timeout_takes_its_default_on_resume() {
    let d = project();
    let (id, v) = pause(d.path(), "staged-timeout.yaml");
    assert_eq!(v["pending"]["timeout_secs"], 1, "{v}");
    assert_eq!(v["pending"]["default"], "approve", "{v}");
    std::thread::sleep(Duration::from_millis(1100));
    let (code, r) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["stores"]["_approval_message"], "", "{r}");
    assert_eq!(r["output"], "built-with-\n", "{r}");
    // The timeout decided the gate: it no longer waits for a decision.
    let o = run_in(d.path(), &["approve", &id, "--message", "late"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(stderr(&o).contains("waits for no approval"), "{}", text(&o));
}

#[test]
fn a_gate_past_its_timeout_with_default_deny_stays_denied() {
    let d = project();
    let (id, v) = pause(d.path(), "staged-timeout-deny.yaml");
    assert_eq!(v["pending"]["default"], "deny", "{v}");
    std::thread::sleep(Duration::from_millis(1100));
    let (code, r) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["error"]["code"], "PW0813", "{r}");
    assert_eq!(
        r["error"]["message"], "Approval for stage 'plan' timed out and was denied",
        "{r}"
    );
    // A late approval cannot reopen the gate the timeout closed.
    let o = run_in(d.path(), &["approve", &id]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let (code, r) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(
        r["error"]["message"], "Approval for stage 'plan' timed out and was denied",
        "{r}"
    );
    assert!(r["stores"].get("built").is_none(), "{r}");
}

#[test]
fn skip_remaining_in_a_stage_still_reaches_its_gate_and_the_next_stage() {
    let d = project();
    let (id, v) = pause(d.path(), "staged-skip.yaml");
    assert_eq!(v["pending"]["stage"], "one", "{v}");
    assert!(v["stores"].get("no").is_none(), "{v}");
    let o = run_in(d.path(), &["approve", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (code, r) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["output"], "yes-\n", "{r}");
    assert_eq!(r["stores"]["_approval_message"], "", "{r}");
}

#[test]
fn a_gate_inside_a_sub_recipe_pauses_the_parent() {
    let d = project();
    let (id, v) = pause(d.path(), "gated-parent.yaml");
    // A flat parent mirrors the child's stage name (§5.13).
    assert_eq!(v["pending"]["stage"], "first", "{v}");
    assert_eq!(v["pending"]["prompt"], "child ok c1-before\n?", "{v}");
    assert!(v["stores"].get("after").is_none(), "{v}");
    let o = run_in(d.path(), &["approve", &id, "--message", "yo"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (code, r) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(
        r["stores"]["child"],
        json!({"c1": "c1-before\n", "_approval_message": "yo", "c2": "c2-yo\n"}),
        "{r}"
    );
    assert_eq!(r["output"], "after\n", "{r}");
    // Nothing before the gate ran twice.
    assert_eq!(
        read(&d.path().join("log")),
        "before\nc1-before\nc2-yo\nafter\n"
    );
}

#[test]
fn a_staged_parent_shows_a_child_gate_under_its_own_stage() {
    let d = project();
    let (id, v) = pause(d.path(), "gated-staged-parent.yaml");
    // §5.13: `<parent stage>/<child stage>` when the parent is staged.
    assert_eq!(v["pending"]["stage"], "outer/first", "{v}");
    let o = run_in(d.path(), &["approve", &id, "--message", "m"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stdout(&o).contains("'outer/first'"), "{}", text(&o));
    let (code, r) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["stores"]["child"]["c2"], "c2-m\n", "{r}");
}

// ---- 7. declared inputs -----------------------------------------------------------------

#[test]
fn a_required_input_must_be_given() {
    let d = project();
    let o = run_in(d.path(), &["run", "inputs.yaml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("recipe `inputs` needs `topic`")
            && stderr(&o).contains("--var topic=VALUE"),
        "{}",
        text(&o)
    );
    assert!(!stderr(&o).contains("`depth`"), "{}", text(&o));

    let (code, v) = run_json(d.path(), &["inputs.yaml", "--var", "topic=owls"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["stores"]["topic"], "owls", "{v}");
    // A declaration with a default starts as the default (not as the declaration dict).
    assert_eq!(v["stores"]["depth"], "shallow", "{v}");
    assert_eq!(v["output"], "owls-shallow\n", "{v}");
}

// ---- 8. kill -9 and resume --------------------------------------------------------------

fn log_lines(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("log"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// Starts (or resumes) a run, waits until the log's last line is `line`, and kills the
/// pipewright process with SIGKILL. Returns the run id.
fn kill_at(dir: &Path, args: &[&str], line: &str) -> String {
    let mut child = spawn_run(dir, args);
    wait_for(Duration::from_secs(20), line, || {
        (log_lines(dir).last().map(String::as_str) == Some(line)).then_some(())
    });
    child.kill().unwrap_or_else(|e| panic!("kill -9: {e}"));
    let o = finish(child);
    assert_eq!(o.status.code(), None, "killed by a signal: {}", text(&o));
    let o = run_in(dir, &["runs", "--format", "json"]);
    let v = parse(&o);
    v[0]["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no run in the store: {v}"))
        .to_string()
}

#[test]
fn kill_9_then_resume_gives_the_uninterrupted_result() {
    let reference = project();
    let reference_run = spawn_run(reference.path(), &["kill.yaml"]);

    let d = project();
    // Killed inside the foreach (item 2 in flight), then again inside the while loop.
    let id = kill_at(d.path(), &["kill.yaml"], "each-2");
    let again = kill_at(d.path(), &["--resume", &id], "spin-1");
    assert_eq!(again, id);
    let (code, resumed) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{resumed}");
    assert_eq!(resumed["run_id"], id.as_str());

    let r = finish(reference_run);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    let reference_v = parse(&r);
    assert_eq!(
        stores_but_session(&resumed),
        stores_but_session(&reference_v)
    );
    assert_eq!(resumed["output"], reference_v["output"]);
    assert_eq!(resumed["stores"]["counter"], "4", "{resumed}");

    // Every landed step or iteration ran once; only the two in flight at the kills ran again.
    let every = [
        "first", "each-1", "each-2", "each-3", "each-4", "spin-0", "spin-1", "spin-2", "spin-3",
        "last",
    ];
    assert_eq!(log_lines(reference.path()), every);
    let log = log_lines(d.path());
    for line in every {
        let n = log.iter().filter(|l| *l == line).count();
        let expected = if line == "each-2" || line == "spin-1" {
            2
        } else {
            1
        };
        assert_eq!(n, expected, "{line}: {log:?}");
    }
}

#[test]
fn a_failed_run_resumes_at_the_failed_iteration() {
    let d = project();
    let (code, v) = run_json(d.path(), &["resume-failed.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(
        v["error"]["message"],
        "Step 'each' iteration 1 failed: Step 'each': command failed with exit code 5",
        "{v}"
    );
    let id = run_id(&v);
    std::fs::write(d.path().join("fixed"), "").unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(
        v["error"]["message"],
        "Step 'w' iteration 1 failed: Step 'w': command failed with exit code 6",
        "{v}"
    );
    std::fs::write(d.path().join("fixed2"), "").unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["stores"]["each"], json!([1, 2, 3]), "{v}");
    assert_eq!(v["stores"]["ws"], json!(["w\n", "w\n", "w\n"]), "{v}");
    assert_eq!(v["stores"]["k"], "3", "{v}");
    // Landed iterations are replayed (the reference restarts a loop from scratch unless
    // `checkpoint_iterations` is set); only the failed ones ran again.
    assert_eq!(
        read(&d.path().join("log")),
        "first\neach-1\neach-2\neach-2\neach-3\nw-0\nw-1\nw-1\nw-2\n"
    );
}

/// `runs events` of run `id`, parsed.
fn run_events(dir: &Path, id: &str) -> Vec<Value> {
    let o = run_in(dir, &["runs", "events", id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_loops_steps_record_each_start_and_end_and_a_replayed_iteration_starts_no_more() {
    let d = project();
    let (code, v) = run_json(d.path(), &["resume-failed.yaml"]);
    assert_eq!(code, Some(1), "{v}");
    let id = run_id(&v);
    std::fs::write(d.path().join("fixed"), "").unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(1), "{v}");
    std::fs::write(d.path().join("fixed2"), "").unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{v}");
    let events = run_events(d.path(), &id);
    let of = |event: &str, key: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["event"] == event && e["key"] == key)
            .collect()
    };
    // The foreach's iterations (`1.I`) and the while loop's (`2.I`): each one that ran has its
    // rendered command; the failed one ran twice; a landed one is not started again on resume.
    for (key, starts, command) in [
        ("1.0", 1, "echo each-1 >> log"),
        ("1.1", 2, "echo each-2 >> log"),
        ("1.2", 1, "echo each-3 >> log"),
        ("2.0", 1, "echo w-0 >> log"),
        ("2.1", 2, "echo w-1 >> log"),
        ("2.2", 1, "echo w-2 >> log"),
    ] {
        let started = of("step_started", key);
        assert_eq!(started.len(), starts, "{key}: {events:#?}");
        for s in &started {
            assert_eq!(s["step_kind"], "command", "{s}");
            assert!(
                s["command"]
                    .as_str()
                    .is_some_and(|c| c.starts_with(command)),
                "{key}'s command as rendered: {s}"
            );
        }
        let ends = of("step_completed", key).len() + of("step_failed", key).len();
        assert_eq!(ends, starts, "each start ends once: {key}: {events:#?}");
    }
    assert_eq!(of("step_failed", "1.1").len(), 1, "{events:#?}");
    assert!(
        of("step_failed", "1.1")[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("exit code 5")),
        "{events:#?}"
    );
    // The loops' own steps are started once per attempt that reached them, as before.
    assert_eq!(of("step_started", "1").len(), 2, "{events:#?}");
    assert_eq!(of("step_replayed", "1").len(), 1, "{events:#?}");
}

#[test]
fn sigterm_cancels_the_run_and_resume_finishes_it() {
    let d = project();
    let child = spawn_run(d.path(), &["kill.yaml"]);
    wait_for(Duration::from_secs(20), "spin-1", || {
        (log_lines(d.path()).last().map(String::as_str) == Some("spin-1")).then_some(())
    });
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(kill.success());
    let o = finish(child);
    assert_eq!(o.status.code(), Some(143), "{}", text(&o));
    let v = parse(&o);
    assert_eq!(v["status"], "cancelled", "{v}");
    // The while loop's second iteration (index 1 of step 2) was in flight.
    assert_eq!(v["cancelled_at"], "2.1", "{v}");
    let (code, r) = run_json(d.path(), &["--resume", &run_id(&v)]);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(
        r["stores"]["spins"],
        json!(["spun-0\n", "spun-1\n", "spun-2\n", "spun-3\n"])
    );
    let log = log_lines(d.path());
    assert_eq!(log.iter().filter(|l| *l == "spin-1").count(), 2, "{log:?}");
    assert_eq!(log.iter().filter(|l| *l == "spin-0").count(), 1, "{log:?}");
}

/// Iteration 2 finishes while iteration 1 still runs and nothing else starts after it: its
/// landing must reach the store then, not wait for a next step that never comes before the kill.
#[test]
fn kill_9_keeps_a_parallel_iteration_that_finished_beside_a_slow_one() {
    let d = project();
    let mut child = spawn_run(d.path(), &["parallel-kill.yaml"]);
    wait_for(Duration::from_secs(20), "end-0.2", || {
        log_lines(d.path())
            .iter()
            .any(|l| l == "end-0.2")
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap_or_else(|e| panic!("kill -9: {e}"));
    let o = finish(child);
    assert_eq!(o.status.code(), None, "killed by a signal: {}", text(&o));
    let id = {
        let o = run_in(d.path(), &["runs", "--format", "json"]);
        parse(&o)[0]["run_id"].as_str().unwrap_or("?").to_string()
    };
    let (code, v) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["stores"]["each"], json!([0.1, 2, 0.2]), "{v}");
    let log = log_lines(d.path());
    for (line, n) in [
        ("start-0.1", 1),
        ("start-0.2", 1),
        ("start-2", 2),
        ("end-2", 1),
    ] {
        assert_eq!(
            log.iter().filter(|l| *l == line).count(),
            n,
            "{line}: {log:?}"
        );
    }
}

// ---- 9. the corpus ----------------------------------------------------------------------

/// Recipes of the corpus that cannot run here, with why and the error they must fail with.
const ENVIRONMENT_DEPENDENT: &[(&str, &str, &str)] = &[
    (
        "examples/attractor/attractor.yaml",
        "its bash steps need the attractor harness's spec and scenario inputs",
        "Step 'validate-inputs': command failed with exit code 1",
    ),
    (
        "examples/attractor/factory-iteration.yaml",
        "its bash steps need the attractor harness's files to produce JSON",
        "Step 'assess': Cannot access 'satisfaction' on {{validation_result}}",
    ),
    (
        "examples/repo-activity-analysis.yaml",
        "needs the `gh` CLI",
        "Step 'fetch-commits': Undefined variable: {{repo_info.owner}}",
    ),
];

/// Recipes that need inputs given with `--var`.
const WITH_VARS: &[(&str, &[&str])] = &[(
    "examples/context-intelligence/verification/adversarial-verification.yaml",
    &["--var", "topic=owls", "--var", "output_dir=out"],
)];

#[test]
fn corpus_recipes_marked_ok_run_with_the_mock_backend() {
    let corpus = Path::new("/work/shared/corpus");
    let expected = corpus.join("EXPECTED.tsv");
    if !expected.is_file() || !corpus.join("amplifier").is_dir() {
        eprintln!("corpus not present; skipped");
        return;
    }
    let scratch = tempdir();
    copy_tree(&corpus.join("amplifier"), &scratch.path().join("amplifier"));
    let recipes: Vec<String> = read(&expected)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut cols = l.split('\t');
            let path = cols.next()?.strip_prefix("amplifier/")?;
            (cols.next()? == "ok").then(|| path.to_string())
        })
        .collect();
    assert!(recipes.len() > 40, "{} recipes marked ok", recipes.len());
    let t0 = Instant::now();
    let mut problems = Vec::new();
    for rel in &recipes {
        let path: PathBuf = scratch.path().join("amplifier").join(rel);
        let dir = path
            .parent()
            .unwrap_or_else(|| panic!("{rel} has no parent"));
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut args = vec![file.as_str()];
        if let Some((_, vars)) = WITH_VARS.iter().find(|(r, _)| r == rel) {
            args.extend_from_slice(vars);
        }
        let Some((code, o)) = run_json_within(dir, &args, Duration::from_secs(20)) else {
            problems.push(format!("{rel}: still running after 20 s"));
            continue;
        };
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
        let status = v["status"].as_str().unwrap_or("");
        match ENVIRONMENT_DEPENDENT.iter().find(|(r, _, _)| r == rel) {
            Some((_, why, error)) => {
                let msg = v["error"]["message"].as_str().unwrap_or("");
                if code != Some(1) || !msg.contains(error) {
                    problems.push(format!(
                        "{rel} ({why}) should fail with `{error}`: exit {code:?}\n{}",
                        text(&o)
                    ));
                }
            }
            None => {
                let fine = matches!((code, status), (Some(0), "ok") | (Some(3), "paused"));
                if !fine {
                    problems.push(format!("{rel}: exit {code:?}\n{}", text(&o)));
                }
            }
        }
    }
    eprintln!("ran {} corpus recipes in {:?}", recipes.len(), t0.elapsed());
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// An iteration that runs again after a kill runs as a whole: what an inner loop of its body
/// landed in the killed attempt is forgotten, not replayed next to the new values of the steps
/// before it (`marks` would then hold the old attempt's stamp).
#[test]
fn kill_9_inside_a_nested_loop_reruns_the_whole_outer_iteration() {
    let d = project();
    let id = kill_at(d.path(), &["nested-kill.yaml"], "inner-1-y");
    let (code, v) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{v}");
    // Each round counts the marks that carry its own stamp: both of them.
    assert_eq!(v["stores"]["rounds"], json!([2, 2]), "{v}");
    let log = log_lines(d.path());
    let count = |line: &str| log.iter().filter(|l| *l == line).count();
    assert_eq!(count("stamp-1"), 2, "{log:?}");
    assert_eq!(count("inner-1-x"), 2, "{log:?}");
    assert_eq!(count("inner-1-y"), 2, "{log:?}");
    assert_eq!(count("stamp-2"), 1, "{log:?}");
}

/// The example recipe runs offline as its header says.
#[test]
fn the_example_recipe_runs_offline() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = examples().join("release-notes.yaml");
    let file = file.to_str().unwrap_or_default();
    // The file's project is this repository: its run goes to a store of the test's own.
    let o = bin()
        .current_dir(d.path())
        .env("PIPEWRIGHT_STORE", d.path().join("runs.db"))
        .args(["run", file, "--var", "version=1.2.0", "--format", "json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let (code, v) = (o.status.code(), parse(&o));
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["stores"]["version"], "1.2.0", "{v}");
    assert_eq!(v["stores"]["changes"]["count"], 3, "{v}");
    assert_eq!(
        v["stores"]["sections"].as_array().map(Vec::len),
        Some(2),
        "{v}"
    );
    assert!(
        v["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("mock reply")),
        "{v}"
    );
}

/// Runs `pipewright ARGS` in `dir` on a terminal (`script` gives it a pseudo-terminal for
/// stdin, stdout and stderr), typing `typed`. `None` where `script` is missing.
fn on_a_terminal(dir: &Path, args: &[&str], typed: &str) -> Option<Output> {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        // .ci/run installs it; only a developer's machine without it skips, and says so.
        assert!(
            std::env::var_os("CI").is_none(),
            "`script` (util-linux) is required under CI"
        );
        eprintln!("`script` (util-linux) is not installed: the terminal gate test cannot run");
        return None;
    }
    let bin = env!("CARGO_BIN_EXE_pipewright");
    let line = std::iter::once(bin)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let mut child = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("script: {e}"));
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write as _;
        stdin
            .write_all(typed.as_bytes())
            .unwrap_or_else(|e| panic!("typing: {e}"));
    }
    Some(finish(child))
}

/// On a terminal the run asks at the gate and goes on in the same process: `y` and a message
/// approve (the next stage sees the message), `n` and a reason deny (PW0813).
#[test]
fn on_a_terminal_the_gate_asks_and_the_run_goes_on() {
    let d = project();
    let Some(o) = on_a_terminal(d.path(), &["run", "staged.yaml"], "y\nship it\n") else {
        return;
    };
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("approval needed for stage 'plan'"), "{out}");
    assert!(out.contains("Approve plan-for-src"), "{out}");
    let v = parse(&run_in(d.path(), &["runs", "--format", "json"]));
    let id = v[0]["run_id"].as_str().unwrap_or_default().to_string();
    let state = parse(&run_in(d.path(), &["runs", "show", &id]));
    assert_eq!(state["status"], "ok", "{state}");
    assert_eq!(state["stores"]["built"], "built-with-ship it\n", "{state}");

    let d = project();
    let Some(o) = on_a_terminal(d.path(), &["run", "staged.yaml"], "n\nnot yet\n") else {
        return;
    };
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("PW0813") && out.contains("not yet"), "{out}");
}

/// A foreach step resumed after its first iteration landed, then replayed whole by a second
/// resume, gives the context of an uninterrupted run: what the replayed iteration set (here only
/// the first sets `only_first`) is part of the step's own landing, not only of the iteration's.
#[test]
fn a_foreach_resumed_twice_keeps_what_its_replayed_iterations_set() {
    resumed_twice("resume-twice.yaml");
}

/// The same for a while loop's iterations.
#[test]
fn a_while_loop_resumed_twice_keeps_what_its_replayed_iterations_set() {
    resumed_twice("resume-twice-while.yaml");
}

/// Runs `file` (its second iteration fails until `fixed` exists, the step after it until
/// `fixed2` does) to the end through two resumes; its last step prints `only_first`, which
/// only the first iteration sets.
fn resumed_twice(file: &str) {
    let d = project();
    let (code, failed) = run_json(d.path(), &[file]);
    assert_eq!(code, Some(1), "the second iteration fails: {failed}");
    let id = failed["run_id"].as_str().unwrap_or_default().to_string();
    std::fs::write(d.path().join("fixed"), "").unwrap_or_else(|e| panic!("{e}"));
    let (code, again) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(1), "the next step fails: {again}");
    std::fs::write(d.path().join("fixed2"), "").unwrap_or_else(|e| panic!("{e}"));
    let (code, done) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{done}");
    assert_eq!(done["stores"]["only_first"], "only-1\n", "{done}");
    assert_eq!(done["output"], "only-1\n", "{done}");
}

/// A gate in a sub-recipe that a foreach's iterations call: each iteration pauses at it, and
/// its decision is kept when the iteration runs again on the resume (its steps before the gate
/// run again, as an iteration does), so approving each gate finishes the run.
#[test]
fn gates_in_a_foreach_s_iterations_are_decided_one_by_one() {
    let d = project();
    let (id, v) = pause(d.path(), "gated-loop.yaml");
    assert_eq!(v["pending"]["prompt"], "child ok c1-x\n?", "{v}");
    let o = run_in(d.path(), &["approve", &id, "--message", "one"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (code, v) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(3), "the second iteration's gate waits: {v}");
    assert_eq!(v["pending"]["prompt"], "child ok c1-y\n?", "{v}");
    let o = run_in(d.path(), &["approve", &id, "--message", "two"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (code, r) = run_json(d.path(), &["--resume", &id]);
    assert_eq!(code, Some(0), "{r}");
    let c2: Vec<&Value> = r["stores"]["all"]
        .as_array()
        .map(|a| a.iter().map(|g| &g["c2"]).collect())
        .unwrap_or_default();
    assert_eq!(c2, [&json!("c2-one\n"), &json!("c2-two\n")], "{r}");
}
