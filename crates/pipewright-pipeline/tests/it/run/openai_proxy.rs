//! The openai backend through an HTTP proxy named by `HTTP_PROXY`. The backend runs in a child
//! process (this test executable, running one test): the variable is process-wide and would
//! route the other tests' local servers through it.

use crate::run::common::*;
use pipewright_runtime::backend::openai::OpenAiBackend;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

#[test]
fn openai_backend_goes_through_the_http_proxy_of_the_environment() {
    let rt = rt();
    let seen = Arc::new(Mutex::new(Vec::new()));
    // The proxy answers itself, as a forward proxy relays the origin's answer.
    let (proxy, server) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let seen = seen.clone();
        let handle = tokio::spawn(async move {
            let Ok(Ok((mut sock, _))) =
                tokio::time::timeout(Duration::from_secs(10), listener.accept()).await
            else {
                return;
            };
            let request = read_request(&mut sock).await;
            seen.lock().unwrap_or_else(|p| p.into_inner()).push(request);
            let body =
                serde_json::json!({"choices": [{"message": {"content": "via proxy"}}]}).to_string();
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
            let _ = sock.shutdown().await;
        });
        (format!("http://{addr}"), handle)
    });
    // The runtime's workers serve the proxy while this thread waits for the child.
    let child = this_test_alone(module_path!(), "child_runs_through_the_proxy")
        .env("PW_PROXY_TEST", "1")
        .env("HTTP_PROXY", &proxy)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .output()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr)
    );
    // "1 passed": the child found its test (a name it does not know runs nothing, and passes).
    assert!(
        child.status.success() && out.contains(" 1 passed"),
        "the child run: {out}"
    );
    let _ = rt.block_on(server);
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0].starts_with("POST http://origin.invalid:9/v1/chat/completions HTTP/1.1\r\n"),
        "the proxy gets the absolute URL: {}",
        seen[0]
    );
}

/// The child half of `openai_backend_goes_through_the_http_proxy_of_the_environment`: runs
/// only when the parent sets PW_PROXY_TEST, with HTTP_PROXY naming the parent's proxy.
#[test]
fn child_runs_through_the_proxy() {
    if std::env::var_os("PW_PROXY_TEST").is_none() {
        return;
    }
    let rt = rt();
    let d = tempdir();
    let mut o = opts(d.path());
    o.backend = Arc::new(OpenAiBackend {
        // Nothing listens here: only the proxy can answer.
        url: "http://origin.invalid:9/v1/chat/completions".into(),
        model: "m".into(),
        api_key: None,
        timeout: Duration::from_secs(10),
        max_retries: 0,
        base_delay: Duration::from_millis(5),
        ca_file: None,
    });
    let v = run_json("pipeline: p\nsteps:\n  - agent: {prompt: \"x\"}\n", o);
    assert_eq!(v["output"], "via proxy", "{v}");

    // The proxy has answered its one request; a server on the loopback is still reached,
    // directly.
    let (origin, direct) = rt.block_on(answer_once("direct"));
    let mut o = opts(d.path());
    o.backend = Arc::new(OpenAiBackend {
        url: format!("{origin}/v1/chat/completions"),
        model: "m".into(),
        api_key: None,
        timeout: Duration::from_secs(10),
        max_retries: 0,
        base_delay: Duration::from_millis(5),
        ca_file: None,
    });
    let v = run_json("pipeline: p\nsteps:\n  - agent: {prompt: \"x\"}\n", o);
    assert_eq!(
        v["output"], "direct",
        "a loopback endpoint bypasses the proxy: {v}"
    );
    let direct = rt.block_on(direct).unwrap_or_default();
    assert!(
        direct.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{direct}"
    );
}

/// A server on the loopback answering one request with `content`; the task returns the request.
async fn answer_once(content: &'static str) -> (String, tokio::task::JoinHandle<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let handle = tokio::spawn(async move {
        let Ok(Ok((mut sock, _))) =
            tokio::time::timeout(Duration::from_secs(10), listener.accept()).await
        else {
            return String::new();
        };
        let request = read_request(&mut sock).await;
        let body = serde_json::json!({"choices": [{"message": {"content": content}}]}).to_string();
        let resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = sock.write_all(resp.as_bytes()).await;
        let _ = sock.shutdown().await;
        request
    });
    (format!("http://{addr}"), handle)
}
