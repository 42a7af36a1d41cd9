//! Orchestration overhead: a pipeline of 1,000 transform steps (per-step cost), and a
//! for_each over 10,000 items with a transform body, without and with the SQLite run store.

use criterion::{criterion_group, criterion_main, Criterion};
use pipewright_pipeline::run::run;
use pipewright_runtime::RunOptions;
use pipewright_syntax::SourceMap;
use std::sync::Arc;

fn load(text: &str) -> (Arc<pipewright_ir::Program>, SourceMap) {
    let mut sources = SourceMap::new();
    let file = sources.add("bench.yaml", text);
    let mut diags = Vec::new();
    let f = pipewright_pipeline::load_source(file, text, &mut diags);
    let ast = pipewright_pipeline::ast::Program { files: vec![f] };
    (Arc::new(pipewright_pipeline::lower::pipeline(ast)), sources)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut text = String::from("pipeline: p\nsteps:\n  - transform: {value: \"0\"}\n");
    for _ in 0..999 {
        text.push_str("  - transform: {value: \"pipe + 1\"}\n");
    }
    let (p, s) = load(&text);
    c.bench_function("1000 transform steps", |b| {
        b.iter(|| {
            let o = RunOptions::new(std::env::temp_dir());
            rt.block_on(run(p.clone(), &s, o)).map(|o| o.output)
        })
    });
    let (p, s) = load("pipeline: p\nsteps:\n  - for_each:\n      over: \"ctx.items\"\n      on_error: abort\n      do: {transform: {value: \"item * 2\"}}\n      collect: {transform: {value: \"count(pipe)\"}}\n");
    let input = serde_json::json!({"items": (0..10_000).collect::<Vec<i64>>()});
    c.bench_function("for_each 10000 items transform body", |b| {
        b.iter(|| {
            let mut o = RunOptions::new(std::env::temp_dir());
            o.input = input.clone();
            rt.block_on(run(p.clone(), &s, o)).map(|o| o.output)
        })
    });
    // The same with the SQLite run store (a new database each time): every item a landing
    // and two events.
    c.bench_function("for_each 10000 items transform body, SQLite store", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
                let store: Arc<dyn pipewright_runtime::store::Store> = Arc::new(
                    pipewright_runtime::store::SqliteStore::open(&dir.path().join("runs.db"))
                        .unwrap_or_else(|e| panic!("{e}")),
                );
                let mut o = RunOptions::new(std::env::temp_dir());
                o.input = input.clone();
                o.store = Some(store);
                (dir, o)
            },
            |(dir, o)| {
                let out = rt.block_on(run(p.clone(), &s, o)).map(|o| o.output);
                (dir, out)
            },
            criterion::BatchSize::PerIteration,
        )
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
