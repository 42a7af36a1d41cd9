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
        for line in [
            "  - agent:".to_string(),
            format!("      prompt: \"Review part {i} of {{ctx.doc}} and list tags.\""),
            "      schema: Review".to_string(),
            format!("      output: review{i}"),
            format!("  - transform: {{value: \"ctx.review{i}.passed and 'OK' or 'NEEDS WORK'\", output: verdict{i}}}"),
            "  - for_each:".to_string(),
            format!("      over: ctx.review{i}.tags"),
            "      max_parallel: 4".to_string(),
            "      on_error: \"retry(2)\"".to_string(),
            format!("      do: {{transform: {{value: \"item + ' (' + ctx.verdict{i} + ')'\"}}}}"),
            "      collect: {transform: {value: \"join(pipe, ', ')\"}}".to_string(),
            format!("      output: tagged{i}"),
            format!("  - tool: {{name: file__write, args: {{path: \"out{i}.txt\", content: !expr ctx.tagged{i}}}, output: written{i}}}"),
        ] {
            let _ = writeln!(s, "{line}");
        }
        i += 1;
    }
    s
}

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
