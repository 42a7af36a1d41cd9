//! The openai backend over `https://`: a local rustls server on 127.0.0.1 with a certificate
//! generated here (rcgen), trusted by the client only through `ca_file`. Nothing leaves the
//! machine.

use crate::run::common::*;
use pipewright_runtime::backend::openai::OpenAiBackend;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio_rustls::rustls::{
    self,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer},
};

/// A self-signed certificate for 127.0.0.1 and its PEM text (what `ca_file` holds).
fn certificate() -> (CertificateDer<'static>, PrivateKeyDer<'static>, String) {
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])
        .unwrap_or_else(|e| panic!("rcgen: {e}"));
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    (ck.cert.der().clone(), key, ck.cert.pem())
}

/// A one-shot HTTPS chat-completions server. Every TCP connection is counted (so a test can
/// tell whether the client retried); the first completed request is recorded and answered.
async fn serve_tls(
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    content: &'static str,
    seen: Arc<Mutex<Vec<String>>>,
    connections: Arc<AtomicUsize>,
) -> (String, tokio::task::JoinHandle<()>) {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap_or_else(|e| panic!("{e}"))
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap_or_else(|e| panic!("{e}"));
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let handle = tokio::spawn(async move {
        loop {
            let Ok(Ok((sock, _))) =
                tokio::time::timeout(Duration::from_secs(10), listener.accept()).await
            else {
                return;
            };
            connections.fetch_add(1, Ordering::SeqCst);
            // A rejected handshake is the client's doing; wait for the next connection.
            let Ok(Ok(mut tls)) =
                tokio::time::timeout(Duration::from_secs(10), acceptor.accept(sock)).await
            else {
                continue;
            };
            let request = read_request(&mut tls).await;
            seen.lock().unwrap_or_else(|p| p.into_inner()).push(request);
            let body = serde_json::json!({"choices": [{"message": {"role": "assistant", "content": content}}]}).to_string();
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tls.write_all(resp.as_bytes()).await;
            let _ = tls.shutdown().await;
            return;
        }
    });
    (format!("https://{addr}/v1/chat/completions"), handle)
}

fn backend(url: String, retries: u32, ca_file: Option<PathBuf>) -> OpenAiBackend {
    OpenAiBackend {
        url,
        model: "test-model".into(),
        api_key: Some("sk-test".into()),
        timeout: Duration::from_secs(10),
        max_retries: retries,
        base_delay: Duration::from_millis(200),
        ca_file,
    }
}

#[test]
fn openai_backend_round_trips_over_tls_with_a_private_ca() {
    let rt = rt();
    let (cert, key, pem) = certificate();
    let d = tempdir();
    let ca = d.path().join("ca.pem");
    std::fs::write(&ca, pem).unwrap_or_else(|e| panic!("{e}"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(AtomicUsize::new(0));
    let (url, server) = rt.block_on(serve_tls(
        cert,
        key,
        "{\"passed\": true}",
        seen.clone(),
        connections,
    ));
    let (p, s) = load("schema: R\nfields:\n  passed: {type: bool}\n---\npipeline: p\nsteps:\n  - agent: {prompt: \"Review it\", schema: R}\n");
    let mut o = opts(d.path());
    o.backend = Arc::new(backend(url, 0, Some(ca)));
    let out = rt
        .block_on(pipewright_pipeline::run::run(p, &s, o))
        .unwrap_or_else(|e| panic!("{e}"));
    let v = out.to_json(&s);
    assert_eq!(v["output"]["passed"], true, "{v}");
    let _ = rt.block_on(server);
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    assert_eq!(seen.len(), 1);
    assert!(seen[0].starts_with("POST /v1/chat/completions HTTP/1.1\r\n"));
    assert!(seen[0].contains("Authorization: Bearer sk-test"));
    assert!(seen[0].contains("\"model\":\"test-model\""));
}

#[test]
fn openai_backend_rejects_an_untrusted_certificate_quickly() {
    let rt = rt();
    let (cert, key, _) = certificate();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(AtomicUsize::new(0));
    let (url, server) = rt.block_on(serve_tls(
        cert,
        key,
        "never",
        seen.clone(),
        connections.clone(),
    ));
    let (p, s) = load("pipeline: p\nsteps:\n  - agent: {prompt: \"x\"}\n");
    let d = tempdir();
    let mut o = opts(d.path());
    // No ca_file: only the public roots, which do not include this certificate. Retries are
    // allowed, to show that a certificate failure is not retried.
    o.backend = Arc::new(backend(url, 3, None));
    let started = Instant::now();
    let out = rt
        .block_on(pipewright_pipeline::run::run(p, &s, o))
        .unwrap_or_else(|e| panic!("{e}"));
    let v = out.to_json(&s);
    assert_eq!(v["error"]["code"], "PW0803", "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    eprintln!("{msg}");
    assert!(msg.contains("TLS handshake with 127.0.0.1:"), "{msg}");
    assert!(msg.contains("certificate"), "{msg}");
    assert!(msg.contains("ca_file"), "{msg}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    server.abort();
    assert_eq!(connections.load(Ordering::SeqCst), 1, "not retried");
    assert!(seen.lock().unwrap_or_else(|p| p.into_inner()).is_empty());
}

#[test]
fn openai_backend_reports_an_unreadable_ca_file() {
    let rt = rt();
    let (p, s) = load("pipeline: p\nsteps:\n  - agent: {prompt: \"x\"}\n");
    let d = tempdir();
    let bogus = d.path().join("not-a-cert.pem");
    std::fs::write(&bogus, "hello\n").unwrap_or_else(|e| panic!("{e}"));
    for (ca, expect) in [
        (d.path().join("missing.pem"), "cannot read ca_file"),
        (bogus, "no PEM certificate"),
    ] {
        let mut o = opts(d.path());
        // Port 9 on 127.0.0.1: the CA file is checked before any connection is attempted.
        o.backend = Arc::new(backend(
            "https://127.0.0.1:9/v1/chat/completions".into(),
            0,
            Some(ca),
        ));
        let out = rt
            .block_on(pipewright_pipeline::run::run(p.clone(), &s, o))
            .unwrap_or_else(|e| panic!("{e}"));
        let v = out.to_json(&s);
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(msg.contains(expect), "{v}");
    }
}

#[test]
fn openai_backend_times_out_a_stalled_tls_handshake() {
    let rt = rt();
    // Accepts TCP connections and never speaks: the client's ClientHello goes unanswered.
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let server = rt.spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    let (p, s) = load("pipeline: p\nsteps:\n  - agent: {prompt: \"x\"}\n");
    let d = tempdir();
    let mut o = opts(d.path());
    let mut b = backend(format!("https://{addr}/v1/chat/completions"), 0, None);
    b.timeout = Duration::from_millis(500);
    o.backend = Arc::new(b);
    let started = Instant::now();
    let out = rt
        .block_on(pipewright_pipeline::run::run(p, &s, o))
        .unwrap_or_else(|e| panic!("{e}"));
    server.abort();
    let v = out.to_json(&s);
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(msg.contains("no response within 0.5s"), "{v}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
