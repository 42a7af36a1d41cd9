//! The `pipewright` command line.

mod cli;
mod commands;
mod dialect;
mod discover;
mod output;
mod project;

use clap::Parser;
use std::process::ExitCode;

// `check` of a large file makes millions of small allocations (YAML nodes, AST, types); the
// system allocator spent about a quarter of the time after parsing in malloc/free.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let code = match cli.command {
        cli::Command::Check(args) => commands::check::run(&args),
        cli::Command::Explain(args) => commands::explain::run(&args),
        cli::Command::Eval(args) => commands::eval::run(&args),
        cli::Command::Fmt(args) => commands::fmt::run(&args),
        cli::Command::Graph(args) => commands::graph::run(&args),
        cli::Command::Run(args) => commands::run::run(&args),
    };
    ExitCode::from(code)
}
