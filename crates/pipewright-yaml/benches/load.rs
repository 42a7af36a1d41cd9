//! `load` of a generated 1 MiB pipeline file: the fast path against the `saphyr-parser`
//! reference path. Compare the per-byte figures (criterion prints throughput).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pipewright_syntax::FileId;
use pipewright_yaml::paths::{load_fast, load_reference};
use pipewright_yaml::Limits;
use std::fmt::Write;

/// A realistic mix of step kinds (the `check` benchmark's, plus block scalars and comments),
/// repeated until the text reaches `bytes`.
fn generate(bytes: usize) -> String {
    let mut s = String::from(
        "schema: Review\nfields:\n  passed: {type: bool, required: true}\n  notes: {type: string}\n  tags: {type: list, of: {type: string}}\n---\npipeline: big\ndescription: generated\nsteps:\n",
    );
    let mut i = 0;
    while s.len() < bytes {
        for line in [
            "  # review one part".to_string(),
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
            "  - agent:".to_string(),
            "      prompt: |".to_string(),
            format!("        Summarise {{ctx.tagged{i}}} for the report.", ),
            "        Keep it short.".to_string(),
            format!("      output: summary{i}"),
            format!("  - tool: {{name: file__write, args: {{path: \"out{i}.txt\", content: !expr ctx.tagged{i}}}, output: written{i}}}"),
        ] {
            let _ = writeln!(s, "{line}");
        }
        i += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let text = generate(1024 * 1024);
    assert!(
        load_fast(FileId(0), &text, Limits::default()).is_some(),
        "the generated pipeline must take the fast path"
    );
    let mut g = c.benchmark_group("load_1MiB");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("fast", |b| {
        b.iter(|| load_fast(FileId(0), &text, Limits::default()))
    });
    g.bench_function("saphyr", |b| {
        b.iter(|| load_reference(FileId(0), &text, Limits::default()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
