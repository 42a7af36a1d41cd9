//! Recipe interpreter overhead (issue 12): a 1,000-step recipe whose steps are agent turns on
//! the mock backend, without and with the SQLite run store (each step a landing committed
//! before the next starts). Per step = total / 1,000. Targets: under 20 µs a step, the whole
//! run under 50 ms.

use criterion::{criterion_group, criterion_main, Criterion};
use pipewright_recipe::run::run;
use pipewright_runtime::RunOptions;
use pipewright_syntax::{FileId, SourceMap};
use std::sync::Arc;

fn recipe(steps: usize) -> String {
    let mut t = String::from(
        "name: bench\ndescription: steps\nversion: \"1.0.0\"\ncontext:\n  topic: rust\nsteps:\n",
    );
    for i in 0..steps {
        t.push_str(&format!(
            "  - id: s{i}\n    agent: bench:agent\n    prompt: \"Step {i} about {{{{topic}}}}\"\n    output: r{i}\n"
        ));
    }
    t
}

fn lowered(text: &str) -> (Arc<pipewright_ir::Program>, SourceMap) {
    let mut sources = SourceMap::new();
    let file: FileId = sources.add("bench.yaml", text);
    let (docs, _) = pipewright_yaml::load(file, text, pipewright_yaml::Limits::default());
    let root = docs
        .iter()
        .find_map(|d| d.root.as_ref())
        .unwrap_or_else(|| panic!("no document"));
    let r = pipewright_recipe::load::Loader::new().recipe(root);
    (
        Arc::new(pipewright_recipe::lower::recipe(&r, file)),
        sources,
    )
}

fn options() -> RunOptions {
    let mut o = RunOptions::new(std::env::temp_dir());
    // The runner's default budget is 100 agent turns; the bench measures the interpreter.
    o.input = serde_json::Value::Null;
    o
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let text = recipe(1000).replace(
        "context:\n",
        "recursion:\n  max_total_steps: 1000000\ncontext:\n",
    );
    let (p, s) = lowered(&text);
    c.bench_function("recipe 1000 agent steps, mock backend", |b| {
        b.iter(|| {
            let out = rt.block_on(run(p.clone(), &s, options()));
            assert!(
                out.as_ref().is_ok_and(|o| o.error.is_none()),
                "{:?}",
                out.map(|o| o.error)
            );
        })
    });
    c.bench_function("recipe 1000 agent steps, mock backend, SQLite store", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
                let store: Arc<dyn pipewright_runtime::store::Store> = Arc::new(
                    pipewright_runtime::store::SqliteStore::open(&dir.path().join("runs.db"))
                        .unwrap_or_else(|e| panic!("{e}")),
                );
                let mut o = options();
                o.store = Some(store);
                (dir, o)
            },
            |(dir, o)| {
                let out = rt
                    .block_on(run(p.clone(), &s, o))
                    .map(|o| o.error.is_none());
                assert_eq!(out, Ok(true));
                dir
            },
            criterion::BatchSize::PerIteration,
        )
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
