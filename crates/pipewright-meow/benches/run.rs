//! MEOW scheduler overhead (issue 15). Two runs without a store, each timed whole:
//! - a 1,000-step shell DAG of `true` (10 layers of 100, each step needing one of the layer
//!   before): bound by spawning processes;
//! - a 10,000-iteration foreach whose template is one agent step on the mock backend, with a
//!   declared output validated: bound by the scheduler (insert, ready set, dispatch, output
//!   validation, completion, join).
//!
//! Per step = total / steps. The target is under 50 µs of scheduler time a step (the foreach
//! figure bounds it from above: it includes the mock backend's answers).
//! Run: `cargo bench -p pipewright-meow --bench run`.

use pipewright_meow::run as meow;
use pipewright_runtime::RunOptions;
use pipewright_syntax::{FileId, SourceMap};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn dag(layers: usize, width: usize) -> String {
    let mut t = String::from("[main]\n");
    for l in 0..layers {
        for w in 0..width {
            t.push_str(&format!(
                "[[main.steps]]\nid = \"s{l}-{w}\"\nexecutor = \"shell\"\ncommand = \"true\"\n"
            ));
            if l > 0 {
                t.push_str(&format!("needs = [\"s{}-{w}\"]\n", l - 1));
            }
        }
    }
    t
}

fn foreach(items: usize) -> String {
    format!(
        "[main]\n[[main.steps]]\nid = \"all\"\nexecutor = \"foreach\"\nitems = \"[{}]\"\nitem_var = \"n\"\ntemplate = \".one\"\n\n[one]\n[[one.steps]]\nid = \"ask\"\nexecutor = \"agent\"\nagent = \"a{{{{n}}}}\"\nprompt = \"Item {{{{n}}}}\"\n[one.steps.outputs]\nanswer = {{ required = true, type = \"string\" }}\n",
        (0..items).map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
    )
}

fn time(text: &str, max_steps: usize, rt: &tokio::runtime::Runtime) -> (Duration, usize) {
    let mut sources = SourceMap::new();
    let file: FileId = sources.add("bench.meow.toml", text);
    let (program, module) =
        pipewright_meow::check_and_lower(file, Path::new("bench.meow.toml"), text)
            .unwrap_or_else(|d| panic!("{:?}", d.first().map(|d| &d.message)));
    let (program, module) = (Arc::new(program), Arc::new(module));
    let mut best = Duration::MAX;
    let mut steps = 0;
    for _ in 0..3 {
        let mut o = RunOptions::new(std::env::temp_dir());
        Arc::make_mut(&mut o.config).meow_max_steps = max_steps as u64;
        let t = Instant::now();
        let out = rt
            .block_on(meow::run(program.clone(), module.clone(), &sources, o))
            .unwrap_or_else(|e| panic!("{e}"));
        best = best.min(t.elapsed());
        assert_eq!(out.status.name(), "ok");
        steps = out
            .steps
            .as_ref()
            .and_then(|s| s.as_object())
            .map_or(0, |m| m.len());
    }
    (best, steps)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    for (name, text, max) in [
        ("shell DAG of `true`", dag(10, 100), 1000),
        ("foreach of mock agents", foreach(10_000), 20_001),
    ] {
        let (t, steps) = time(&text, max, &rt);
        println!(
            "meow {name}: {steps} steps in {:.1} ms, {:.1} µs a step",
            t.as_secs_f64() * 1e3,
            t.as_secs_f64() * 1e6 / steps as f64
        );
    }
}
