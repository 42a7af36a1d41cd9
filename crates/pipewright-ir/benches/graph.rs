//! `graph` export of generated pipelines of growing step counts, in every format. Each size is
//! 10× the one before, so linear export shows as a 10× step in time and anything quadratic as
//! 100× (`graph --format json` used to search for every edge end: 80k steps took 6.6 s).
//!
//! Before running criterion, the bench measures the 10× growth itself (best of five runs at n
//! and 10n steps) and fails if time grew more than 20×: run it on demand with
//! `cargo bench -p pipewright-ir --bench graph`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pipewright_ir::export::{dot::dot, json::json, mermaid::mermaid, ExportOptions};
use pipewright_pipeline::ast::Program;
use pipewright_syntax::SourceMap;
use std::fmt::Write;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A pipeline of `steps` steps that calls a second pipeline every tenth step, with a fan-out
/// body every fifth, so regions, calls and sequence edges all grow with the size.
fn generate(steps: usize) -> String {
    let mut s = String::from("pipeline: big\nsteps:\n");
    for i in 0..steps {
        let _ = match i % 10 {
            0 => writeln!(s, "  - call: {{pipeline: helper, output: n{i}}}"),
            5 => writeln!(
                s,
                "  - for_each: {{items: [1, 2], on_error: continue, do: {{transform: {{value: \"item + 1\"}}}}, collect: {{transform: {{value: \"pipe\"}}}}, output: n{i}}}"
            ),
            _ => writeln!(s, "  - transform: {{value: \"{i}\", output: n{i}}}"),
        };
    }
    s.push_str("---\npipeline: helper\nsteps:\n  - transform: {value: \"1\"}\n");
    s
}

fn lowered(text: &str) -> (pipewright_ir::Program, SourceMap) {
    let mut sources = SourceMap::new();
    let id = sources.add("big.yaml", text);
    let mut diags = Vec::new();
    let file = pipewright_pipeline::load_source(id, text, &mut diags);
    assert!(
        !diags.iter().any(|d| d.is_error()),
        "the generated pipeline loads: {:?}",
        diags.first().map(|d| &d.message)
    );
    let program = pipewright_pipeline::lower::pipeline(Program { files: vec![file] });
    (program, sources)
}

fn export_json(program: &pipewright_ir::Program, sources: &SourceMap) -> usize {
    let v = json(program, sources, &ExportOptions::default());
    serde_json::to_string(&v).map_or(0, |s| s.len())
}

fn best_of_five(f: impl Fn() -> usize) -> Duration {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// The 10× input growth check: time at 10n steps over time at n steps.
fn growth_check() {
    let (small, small_src) = lowered(&generate(4_000));
    let (large, large_src) = lowered(&generate(40_000));
    for (format, f) in [
        (
            "json",
            &(|p: &pipewright_ir::Program, s: &SourceMap| export_json(p, s))
                as &dyn Fn(&_, &_) -> usize,
        ),
        ("dot", &|p, _| dot(p, &ExportOptions::default()).len()),
        ("mermaid", &|p, _| {
            mermaid(p, &ExportOptions::default()).len()
        }),
    ] {
        let a = best_of_five(|| f(&small, &small_src));
        let b = best_of_five(|| f(&large, &large_src));
        let ratio = b.as_secs_f64() / a.as_secs_f64().max(1e-9);
        println!("graph {format}: 4k steps {a:?}, 40k steps {b:?}, 10x input -> {ratio:.1}x time");
        assert!(
            ratio < 20.0,
            "graph {format} grows faster than linearly: {ratio:.1}x"
        );
    }
}

fn bench(c: &mut Criterion) {
    growth_check();
    let mut g = c.benchmark_group("graph");
    g.sample_size(10);
    for steps in [1_000, 10_000] {
        let (program, sources) = lowered(&generate(steps));
        g.throughput(Throughput::Elements(steps as u64));
        g.bench_with_input(BenchmarkId::new("json", steps), &program, |b, p| {
            b.iter(|| export_json(p, &sources))
        });
        g.bench_with_input(BenchmarkId::new("dot", steps), &program, |b, p| {
            b.iter(|| dot(p, &ExportOptions::default()).len())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
