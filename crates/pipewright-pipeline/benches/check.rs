//! `check` of generated pipeline files of growing size: the target is under 50 ms for 1 MB, and
//! time growing linearly with size (compare the per-byte figures of the three sizes).
//!
//! Figures on the 2-core shared machine (criterion means, so other sessions' builds show):
//! before the check performance work (system allocator, saphyr-only YAML loader) 42 ms / 132 ms /
//! 589 ms for 256 KiB / 1 MiB / 4 MiB; after it (mimalloc v2, YAML fast path) 8.3 ms / 35–48 ms /
//! 203–210 ms. `examples/check_phases.rs` splits the 1 MiB case (best of 30 runs): YAML tree
//! 7 ms, AST 9 ms, checks 8 ms, freeing both trees 2 ms. Under callgrind everything after the
//! YAML tree went from 290M to 113M instructions for 1 MiB and grows linearly (29M / 113M /
//! 440M); time grows a little faster than instructions at 4 MiB, whose working set (peak RSS
//! 111 MB, against 34 MB for 1 MiB) no longer fits the caches.
//!
//! Memory (`cargo run --release -p pipewright-pipeline --example check_phases -- --memory
//! FILE`, and `/usr/bin/time -f %M pipewright check FILE`), for a generated 10 MiB file:
//! peak 253 MiB (25× the input) before, when the whole YAML tree (96-byte nodes) and the whole
//! AST were alive together and the CLI held the text twice; 140 MiB (13.4×) after the tag was
//! boxed (56-byte nodes), the AST build consumed the tree step by step, and the CLI shared one
//! copy of the text with the source map; 97 MiB (9.7×) after R1 nodes shrank from 72 to 48
//! bytes and steps from 312 to 136 (large kinds boxed). `cargo bench -p pipewright --bench
//! memory` measures the CLI's peak; docs/architecture.md, "Memory of a large check", has the
//! breakdown.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pipewright_pipeline::ast::Program;
use pipewright_pipeline::{check_program, load_source, CheckOptions};
use pipewright_syntax::SourceMap;

mod common;
use common::generate;

// Measure with the allocator the `pipewright` binary ships with, not the system one.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn check(text: &str) -> Vec<String> {
    let mut sources = SourceMap::new();
    let id = sources.add("big.yaml", text);
    let mut diags = Vec::new();
    let file = load_source(id, text, &mut diags);
    let program = Program { files: vec![file] };
    diags.extend(check_program(&program, &sources, &CheckOptions::default()));
    diags
        .iter()
        .map(|d| format!("{} {} at {}", d.code, d.message, d.span().start))
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("check");
    g.sample_size(20);
    for size in [256 * 1024, 1024 * 1024, 4 * 1024 * 1024] {
        let text = generate(size);
        let found = check(&text);
        assert!(
            found.is_empty(),
            "the generated pipeline must check clean: {found:?}"
        );
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_with_input(
            BenchmarkId::from_parameter(format!("{}KiB", size / 1024)),
            &text,
            |b, t| b.iter(|| check(t)),
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
