//! Per-step overhead of the Restate engine: one run of N journaled steps (`ctx.run`) on one
//! loopback node, from submission to result, minus a run of none and minus what the steps
//! themselves take. Trivial steps (they return a number), then steps of 5 ms (a timer), each
//! served from our accept loop (TCP_NODELAY, endpoint.rs) and from the SDK's own `HttpServer`
//! (without it). Not a timed test: `cargo bench -p pipewright-restate --bench steps` (needs the
//! pinned server: `npm ci --prefix tools/restate`). `STEPS=N` changes N (1,000; 100 for the
//! 5 ms steps).

#[allow(dead_code)]
#[path = "../tests/it/proof.rs"]
mod proof;

use pipewright_restate::client::Client;
use pipewright_restate::endpoint;
use pipewright_restate::server::RestateServer;
use proof::StepsInput;
use restate_sdk::http_server::HttpServer;
use serde_json::json;
use std::time::{Duration, Instant};

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let n: u64 = std::env::var("STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    rt.block_on(async {
        for (serve, what) in [
            (Serve::Ours, "our accept loop (TCP_NODELAY)"),
            (Serve::Sdk, "restate-sdk HttpServer (no TCP_NODELAY)"),
        ] {
            let trivial = StepsInput { n, step_ms: 0 };
            let timed = StepsInput {
                n: (n / 10).max(1),
                step_ms: 5,
            };
            for (input, t) in measure(serve, &[trivial, timed]).await {
                report(what, input, &t);
            }
        }
    });
}

#[derive(Clone, Copy)]
enum Serve {
    Ours,
    Sdk,
}

/// The best time of three runs of no step, and the times of three runs of the input's steps.
struct Times {
    empty: Duration,
    runs: Vec<Duration>,
}

fn report(what: &str, input: StepsInput, t: &Times) {
    let StepsInput { n, step_ms } = input;
    let work = Duration::from_millis(step_ms * n);
    let per_step = |d: Duration| d.saturating_sub(t.empty + work).as_secs_f64() * 1e3 / n as f64;
    let all: Vec<String> = t
        .runs
        .iter()
        .map(|d| format!("{:.0}", d.as_secs_f64() * 1e3))
        .collect();
    let best = t.runs.iter().min().copied().unwrap_or_default();
    let worst = t.runs.iter().max().copied().unwrap_or_default();
    println!(
        "{what}: {n} steps of {step_ms} ms in {} ms (a run of none: {:.1} ms); overhead per step {:.3} ms best, {:.3} ms worst",
        all.join(", "),
        t.empty.as_secs_f64() * 1e3,
        per_step(best),
        per_step(worst),
    );
}

async fn measure(serve: Serve, inputs: &[StepsInput]) -> Vec<(StepsInput, Times)> {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let server = RestateServer::start(dir.path())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = match serve {
        Serve::Ours => {
            Some(endpoint::serve(proof::endpoint(), listener).unwrap_or_else(|e| panic!("{e}")))
        }
        Serve::Sdk => {
            tokio::spawn(HttpServer::new(proof::endpoint()).serve_with_cancel(listener, stopped));
            None
        }
    };
    let client = Client::new().unwrap_or_else(|e| panic!("{e}"));
    client
        .register(&server.admin_url(), &format!("http://{addr}"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ingress = server.ingress_url();
    let mut keys = 0;
    let mut run = |input: StepsInput| {
        keys += 1;
        let key = format!("run-{keys}");
        let client = client.clone();
        let ingress = ingress.clone();
        async move {
            let body = serde_json::to_value(input).unwrap_or_else(|e| panic!("{e}"));
            let start = Instant::now();
            let sub = client
                .send(&ingress, "Steps", &key, &body)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let out = tokio::time::timeout(
                Duration::from_secs(600),
                client.attach(&ingress, sub.invocation_id()),
            )
            .await
            .unwrap_or_else(|_| panic!("{} steps did not finish within 600s", input.n))
            .unwrap_or_else(|e| panic!("{e}"));
            let elapsed = start.elapsed();
            let n = input.n;
            assert_eq!(out, json!(n * n.saturating_sub(1) / 2), "the sum of 0..{n}");
            elapsed
        }
    };
    // Warm up: connections, the partition's leader, the deployment's first invocation.
    run(StepsInput { n: 3, step_ms: 0 }).await;
    let mut empty = Duration::MAX;
    for _ in 0..3 {
        empty = empty.min(run(StepsInput { n: 0, step_ms: 0 }).await);
    }
    let mut out = Vec::new();
    for &input in inputs {
        let mut runs = Vec::new();
        for _ in 0..3 {
            runs.push(run(input).await);
        }
        out.push((input, Times { empty, runs }));
    }
    if let Some(s) = serving {
        s.shutdown(Duration::from_secs(5)).await;
    }
    let _ = stop.send(());
    drop(server);
    out
}
