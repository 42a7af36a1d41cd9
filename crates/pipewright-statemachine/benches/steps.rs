//! State-machine steps at length (issue 27): a two-step cycle run to its `maxTotalSteps`
//! guardrail with the offline mock backend, 10,000 steps, without a run store and with a
//! SQLite store in a temporary directory (a new run each time, as `pipewright run` makes one).
//! Target: at most 20 µs a step with the store.
//!
//! The two cases are interleaved, `PW_BENCH_ROUNDS` rounds (default 9), and each prints its
//! median wall time a step and its median CPU time a step (user + system of every thread of
//! the process, the store's writer included), so a figure taken on a machine shared with other
//! work can be told from one the run itself costs. `PW_BENCH_STEPS` changes the length.
//!
//! Run: `cargo bench -p pipewright-statemachine --bench steps`.

use pipewright_runtime::backend::mock::MockBackend;
use pipewright_runtime::store::{SqliteStore, Store};
use pipewright_runtime::RunOptions;
use pipewright_statemachine::run::{self, session::Stateless};
use std::sync::Arc;
use std::time::{Duration, Instant};

// What `pipewright run` runs on (crates/pipewright/src/lib.rs): the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn recipe(steps: u64) -> String {
    let step = |next: &str| {
        format!(
            r#"{{"prompt": "Do the work, then report.\n\n## Checklist\n- one\n- two\n- three", "outcomes": ["next", "blocked", "other"], "onOutcome": {{"next": {{"nextStep": "{next}"}}, "blocked": {{"action": "exit", "reason": "blocked"}}, "other": {{"action": "exit", "reason": "user-provided-other"}}}}}}"#
        )
    };
    format!(
        r#"{{"id": "cycle", "label": "Cycle", "description": "a two-step cycle", "initialStep": "a", "guardrails": {{"maxStepVisits": 100000000, "maxTotalSteps": {steps}, "exitOnOther": true}}, "steps": {{"a": {}, "b": {}}}}}"#,
        step("b"),
        step("a")
    )
}

/// User + system time of the whole process so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the struct we pass; a zeroed rusage is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let steps = env_or("PW_BENCH_STEPS", 10_000);
    let rounds = env_or("PW_BENCH_ROUNDS", 9).max(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cycle.json");
    let text = recipe(steps);
    std::fs::write(&path, &text).expect("write");
    let mut sources = pipewright_syntax::SourceMap::new();
    let file = sources.add(path.display().to_string(), text.as_str());
    let (program, recipe) =
        pipewright_statemachine::check_and_lower(&mut sources, &path, file, &text)
            .unwrap_or_else(|d| panic!("the bench recipe checks: {d:?}"));
    let program = Arc::new(program);
    // `pipewright run` runs on tokio's multi-threaded runtime.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let backend = Arc::new(Stateless(Arc::new(MockBackend)));
    let st: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&dir.path().join("runs.db")).expect("store"));
    let cases: [(&str, Option<Arc<dyn Store>>); 2] = [("no store", None), ("run store", Some(st))];
    let mut wall = vec![Vec::new(); cases.len()];
    let mut cpu = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        for (c, (_, store)) in cases.iter().enumerate() {
            let mut o = RunOptions::new(dir.path().to_path_buf());
            o.source_path = Some(path.clone());
            o.store = store.clone();
            let sm = run::Options::new(backend.clone(), dir.path().to_path_buf());
            let (t0, c0) = (Instant::now(), cpu_time());
            let out = rt
                .block_on(run::run(program.clone(), &recipe, &sources, o, sm))
                .expect("runs");
            let (t, c1) = (t0.elapsed(), cpu_time());
            assert_eq!(out.exit_reason, "max-total-steps");
            assert_eq!(out.trace.len() as u64, steps);
            assert_eq!(out.run.status.name(), "failed");
            wall[c].push(t.as_secs_f64() * 1e6 / steps as f64);
            cpu[c].push((c1 - c0).as_secs_f64() * 1e6 / steps as f64);
        }
    }
    for (c, (name, _)) in cases.iter().enumerate() {
        println!(
            "state machine, {steps} steps, mock backend, {name}: {:.1} µs a step (CPU {:.1} µs), median of {rounds}",
            median(wall[c].clone()),
            median(cpu[c].clone()),
        );
    }
}
