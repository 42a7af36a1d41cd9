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

use pipewright_dialect::{CheckedAst, Context, RunTarget, Runtime};
use pipewright_ir::Program;
use pipewright_syntax::SourceMap;
use std::path::{Path, PathBuf};
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
        Some("meow") => {
            let module = checked_ast(&program, sources, opts.source_path.as_deref())
                .and_then(|a| a.downcast().ok())
                .ok_or("the MEOW module does not check")?;
            pipewright_meow::run::run(program, module, sources, opts).await
        }
        Some("state-machine") => {
            let ast = checked_ast(&program, sources, opts.source_path.as_deref());
            let recipe = ast
                .as_ref()
                .and_then(|a| a.downcast_ref())
                .ok_or("the recipe does not check")?;
            let backend = Arc::new(statemachine::session::Stateless(opts.backend.clone()));
            let sm = statemachine::Options::new(backend, opts.tools.workdir.clone());
            statemachine::run(program, recipe, sources, opts, sm)
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
        let ast = super::checked_ast(program, sources, source_path);
        let target = super::target(program, sources, workflow, input, source_path, ast.as_ref());
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
        let ast = super::checked_ast(program, sources, source_path);
        let target = super::target(program, sources, workflow, input, source_path, ast.as_ref());
        super::runtime_of(program)?.prerun(target)
    }
}

fn target<'a>(
    program: &'a Program,
    sources: &'a SourceMap,
    workflow: Option<&'a str>,
    input: &'a serde_json::Value,
    source_path: Option<&'a Path>,
    ast: Option<&'a CheckedAst>,
) -> RunTarget<'a> {
    RunTarget {
        program,
        sources,
        workflow,
        input,
        source_path,
        ast,
    }
}

/// The checked AST a dialect's runtime runs, from lowering the program's file again: this
/// crate's callers hold only the IR. `None` when the dialect gives none or the file does not
/// check.
fn checked_ast(
    program: &Program,
    sources: &SourceMap,
    source_path: Option<&Path>,
) -> Option<CheckedAst> {
    let w = program.workflows.first()?;
    let dialect = pipewright_registry::by_name(w.dialect)?;
    let file = sources.get(w.file)?;
    let path = source_path.map_or_else(|| PathBuf::from(&file.name), PathBuf::from);
    // The files the lowering reads (includes) go into a copy: the caller's map is as it was.
    let mut scratch = sources.clone();
    let lowered = dialect.lower(&path, w.file, &file.text, &mut scratch, &Context::default());
    lowered.ok()?.ast
}
