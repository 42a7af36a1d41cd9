//! `check` of generated pipeline files of growing size: the target is under 50 ms for 1 MB, and
//! time growing linearly with size (compare the per-byte figures of the three sizes).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pipewright_pipeline::ast::Program;
use pipewright_pipeline::{check_program, load_source, CheckOptions};
use pipewright_syntax::SourceMap;
use std::fmt::Write;

/// A realistic mix of step kinds, repeated until the text reaches `bytes`.
fn generate(bytes: usize) -> String {
    let mut s = String::from(
        "schema: Review\nfields:\n  passed: {type: bool, required: true}\n  notes: {type: string}\n  tags: {type: list, of: {type: string}}\n---\npipeline: big\ndescription: generated\nsteps:\n",
    );
    let mut i = 0;
    while s.len() < bytes {
        let _ = write!(
            s,
            "  - agent:\n      prompt: \"Review part {i} of {{ctx.doc}} and list tags.\"\n      schema: Review\n      output: review{i}\n\
  - transform: {{value: \"ctx.review{i}.passed and 'OK' or 'NEEDS WORK'\", output: verdict{i}}}\n\
  - for_each:\n      over: ctx.review{i}.tags\n      max_parallel: 4\n      on_error: \"retry(2)\"\n      do: {{transform: {{value: \"item + ' (' + ctx.verdict{i} + ')'\"}}}}\n      collect: {{transform: {{value: \"join(pipe, ', ')\"}}}}\n      output: tagged{i}\n\
  - tool: {{name: file__write, args: {{path: \"out{i}.txt\", content: !expr ctx.tagged{i}}}, output: written{i}}}\n"
        );
        i += 1;
    }
    s
}

fn check(text: &str) -> usize {
    let mut sources = SourceMap::new();
    let id = sources.add("big.yaml", text);
    let mut diags = Vec::new();
    let file = load_source(id, text, &mut diags);
    let program = Program { files: vec![file] };
    diags.extend(check_program(&program, &sources, &CheckOptions::default()));
    diags.len()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("check");
    g.sample_size(20);
    for size in [256 * 1024, 1024 * 1024, 4 * 1024 * 1024] {
        let text = generate(size);
        assert_eq!(check(&text), 0, "the generated pipeline must check clean");
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
