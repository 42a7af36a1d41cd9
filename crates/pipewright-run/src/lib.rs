//! Transitional: the names tests and benches used before the executors moved into their
//! dialect crates (`pipewright_<dialect>::run`) on the shared core (`pipewright-runtime`).
//! Nothing in the product depends on this crate; it goes once its tests have moved.

pub use pipewright_runtime::{
    backend, cancel, codes, config, failure, outcome, progress, schema, secrets, session, store,
    tools, value,
};
pub use pipewright_runtime::{
    AgentBackend, AgentRequest, BackendError, CancelToken, Caps, EvalLimits, Event, EventKind,
    EventSink, ProjectConfig, RunError, RunOptions, RunOutcome, RunStatus,
};

pub use pipewright_meow::run as meow;
pub use pipewright_recipe::run as recipe;
pub use pipewright_statemachine::run as statemachine;

use pipewright_dialect::{RunTarget, Runtime};
use pipewright_ir::Program;
use pipewright_syntax::SourceMap;
use std::path::Path;
use std::sync::Arc;

/// The runtime of the dialect the program was lowered from.
fn runtime_of(program: &Program) -> Result<&'static dyn Runtime, String> {
    let name = program
        .workflows
        .first()
        .map(|w| w.dialect)
        .ok_or("the file declares no workflow")?;
    pipewright_registry::by_name(name)
        .and_then(|d| d.runtime())
        .ok_or_else(|| format!("{name} files cannot be run"))
}

/// Runs a program of any dialect with `opts` as given (its backend and store), as the tests
/// that predate the dialects' runtimes do.
pub async fn run(
    program: Arc<Program>,
    sources: &SourceMap,
    opts: RunOptions,
) -> Result<RunOutcome, String> {
    match program.workflows.first().map(|w| w.dialect) {
        Some("recipe") => pipewright_recipe::run::run(program, sources, opts).await,
        Some("meow") => pipewright_meow::run::run(program, sources, opts).await,
        Some("state-machine") => {
            let backend = Arc::new(statemachine::session::Stateless(opts.backend.clone()));
            let sm = statemachine::Options::new(backend, opts.tools.workdir.clone());
            statemachine::run(program, sources, opts, sm)
                .await
                .map(|o| o.run)
                .map_err(|r| r.message)
        }
        _ => pipewright_pipeline::run::run(program, sources, opts).await,
    }
}

pub mod plan {
    pub use pipewright_runtime::plan::*;

    pub fn plan(
        program: &pipewright_ir::Program,
        sources: &pipewright_syntax::SourceMap,
        workflow: Option<&str>,
        input: &serde_json::Value,
        source_path: Option<&std::path::Path>,
    ) -> Result<Plan, String> {
        let target = super::target(program, sources, workflow, input, source_path);
        let first = program.workflows.first().map_or("", |w| w.dialect);
        Ok(super::runtime_of(program)?
            .plan(target)?
            .of_run(first, program, sources, input))
    }
}

pub mod prerun {
    pub use pipewright_runtime::prerun::*;

    pub fn check(
        program: &pipewright_ir::Program,
        sources: &pipewright_syntax::SourceMap,
        workflow: Option<&str>,
        input: &serde_json::Value,
        source_path: Option<&std::path::Path>,
    ) -> Result<(), String> {
        let target = super::target(program, sources, workflow, input, source_path);
        super::runtime_of(program)?.prerun(target)
    }
}

fn target<'a>(
    program: &'a Program,
    sources: &'a SourceMap,
    workflow: Option<&'a str>,
    input: &'a serde_json::Value,
    source_path: Option<&'a Path>,
) -> RunTarget<'a> {
    RunTarget {
        program,
        sources,
        workflow,
        input,
        source_path,
        ast: None,
    }
}
