//! Run overhead of the state-machine loop per transition, with the offline mock backend and no
//! run store (target: under 50 µs): a two-step cycle runs until its `maxTotalSteps` guardrail
//! (1,000 steps), so a run's time divided by 1,000 is the cost of one transition: the prompt
//! with its outcome block, the mock's turn, extraction, the decision, the state update and the
//! events. The recipe is checked and lowered once, before the runs, as `pipewright run` does.

use criterion::{criterion_group, criterion_main, Criterion};
use pipewright_runtime::backend::mock::MockBackend;
use pipewright_runtime::RunOptions;
use pipewright_statemachine::run::{self, session::Stateless};
use std::sync::Arc;

// What `pipewright run` runs on (crates/pipewright/src/lib.rs): the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const STEPS: u64 = 1000;

fn recipe() -> String {
    let step = |next: &str| {
        format!(
            r#"{{"prompt": "Do the work, then report.\n\n## Checklist\n- one\n- two\n- three", "outcomes": ["next", "blocked", "other"], "onOutcome": {{"next": {{"nextStep": "{next}"}}, "blocked": {{"action": "exit", "reason": "blocked"}}, "other": {{"action": "exit", "reason": "user-provided-other"}}}}}}"#
        )
    };
    format!(
        r#"{{"id": "cycle", "label": "Cycle", "description": "a two-step cycle", "initialStep": "a", "guardrails": {{"maxStepVisits": 1000000, "maxTotalSteps": {STEPS}, "exitOnOther": true}}, "steps": {{"a": {}, "b": {}}}}}"#,
        step("b"),
        step("a")
    )
}

fn transitions(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cycle.json");
    let text = recipe();
    std::fs::write(&path, &text).expect("write");
    let mut sources = pipewright_syntax::SourceMap::new();
    let file = sources.add(path.display().to_string(), text.as_str());
    let (program, recipe) =
        pipewright_statemachine::check_and_lower(&mut sources, &path, file, &text)
            .unwrap_or_else(|d| panic!("the bench recipe checks: {d:?}"));
    let program = Arc::new(program);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let backend = Arc::new(Stateless(Arc::new(MockBackend)));
    c.bench_function(
        &format!("state machine: {STEPS} transitions, mock backend"),
        |b| {
            b.iter(|| {
                rt.block_on(async {
                    let mut o = RunOptions::new(dir.path().to_path_buf());
                    o.source_path = Some(path.clone());
                    let sm = run::Options::new(backend.clone(), dir.path().to_path_buf());
                    let out = run::run(program.clone(), &recipe, &sources, o, sm)
                        .await
                        .expect("runs");
                    assert_eq!(out.exit_reason, "max-total-steps");
                    assert_eq!(out.trace.len() as u64, STEPS);
                })
            })
        },
    );
}

criterion_group!(benches, transitions);
criterion_main!(benches);
