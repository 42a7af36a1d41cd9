//! `check` of the spec's eight catalogue recipes (testdata/statemachine/ok) in one process,
//! includes and sibling ids read from disk as the CLI does (target: under 5 ms).

use criterion::{criterion_group, criterion_main, Criterion};
use std::path::{Path, PathBuf};

fn catalogue(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/statemachine/ok");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let texts: Vec<(PathBuf, String)> = paths
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t)))
        .collect();
    c.bench_function(&format!("check {} catalogue recipes", texts.len()), |b| {
        b.iter(|| {
            let mut sources = pipewright_syntax::SourceMap::new();
            let mut checker = pipewright_statemachine::Checker::default();
            for (p, t) in &texts {
                let file = sources.add(p.display().to_string(), t.as_str());
                checker.add(&mut sources, p, file, t);
            }
            checker.finish().len()
        })
    });
}

criterion_group!(benches, catalogue);
criterion_main!(benches);
