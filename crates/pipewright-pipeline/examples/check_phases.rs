//! Times the phases of `check` separately: YAML tree, AST build, checks, and freeing each tree.
//! The YAML loader is owned elsewhere; this is how the part after it is measured on its own.
//!
//! `cargo run --release --example check_phases -- [FILE|SIZE_KIB] [RUNS]` (default: the bench's
//! generated 1 MiB text, 20 runs). `--memory [FILE|SIZE_KIB]` instead loads and checks once and
//! prints the resident memory after each phase and the peak (Linux `/proc/self/status`), the
//! figures behind the "at most 10× the input" target. `--write FILE` stores the generated text instead, for the
//! CLI. Under callgrind, `--toggle-collect='check_phases::after_yaml'` counts only the phases
//! after YAML parsing.

#[path = "../benches/common/mod.rs"]
mod common;

use pipewright_pipeline::ast::Program;
use pipewright_pipeline::{check_program, load_documents, CheckOptions};
use pipewright_syntax::{Diagnostic, FileId, SourceMap};
use std::time::{Duration, Instant};

// The allocator the `pipewright` binary ships with, so the figures are the ones users get,
// counting the bytes live so `--memory` tells what the program holds from what the allocator
// keeps.
#[global_allocator]
static GLOBAL: Counting = Counting(mimalloc::MiMalloc);

struct Counting(mimalloc::MiMalloc);

static LIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// The most bytes live since the last phase was shown: where in a phase the memory peaks.
static PEAK_LIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, std::sync::atomic::Ordering::Relaxed) + by;
    PEAK_LIVE.fetch_max(now, std::sync::atomic::Ordering::Relaxed);
}

// SAFETY: every call is forwarded to mimalloc unchanged; the counter only observes sizes.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE.fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        grew(new);
        LIVE.fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.realloc(ptr, layout, new) }
    }
}

/// Everything after the YAML tree exists, kept out of line so callgrind can select it.
#[inline(never)]
fn after_yaml(
    id: FileId,
    text: &str,
    docs: Vec<pipewright_yaml::Document>,
    sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
    times: &mut [Duration; 3],
) {
    let t = Instant::now();
    let file = load_documents(id, text, docs, diags);
    let program = Program { files: vec![file] };
    times[0] += t.elapsed();
    let t = Instant::now();
    diags.extend(check_program(&program, sources, &CheckOptions::default()));
    times[1] += t.elapsed();
    let t = Instant::now();
    drop(program);
    times[2] += t.elapsed();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let (Some("--write"), Some(path)) = (args.first().map(String::as_str), args.get(1)) {
        let kib = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1024);
        if let Err(e) = std::fs::write(path, common::generate(kib * 1024)) {
            eprintln!("cannot write {path}: {e}");
            std::process::exit(2);
        }
        return;
    }
    if args.first().map(String::as_str) == Some("--memory") {
        return memory(input_text(args.get(1)));
    }
    let text = input_text(args.first());
    let runs: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let mut sources = SourceMap::new();
    let id = sources.add("big.yaml", text.as_str());
    // The fastest of the runs per phase: on a shared machine the mean mostly measures the
    // other load.
    let mut best = [Duration::MAX; 5];
    let mut found = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let (docs, yaml_diags) =
            pipewright_yaml::load(id, &text, pipewright_yaml::Limits::default());
        let yaml = t.elapsed();
        let mut diags = yaml_diags;
        let mut times = [Duration::ZERO; 3];
        // The AST build consumes the tree, so freeing it is part of the `ast` phase.
        after_yaml(id, &text, docs, &sources, &mut diags, &mut times);
        let run = [yaml, Duration::ZERO, times[0], times[1], times[2]];
        for (b, r) in best.iter_mut().zip(run) {
            *b = (*b).min(r);
        }
        found = diags.len();
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let rest = ms(best[2]) + ms(best[3]) + ms(best[4]);
    println!(
        "{} bytes, {runs} runs, {found} diagnostics; best ms: yaml {:.2} (+ drop {:.2}, now in ast) | ast {:.2} check {:.2} drop {:.2} = after-yaml {:.2} | total {:.2}",
        text.len(),
        ms(best[0]),
        ms(best[1]),
        ms(best[2]),
        ms(best[3]),
        ms(best[4]),
        rest,
        ms(best[0]) + ms(best[1]) + rest
    );
}

/// A file's text, or a generated text of that many KiB (default 1 MiB).
fn input_text(arg: Option<&String>) -> String {
    match arg {
        Some(a) => match a.parse::<usize>() {
            Ok(kib) => common::generate(kib * 1024),
            Err(_) => match std::fs::read_to_string(a) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("cannot read {a}: {e}");
                    std::process::exit(2);
                }
            },
        },
        None => common::generate(1024 * 1024),
    }
}

/// `VmRSS` and `VmHWM` (peak) in MiB.
fn rss() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// One load and check, as `pipewright check` does it, with the memory after each phase: one
/// copy of the text shared with the source map, and the allocator options the CLI sets.
const MIB: f64 = 1024.0 * 1024.0;

fn memory(text: String) {
    // SAFETY: plain setters of process-wide integer options (the CLI's `tune_allocator`:
    // purge delay 0, arenas not committed eagerly), set before anything large is allocated.
    unsafe {
        libmimalloc_sys::mi_option_set(15, 0);
        libmimalloc_sys::mi_option_set(4, 0);
    }
    let shared: std::sync::Arc<str> = text.into();
    let text = &*shared;
    let mib = text.len() as f64 / (1024.0 * 1024.0);
    let show = |phase: &str| {
        let (now, peak) = rss();
        let live = LIVE.load(std::sync::atomic::Ordering::Relaxed);
        let peak_live = PEAK_LIVE.swap(live, std::sync::atomic::Ordering::Relaxed);
        let (live, peak_live) = (live as f64 / MIB, peak_live as f64 / MIB);
        println!(
            "{phase:<12} live {live:7.1} MiB (at most {peak_live:7.1} in the phase)  rss {now:7.1} MiB  peak {peak:7.1} MiB  ({:.1}x input)",
            peak / mib
        );
    };
    show("text");
    let mut sources = SourceMap::new();
    let id = sources.add("big.yaml", std::sync::Arc::clone(&shared));
    show("source map");
    let (docs, mut diags) = pipewright_yaml::load(id, text, pipewright_yaml::Limits::default());
    show("yaml tree");
    let file = load_documents(id, text, docs, &mut diags);
    show("ast");
    let program = Program { files: vec![file] };
    diags.extend(check_program(&program, &sources, &CheckOptions::default()));
    show("checked");
    // What `graph` does next: lower for drawing (which consumes the AST and drops the parsed
    // trees), then build the output.
    let lowered = pipewright_pipeline::lower::drawn(program);
    show("lowered");
    // Streamed, as the CLI does; only the exporter's own tables stay.
    struct Discard;
    impl std::fmt::Write for Discard {
        fn write_str(&mut self, _: &str) -> std::fmt::Result {
            Ok(())
        }
    }
    pipewright_ir::export::dot::write_dot(&lowered, &Default::default(), &mut Discard);
    show("dot");
    let json = pipewright_ir::export::json::write_pretty(
        &lowered,
        &sources,
        &Default::default(),
        std::io::sink(),
    );
    show("json");
    drop(json);
    println!("{:.1} MiB input, {} diagnostics", mib, diags.len());
}
