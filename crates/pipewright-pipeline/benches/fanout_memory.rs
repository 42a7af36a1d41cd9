//! 1,000 concurrent mock agent calls (`max_parallel: 1000`): wall time and peak memory
//! (VmHWM from /proc/self/status). Prints one line; fails if the peak exceeds 100 MB.

use pipewright_pipeline::run::run;
use pipewright_runtime::backend::{AgentBackend, AgentRequest, BackendError, BoxFuture};
use pipewright_runtime::RunOptions;
use pipewright_syntax::SourceMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The mock backend, slowed down so all 1,000 calls are really in flight at once.
struct SlowMock;
impl AgentBackend for SlowMock {
    fn name(&self) -> &str {
        "slow-mock"
    }
    fn complete<'a>(
        &'a self,
        req: &'a AgentRequest,
    ) -> BoxFuture<'a, Result<String, BackendError>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(format!("reply to {}", req.step))
        })
    }
}

fn vm_hwm_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn main() {
    let text = "pipeline: p\nsteps:\n  - for_each:\n      over: ctx.items\n      max_parallel: 1000\n      on_error: abort\n      do: {agent: {prompt: \"Review {item}\"}}\n      collect: {transform: {value: \"count(pipe)\"}}\n";
    let mut sources = SourceMap::new();
    let file = sources.add("bench.yaml", text);
    let mut diags = Vec::new();
    let f = pipewright_pipeline::load_source(file, text, &mut diags);
    let program = Arc::new(pipewright_pipeline::lower::pipeline(
        pipewright_pipeline::ast::Program { files: vec![f] },
    ));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut o = RunOptions::new(std::env::temp_dir());
    o.backend = Arc::new(SlowMock);
    o.caps.max_spawns = 0;
    o.input = serde_json::json!({"items": (0..1000).collect::<Vec<i64>>()});
    let t0 = Instant::now();
    let out = rt
        .block_on(run(program, &sources, o))
        .unwrap_or_else(|e| panic!("{e}"));
    let elapsed = t0.elapsed();
    let peak = vm_hwm_kb().unwrap_or(0);
    println!(
        "1000 concurrent mock agent calls: {:?} (output {}), peak RSS {:.1} MB",
        elapsed,
        out.output,
        peak as f64 / 1024.0
    );
    assert_eq!(out.output, pipewright_r1::Value::Int(1000));
    assert!(
        elapsed < Duration::from_secs(5),
        "calls did not run concurrently"
    );
    assert!(peak < 100 * 1024, "peak memory {peak} kB exceeds 100 MB");
}
