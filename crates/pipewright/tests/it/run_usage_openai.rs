//! Issue 25's end-to-end check on a real HTTP exchange: an OpenAI-compatible server on loopback
//! answers every chat completion with fixed `usage`, and a pipeline, a recipe, a MEOW template
//! and a state machine with three agent calls each record exactly three times that, per step and in all,
//! priced by the project's `[prices]`.

use crate::common::*;
use serde_json::Value;
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

/// Serves chat completions on 127.0.0.1 for 60 s at most (then it stops by itself): each
/// answers "Done." and a state-machine outcome line from model `fake-1` with 11 prompt tokens (3 of them cached) and 7 completion
/// tokens. Returns the URL and a counter of requests answered.
fn completions_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
    listener
        .set_nonblocking(true)
        .unwrap_or_else(|e| panic!("nonblocking: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("local_addr: {e}"));
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let Ok((mut sock, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let _ = sock.set_nonblocking(false);
            let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
            read_http_request(&mut sock);
            let body = serde_json::json!({
                "id": "c1", "object": "chat.completion", "model": "fake-1",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "Done.\n{\"outcome\": \"next\"}"}}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
                          "prompt_tokens_details": {"cached_tokens": 3}}
            })
            .to_string();
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = write!(
                sock,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (format!("http://{addr}/v1/chat/completions"), served)
}

const PIPELINE: &str = "pipeline: three\nsteps:\n  - agent: {prompt: \"first\", output: a}\n  - agent: {prompt: \"second\", output: b}\n  - agent: {prompt: \"third\", output: c}\n";
const RECIPE: &str = "name: three\ndescription: three agents\nversion: \"1.0.0\"\nsteps:\n  - id: one\n    agent: \"x:y\"\n    prompt: \"first\"\n    output: one\n  - id: two\n    agent: \"x:y\"\n    prompt: \"second\"\n    output: two\n  - id: three\n    agent: \"x:y\"\n    prompt: \"third\"\n    output: three\n";
const STATE_MACHINE: &str = r#"{"id": "three", "label": "Three", "description": "three turns", "initialStep": "one",
 "guardrails": {"maxStepVisits": 2, "maxTotalSteps": 10, "exitOnOther": true},
 "steps": {
  "one": {"prompt": "first", "outcomes": ["next", "other"], "onOutcome": {"next": {"nextStep": "two"}, "other": {"action": "exit", "reason": "stuck"}}},
  "two": {"prompt": "second", "outcomes": ["next", "other"], "onOutcome": {"next": {"nextStep": "three"}, "other": {"action": "exit", "reason": "stuck"}}},
  "three": {"prompt": "third", "outcomes": ["next", "other"], "onOutcome": {"next": {"action": "exit", "reason": "done"}, "other": {"action": "exit", "reason": "stuck"}}}}}"#;
const MEOW: &str = "[main]\n[[main.steps]]\nid = \"one\"\nexecutor = \"agent\"\nagent = \"w\"\nprompt = \"first\"\n\n[[main.steps]]\nid = \"two\"\nexecutor = \"agent\"\nagent = \"w\"\nneeds = [\"one\"]\nprompt = \"second\"\n\n[[main.steps]]\nid = \"three\"\nexecutor = \"agent\"\nagent = \"w\"\nneeds = [\"two\"]\nprompt = \"third\"\n";

fn run(dir: &Path, file: &str) -> Value {
    let o = run_in(
        dir,
        &["run", file, "--backend", "openai", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{file}: {}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{file}: {e}: {}", text(&o)))
}

#[test]
fn every_dialects_recorded_totals_are_the_sum_of_the_servers_usage() {
    let (url, served) = completions_server();
    let d = tempdir();
    std::fs::write(
        d.path().join("pipewright.toml"),
        format!(
            "[backend.openai]\nurl = \"{url}\"\nmodel = \"fake-1\"\nmax_retries = 1\n\n[prices]\n\"fake-1\" = {{ input_per_mtok = 1000000.0, output_per_mtok = 2000000.0 }}\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(d.path().join("three.yaml"), PIPELINE).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(d.path().join("three.recipe.yaml"), RECIPE).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(d.path().join("three.meow.toml"), MEOW).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(d.path().join("three.json"), STATE_MACHINE).unwrap_or_else(|e| panic!("{e}"));
    for file in [
        "three.yaml",
        "three.recipe.yaml",
        "three.meow.toml",
        "three.json",
    ] {
        let before = served.load(std::sync::atomic::Ordering::SeqCst);
        let v = run(d.path(), file);
        let calls = served.load(std::sync::atomic::Ordering::SeqCst) - before;
        assert_eq!(calls, 3, "{file}: the server answered {calls} calls");
        let u = &v["usage"];
        assert_eq!(u["agent_calls"], 3, "{file}: {u}");
        assert_eq!(u["input_tokens"], 33, "{file}: {u}");
        assert_eq!(u["output_tokens"], 21, "{file}: {u}");
        assert_eq!(u["cache_read_tokens"], 9, "{file}: {u}");
        // $1 per input token and $2 per output token: 11 + 14 a call.
        assert_eq!(u["cost_usd"], 75.0, "{file}: {u}");
        let steps = u["steps"].as_object().cloned().unwrap_or_default();
        assert_eq!(steps.len(), 3, "{file}: {u}");
        for (key, s) in &steps {
            assert_eq!(s["input_tokens"], 11, "{file} {key}: {u}");
            assert_eq!(s["cost_usd"], 25.0, "{file} {key}: {u}");
        }
        // The store says the same.
        let id = v["run_id"].as_str().unwrap_or_default();
        let shown = run_in(d.path(), &["runs", "show", id]);
        let state: Value = serde_json::from_slice(&shown.stdout)
            .unwrap_or_else(|e| panic!("{file}: {e}: {}", text(&shown)));
        assert_eq!(state["usage"]["input_tokens"], 33, "{file}: {state}");
        assert_eq!(state["usage"]["cost_usd"], 75.0, "{file}: {state}");
    }
}
