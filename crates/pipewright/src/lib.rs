//! The `pipewright` command line, as a library: [`main`] is the whole program. Two binaries call
//! it: this crate's `pipewright` and the repository root's `pipewright-pre-commit` (the package
//! pre-commit's `language: rust` installs, see docs/ci.md).

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
mod exit;
mod output;
mod read;

use std::process::ExitCode;

// `check` of a large file makes millions of small allocations (YAML nodes, AST, types); the
// system allocator spent about a quarter of the time after parsing in malloc/free.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc (v2) option numbers, from the `mi_option_e` enum of the bundled `mimalloc.h`; the
/// Rust bindings name neither of these two.
const MI_OPTION_ARENA_EAGER_COMMIT: i32 = 4;
const MI_OPTION_PURGE_DELAY: i32 = 15;

/// `check`, `fmt` and `graph` free one large tree while building the next (the YAML tree while
/// the AST grows, the input's tree before the output's, the AST while the IR grows): with mimalloc's default 10 ms purge delay and
/// eagerly committed arenas the freed pages stay resident, and a 10 MiB file peaked 10-25% higher.
fn tune_allocator() {
    // SAFETY: plain setters of process-wide integer options; valid at any time.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
        libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
    }
}

/// The command line; called by a dialect command's program name (`meow`, the link a MEOW run
/// puts on its steps' PATH), the executable is that command: `meow done …` is `pipewright meow
/// done …`.
fn arguments() -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let called = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .and_then(|n| cli::dialect_commands().find(|c| c.program_name().is_some_and(|p| n == p)));
    if let Some(c) = called {
        args[0] = "pipewright".into();
        args.insert(1, c.command().get_name().to_string().into());
    }
    args
}

/// Parses the command line and runs the command; the process exit code.
pub fn main() -> ExitCode {
    let cli = match cli::parse(arguments()) {
        cli::Parsed::Builtin(cli) => *cli,
        cli::Parsed::Dialect(command, matches) => {
            let code = commands::dialect_command(command, &matches);
            return exit(code);
        }
    };
    if matches!(
        cli.command,
        cli::Command::Check(_) | cli::Command::Fmt(_) | cli::Command::Graph(_)
    ) {
        // Only the one-pass commands: `run` frees and allocates in a loop, where purging at
        // once would cost system calls for nothing.
        tune_allocator();
    }
    let code = match cli.command {
        cli::Command::Check(args) => commands::check::run(&args),
        cli::Command::Explain(args) => commands::explain::run(&args),
        cli::Command::Eval(args) => commands::eval::run(&args),
        cli::Command::Fmt(args) => commands::fmt::run(&args),
        cli::Command::Graph(args) => commands::graph::run(&args),
        cli::Command::Run(args) => commands::run::run(&args),
        cli::Command::Runs(args) => commands::runs::run(&args),
        cli::Command::Cancel(args) => commands::cancel::run(&args),
        cli::Command::Ui(args) => commands::ui::run(&args),
        cli::Command::Schema(args) => commands::schema::run(&args),
        cli::Command::Lsp => commands::lsp::run(),
        cli::Command::Worker(args) => commands::engine::worker(&args),
        cli::Command::Approve(args) => commands::runs::decide(
            &args.id,
            args.step.as_deref(),
            &pipewright_runtime::approval::Decision::Approve {
                message: args.message.clone(),
            },
            &args.engine,
        ),
        cli::Command::Deny(args) => commands::runs::decide(
            &args.id,
            args.step.as_deref(),
            &pipewright_runtime::approval::Decision::Deny {
                reason: args.reason.clone(),
            },
            &args.engine,
        ),
    };
    exit(code)
}

/// The exit code, or 2 when output was lost (see `output::write`).
fn exit(status: exit::ExitStatus) -> ExitCode {
    if output::write_failed() {
        return ExitCode::from(exit::ExitStatus::COULD_NOT_START.code());
    }
    ExitCode::from(status.code())
}
