//! Formatting a ~1 MB pipeline file (target: under 100 ms). The file is built by repeating the
//! fixture steps of testdata/fmt so it exercises comments, flow/block choices, expressions and
//! block scalars.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pipewright_fmt::{format_source, Dialect};
use pipewright_syntax::FileId;
use std::hint::black_box;

const STEPS: &str = r#"
  # a commented step
  - transform: {value: "a+b*2", output: x}   # trailing
  - agent:
      prompt: >-
        Summarize {ctx.doc}
        in two sentences.
      output: summary
  - tool:
      name: very_long_tool_name_for_testing
      args: {first_argument: "some value", second_argument: "another value", third: !expr "ctx.n+1"}
      output: result
  - for_each:
      over: ctx.reviewers
      on_error: "retry(2)"
      do: {agent: {prompt: "Review as {item}: {ctx.doc}", schema: Review}}
      collect: {transform: {value: "pipe"}}
  - match:
      on: "ctx.x>1"
      cases:
        "True": {pipeline: big, pass: {x: "ctx.x+1"}}
      default: {pipeline: small}
"#;

fn big_file(bytes: usize) -> String {
    let mut s = String::from(
        "schema: Review\nfields:\n  passed: {type: bool}\n---\npipeline: big\nsteps:\n",
    );
    while s.len() < bytes {
        s.push_str(STEPS);
    }
    s
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("fmt");
    g.sample_size(10);
    // The 1 MB case is the target; the others show whether the cost per byte stays flat.
    for (name, bytes) in [
        ("pipeline_256kib", 256 * 1024),
        ("pipeline_1mb", 1_000_000),
        ("pipeline_4mib", 4 * 1024 * 1024),
    ] {
        let text = big_file(bytes);
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                format_source(FileId(0), black_box(&text), Dialect::Pipeline)
                    .map(|f| f.output.len())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
