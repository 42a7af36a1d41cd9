//! The `pipewright` command line.

/// `print!` and friends panic when the reader of a pipe has gone; these never do.
macro_rules! out {
    ($($t:tt)*) => { $crate::output::write(false, format_args!($($t)*)) };
}
macro_rules! outln {
    () => { $crate::output::write(false, format_args!("\n")) };
    ($($t:tt)*) => { $crate::output::write(false, format_args!("{}\n", format_args!($($t)*))) };
}
macro_rules! err {
    ($($t:tt)*) => { $crate::output::write(true, format_args!($($t)*)) };
}
macro_rules! errln {
    ($($t:tt)*) => { $crate::output::write(true, format_args!("{}\n", format_args!($($t)*))) };
}

mod cli;
mod commands;
mod dialect;
mod discover;
mod output;
mod project;
mod read;

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
        cli::Command::Runs(args) => commands::runs::run(&args),
    };
    if output::write_failed() {
        return ExitCode::from(2);
    }
    ExitCode::from(code)
}
