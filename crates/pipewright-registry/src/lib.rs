//! The registry: every dialect pipewright knows, in detection order. This file and this crate's
//! manifest are the only places outside the dialect crates that name a dialect; the CLI's verbs
//! and the language server iterate [`DIALECTS`].

use pipewright_dialect::{Dialect, NearMiss, Source};
use pipewright_syntax::{Diagnostic, FileId};

/// Every dialect, in detection order: the first whose [`Dialect::detect`] accepts a file owns
/// it.
pub static DIALECTS: &[&dyn Dialect] = &[
    &pipewright_pipeline::dialect::Pipeline,
    &pipewright_recipe::dialect::Recipe,
    &pipewright_statemachine::dialect::StateMachine,
    &pipewright_meow::dialect::Meow,
];

pub fn by_name(name: &str) -> Option<&'static dyn Dialect> {
    DIALECTS.iter().copied().find(|d| d.name() == name)
}

pub fn names() -> Vec<&'static str> {
    DIALECTS.iter().map(|d| d.name()).collect()
}

/// The dialect a file is written in, if any.
pub fn detect(src: &Source) -> Option<&'static dyn Dialect> {
    DIALECTS.iter().copied().find(|d| d.detect(src))
}

/// The first dialect the file nearly matches.
pub fn near_miss(src: &Source, file: FileId) -> Option<NearMiss> {
    DIALECTS.iter().find_map(|d| d.near_miss(src, file))
}

/// The error for a file no dialect recognises, with every dialect's shape as a note.
pub fn unrecognised(file: FileId, text: &str) -> Diagnostic {
    let first = text
        .lines()
        .position(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let start: usize = text
        .lines()
        .take(first.unwrap_or(0))
        .map(|l| l.len() + 1)
        .sum();
    let len = first.and_then(|i| text.lines().nth(i)).map_or(0, str::len);
    let mut d = Diagnostic::error(
        "PW0002",
        pipewright_syntax::Span::new(file, start..start + len),
        "this file is not a workflow pipewright recognises",
    )
    .with_label("unrecognised top level");
    for dialect in DIALECTS {
        d = d.with_note(dialect.shape());
    }
    d.with_help("pass `--dialect` to check it as a particular dialect")
}

/// The decision on a run's approval, by the dialect whose run it is (`Runtime::decide`),
/// whichever engine keeps the run: `pipewright approve|deny` and `pipewright ui` both come here,
/// so their refusals are the same sentences.
pub fn decide(
    run: &pipewright_dialect::RecordedRun<'_>,
    step: Option<&str>,
    d: &pipewright_runtime::approval::Decision,
) -> pipewright_dialect::Decided {
    DIALECTS
        .iter()
        .filter_map(|dialect| dialect.runtime())
        .find_map(|rt| rt.decide(run, step, d))
        .unwrap_or_else(|| {
            Err((
                1,
                pipewright_runtime::approval::nothing_waits(run.store, run.run_id),
            ))
        })
}

/// [`decide`] on a run of a local store; `runs_dir` is where live runs keep their directories
/// (a MEOW run's orchestrator socket).
pub fn decide_local(
    store: &dyn pipewright_runtime::store::Store,
    runs_dir: &std::path::Path,
    run_id: &str,
    step: Option<&str>,
    d: &pipewright_runtime::approval::Decision,
) -> pipewright_dialect::Decided {
    let record = store.load_run(run_id).map_err(|e| (1, e.to_string()))?;
    let run_dir = runs_dir.join(run_id);
    decide(
        &pipewright_dialect::RecordedRun {
            run_id,
            store,
            record: &record,
            run_dir: &run_dir,
        },
        step,
        d,
    )
}

/// The approvals a run waits for now, by the dialect whose run it is (empty: none).
pub fn waiting(run: &pipewright_dialect::RecordedRun<'_>) -> Vec<pipewright_dialect::Waiting> {
    DIALECTS
        .iter()
        .filter_map(|dialect| dialect.runtime())
        .find_map(|rt| rt.waiting(run))
        .unwrap_or_default()
}
