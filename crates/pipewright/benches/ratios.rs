//! The performance regression check CI runs (issue 27; docs/performance.md, "Regression
//! check"). Each workload of docs/performance.md is timed against a reference measured in the
//! same process just before it — a fixed CPU loop, or for process start-up the spawn of
//! `sh -c true` — and the ratio of the two is compared with the committed baseline
//! (`benches/ratios.tsv`). A ratio more than 2× its baseline fails the check: a regression of
//! the code, not of the machine, since a slower or busier machine slows both sides.
//!
//! `cargo bench -p pipewright --bench ratios --profile dev` (what `.ci/run` runs: the dev profile
//! reuses the test build's dependencies, a release build would add a whole optimised build to
//! CI). `PW_RATIOS_WRITE=1` writes the measured ratios as the new baseline instead of comparing.
//!
//! Robust on a loaded 2-core machine: each ratio is the median of `ROUNDS` interleaved pairs,
//! and a workload over the limit is measured again with three times the rounds before it
//! fails.

#[path = "../../pipewright-pipeline/benches/common/mod.rs"]
mod common;
#[path = "peak/mod.rs"]
mod peak;
#[path = "../../pipewright-lsp/benches/session/mod.rs"]
mod session;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Pairs per ratio; the median is kept.
const ROUNDS: usize = 7;
/// How much worse than its baseline a ratio may be.
const LIMIT: f64 = 2.0;

/// What a workload's time is divided by.
#[derive(Clone, Copy)]
enum Reference {
    /// A fixed integer loop: CPU-bound work.
    Cpu,
    /// Ten spawns of `sh -c true`: work bound by starting processes.
    Spawn,
}

struct Workload {
    name: &'static str,
    reference: Reference,
    /// One timed run (its result kept from the optimiser).
    run: Box<dyn FnMut()>,
}

fn cpu_reference() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..3_000_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_add(black_box(i));
    }
    black_box(x);
}

fn spawn_reference() {
    for _ in 0..10 {
        spawn(Command::new("sh").args(["-c", "true"]));
    }
}

fn spawn(cmd: &mut Command) {
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    assert!(status.success(), "{cmd:?} failed");
}

fn seconds(f: &mut dyn FnMut()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median ratio of `rounds` pairs, and the workload's median time in seconds.
fn measure(w: &mut Workload, rounds: usize) -> (f64, f64) {
    let mut reference: Box<dyn FnMut()> = match w.reference {
        Reference::Cpu => Box::new(cpu_reference),
        Reference::Spawn => Box::new(spawn_reference),
    };
    // One unmeasured run of each: caches, lazy tables, the page cache.
    seconds(&mut reference);
    seconds(&mut w.run);
    let mut ratios = Vec::new();
    let mut times = Vec::new();
    for _ in 0..rounds {
        let r = seconds(&mut reference);
        let t = seconds(&mut w.run);
        ratios.push(t / r);
        times.push(t);
    }
    (median(ratios), median(times))
}

/// The amplifier recipes and MEOW files of the shared corpus, when this machine has it.
fn corpus(kind: &str) -> Vec<(PathBuf, String)> {
    let root = Path::new("/work/shared/corpus");
    let mut out = Vec::new();
    match kind {
        "amplifier" => {
            let tsv = std::fs::read_to_string(root.join("EXPECTED.tsv")).unwrap_or_default();
            for p in tsv.lines().filter_map(|l| l.split('\t').next()) {
                if p.starts_with("amplifier/") {
                    if let Ok(t) = std::fs::read_to_string(root.join(p)) {
                        out.push((root.join(p), t));
                    }
                }
            }
        }
        _ => {
            let mut stack = vec![root.join("meow")];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.to_string_lossy().ends_with(".meow.toml") {
                        if let Ok(t) = std::fs::read_to_string(&p) {
                            out.push((p, t));
                        }
                    }
                }
            }
            out.sort();
        }
    }
    out
}

fn workloads(dir: &Path) -> Vec<Workload> {
    let mut out = Vec::new();

    // R1: parse one expression 1,000 times, evaluate it 20,000 times (a workload much shorter
    // than the reference is at the mercy of one context switch).
    const SRC: &str = "all(ctx.reviews, r -> r.passed) and count(ctx.reviews) > 2";
    out.push(Workload {
        name: "r1 parse x1000",
        reference: Reference::Cpu,
        run: Box::new(|| {
            for _ in 0..1000 {
                let _ = black_box(pipewright_r1::parse(black_box(SRC)));
            }
        }),
    });
    let ctx = pipewright_r1::Value::from_json(&serde_json::json!({
        "reviews": [{"passed": true}, {"passed": true}, {"passed": true}]
    }));
    let expr = pipewright_r1::parse(SRC).unwrap_or_else(|e| panic!("{e:?}"));
    out.push(Workload {
        name: "r1 eval x20000",
        reference: Reference::Cpu,
        run: Box::new(move || {
            let scope = pipewright_r1::Scope::new().with("ctx", &ctx);
            for _ in 0..20_000 {
                let _ = black_box(pipewright_r1::eval(black_box(&expr), &scope));
            }
        }),
    });

    // `check` of a generated pipeline (load and check). 256 KiB, not the 1 MiB of the figure:
    // time grows linearly with the input, and the dev profile is slow.
    let big = common::generate(256 << 10);
    let big_for_check = big.clone();
    out.push(Workload {
        name: "check 256 KiB pipeline",
        reference: Reference::Cpu,
        run: Box::new(move || {
            let mut sources = pipewright_syntax::SourceMap::new();
            let id = sources.add("big.yaml", big_for_check.as_str());
            let mut diags = Vec::new();
            let file = pipewright_pipeline::load_source(id, &big_for_check, &mut diags);
            let program = pipewright_pipeline::ast::Program { files: vec![file] };
            diags.extend(pipewright_pipeline::check_program(
                &program,
                &sources,
                &Default::default(),
            ));
            assert!(diags.is_empty(), "the generated pipeline checks clean");
        }),
    });

    // The corpus: every amplifier recipe checked in one process; every MEOW file in one
    // session, as one `pipewright check` run.
    let recipes = corpus("amplifier");
    if !recipes.is_empty() {
        out.push(Workload {
            name: "check amplifier recipes",
            reference: Reference::Cpu,
            run: Box::new(move || {
                for (path, text) in &recipes {
                    let mut sources = pipewright_syntax::SourceMap::new();
                    black_box(pipewright_recipe::check_file(&mut sources, path, text));
                }
            }),
        });
    }
    let meow = corpus("meow");
    if !meow.is_empty() {
        out.push(Workload {
            name: "check MEOW corpus",
            reference: Reference::Cpu,
            run: Box::new(move || {
                let mut sources = pipewright_syntax::SourceMap::new();
                let mut session = pipewright_meow::Session::default();
                for (p, t) in &meow {
                    let file = sources.add(p.display().to_string(), t.as_str());
                    black_box(session.check(file, p, t));
                }
            }),
        });
    }

    // A for_each over 10,000 items with a transform body, in memory.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let text = "pipeline: p\nsteps:\n  - for_each:\n      over: \"ctx.items\"\n      on_error: abort\n      do: {transform: {value: \"item * 2\"}}\n      collect: {transform: {value: \"count(pipe)\"}}\n";
    let mut sources = pipewright_syntax::SourceMap::new();
    let file = sources.add("foreach.yaml", text);
    let mut diags = Vec::new();
    let f = pipewright_pipeline::load_source(file, text, &mut diags);
    let program = std::sync::Arc::new(pipewright_pipeline::lower::pipeline(
        pipewright_pipeline::ast::Program { files: vec![f] },
    ));
    let input = serde_json::json!({"items": (0..10_000).collect::<Vec<i64>>()});
    out.push(Workload {
        name: "for_each 10000 items",
        reference: Reference::Cpu,
        run: Box::new(move || {
            let mut o = pipewright_runtime::RunOptions::new(std::env::temp_dir());
            o.input = input.clone();
            let done = rt.block_on(pipewright_pipeline::run::run(program.clone(), &sources, o));
            assert!(done.is_ok(), "the for_each runs");
        }),
    });

    // Start-up: ten runs of `pipewright --version` against ten of `sh -c true`.
    out.push(Workload {
        name: "start-up x10",
        reference: Reference::Spawn,
        run: Box::new(|| {
            for _ in 0..10 {
                spawn(Command::new(env!("CARGO_BIN_EXE_pipewright")).arg("--version"));
            }
        }),
    });

    // The language server: one incremental edit of the 256 KiB pipeline to its diagnostics.
    let mut lsp = session::Session::start(&big, pipewright_pipeline::codes::CODES.to_vec());
    let line = (big.lines().count() / 2) as u32;
    let mut inserted = false;
    out.push(Workload {
        name: "lsp edit 256 KiB",
        reference: Reference::Cpu,
        run: Box::new(move || {
            inserted = !inserted;
            black_box(lsp.change(session::edit(false, line, inserted, "")));
        }),
    });

    // Memory is a ratio already: `graph`'s peak resident set over its input (4 MiB).
    let path = dir.join("graph.yaml");
    std::fs::write(&path, common::generate(4 << 20)).unwrap_or_else(|e| panic!("{e}"));
    let _ = GRAPH_INPUT.set(path);
    out
}

static GRAPH_INPUT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// `graph`'s peak resident set over its input size, the median of three runs.
fn graph_memory() -> f64 {
    let Some(path) = GRAPH_INPUT.get() else {
        return f64::NAN;
    };
    let input = std::fs::metadata(path).map_or(1, |m| m.len()) as f64;
    let file = path.to_string_lossy();
    let runs = (0..3)
        .map(|_| {
            let (code, kib) = peak::peak_kib(&["graph", "--format", "dot", &file]);
            assert_eq!(code, 0, "pipewright graph exited with {code}");
            kib as f64 * 1024.0 / input
        })
        .collect();
    median(runs)
}

fn baseline_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/ratios.tsv")
}

fn read_baseline() -> Vec<(String, f64)> {
    std::fs::read_to_string(baseline_path())
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some((f.next()?.to_string(), f.next()?.parse().ok()?))
        })
        .collect()
}

fn main() {
    let write = std::env::var_os("PW_RATIOS_WRITE").is_some();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let baseline = read_baseline();
    let mut measured: Vec<(String, f64)> = Vec::new();
    let mut failed = Vec::new();
    println!(
        "{:<26} {:>12} {:>10} {:>10} {:>7}",
        "workload", "median time", "ratio", "baseline", "x"
    );
    let mut all = workloads(dir.path());
    for w in &mut all {
        // A baseline is measured three times as long: it is compared with every later run.
        let rounds = if write { ROUNDS * 3 } else { ROUNDS };
        let (mut ratio, mut time) = measure(w, rounds);
        let base = baseline.iter().find(|(n, _)| n == w.name).map(|(_, r)| *r);
        if let Some(b) = base {
            if !write && ratio > LIMIT * b {
                // Over the limit: measured again, longer, before it counts (a burst of load
                // from another process can cover a few pairs).
                (ratio, time) = measure(w, ROUNDS * 3);
            }
        }
        report(w.name, Some(time), ratio, base, &mut failed, write);
        measured.push((w.name.to_string(), ratio));
    }
    drop(all);
    let name = "graph peak RSS / input";
    let ratio = graph_memory();
    let base = baseline.iter().find(|(n, _)| n == name).map(|(_, r)| *r);
    report(name, None, ratio, base, &mut failed, write);
    measured.push((name.to_string(), ratio));

    if write {
        let mut text = String::from(
            "# Baseline ratios of the regression check (crates/pipewright/benches/ratios.rs):\n\
             # each workload's median time over its reference's, in the dev profile.\n\
             # Refresh: PW_RATIOS_WRITE=1 cargo bench -p pipewright --bench ratios --profile dev\n",
        );
        for (n, r) in &measured {
            text.push_str(&format!("{n}\t{r:.4}\n"));
        }
        std::fs::write(baseline_path(), text).unwrap_or_else(|e| panic!("{e}"));
        println!("wrote {}", baseline_path().display());
        return;
    }
    if failed.is_empty() {
        println!("{} passed, 0 failed", measured.len());
    } else {
        println!(
            "{} passed, {} failed",
            measured.len() - failed.len(),
            failed.len()
        );
        for f in &failed {
            eprintln!("error: {f} is more than {LIMIT}x slower than its baseline ratio");
        }
        std::process::exit(1);
    }
}

fn report(
    name: &str,
    time: Option<f64>,
    ratio: f64,
    base: Option<f64>,
    failed: &mut Vec<String>,
    write: bool,
) {
    let time = time.map_or("-".to_string(), |t| format!("{:.3} ms", t * 1000.0));
    let (base_text, x) = match base {
        Some(b) => (format!("{b:.4}"), format!("{:.2}", ratio / b)),
        None => ("none".to_string(), "-".to_string()),
    };
    println!("{name:<26} {time:>12} {ratio:>10.4} {base_text:>10} {x:>7}");
    if let Some(b) = base {
        if !write && ratio > LIMIT * b {
            failed.push(name.to_string());
        }
    }
}
