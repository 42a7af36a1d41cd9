use crate::run::common::*;
use pipewright_runtime::backend::openai::OpenAiBackend;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// A local mock server: answers the first `fail_first` requests with 429/503, then replies
/// with `content`. It stops after `total` connections.
async fn serve(
    fail_first: usize,
    content: &'static str,
    seen: Arc<Mutex<Vec<String>>>,
) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let count = Arc::new(AtomicUsize::new(0));
    let handle = tokio::spawn(async move {
        for _ in 0..fail_first + 1 {
            let Ok(Ok((mut sock, _))) =
                tokio::time::timeout(Duration::from_secs(10), listener.accept()).await
            else {
                return;
            };
            let request = read_request(&mut sock).await;
            seen.lock().unwrap_or_else(|p| p.into_inner()).push(request);
            let i = count.fetch_add(1, Ordering::SeqCst);
            let resp = if i < fail_first {
                let status = if i.is_multiple_of(2) {
                    "429 Too Many Requests"
                } else {
                    "503 Service Unavailable"
                };
                format!("HTTP/1.1 {status}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}")
            } else {
                let body = serde_json::json!({"choices": [{"message": {"role": "assistant", "content": content}}]}).to_string();
                // Chunked, as many servers answer.
                format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n", body.len())
            };
            let _ = sock.write_all(resp.as_bytes()).await;
            let _ = sock.shutdown().await;
        }
    });
    (format!("http://{addr}/v1/chat/completions"), handle)
}

fn backend(url: String, retries: u32) -> OpenAiBackend {
    OpenAiBackend {
        url,
        model: "test-model".into(),
        api_key: Some("sk-test".into()),
        timeout: Duration::from_secs(10),
        max_retries: retries,
        base_delay: Duration::from_millis(5),
        ca_file: None,
    }
}

#[test]
fn openai_backend_json_mode_and_back_off() {
    let rt = rt();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (url, server) = rt.block_on(serve(2, "{\"passed\": true}", seen.clone()));
    let (p, s) = load("schema: R\nfields:\n  passed: {type: bool}\n---\npipeline: p\nsteps:\n  - agent: {prompt: \"Review it\", schema: R}\n");
    let d = tempdir();
    let mut o = opts(d.path());
    o.backend = Arc::new(backend(url, 3));
    let out = rt
        .block_on(pipewright_pipeline::run::run(p, &s, o))
        .unwrap_or_else(|e| panic!("{e}"));
    let v = out.to_json(&s);
    assert_eq!(v["output"]["passed"], true, "{v}");
    let _ = rt.block_on(server);
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    assert_eq!(seen.len(), 3, "two failures, then success");
    assert!(seen[2].contains("Authorization: Bearer sk-test"));
    assert!(seen[2].contains("\"response_format\":{\"type\":\"json_object\"}"));
    assert!(seen[2].contains("\"model\":\"test-model\""));
}

#[test]
fn openai_backend_gives_up_after_retries() {
    let rt = rt();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (url, server) = rt.block_on(serve(5, "never", seen));
    let (p, s) = load("pipeline: p\nsteps:\n  - agent: {prompt: \"x\"}\n");
    let d = tempdir();
    let mut o = opts(d.path());
    o.backend = Arc::new(backend(url, 1));
    let out = rt
        .block_on(pipewright_pipeline::run::run(p, &s, o))
        .unwrap_or_else(|e| panic!("{e}"));
    let v = out.to_json(&s);
    assert_eq!(v["error"]["code"], "PW0803", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("HTTP 503 after 2 attempt(s)"),
        "{v}"
    );
    server.abort();
}

/// A local server answering connection `i` with `replies[i](request)`, then closing; it stops
/// after the last reply. Returns the URL, the number of connections served and the task.
async fn serve_replies(
    replies: Vec<fn(&str) -> String>,
) -> (String, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let count = Arc::new(AtomicUsize::new(0));
    let served = count.clone();
    let handle = tokio::spawn(async move {
        for reply in replies {
            let Ok(Ok((mut sock, _))) =
                tokio::time::timeout(Duration::from_secs(10), listener.accept()).await
            else {
                return;
            };
            let request = read_request(&mut sock).await;
            served.fetch_add(1, Ordering::SeqCst);
            let _ = sock.write_all(reply(&request).as_bytes()).await;
            let _ = sock.shutdown().await;
        }
    });
    (format!("http://{addr}/v1/chat/completions"), count, handle)
}

fn ok_reply(content: &str) -> String {
    let body =
        serde_json::json!({"choices": [{"message": {"role": "assistant", "content": content}}]})
            .to_string();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn openai_body_shorter_than_its_content_length_is_retried() {
    let rt = rt();
    let (url, served, server) = rt.block_on(serve_replies(vec![
        // 10 of the 100 announced bytes, then the connection closes.
        |_| {
            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"choices\"".into()
        },
        |_| ok_reply("whole"),
    ]));
    let d = tempdir();
    let mut o = opts(d.path());
    o.backend = Arc::new(backend(url, 2));
    let v = run_json("pipeline: p\nsteps:\n  - agent: {prompt: \"x\"}\n", o);
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["output"], "whole", "{v}");
    assert_eq!(
        served.load(Ordering::SeqCst),
        2,
        "the cut reply was retried"
    );
    let _ = rt.block_on(server);
}

#[test]
fn openai_short_body_on_the_last_attempt_is_a_transport_error() {
    let rt = rt();
    let (url, _, server) = rt.block_on(serve_replies(vec![|_| {
        "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"choices\"".into()
    }]));
    let d = tempdir();
    let mut o = opts(d.path());
    o.backend = Arc::new(backend(url, 0));
    let v = run_json("pipeline: p\nsteps:\n  - agent: {prompt: \"x\"}\n", o);
    assert_eq!(v["error"]["code"], "PW0803", "{v}");
    let message = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("closed after 10 of the 100 body bytes"),
        "{v}"
    );
    let _ = rt.block_on(server);
}

const ECHOED_KEY: &str = "sk-echoed-0123456789abcdefABCDEF";

/// The server's reply quoting the request's Authorization header, as some gateways do.
fn echo_authorization(status: &str, request: &str) -> String {
    let auth = request
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("authorization:"))
        .unwrap_or("no authorization header");
    let body = serde_json::json!({"error": {"message": format!("invalid credentials: {auth}")}})
        .to_string();
    format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn openai_key_echoed_in_an_error_body_is_recorded_nowhere() {
    for (status, retries) in [
        ("401 Unauthorized", 0usize),
        ("500 Internal Server Error", 1),
    ] {
        let rt = rt();
        let reply: fn(&str) -> String = if status.starts_with("401") {
            |r| echo_authorization("401 Unauthorized", r)
        } else {
            |r| echo_authorization("500 Internal Server Error", r)
        };
        // Two agent steps, each tried 1 + retries times (a 401 is not retried).
        let (url, served, server) = rt.block_on(serve_replies(vec![reply; 2 * (retries + 1)]));
        let d = tempdir();
        let mut o = opts(d.path());
        let mut b = backend(url, retries as u32);
        b.api_key = Some(ECHOED_KEY.into());
        o.backend = Arc::new(b);
        o.store = Some(store_at(d.path()));
        // A fan-out under continue records the error as a drop as well as in the events.
        let (out, s) = exec(
            "pipeline: p\nsteps:\n  - for_each:\n      items: [1]\n      on_error: continue\n      do: {agent: {prompt: \"x\"}}\n      collect: {transform: {value: \"pipe\"}}\n  - agent: {prompt: \"y\"}\n",
            o,
        );
        let _ = rt.block_on(server);
        assert_eq!(served.load(Ordering::SeqCst), 2 * (retries + 1), "{status}");
        let report = out.to_json(&s).to_string();
        let diag = format!("{:?}", out.diagnostic());
        assert!(
            report.contains("invalid credentials: Authorization: Bearer [REDACTED]"),
            "{report}"
        );
        let (id, state) = only_run(d.path()).unwrap_or_else(|| panic!("no run recorded"));
        let events = store_at(d.path())
            .events(&id)
            .unwrap_or_else(|e| panic!("{e}"))
            .join("\n");
        assert!(events.contains("[REDACTED]"), "{events}");
        for (what, text) in [
            ("report", report),
            ("diagnostic", diag),
            ("state", state.to_string()),
            ("events", events),
        ] {
            assert!(
                !text.contains(ECHOED_KEY),
                "{status}: the key is in the {what}: {text}"
            );
            assert!(
                !text.contains("sk-echoed"),
                "{status}: a part of the key is in the {what}"
            );
        }
    }
}

/// A chat completion's `usage` is what the call cost: its prompt and completion tokens (no
/// cost: the server does not say one), with the model that answered, for `[prices]`.
#[test]
fn openai_usage_is_read_from_the_response() {
    use pipewright_runtime::backend::{AgentBackend as _, AgentRequest};
    let rt = rt();
    fn with_usage(_: &str) -> String {
        let body = serde_json::json!({
            "choices": [{"message": {"role": "assistant", "content": "fine"}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 34, "total_tokens": 46}
        })
        .to_string();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }
    let (url, _, server) = rt.block_on(serve_replies(vec![with_usage]));
    let b = backend(url, 0);
    let req = AgentRequest {
        run_id: "r".into(),
        step: "0".into(),
        workflow: "w".into(),
        prompt: "p".into(),
        identity: "i".into(),
        tools: Vec::new(),
        schema_name: None,
        schema: None,
        model: None,
        mode: None,
        shape: None,
    };
    let reply = rt
        .block_on(b.reply(&req))
        .unwrap_or_else(|e| panic!("{}", e.message));
    assert_eq!(reply.text, "fine");
    assert_eq!(reply.usage.input_tokens, Some(12));
    assert_eq!(reply.usage.output_tokens, Some(34));
    assert_eq!(reply.usage.cost_usd, None, "unknown, never 0");
    assert_eq!(reply.model.as_deref(), Some("test-model"));
    let _ = rt.block_on(server);
}
