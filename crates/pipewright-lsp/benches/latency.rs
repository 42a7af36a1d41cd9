//! Diagnostics latency: from a `didChange` sent by the client to the `publishDiagnostics` of
//! that version, through the whole server (in-memory connection, check thread, conversion).
//! The targets (issue 27): 1 MiB at most 10 ms median, a 500-line file about 0.6 ms. Each edit
//! is what an editor sends with incremental sync: a comment line inserted in the middle of
//! the file, then taken out again; `full` sends the whole text instead, as before issue 27.
//!
//! `cargo bench -p pipewright-lsp --bench latency`

use criterion::{criterion_group, criterion_main, Criterion};

#[path = "session/mod.rs"]
mod session;

use session::{edit, Session, COMMENT};

// What `pipewright lsp` runs on (crates/pipewright/src/lib.rs): the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// The pipeline `check` bench's generated input: a realistic mix of step kinds.
#[path = "../../pipewright-pipeline/benches/common/mod.rs"]
mod common;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("diagnostics_after_change");
    for (name, bytes, samples, full) in [
        ("500_lines", 23_000, 50, false),
        ("1_MiB", 1 << 20, 20, false),
        ("1_MiB full", 1 << 20, 10, true),
    ] {
        let text = common::generate(bytes);
        // A comment line inserted at the start of a middle line: both texts check clean.
        let line = (text.lines().count() / 2) as u32;
        let at = text
            .match_indices('\n')
            .nth(line as usize - 1)
            .map_or(0, |(i, _)| i + 1);
        let edited = format!("{}{COMMENT}{}", &text[..at], &text[at..]);
        let mut s = Session::start(&text, pipewright_pipeline::codes::CODES.to_vec());
        assert_eq!(
            s.change(edit(full, line, true, &edited)),
            0,
            "the generated pipeline checks clean"
        );
        let label = format!(
            "{name} ({} lines, {} bytes)",
            text.lines().count(),
            text.len()
        );
        g.sample_size(samples);
        // The session holds `edited` now; each iteration flips it.
        let mut inserted = true;
        g.bench_function(label, |b| {
            b.iter(|| {
                inserted = !inserted;
                let target = if inserted { &edited } else { &text };
                s.change(edit(full, line, inserted, target))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
