//! The run path: arbitrary bytes as a pipeline file (and, after a NUL byte, its input JSON);
//! one that checks clean and runs nothing outside the process (no `shell` or `tool` step) is
//! run on the mock backend with small caps. No input may panic, and every run must end
//! (completed, failed or refused) within its time budget: the call-depth cap, the fan-out caps
//! and the evaluation budget are what bound it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipewright_pipeline::ast::{Program, Step, StepKind};
use pipewright_pipeline::{check_program, load_source, CheckOptions};
use pipewright_runtime::{Caps, EvalLimits, RunOptions};
use pipewright_syntax::SourceMap;
use std::sync::Arc;
use std::time::Duration;

/// Per case: the budget a run gets before it counts as a hang.
const TIME_BUDGET: Duration = Duration::from_secs(5);

fn runs_outside(step: &Step) -> bool {
    if matches!(step.kind, StepKind::Shell { .. } | StepKind::Tool { .. }) {
        return true;
    }
    let mut outside = false;
    step.each_child(|c| outside |= runs_outside(c));
    outside
}

fuzz_target!(|data: &[u8]| {
    let (file, input) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(text) = std::str::from_utf8(file) else {
        return;
    };
    let input: serde_json::Value = match serde_json::from_slice(input) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        _ => serde_json::Value::Null,
    };
    let mut sources = SourceMap::new();
    let id = sources.add("fuzz.yaml", text);
    let mut diags = Vec::new();
    let file = load_source(id, text, &mut diags);
    if file
        .pipelines
        .iter()
        .flat_map(|p| &p.steps)
        .any(runs_outside)
    {
        return;
    }
    let program = Program { files: vec![file] };
    diags.extend(check_program(&program, &sources, &CheckOptions::default()));
    if diags.iter().any(|d| d.is_error()) {
        return;
    }
    let ir = Arc::new(pipewright_pipeline::lower::pipeline(program));
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let mut opts = RunOptions::new(std::env::temp_dir().join("pipewright-fuzz-run"));
    opts.input = input;
    opts.caps = Caps {
        max_fan_out_depth: 3,
        max_spawns: 50,
        max_call_depth: 16,
        eval: EvalLimits {
            max_steps: 200_000,
            max_bytes: 4 << 20,
        },
    };
    opts.default_max_parallel = 4;
    let outcome = rt.block_on(async {
        tokio::time::timeout(TIME_BUDGET, pipewright_pipeline::run::run(ir, &sources, opts)).await
    });
    match outcome {
        Err(_) => panic!("the run did not end within {TIME_BUDGET:?}"),
        Ok(Ok(o)) => {
            let _ = o.to_json(&sources);
            if let Some(d) = o.diagnostic() {
                pipewright_fuzz::render_all(&[d], &sources);
            }
        }
        Ok(Err(_refused)) => {}
    }
});
