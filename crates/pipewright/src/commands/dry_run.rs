//! `pipewright run --dry-run`: prints the plan `pipewright_run::plan` builds and executes
//! nothing (no command, agent, file or run store). A run that would be refused for want of
//! an input still gets its plan, then the refusal `run` would give (exit 2).

use crate::cli::{RunArgs, RunFormat};
use pipewright_ir::{Dialect, Program};
use pipewright_syntax::SourceMap;
use std::path::Path;

pub fn run(
    args: &RunArgs,
    file: &Path,
    program: &Program,
    sources: &SourceMap,
    workflow: Option<&str>,
    input: &serde_json::Value,
) -> u8 {
    let state_machine = program
        .workflows
        .first()
        .is_some_and(|w| w.dialect == Dialect::StateMachine);
    if state_machine && !input.is_null() {
        errln!("error: a state-machine recipe takes no input (--input, --input-file, --var): its prompts are sent as written");
        return 2;
    }
    if let (false, Some(flag)) = (state_machine, args.state_machine.given()) {
        errln!("error: {flag} is for state-machine recipes only");
        return 2;
    }
    let plan = match pipewright_run::plan::plan(program, sources, workflow, input, Some(file)) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    match args.format {
        RunFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&plan.to_json()).unwrap_or_default()
        ),
        RunFormat::Human => out!("{}", plan.to_human()),
    }
    match pipewright_run::prerun::check(program, sources, workflow, input, Some(file)) {
        Ok(()) => 0,
        Err(e) => {
            errln!("error: {e}");
            2
        }
    }
}
