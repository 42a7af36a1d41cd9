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
}

pub trait DialectCommand: Sync {
    /// The command's syntax; its name is the subcommand's.
    fn command(&self) -> clap::Command;
    /// Runs it with what the command line gave; the process's exit code.
    fn run(&self, matches: &clap::ArgMatches, cx: &CommandContext<'_>) -> u8;
    /// The executable, called by this name (through a link), acts as this command.
    fn program_name(&self) -> Option<&'static str> {
        None
    }
}
