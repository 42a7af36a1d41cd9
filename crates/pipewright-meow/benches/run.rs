//! MEOW scheduler overhead (issues 15 and 27):
//! - a 1,000-step shell DAG of `true` (10 layers of 100, each step needing one of the layer
//!   before), without a store and with a SQLite run store (a new run each time): bound by
//!   spawning processes. Issue 27 compares it with its floor, measured in the same process
//!   and the same rounds: the same 1,000 `sh -c true` started straight from tokio, 8 at a
//!   time (target: the DAG at most 1.3× the floor), and the same started through a `pre_exec`
//!   hook, which makes std fork instead of vfork, as `process::run` did before it spawned
//!   through `clone(CLONE_VM | CLONE_VFORK)` (docs/performance.md, "MEOW shell DAG");
//! - a 10,000-iteration foreach whose template is one agent step on the mock backend, with a
//!   declared output validated: bound by the scheduler (insert, ready set, dispatch, output
//!   validation, completion, join).
//!
//! Each figure is the median of `PW_BENCH_ROUNDS` rounds (default 7) in which the cases take
//! turns, so a machine shared with other work slows them alike. Per step = total / steps; the
//! target is under 50 µs of scheduler time a step (the foreach figure bounds it from above: it
//! includes the mock backend's answers).
//! Run: `cargo bench -p pipewright-meow --bench run`.

use pipewright_meow::run as meow;
use pipewright_runtime::store::{SqliteStore, Store};
use pipewright_runtime::RunOptions;
use pipewright_syntax::{FileId, SourceMap};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

// What `pipewright run` runs on (crates/pipewright/src/lib.rs): the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn dag(layers: usize, width: usize) -> String {
    let mut t = String::from("[main]\n");
    for l in 0..layers {
        for w in 0..width {
            t.push_str(&format!(
                "[[main.steps]]\nid = \"s{l}-{w}\"\nexecutor = \"shell\"\ncommand = \"true\"\n"
            ));
            if l > 0 {
                t.push_str(&format!("needs = [\"s{}-{w}\"]\n", l - 1));
            }
        }
    }
    t
}

fn foreach(items: usize) -> String {
    format!(
        "[main]\n[[main.steps]]\nid = \"all\"\nexecutor = \"foreach\"\nitems = \"[{}]\"\nitem_var = \"n\"\ntemplate = \".one\"\n\n[one]\n[[one.steps]]\nid = \"ask\"\nexecutor = \"agent\"\nagent = \"a{{{{n}}}}\"\nprompt = \"Item {{{{n}}}}\"\n[one.steps.outputs]\nanswer = {{ required = true, type = \"string\" }}\n",
        (0..items).map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
    )
}

/// A run of `text`, checked and lowered once.
struct Case {
    name: &'static str,
    program: Arc<pipewright_ir::Program>,
    module: Arc<pipewright_meow::ast::Module>,
    sources: SourceMap,
    max_steps: usize,
    store: Option<Arc<dyn Store>>,
}

impl Case {
    fn new(name: &'static str, text: &str, max_steps: usize, store: Option<&Path>) -> Case {
        let mut sources = SourceMap::new();
        let file: FileId = sources.add("bench.meow.toml", text);
        let (program, module) =
            pipewright_meow::check_and_lower(file, Path::new("bench.meow.toml"), text)
                .unwrap_or_else(|d| panic!("{:?}", d.first().map(|d| &d.message)));
        let store = store.map(|p| {
            Arc::new(SqliteStore::open(p).unwrap_or_else(|e| panic!("{e}"))) as Arc<dyn Store>
        });
        Case {
            name,
            program: Arc::new(program),
            module: Arc::new(module),
            sources,
            max_steps,
            store,
        }
    }

    /// One run: its time and how many steps it ran.
    fn run(&self, rt: &tokio::runtime::Runtime) -> (Duration, usize) {
        let mut o = RunOptions::new(std::env::temp_dir());
        Arc::make_mut(&mut o.config).meow_max_steps = self.max_steps as u64;
        o.store = self.store.clone();
        let t = Instant::now();
        let out = rt
            .block_on(meow::run(
                self.program.clone(),
                self.module.clone(),
                &self.sources,
                o,
            ))
            .unwrap_or_else(|e| panic!("{e}"));
        let took = t.elapsed();
        assert_eq!(out.status.name(), "ok");
        assert_eq!(out.store_error, None);
        let steps = out
            .steps
            .as_ref()
            .and_then(|s| s.as_object())
            .map_or(0, |m| m.len());
        (took, steps)
    }
}

/// The floor of the shell DAG: `n` `sh -c true` started from tokio, `at_once` at a time. With
/// `hooked`, each through a `pre_exec` hook that does nothing: with one, std forks the process
/// instead of spawning with vfork, the cost that stood between the DAG and its floor while
/// `process::run` set its death signal that way (docs/performance.md).
fn floor(n: usize, at_once: usize, hooked: bool, rt: &tokio::runtime::Runtime) {
    rt.block_on(async {
        let mut started = 0;
        let mut running = tokio::task::JoinSet::new();
        while started < n || !running.is_empty() {
            while started < n && running.len() < at_once {
                running.spawn(async move {
                    let mut cmd = tokio::process::Command::new("sh");
                    cmd.args(["-c", "true"])
                        .stdin(std::process::Stdio::null())
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null());
                    if hooked {
                        // SAFETY: the hook does nothing, which is async-signal-safe.
                        unsafe {
                            cmd.pre_exec(|| Ok(()));
                        }
                    }
                    let status = cmd.status().await.unwrap_or_else(|e| panic!("sh: {e}"));
                    assert!(status.success());
                });
                started += 1;
            }
            if let Some(r) = running.join_next().await {
                r.unwrap_or_else(|e| panic!("{e}"));
            }
        }
    });
}

/// CPU time (user + system) of this process and of its children waited for, so far.
fn cpu_times() -> (Duration, Duration) {
    let of = |who| {
        // SAFETY: getrusage writes into the struct we pass; a zeroed rusage is a valid value.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: a valid `who` and pointer.
        if unsafe { libc::getrusage(who, &mut u) } != 0 {
            return Duration::ZERO;
        }
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        tv(u.ru_utime) + tv(u.ru_stime)
    };
    (of(libc::RUSAGE_SELF), of(libc::RUSAGE_CHILDREN))
}

/// Wall time, CPU time of this process and CPU time of its children, of `f`.
fn measure<T>(f: impl FnOnce() -> T) -> (T, [Duration; 3]) {
    let (t0, (s0, c0)) = (Instant::now(), cpu_times());
    let r = f();
    let (t, (s1, c1)) = (t0.elapsed(), cpu_times());
    (r, [t, s1 - s0, c1 - c0])
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let rounds: usize = std::env::var("PW_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let db = dir.path().join("runs.db");
    let cases = [
        Case::new("shell DAG of `true`, no store", &dag(10, 100), 1000, None),
        Case::new(
            "shell DAG of `true`, run store",
            &dag(10, 100),
            1000,
            Some(&db),
        ),
        Case::new("foreach of mock agents", &foreach(10_000), 20_001, None),
    ];
    // [wall, CPU of pipewright, CPU of the children] per round; the floor and the hooked
    // floor first.
    let mut times = vec![[const { Vec::new() }; 3]; cases.len() + 2];
    let mut steps = vec![0; cases.len()];
    for _ in 0..rounds {
        for (f, hooked) in [false, true].into_iter().enumerate() {
            let ((), m) = measure(|| floor(1000, 8, hooked, &rt));
            for (k, d) in m.into_iter().enumerate() {
                times[f][k].push(d);
            }
        }
        for (c, case) in cases.iter().enumerate() {
            let (n, m) = measure(|| case.run(&rt).1);
            steps[c] = n;
            for (k, d) in m.into_iter().enumerate() {
                times[c + 2][k].push(d);
            }
        }
    }
    let med: Vec<[Duration; 3]> = times.into_iter().map(|t| t.map(median)).collect();
    let [floor, floor_cpu, floor_children] = med[0];
    println!(
        "floor: 1000 `sh -c true`, 8 at a time: {:.1} ms (CPU {:.1} ms, children {:.1} ms), median of {rounds}",
        ms(floor),
        ms(floor_cpu),
        ms(floor_children)
    );
    let [hooked, hooked_cpu, hooked_children] = med[1];
    println!(
        "floor through a pre_exec hook: {:.1} ms (CPU {:.1} ms, children {:.1} ms), {:.2}× the floor (CPU with the children {:.2}×), median of {rounds}",
        ms(hooked),
        ms(hooked_cpu),
        ms(hooked_children),
        hooked.as_secs_f64() / floor.as_secs_f64(),
        (hooked_cpu + hooked_children).as_secs_f64() / (floor_cpu + floor_children).as_secs_f64()
    );
    for (c, case) in cases.iter().enumerate() {
        let [t, cpu, children] = med[c + 2];
        let ratio = if case.name.starts_with("shell") {
            format!(
                ", {:.2}× the floor (CPU with the children {:.2}×)",
                t.as_secs_f64() / floor.as_secs_f64(),
                (cpu + children).as_secs_f64() / (floor_cpu + floor_children).as_secs_f64()
            )
        } else {
            String::new()
        };
        println!(
            "meow {}: {} steps in {:.1} ms (CPU {:.1} ms, children {:.1} ms), {:.1} µs a step{ratio}, median of {rounds}",
            case.name,
            steps[c],
            ms(t),
            ms(cpu),
            ms(children),
            t.as_secs_f64() * 1e6 / steps[c] as f64
        );
    }
}
