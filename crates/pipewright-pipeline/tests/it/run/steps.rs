use crate::run::common::*;
use serde_json::json;

#[test]
fn transform_pipe_and_named_stores() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.input = json!({"name": "Reyn"});
    let v = run_json(
        "pipeline: hello\nsteps:\n  - transform: {value: \"'Hello, ' + ctx.name + '!'\", output: greeting}\n  - transform: {value: \"pipe + ' ' + ctx.greeting\"}\n",
        o,
    );
    assert_eq!(v["status"], "ok");
    assert_eq!(v["output"], "Hello, Reyn! Hello, Reyn!");
    assert_eq!(
        v["stores"],
        json!({"name": "Reyn", "greeting": "Hello, Reyn!"})
    );
}

#[test]
fn failure_points_at_the_expression_and_names_the_value() {
    let d = tempdir();
    let (out, s) = exec("pipeline: p\nsteps:\n  - transform: {value: \"[1, 2]\", output: xs}\n  - transform: {value: \"ctx.xs + 1\"}\n", opts(d.path()));
    let v = out.to_json(&s);
    assert_eq!(v["status"], "failed");
    assert_eq!(v["error"]["code"], "PW0800");
    assert_eq!(v["error"]["step"], "1");
    assert_eq!(v["error"]["line"], 4);
    assert_eq!(v["error"]["value"], json!({"ctx.xs": [1, 2]}), "{v}");
    let diag = out.diagnostic().unwrap_or_else(|| panic!("no diagnostic"));
    let file = s
        .get(diag.primary.span.file)
        .unwrap_or_else(|| panic!("file"));
    assert_eq!(file.slice(diag.primary.span), "ctx.xs + 1");
    assert!(diag.message.contains("arithmetic"), "{}", diag.message);
    assert!(
        diag.notes.iter().any(|n| n == "ctx.xs was: [1,2]"),
        "{:?}",
        diag.notes
    );
    assert_eq!(out.exit_code(), 1);
}

#[test]
fn file_tools_and_literal_vs_expr_args() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.input = json!({"body": "hi {ctx.body}"});
    let v = run_json(
        "pipeline: p\nsteps:\n  - tool: {name: file__write, args: {path: \"sub/a.txt\", content: !expr ctx.body}, output: w}\n  - tool: {name: file__write, args: {path: \"b.txt\", content: \"ctx.body\"}}\n  - tool: {name: file__read, args: {path: \"sub/a.txt\"}, output: r}\n",
        o,
    );
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["stores"]["r"], json!({"text": "hi {ctx.body}"}));
    assert_eq!(v["stores"]["w"]["structured"]["bytes"], 13);
    assert_eq!(
        std::fs::read_to_string(d.path().join("b.txt"))
            .ok()
            .as_deref(),
        Some("ctx.body")
    );
}

#[test]
fn file_tools_refuse_paths_that_escape() {
    let d = tempdir();
    for path in ["../x.txt", "/etc/passwd", "a/../../x"] {
        let text = format!(
            "pipeline: p\nsteps:\n  - tool: {{name: file__read, args: {{path: \"{path}\"}}}}\n"
        );
        let v = run_json(&text, opts(d.path()));
        assert_eq!(v["status"], "failed", "{path}");
        assert_eq!(v["error"]["code"], "PW0801");
    }
}

#[test]
fn tool_on_error_policies() {
    let d = tempdir();
    // continue: a raised error becomes an envelope.
    let v = run_json("pipeline: p\nsteps:\n  - tool: {name: nope, on_error: continue, output: r}\n  - transform: {value: \"ctx.r.meta.isError\"}\n", opts(d.path()));
    assert_eq!(v["output"], true, "{v}");
    // omitted: an error-flagged result passes through as a value.
    let v = run_json("pipeline: p\nsteps:\n  - shell: {command: \"echo oops >&2; exit 3\"}\n  - transform: {value: \"pipe.structured.exit_code\"}\n", opts(d.path()));
    assert_eq!(v["output"], 3, "{v}");
    // abort: an error-flagged result fails the step.
    let v = run_json(
        "pipeline: p\nsteps:\n  - shell: {command: \"exit 3\", on_error: abort}\n",
        opts(d.path()),
    );
    assert_eq!(v["status"], "failed");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("on_error='abort'"),
        "{v}"
    );
    // retry(2): three attempts, the third succeeds.
    let v = run_json(
        "pipeline: p\nsteps:\n  - shell: {command: \"echo x >> tries; test $(wc -l < tries) -ge 3\", on_error: \"retry(2)\"}\n",
        opts(d.path()),
    );
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(
        std::fs::read_to_string(d.path().join("tries"))
            .map(|s| s.lines().count())
            .ok(),
        Some(3)
    );
}

#[test]
fn shell_gets_values_only_through_expr_and_times_out() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.input = json!({"word": "$(echo injected)"});
    let v = run_json(
        "pipeline: p\nsteps:\n  - shell: {command: \"echo '{ctx.word}'\"}\n",
        o,
    );
    assert_eq!(v["output"]["text"], "{ctx.word}\n");
    let mut o = opts(d.path());
    o.tools.shell_timeout = std::time::Duration::from_millis(300);
    let t0 = std::time::Instant::now();
    let v = run_json(
        "pipeline: p\nsteps:\n  - shell: {command: \"sleep 30\"}\n",
        o,
    );
    assert_eq!(v["status"], "failed");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("timed out"),
        "{v}"
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn tool_and_agent_schema_verification() {
    let d = tempdir();
    let schema = "schema: S\nfields:\n  n: {type: number, required: true}\n---\n";
    let ok = format!("{schema}pipeline: p\nsteps:\n  - shell: {{command: \"echo '{{\\\"n\\\": 2}}'\", schema: S}}\n");
    let v = run_json(&ok, opts(d.path()));
    assert_eq!(v["output"]["structured"]["n"], 2, "{v}");
    let bad = format!("{schema}pipeline: p\nsteps:\n  - shell: {{command: \"echo '{{\\\"n\\\": \\\"x\\\"}}'\", schema: S}}\n");
    let v = run_json(&bad, opts(d.path()));
    assert_eq!(v["error"]["code"], "PW0802", "{v}");
    // The mock backend satisfies the schema.
    let agent =
        format!("{schema}pipeline: p\nsteps:\n  - agent: {{prompt: \"Count\", schema: S}}\n");
    let v = run_json(&agent, opts(d.path()));
    assert_eq!(v["output"], json!({"n": 1}), "{v}");
}

#[test]
fn agent_prompt_renders_json_and_mock_names_the_step() {
    use pipewright_runtime::backend::{AgentBackend, AgentRequest, BackendError, BoxFuture};
    use std::sync::{Arc, Mutex};
    struct Rec(Mutex<Vec<AgentRequest>>);
    impl AgentBackend for Rec {
        fn name(&self) -> &str {
            "rec"
        }
        fn complete<'a>(
            &'a self,
            req: &'a AgentRequest,
        ) -> BoxFuture<'a, Result<String, BackendError>> {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(req.clone());
            Box::pin(async { Ok("done".to_string()) })
        }
    }
    let d = tempdir();
    let rec = Arc::new(Rec(Mutex::new(Vec::new())));
    let mut o = opts(d.path());
    o.backend = rec.clone();
    o.envelope = Some(vec!["file__read".into(), "shell".into()]);
    o.input = json!({"l": [1, "a"], "f": 3.0, "o": {"k": null}});
    let v = run_json(
        "pipeline: p\nsteps:\n  - agent: {prompt: \"L={ctx.l} F={ctx.f} O={ctx.o}\", identity: reviewer, capabilities: {tools: [file__read, file__write]}}\n",
        o,
    );
    assert_eq!(v["output"], "done");
    let reqs = rec.0.lock().unwrap_or_else(|p| p.into_inner());
    assert_eq!(reqs[0].prompt, "L=[1,\"a\"] F=3.0 O={\"k\":null}");
    assert_eq!(reqs[0].identity, "reviewer");
    assert_eq!(reqs[0].tools, ["file__read"]);
    let v = run_json(
        "pipeline: p\nsteps:\n  - agent: {prompt: \"hi\"}\n",
        opts(d.path()),
    );
    assert_eq!(v["output"], "mock reply for step 0 of p");
}

#[test]
fn call_and_match_isolate_stores_with_pass() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.input = json!({"a": 1, "secret": 2});
    let text = "pipeline: main\nsteps:\n  - transform: {value: \"10\"}\n  - call: {pipeline: sub, pass: [a], output: r}\n  - match:\n      on: \"ctx.r.seen > 0\"\n      cases:\n        \"True\": {pipeline: yes}\n        \"False\": {pipeline: no}\n---\npipeline: sub\nsteps:\n  - transform: {value: \"{seen: ctx.a + pipe, keys: count(map([ctx], c -> c)), has_secret: get(ctx, 'secret', 'absent')}\"}\n---\npipeline: yes\nsteps:\n  - transform: {value: \"'took yes'\"}\n---\npipeline: no\nsteps:\n  - transform: {value: \"'took no'\"}\n";
    let v = run_json(text, o);
    assert_eq!(
        v["stores"]["r"],
        json!({"seen": 11, "keys": 1, "has_secret": "absent"}),
        "{v}"
    );
    assert_eq!(v["output"], "took yes");
    let v = run_json(
        "pipeline: main\nsteps:\n  - match: {on: \"3\", cases: {\"1\": {pipeline: main}}}\n",
        opts(d.path()),
    );
    assert_eq!(v["error"]["code"], "PW0804", "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("matched no case"));
}

#[test]
fn fold_threads_acc_and_truncates() {
    let d = tempdir();
    let v = run_json("pipeline: p\nsteps:\n  - fold: {items: [1, 2, 3, 4], init: \"0\", do: {transform: {value: \"acc + item\"}}, output: total, max_items: 3}\n", opts(d.path()));
    assert_eq!(v["stores"]["total"], 6, "{v}");
    let v = run_json("pipeline: p\nsteps:\n  - fold: {over: \"5\", init: \"0\", do: {transform: {value: \"acc\"}}, output: t}\n", opts(d.path()));
    assert_eq!(v["error"]["code"], "PW0805");
}

#[test]
fn for_each_keeps_item_order_and_isolates_items() {
    let d = tempdir();
    let v = run_json(
        "pipeline: p\nsteps:\n  - for_each:\n      items: [3, 1, 2]\n      on_error: abort\n      do: {shell: {command: !expr \"'sleep 0.' + join(map([item], i -> 'x'), '') + '; echo ok'\"}}\n      collect: {transform: {value: \"count(pipe)\"}}\n  - for_each:\n      items: [30, 10, 20]\n      max_parallel: 3\n      on_error: abort\n      do: {transform: {value: \"item * 2\", output: leaked}}\n      collect: {transform: {value: \"{r: pipe, leaked: get(ctx, 'leaked', 'no')}\"}}\n",
        opts(d.path()),
    );
    assert_eq!(
        v["output"],
        json!({"r": [60, 20, 40], "leaked": "no"}),
        "{v}"
    );
}

#[test]
fn for_each_on_error_policies() {
    let d = tempdir();
    let body =
        "do: {transform: {value: \"10 / item\"}}\n      collect: {transform: {value: \"pipe\"}}";
    let v = run_json(&format!("pipeline: p\nsteps:\n  - for_each:\n      items: [1, 0, 2]\n      on_error: continue\n      {body}\n"), opts(d.path()));
    assert_eq!(v["output"], json!([10, 5]), "{v}");
    let v = run_json(&format!("pipeline: p\nsteps:\n  - for_each:\n      items: [1, 0, 2]\n      on_error: abort\n      {body}\n"), opts(d.path()));
    assert_eq!(v["error"]["code"], "PW0806", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("item 1 failed (on_error='abort')"),
        "{v}"
    );
    // retry(2): the shell body fails twice per item, then succeeds.
    let v = run_json(
        "pipeline: p\nsteps:\n  - for_each:\n      items: [a, b]\n      on_error: \"retry(2)\"\n      do: {shell: {command: !expr \"'echo x >> t_' + item + '; test $(wc -l < t_' + item + ') -ge 3 && echo ' + item\"}}\n      collect: {transform: {value: \"map(pipe, r -> r.text)\"}}\n",
        opts(d.path()),
    );
    assert_eq!(v["output"], json!(["a\n", "b\n"]), "{v}");
    let v = run_json(
        "pipeline: p\nsteps:\n  - for_each:\n      items: [a]\n      on_error: \"retry(1)\"\n      do: {shell: {command: \"exit 1\", on_error: continue}}\n      collect: {transform: {value: \"pipe\"}}\n",
        opts(d.path()),
    );
    assert_eq!(
        v["status"], "failed",
        "an error-flagged tool result fails the item: {v}"
    );
}

#[test]
fn parallel_branches_and_errors() {
    let d = tempdir();
    let v = run_json(
        "pipeline: p\nsteps:\n  - transform: {value: \"7\"}\n  - parallel:\n      on_error: continue\n      branches:\n        a: {transform: {value: \"pipe + 1\"}}\n        b: {transform: {value: \"pipe / 0\"}}\n        c: {agent: {prompt: \"hi\"}}\n      collect: {transform: {value: \"{a: pipe.a, c: pipe.c, err: get(pipe, '__branch_errors__.b', '') != ''}\"}}\n",
        opts(d.path()),
    );
    assert_eq!(
        v["output"],
        json!({"a": 8, "c": "mock reply for step 1.parallel.c of p", "err": true}),
        "{v}"
    );
    let v = run_json("pipeline: p\nsteps:\n  - parallel:\n      branches:\n        b: {transform: {value: \"1 / 0\"}}\n      collect: {transform: {value: \"pipe\"}}\n", opts(d.path()));
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("branch 'b' failed (on_error='abort')"),
        "{v}"
    );
}

#[test]
fn caps_depth_and_spawn_budget() {
    let d = tempdir();
    let nested = "pipeline: p\nsteps:\n  - for_each:\n      items: [1]\n      on_error: abort\n      do:\n        for_each:\n          items: [1]\n          on_error: abort\n          do: {transform: {value: \"item\"}}\n          collect: {transform: {value: \"pipe\"}}\n      collect: {transform: {value: \"pipe\"}}\n";
    let mut o = opts(d.path());
    o.caps.max_fan_out_depth = 1;
    let v = run_json(nested, o);
    assert_eq!(v["error"]["code"], "PW0806", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("fan-out depth 2 exceeds the operator cap 1"),
        "{v}"
    );
    let mut o = opts(d.path());
    o.caps.max_fan_out_depth = 2;
    assert_eq!(run_json(nested, o)["output"], json!([[1]]));
    let fan = "pipeline: p\nsteps:\n  - for_each:\n      items: [1, 2, 3, 4, 5]\n      on_error: continue\n      do: {agent: {prompt: \"x\"}}\n      collect: {transform: {value: \"count(pipe)\"}}\n";
    let mut o = opts(d.path());
    o.caps.max_spawns = 3;
    assert_eq!(run_json(fan, o)["output"], 3);
    // The default budget (100) is finite.
    let big = "pipeline: p\nsteps:\n  - for_each:\n      over: \"map([1,2,3,4,5,6,7,8,9,10,11], x -> x)\"\n      on_error: abort\n      do:\n        for_each:\n          items: [1,2,3,4,5,6,7,8,9,10]\n          on_error: abort\n          do: {agent: {prompt: \"x\"}}\n          collect: {transform: {value: \"pipe\"}}\n      collect: {transform: {value: \"pipe\"}}\n";
    let v = run_json(big, opts(d.path()));
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("spawn cap (100)"),
        "{v}"
    );
}

#[test]
fn setup_errors_are_reported_before_running() {
    let d = tempdir();
    let (p, s) = load("pipeline: p\nsteps:\n  - transform: {value: \"1\"}\n");
    let mut o = opts(d.path());
    o.workflow = Some("nope".into());
    let r = rt().block_on(pipewright_pipeline::run::run(p.clone(), &s, o));
    assert!(r.is_err_and(|e| e.contains("no pipeline named `nope`")));
    let mut o = opts(d.path());
    o.input = json!([1]);
    assert!(rt()
        .block_on(pipewright_pipeline::run::run(p, &s, o))
        .is_err());
}

#[test]
fn empty_output_name_is_never_written() {
    // The reference accepts `output: ""` and writes no store (writes need a non-empty name):
    // a warning at load time, and the run goes on as if `output` were absent.
    let text = "pipeline: p\nsteps:\n  - transform: {value: \"1\", output: \"\"}\n  - transform: {value: \"pipe + 1\"}\n";
    let mut sources = pipewright_syntax::SourceMap::new();
    let file = sources.add("t.yaml", text);
    let mut diags = Vec::new();
    pipewright_pipeline::load_source(file, text, &mut diags);
    let codes: Vec<_> = diags.iter().map(|d| (d.code, d.is_error())).collect();
    assert_eq!(codes, [("PW0218", false)], "{diags:#?}");
    let d = tempdir();
    let v = run_json(text, opts(d.path()));
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["output"], 2);
    assert_eq!(v["stores"], json!({}), "{v}");
}

#[test]
fn continue_envelope_holds_the_raw_error() {
    let d = tempdir();
    // A raised tool error: the envelope's text is the tool's own words, not the step's.
    let v = run_json("pipeline: p\nsteps:\n  - tool: {name: nope, on_error: continue, output: r}\n  - transform: {value: \"ctx.r\"}\n", opts(d.path()));
    let text = v["output"]["text"].as_str().unwrap_or("");
    assert!(text.starts_with("`nope` does not resolve to a tool"), "{v}");
    assert_eq!(v["output"]["structured"]["error"], text, "{v}");
    // An `!expr` argument that fails to evaluate: the raw R1 error, without `argument … failed`.
    let v = run_json("pipeline: p\nsteps:\n  - tool: {name: file__read, args: {path: !expr \"1 / 0\"}, on_error: continue}\n", opts(d.path()));
    assert_eq!(v["output"]["text"], "division by zero", "{v}");
    assert_eq!(v["output"]["meta"]["isError"], true, "{v}");
}

#[test]
fn branch_errors_hold_the_raw_error() {
    let d = tempdir();
    let v = run_json(
        "pipeline: p\nsteps:\n  - parallel:\n      on_error: continue\n      branches:\n        ok: {transform: {value: \"1\"}}\n        div: {transform: {value: \"1 / 0\"}}\n        flagged: {shell: {command: \"echo bad >&2; exit 3\", on_error: abort}}\n        nested:\n          for_each: {items: [1], on_error: abort, do: {transform: {value: \"item / 0\"}}, collect: {transform: {value: \"pipe\"}}}\n      collect: {transform: {value: \"pipe.__branch_errors__\"}}\n",
        opts(d.path()),
    );
    assert_eq!(
        v["output"],
        json!({"div": "division by zero", "flagged": "exit status 3: bad", "nested": "division by zero"}),
        "{v}"
    );
}

#[test]
fn exit_statuses_and_signals_are_worded_not_debug_printed() {
    let d = tempdir();
    let with_tools = || {
        let mut o = opts(d.path());
        for (name, script) in [("fails", "echo bad >&2; exit 1"), ("killed", "kill -9 $$")] {
            o.tools.project.insert(
                name.into(),
                pipewright_runtime::tools::ProjectTool {
                    command: vec!["sh".into(), "-c".into(), script.into()],
                    timeout: std::time::Duration::from_secs(20),
                    withhold_env: Vec::new(),
                },
            );
        }
        o
    };
    let v = run_json(
        "pipeline: p\nsteps:\n  - tool: {name: fails}\n",
        with_tools(),
    );
    assert_eq!(
        v["error"]["message"], "tool `fails` exited with status 1: bad",
        "{v}"
    );
    let v = run_json(
        "pipeline: p\nsteps:\n  - tool: {name: killed}\n",
        with_tools(),
    );
    assert_eq!(
        v["error"]["message"], "tool `killed` was killed by signal 9 (SIGKILL)",
        "{v}"
    );
    let v = run_json(
        "pipeline: p\nsteps:\n  - shell: {command: \"kill -9 $$\"}\n",
        opts(d.path()),
    );
    assert_eq!(v["output"]["text"], "killed by signal 9 (SIGKILL)", "{v}");
}
