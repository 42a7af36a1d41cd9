//! `pipewright run --dry-run`: prints the plan the dialect's runtime builds and executes
//! nothing (no command, agent, file or run store). A run that would be refused for want of
//! an input still gets its plan, then the refusal `run` would give (exit 2).

use crate::cli::{RunArgs, RunFormat};
use crate::exit::ExitStatus;
use pipewright_dialect::{Dialect, RunTarget, Runtime};

pub(crate) fn run(
    args: &RunArgs,
    dialect: &dyn Dialect,
    rt: &dyn Runtime,
    target: RunTarget<'_>,
) -> ExitStatus {
    let plan = match rt.plan(target) {
        Ok(p) => p.of_run(dialect.name(), target.program, target.sources, target.input),
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    match args.format {
        RunFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&plan.to_json()).unwrap_or_default()
        ),
        RunFormat::Human => out!("{}", plan.to_human()),
    }
    match rt.prerun(target) {
        Ok(()) => ExitStatus::OK,
        Err(e) => {
            errln!("error: {e}");
            ExitStatus::COULD_NOT_START
        }
    }
}
