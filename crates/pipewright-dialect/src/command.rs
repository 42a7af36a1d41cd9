//! A command of a dialect's own under `pipewright`: MEOW's `meow …`, which the agents and
//! branch conditions of a running MEOW workflow call (the reference's command name). The CLI
//! adds it beside its own commands and runs it; the executable called by the command's
//! program name runs it too.

use std::path::PathBuf;

/// The runs of the project around the working directory.
pub struct ProjectRuns {
    /// The run store (`.pipewright/runs.db`).
    pub store: PathBuf,
    /// Where its runs keep their directories (`.pipewright/runs/`).
    pub runs_dir: PathBuf,
}

/// What a dialect command gets from the CLI.
pub struct CommandContext<'a> {
    /// The project's runs, or why there is no project to look in.
    pub project_runs: &'a dyn Fn() -> Result<ProjectRuns, String>,
    /// Writes to standard output; a reader that went away is not an error.
    pub out: &'a dyn Fn(std::fmt::Arguments<'_>),
    /// Writes to standard error.
    pub err: &'a dyn Fn(std::fmt::Arguments<'_>),
    /// Puts a request to a run's orchestrator through the engine the run is on, waiting up to
    /// the duration for the answer: for an agent on a host without the run's socket. `None`
    /// when no engine is known here.
    pub engine_request: &'a EngineRequest,
}

/// See [`CommandContext::engine_request`]: (the command's name, run id, request, wait) → the
/// answer, which the command's [`DialectCommand::answer_relayed`] gave on the run's worker.
pub type EngineRequest = dyn Fn(
    &str,
    &str,
    &serde_json::Value,
    std::time::Duration,
) -> Option<Result<serde_json::Value, String>>;

pub trait DialectCommand: Sync {
    /// The command's syntax; its name is the subcommand's.
    fn command(&self) -> clap::Command;
    /// Runs it with what the command line gave; the process's exit code.
    fn run(&self, matches: &clap::ArgMatches, cx: &CommandContext<'_>) -> u8;
    /// The executable, called by this name (through a link), acts as this command.
    fn program_name(&self) -> Option<&'static str> {
        None
    }
    /// Answers, where a run runs (its worker on an engine), a request this command sent
    /// through [`CommandContext::engine_request`]; `run_dir` is the run's directory there.
    fn answer_relayed(
        &self,
        _run_dir: &std::path::Path,
        _request: &serde_json::Value,
    ) -> Result<serde_json::Value, String> {
        Err("this command sends no requests through an engine".into())
    }
}
