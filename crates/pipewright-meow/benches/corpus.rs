//! `check` of every MEOW file in ../shared/corpus/meow (or /work/shared/corpus/meow) in one
//! process (target: under 10 ms).

use criterion::{criterion_group, criterion_main, Criterion};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.to_string_lossy().ends_with(".meow.toml") {
            out.push(p);
        }
    }
}

fn corpus(c: &mut Criterion) {
    // Beside the clone (/work/main), or where the workplace keeps it (a worktree elsewhere).
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/meow");
    let mut paths = Vec::new();
    for root in [beside.as_path(), Path::new("/work/shared/corpus/meow")] {
        files(root, &mut paths);
        if !paths.is_empty() {
            break;
        }
    }
    if paths.is_empty() {
        eprintln!("corpus not present; skipped");
        return;
    }
    let texts: Vec<(PathBuf, String)> = paths
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t)))
        .collect();
    c.bench_function(&format!("check {} corpus files", texts.len()), |b| {
        b.iter(|| {
            // As one `pipewright check` run: one session, so referenced templates are read once.
            let mut sources = pipewright_syntax::SourceMap::new();
            let mut session = pipewright_meow::Session::default();
            let mut n = 0;
            for (p, t) in &texts {
                let file = sources.add(p.display().to_string(), t.as_str());
                n += session.check(file, p, t).len();
            }
            n
        })
    });
}

criterion_group!(benches, corpus);
criterion_main!(benches);
