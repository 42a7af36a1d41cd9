//! Timing of the formatter's phases (a development aid). `profile FILE` or `profile --kib N`
//! (a generated pipeline file like the bench's); minimum of several runs per phase, since the
//! machine is shared. `profile --kib N --write PATH` only writes the generated file (the input
//! for measuring the CLI's peak memory with `/usr/bin/time -v pipewright fmt --check PATH`).

use pipewright_syntax::FileId;
use std::time::{Duration, Instant};

use pipewright_fmt::bench_support::pipeline_file as generated;

// Time with the allocator the `pipewright` binary ships with, not the system one.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let text = match args.first().map(String::as_str) {
        Some("--kib") => {
            let kib: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(1024);
            generated(kib * 1024)
        }
        Some(path) => std::fs::read_to_string(path).unwrap_or_default(),
        None => generated(1_000_000),
    };
    if let Some(i) = args.iter().position(|a| a == "--write") {
        let Some(path) = args.get(i + 1) else {
            eprintln!("--write needs a path");
            std::process::exit(2);
        };
        if let Err(e) = std::fs::write(path, &text) {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
        return;
    }
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    println!("{} bytes, min of {runs} runs", text.len());
    if std::env::var_os("FORMAT_ONLY").is_some() {
        // Only `format_source`, for `perf record` / callgrind, and its spread over the runs.
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let f = pipewright_fmt::format_source(
                    FileId(0),
                    &text,
                    pipewright_fmt::Syntax::Yaml(&pipewright_pipeline::fmt_rules::PipelineRules),
                    pipewright_fmt::Options::CANONICAL,
                );
                std::hint::black_box(f.map(|f| f.output.len()).unwrap_or(0));
                t.elapsed()
            })
            .collect();
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        if let (Some(&min), Some(&median)) = (times.first(), times.get(times.len() / 2)) {
            println!(
                "format_source min {:8.2} ms  median {:8.2} ms",
                ms(min),
                ms(median)
            );
        }
        return;
    }
    let mut best = [Duration::MAX; 8];
    for _ in 0..runs {
        let t = phases(&text);
        for (b, t) in best.iter_mut().zip(t) {
            *b = (*b).min(t);
        }
    }
    let names = [
        "format_source",
        "build (load+trivia)",
        "  of which load",
        "print",
        "reload",
        "comments",
        "compare",
        "drop (trees, output)",
    ];
    for (n, b) in names.iter().zip(best) {
        println!(
            "{n:22} {:8.2} ms  {:6.1} ns/byte",
            b.as_secs_f64() * 1e3,
            b.as_nanos() as f64 / text.len() as f64
        );
    }
}

fn phases(text: &str) -> [Duration; 8] {
    let rules = pipewright_pipeline::fmt_rules::PipelineRules;
    let mut d = [Duration::ZERO; 8];
    let t = Instant::now();
    let f = pipewright_fmt::format_source(
        FileId(0),
        text,
        pipewright_fmt::Syntax::Yaml(&pipewright_pipeline::fmt_rules::PipelineRules),
        pipewright_fmt::Options::CANONICAL,
    );
    d[0] = t.elapsed();
    std::hint::black_box(f.map(|f| f.output.len()).unwrap_or(0));
    let t = Instant::now();
    let Ok(mut cst) = pipewright_fmt::cst::build(FileId(0), text) else {
        return d;
    };
    d[1] = t.elapsed();
    let t = Instant::now();
    std::hint::black_box(pipewright_yaml::load(FileId(0), text, Default::default()));
    d[2] = t.elapsed();
    let t = Instant::now();
    let out = pipewright_fmt::print::print(&mut cst, &rules);
    d[3] = t.elapsed();
    let t = Instant::now();
    let (docs, _) = pipewright_yaml::load(FileId(0), &out, Default::default());
    d[4] = t.elapsed();
    let t = Instant::now();
    let c = pipewright_fmt::trivia::comment_slices(&out, &docs);
    d[5] = t.elapsed();
    std::hint::black_box(c.len());
    let t = Instant::now();
    let roots: Vec<_> = cst.docs.iter().map(|d| d.root.as_ref()).collect();
    let r = pipewright_fmt::verify::same_docs(&roots, &docs, &rules);
    d[6] = t.elapsed();
    std::hint::black_box(r.is_ok());
    drop(roots);
    let t = Instant::now();
    drop((cst, docs, out));
    d[7] = t.elapsed();
    d
}
