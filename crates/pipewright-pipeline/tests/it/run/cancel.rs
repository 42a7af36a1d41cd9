//! The first cancel stops every step in flight (issue 11): a shell step, a back-off sleep, an
//! HTTP request that hangs and a long evaluation all end within moments, as cancelled, not
//! landed, and not failed.

use crate::run::common::*;
use pipewright_runtime::backend::openai::OpenAiBackend;
use pipewright_runtime::{CancelToken, EvalLimits};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// Cancels `token` once `ready()` holds (or after 10 s), plus `delay`; returns when it did.
fn cancel_when(
    token: CancelToken,
    delay: Duration,
    ready: impl Fn() -> bool + Send + 'static,
) -> std::thread::JoinHandle<Instant> {
    std::thread::spawn(move || {
        let t0 = Instant::now();
        while !ready() && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(delay);
        token.cancel();
        Instant::now()
    })
}

fn joined(h: std::thread::JoinHandle<Instant>) -> Instant {
    h.join()
        .unwrap_or_else(|_| panic!("the cancelling thread panicked"))
}

#[test]
fn a_cancel_kills_the_running_shell_step_and_resume_runs_it_again() {
    const SLEEPY: &str = "pipeline: p\nsteps:\n  - shell: {command: [sh, -c, \"echo first >> log; echo one\"], output: a}\n  - shell: {command: [sh, -c, \"echo second >> log; touch started; sleep 30; echo late >> log\"], output: b}\n  - transform: {value: \"ctx.a.text\"}\n";
    let d = tempdir();
    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    let started = d.path().join("started");
    let stopper = cancel_when(o.cancel.clone(), Duration::from_millis(100), move || {
        started.exists()
    });
    let (out, s) = exec(SLEEPY, o);
    let took = joined(stopper).elapsed();
    assert!(took < Duration::from_secs(2), "stopped after {took:?}");
    let v = out.to_json(&s);
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(v["cancelled_at"], "1", "{v}");
    assert_eq!(v["stores"], json!({"a": {"text": "one\n"}}), "{v}");
    let (id, state) = only_run(d.path()).unwrap_or_else(|| panic!("no run"));
    assert!(state["completed"].get("0").is_some(), "{state}");
    assert!(state["completed"].get("1").is_none(), "{state}");

    let mut o = opts(d.path());
    o.store = Some(store_at(d.path()));
    o.resume = Some(id);
    // The resumed step 1 is cut short too: only that it ran again matters here.
    let started = d.path().join("started");
    let _ = std::fs::remove_file(&started);
    let stopper = cancel_when(o.cancel.clone(), Duration::ZERO, move || started.exists());
    let v = run_json(SLEEPY, o);
    joined(stopper);
    assert_eq!(v["status"], "cancelled", "{v}");
    let log = std::fs::read_to_string(d.path().join("log")).unwrap_or_default();
    assert_eq!(
        log, "first\nsecond\nsecond\n",
        "step 0 replayed, step 1 run again"
    );
}

/// A server that reads each request and then answers 429 with a Retry-After of a minute, or
/// (`hang`) never answers.
async fn stalling(hang: bool, seen: Arc<Mutex<usize>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let _ = read_request(&mut sock).await;
            *seen.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            tokio::spawn(async move {
                if hang {
                    tokio::time::sleep(Duration::from_secs(120)).await;
                } else {
                    let resp = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 60\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
                    let _ = sock.write_all(resp.as_bytes()).await;
                    let _ = sock.shutdown().await;
                }
                drop(sock);
            });
        }
    });
    format!("http://{addr}/v1/chat/completions")
}

#[test]
fn a_cancel_stops_the_back_off_sleep_and_a_hanging_request() {
    for hang in [false, true] {
        let rt = rt();
        let seen = Arc::new(Mutex::new(0));
        let url = rt.block_on(stalling(hang, seen.clone()));
        let (p, s) = load("pipeline: p\nsteps:\n  - agent: {prompt: \"Review it\"}\n");
        let d = tempdir();
        let mut o = opts(d.path());
        o.store = Some(store_at(d.path()));
        o.backend = Arc::new(OpenAiBackend {
            url,
            model: "test-model".into(),
            api_key: None,
            timeout: Duration::from_secs(120),
            max_retries: 3,
            base_delay: Duration::from_secs(30),
            ca_file: None,
        });
        let stopper = cancel_when(o.cancel.clone(), Duration::from_millis(200), move || {
            *seen.lock().unwrap_or_else(|p| p.into_inner()) > 0
        });
        let out = rt
            .block_on(pipewright_pipeline::run::run(p, &s, o))
            .unwrap_or_else(|e| panic!("{e}"));
        let took = joined(stopper).elapsed();
        // The back-off is 30 s and the request's timeout 120 s: anything far below both is the
        // cancel at work (2 s was missed at 2.7 s on a machine busy with four builds).
        assert!(took < Duration::from_secs(10), "hang={hang}: {took:?}");
        let v = out.to_json(&s);
        assert_eq!(v["status"], "cancelled", "hang={hang}: {v}");
        assert_eq!(v["cancelled_at"], "0", "{v}");
        assert_eq!(out.exit_code(), 130);
        let (_, state) = only_run(d.path()).unwrap_or_else(|| panic!("no run"));
        assert_eq!(state["status"], "cancelled", "{state}");
        assert_eq!(state["completed"], json!({}), "{state}");
        // The server task goes with the runtime.
        drop(rt);
    }
}

#[test]
fn a_cancel_stops_a_long_evaluation() {
    let xs: Vec<u64> = (0..20_000).collect();
    let d = tempdir();
    let mut o = opts(d.path());
    o.input = json!({ "xs": xs });
    o.caps.eval = EvalLimits {
        max_steps: u64::MAX,
        max_bytes: u64::MAX,
    };
    let stopper = cancel_when(o.cancel.clone(), Duration::from_millis(300), || true);
    let t0 = Instant::now();
    let v = run_json(
        "pipeline: p\nsteps:\n  - transform: {value: \"'before'\", output: b}\n  - transform: {value: \"sum(map(ctx.xs, a -> sum(map(ctx.xs, b -> a * b))))\", output: big}\n",
        o,
    );
    let took = joined(stopper).elapsed();
    assert!(took < Duration::from_secs(2), "stopped after {took:?}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(v["cancelled_at"], "1", "{v}");
    assert_eq!(v["stores"]["b"], "before", "{v}");
}

/// The command backend's agent program is killed with its process group, like a shell step.
#[test]
fn a_cancel_kills_the_command_backends_agent() {
    use pipewright_runtime::backend::command::{CommandBackend, Profile};
    let d = tempdir();
    let agent = d.path().join("agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\ntouch started\nsleep 30\necho late >> log\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut o = opts(d.path());
    o.backend = Arc::new(CommandBackend {
        profile: Profile::Generic {
            argv: vec![agent.to_string_lossy().into_owned()],
            stdin_prompt: true,
        },
        program: None,
        timeout: Duration::from_secs(600),
        workdir: d.path().to_path_buf(),
    });
    let started = d.path().join("started");
    let stopper = cancel_when(o.cancel.clone(), Duration::from_millis(100), move || {
        started.exists()
    });
    let v = run_json("pipeline: p\nsteps:\n  - agent: {prompt: hi}\n", o);
    let took = joined(stopper).elapsed();
    assert!(took < Duration::from_secs(2), "stopped after {took:?}");
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(v["cancelled_at"], "0", "{v}");
}
