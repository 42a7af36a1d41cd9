mod common;
use common::*;
use pipewright_run::backend::openai::OpenAiBackend;
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
        .block_on(pipewright_run::run(p, &s, o))
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
        .block_on(pipewright_run::run(p, &s, o))
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
