//! Peak resident memory of `pipewright check`, `fmt` and `graph` (each format) on a generated
//! 10 MiB pipeline, against the "at most 10× the input" target (docs/architecture.md, "Memory
//! of a large check"; issue 9, finding 18).
//!
//! `cargo bench -p pipewright --bench memory` (release build of the CLI). The input is the text
//! `check_phases --write` and the pipeline crate's `check` bench generate; `PW_BENCH_KIB` sets
//! its size (default 10240). Each command runs as its own child process and its peak is the
//! kernel's count for that child (`wait4`), so the figure is what `/usr/bin/time -v` reports.
//! Prints one line per command; fails only if a command does not do its whole work.

#[path = "../../pipewright-pipeline/benches/common/mod.rs"]
mod common;

#[path = "peak/mod.rs"]
mod peak;

use peak::peak_kib;

fn main() {
    let kib: usize = std::env::var("PW_BENCH_KIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10 * 1024);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let path = dir.path().join("big.yaml");
    let text = common::generate(kib * 1024);
    std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let input_mib = text.len() as f64 / (1024.0 * 1024.0);
    drop(text);
    let file = path.to_string_lossy().to_string();
    // `fmt` rewrites its file: a copy, so the others see the generated text.
    let copy = dir.path().join("rewritten.yaml");
    std::fs::copy(&path, &copy).unwrap_or_else(|e| panic!("{}: {e}", copy.display()));
    let copy = copy.to_string_lossy().to_string();
    // `check` finds nothing in the generated file; `fmt --check` and `fmt --diff` format it
    // whole and say it would change (exit 1); `fmt` rewrites it (exit 0); `graph` prints the
    // lowered graph of the unchanged file in each format (exit 0). Any other exit means
    // the figure is not the one wanted.
    for (name, args, expected) in [
        ("check", vec!["check", file.as_str()], 0),
        ("fmt --check", vec!["fmt", "--check", file.as_str()], 1),
        ("fmt --diff", vec!["fmt", "--diff", file.as_str()], 1),
        ("fmt", vec!["fmt", copy.as_str()], 0),
        (
            "graph json",
            vec!["graph", "--format", "json", file.as_str()],
            0,
        ),
        (
            "graph dot",
            vec!["graph", "--format", "dot", file.as_str()],
            0,
        ),
        (
            "graph mermaid",
            vec!["graph", "--format", "mermaid", file.as_str()],
            0,
        ),
    ] {
        let (code, kib) = peak_kib(&args);
        assert_eq!(code, expected, "pipewright {name} exited with {code}");
        let mib = kib as f64 / 1024.0;
        println!(
            "pipewright {name:<13} {input_mib:.1} MiB input: peak RSS {mib:.1} MiB ({:.1}x the input)",
            mib / input_mib
        );
    }
}
