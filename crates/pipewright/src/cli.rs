//! Command-line syntax.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "pipewright",
    version,
    about = "Check, format, graph and run AI-agent workflow definitions"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Report every problem in workflow files, before anything runs.
    Check(CheckArgs),
    /// Print the long explanation of a diagnostic code (e.g. PW0253).
    Explain(ExplainArgs),
    /// Evaluate an expression or template against a JSON context.
    Eval(EvalArgs),
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
    Sarif,
    Github,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub enum DialectArg {
    Pipeline,
    Recipe,
    #[value(name = "state-machine")]
    StateMachine,
    Meow,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Deny {
    Warnings,
}

#[derive(Args)]
pub struct CheckArgs {
    /// Files or directories (searched recursively for .yaml, .yml, .json and .toml files).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Check every file as this dialect instead of detecting it.
    #[arg(long, value_enum)]
    pub dialect: Option<DialectArg>,
    /// Make warnings fail the check (exit 1).
    #[arg(long, value_enum)]
    pub deny: Option<Deny>,
    /// Extra directories of registered pipelines that call/match targets may name.
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Check as an agent-generated (inline) definition: agent identities must be the invoker's.
    #[arg(long)]
    pub inline: bool,
    /// The invoking identity for `--inline`.
    #[arg(long, value_name = "NAME")]
    pub invoker: Option<String>,
    /// Project config file (default: the nearest pipewright.toml above the first path).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Args)]
pub struct ExplainArgs {
    /// A diagnostic code such as PW0253.
    #[arg(required_unless_present = "list")]
    pub code: Option<String>,
    /// List every code with its one-line title.
    #[arg(long)]
    pub list: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalLang {
    R1,
    Prompt,
    Condition,
    Template,
}

#[derive(Args)]
pub struct EvalArgs {
    #[arg(long, value_enum, default_value = "r1")]
    pub lang: EvalLang,
    /// The context as JSON (for R1: the top-level names, e.g. {"ctx": {...}, "pipe": 1}).
    #[arg(long, default_value = "{}")]
    pub ctx: String,
    /// JSON bound to `pipe` (R1 and prompt only; default null).
    #[arg(long)]
    pub pipe: Option<String>,
    /// JSON bound to `item` (R1 and prompt only).
    #[arg(long)]
    pub item: Option<String>,
    /// JSON bound to `acc` (R1 and prompt only).
    #[arg(long)]
    pub acc: Option<String>,
    /// The expression or template.
    pub expr: String,
}
