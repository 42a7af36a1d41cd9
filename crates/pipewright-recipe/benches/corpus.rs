//! Checks every amplifier corpus recipe in one process (target: under 30 ms in total).

use criterion::{criterion_group, criterion_main, Criterion};
use std::path::PathBuf;

fn corpus() -> Vec<(PathBuf, String)> {
    let root = PathBuf::from("/work/shared/corpus");
    let Ok(tsv) = std::fs::read_to_string(root.join("EXPECTED.tsv")) else {
        return Vec::new();
    };
    tsv.lines()
        .filter_map(|l| l.split('\t').next())
        .filter(|p| p.starts_with("amplifier/"))
        .filter_map(|p| {
            std::fs::read_to_string(root.join(p))
                .ok()
                .map(|t| (root.join(p), t))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let files = corpus();
    c.bench_function(&format!("check {} amplifier recipes", files.len()), |b| {
        b.iter(|| {
            let mut n = 0usize;
            for (path, text) in &files {
                let mut sources = pipewright_syntax::SourceMap::new();
                n += pipewright_recipe::check_file(&mut sources, path, text).len();
            }
            n
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
