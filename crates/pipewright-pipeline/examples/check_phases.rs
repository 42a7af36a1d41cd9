//! Times the phases of `check` separately: YAML tree, AST build, checks, and freeing each tree.
//! The YAML loader is owned elsewhere; this is how the part after it is measured on its own.
//!
//! `cargo run --release --example check_phases -- [FILE|SIZE_KIB] [RUNS]` (default: the bench's
//! generated 1 MiB text, 20 runs). `--write FILE` stores the generated text instead, for the
//! CLI. Under callgrind, `--toggle-collect='check_phases::after_yaml'` counts only the phases
//! after YAML parsing.

#[path = "../benches/common/mod.rs"]
mod common;

use pipewright_pipeline::ast::Program;
use pipewright_pipeline::{check_program, load_documents, CheckOptions};
use pipewright_syntax::{Diagnostic, FileId, SourceMap};
use std::time::{Duration, Instant};

// The allocator the `pipewright` binary ships with, so the figures are the ones users get.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Everything after the YAML tree exists, kept out of line so callgrind can select it.
#[inline(never)]
fn after_yaml(
    id: FileId,
    text: &str,
    docs: &[pipewright_yaml::Document],
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
    let text = match args.first() {
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
    };
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
        after_yaml(id, &text, &docs, &sources, &mut diags, &mut times);
        let t = Instant::now();
        drop(docs);
        let run = [yaml, t.elapsed(), times[0], times[1], times[2]];
        for (b, r) in best.iter_mut().zip(run) {
            *b = (*b).min(r);
        }
        found = diags.len();
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let rest = ms(best[2]) + ms(best[3]) + ms(best[4]);
    println!(
        "{} bytes, {runs} runs, {found} diagnostics; best ms: yaml {:.2} (+ drop {:.2}) | ast {:.2} check {:.2} drop {:.2} = after-yaml {:.2} | total {:.2}",
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
