//! Whole-process cost of `pipewright run` with the SQLite run store (docs/run.md, "Figures"):
//!
//! - a for_each over 10,000 items with a transform body: every item is a landing and two
//!   events, committed before the next step sees it;
//! - a 100 MB input through ten trivial steps: the input is written once, not once per step.
//!
//! `cargo bench -p pipewright --bench run_store` (release build of the CLI); `PW_BENCH_RUNS`
//! sets the number of timed runs (default 10; the median is reported).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const FOR_EACH: &str = "pipeline: p\nsteps:\n  - for_each:\n      over: \"ctx.items\"\n      on_error: abort\n      do: {transform: {value: \"item * 2\"}}\n      collect: {transform: {value: \"count(pipe)\"}}\n";

fn run(dir: &Path, args: &[&str]) -> Duration {
    let t0 = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_pipewright"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("pipewright: {e}"));
    let took = t0.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn main() {
    // `cargo test --benches` runs this with --bench absent: do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runs: usize = std::env::var("PW_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10);
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(d.path().join("each.yaml"), FOR_EACH).unwrap_or_else(|e| panic!("{e}"));
    let items: Vec<String> = (0..10_000).map(|i| i.to_string()).collect();
    std::fs::write(
        d.path().join("items.json"),
        format!("{{\"items\": [{}]}}", items.join(",")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let args = ["run", "each.yaml", "--input-file", "items.json"];
    run(d.path(), &args); // creates the store
    let with_store = median((0..runs).map(|_| run(d.path(), &args)).collect());
    println!("for_each 10000 items, transform body, whole process: median {with_store:.1?} over {runs} runs");

    let big = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let steps: String = (0..10)
        .map(|i| format!("  - transform: {{value: \"{i}\", output: s{i}}}\n"))
        .collect();
    std::fs::write(
        big.path().join("big.yaml"),
        format!("pipeline: big\nsteps:\n{steps}"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mb = 100;
    std::fs::write(
        big.path().join("big.json"),
        format!("{{\"blob\": \"{}\"}}", "x".repeat(mb << 20)),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let took = run(big.path(), &["run", "big.yaml", "--input-file", "big.json"]);
    let db = big.path().join(".pipewright/runs.db");
    let wal = big.path().join(".pipewright/runs.db-wal");
    println!(
        "{mb} MB input, 10 steps: {took:.1?}; runs.db {} MB, runs.db-wal {} MB",
        size(&db) >> 20,
        size(&wal) >> 20
    );
}
