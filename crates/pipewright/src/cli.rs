//! Command-line syntax.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Arg, ArgAction, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use pipewright_dialect::{DialectCommand, FlagValue, FlagValues, RunFlag, Runtime};
use std::path::PathBuf;

/// `pipewright --version`: the crate version and the commit it was built from (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("PIPEWRIGHT_GIT_COMMIT"),
    ")"
);

#[derive(Parser)]
#[command(
    name = "pipewright",
    version = VERSION,
    about = "Check, format, graph and run AI-agent workflow definitions"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Report every problem in workflow files, before anything runs.
    Check(CheckArgs),
    /// Print the long explanation of a diagnostic code (e.g. PW0253).
    Explain(ExplainArgs),
    /// Evaluate an expression or template against a JSON context.
    Eval(EvalArgs),
    /// Rewrite workflow files into their canonical form, keeping every comment.
    Fmt(FmtArgs),
    /// Print the lowered workflow graph.
    Graph(GraphArgs),
    /// Execute a workflow file (exit 0 ok, 1 failed, 2 could not start, 3 paused at an approval gate, 4 stopped by a budget).
    Run(RunArgs),
    /// Approve the approval gate a paused or waiting run waits at (a paused run then continues
    /// with `run --resume`).
    Approve(ApproveArgs),
    /// Deny the approval gate a paused or waiting run waits at.
    Deny(DenyArgs),
    /// Cancel a running run, as Ctrl-C in the process running it does (status cancelled;
    /// `run --resume` continues it).
    Cancel(CancelArgs),
    /// List recorded runs (newest first); show, print the events of, or remove one.
    Runs(RunsArgs),
    /// Print the JSON Schema of a dialect's files (for editors: docs/schemas.md).
    Schema(SchemaArgs),
    /// Serve the project's runs to a browser: watch them live, approve gates, cancel
    /// (docs/ui.md). Prints `pipewright ui: URL` first.
    Ui(UiArgs),
    /// Serve the Language Server Protocol over standard input and output (for editors).
    Lsp,
    /// Serve runs for a Restate server: an endpoint its engine sends runs to (docs/engines.md).
    Worker(WorkerArgs),
}

/// Which engine runs and records runs (docs/engines.md).
#[derive(Args, Clone, Debug, Default)]
pub(crate) struct EngineArgs {
    /// `local`: this process, with the project's run store (the default); `restate`: a Restate
    /// server, through its ingress (default: `[engine] kind` in pipewright.toml, else
    /// $PIPEWRIGHT_ENGINE, else local).
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub engine: Option<EngineKind>,
    /// The Restate ingress (default: `[engine] ingress`, else $PIPEWRIGHT_RESTATE_INGRESS, else
    /// http://127.0.0.1:8080).
    #[arg(long, value_name = "URL")]
    pub ingress: Option<String>,
    /// The Restate admin API, for listing runs (default: `[engine] admin`, else
    /// $PIPEWRIGHT_RESTATE_ADMIN, else http://127.0.0.1:9070).
    #[arg(long, value_name = "URL")]
    pub admin: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum EngineKind {
    Local,
    Restate,
}

#[derive(Args)]
pub(crate) struct WorkerArgs {
    /// The address to serve Restate's requests on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9080")]
    pub listen: std::net::SocketAddr,
    /// Register this worker with the Restate admin API at URL once it listens.
    #[arg(long, value_name = "ADMIN_URL")]
    pub register: Option<String>,
    /// The URL to register, when the server reaches this worker at another address than
    /// --listen (a balancer in front of several workers).
    #[arg(long, value_name = "URL", requires = "register")]
    pub advertise: Option<String>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args)]
pub(crate) struct SchemaArgs {
    /// The dialect whose files the schema describes.
    #[arg(
        value_name = "DIALECT",
        value_parser = clap::builder::PossibleValuesParser::new(pipewright_registry::names())
            .try_map(|name| dialect_arg(&name))
    )]
    pub dialect: &'static dyn pipewright_dialect::Dialect,
}

#[derive(Args)]
pub(crate) struct ApproveArgs {
    /// The run (`pipewright runs` lists them).
    #[arg(value_name = "RUN_ID")]
    pub id: String,
    /// The gate to decide when more than one waits (a recipe's stage, a MEOW step or gate).
    #[arg(long, value_name = "STEP")]
    pub step: Option<String>,
    /// A message passed on with the approval (a recipe's next stage reads it as
    /// `{{_approval_message}}`).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub message: String,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args)]
pub(crate) struct DenyArgs {
    /// The run (`pipewright runs` lists them).
    #[arg(value_name = "RUN_ID")]
    pub id: String,
    /// The gate to decide when more than one waits (a recipe's stage, a MEOW step or gate).
    #[arg(long, value_name = "STEP")]
    pub step: Option<String>,
    /// Why; shown when the run fails at the denied gate.
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub reason: String,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args)]
pub(crate) struct UiArgs {
    /// The address to listen on (`127.0.0.1:0` picks a free port). Any address but loopback
    /// needs a token: without `--token` one is generated and printed in the URL.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4610")]
    pub listen: std::net::SocketAddr,
    /// Open the URL in the desktop's browser (`xdg-open`/`open`, when there is one).
    #[arg(long)]
    pub open: bool,
    /// Required of every request (as `Authorization: Bearer TOKEN`, or the cookie the URL
    /// with `?token=TOKEN` sets).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args)]
pub(crate) struct CancelArgs {
    /// The run (`pipewright runs` lists them).
    #[arg(value_name = "RUN_ID")]
    pub id: String,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args)]
pub(crate) struct RunsArgs {
    #[command(subcommand)]
    pub action: Option<RunsAction>,
    /// Output of the list: a table, or a JSON array.
    #[arg(long, value_enum, default_value = "human")]
    pub format: RunFormat,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Subcommand)]
pub(crate) enum RunsAction {
    /// Print a run as JSON: status, file, workflow, input, completed steps, output, stores…
    Show {
        /// The run (`pipewright runs` lists them).
        #[arg(value_name = "RUN_ID")]
        id: String,
    },
    /// Print a run's events, one JSON object per line.
    Events {
        /// The run (`pipewright runs` lists them).
        #[arg(value_name = "RUN_ID")]
        id: String,
    },
    /// Delete a run (or every run last active before DUR ago) and all it recorded.
    Rm {
        /// The run to delete (`pipewright runs` lists them).
        #[arg(
            value_name = "RUN_ID",
            required_unless_present = "older_than",
            conflicts_with = "older_than"
        )]
        id: Option<String>,
        /// A duration: 90s, 30m, 12h, 7d, 2w.
        #[arg(long, value_name = "DUR")]
        older_than: Option<String>,
    },
}

#[derive(Args)]
pub(crate) struct FmtArgs {
    /// Files or directories; `-` reads standard input and writes standard output.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Write nothing; exit 1 and name the files that would change.
    #[arg(long, conflicts_with = "diff")]
    pub check: bool,
    /// Print a unified diff instead of writing.
    #[arg(long)]
    pub diff: bool,
    /// Format every file as this dialect instead of detecting it.
    #[arg(long, value_name = "NAME", value_parser = dialect_arg)]
    pub dialect: Option<&'static dyn pipewright_dialect::Dialect>,
    /// Keep the author's key order (`preserve`) or move keys into each dialect's documented
    /// order (`canonical`); default: `key_order` under `[fmt]` in pipewright.toml, else
    /// `preserve`.
    #[arg(long, value_enum, value_name = "ORDER")]
    pub key_order: Option<KeyOrderArg>,
    /// Project config file (default: the nearest pipewright.toml above the first path).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum KeyOrderArg {
    Preserve,
    Canonical,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum GraphFormat {
    Dot,
    Mermaid,
    Json,
}

#[derive(Args)]
pub(crate) struct GraphArgs {
    /// The workflow file, of any dialect; `-` reads standard input.
    pub file: PathBuf,
    /// Only this workflow of the file (a pipeline, a MEOW template) and what it calls.
    #[arg(long, value_name = "NAME")]
    pub pipeline: Option<String>,
    /// Graphviz DOT (a recipe's is the reference `recipe_to_dot`), a Mermaid flowchart, or
    /// JSON (docs/graph-json.md).
    #[arg(long, value_enum, default_value = "dot")]
    pub format: GraphFormat,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RunFormat {
    Human,
    Json,
}

#[derive(Args)]
pub(crate) struct RunArgs {
    /// The workflow file, of any dialect (optional with --resume); `-` reads standard input.
    #[arg(required_unless_present = "resume")]
    pub file: Option<PathBuf>,
    /// Which workflow of the file to run (a pipeline, a MEOW template; default: the first);
    /// `FILE#NAME` says the same.
    #[arg(long, value_name = "NAME")]
    pub pipeline: Option<String>,
    /// Set one input value (a store of a pipeline, a variable of a recipe or MEOW template) to
    /// the string VALUE; repeatable; applied over `--input`.
    #[arg(long = "var", value_name = "KEY=VALUE")]
    pub vars: Vec<String>,
    /// The input, as a JSON object: a pipeline's initial named stores, a recipe's or MEOW
    /// template's variables.
    #[arg(long, value_name = "JSON", conflicts_with = "input_file")]
    pub input: Option<String>,
    /// Read the input JSON object from a file.
    #[arg(long, value_name = "FILE")]
    pub input_file: Option<PathBuf>,
    /// Where agent steps go.
    #[arg(long, default_value = "mock", value_parser = backend_parser())]
    pub backend: String,
    /// The reply file of `--backend script`, YAML or JSON: `replies:` a list of rules
    /// (`step`, `contains`; `reply`, `replies` or `error`), `default:` a fallback reply
    /// (docs/run.md, "Backends").
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// `human`: the output on stdout, progress and failures on stderr; `json`: one report
    /// object on stdout.
    #[arg(long, value_enum, default_value = "human")]
    pub format: RunFormat,
    /// Continue a stopped run recorded in the run store (`pipewright runs` lists them).
    #[arg(long, value_name = "RUN_ID")]
    pub resume: Option<String>,
    /// With --resume: continue although the workflow files changed since the run started.
    /// Only landed steps whose key and content are unchanged are replayed.
    #[arg(long, requires = "resume")]
    pub force: bool,
    /// The agent identity for agent steps that name none (default: `identity` under `[run]`
    /// in pipewright.toml, else `pipewright`).
    #[arg(long, value_name = "NAME")]
    pub identity: Option<String>,
    /// Print the plan (steps in order, commands and prompts rendered with the input, gates,
    /// loops) and execute nothing: no command, no agent, no file, no run store.
    #[arg(long, conflicts_with = "resume")]
    pub dry_run: bool,
    /// Stop the run before an agent call once its known cost reaches USD (default: `[run]
    /// max_cost_usd`); a stopped run is resumed with a higher budget (exit 4).
    #[arg(long, value_name = "USD", value_parser = cost_parser)]
    pub max_cost: Option<f64>,
    /// Stop the run before an agent call once its input and output tokens reach N (default:
    /// `[run] max_tokens`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// Stop the run before its agent call number N + 1 (default: `[run] max_agent_calls`).
    #[arg(long, value_name = "N")]
    pub max_agent_calls: Option<u64>,
    /// With an engine other than local: print the run id once the engine has the run, and
    /// return (`run --resume ID` follows it later).
    #[arg(long, conflicts_with = "dry_run")]
    pub detach: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// The flags a dialect declares for its own runs (`Runtime::flags`), as given.
    #[arg(skip)]
    pub dialect_flags: FlagValues,
}

/// `--max-cost USD`: a non-negative number.
fn cost_parser(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|c| *c >= 0.0 && c.is_finite())
        .ok_or_else(|| format!("`{s}` is not a number of US dollars"))
}

/// `--backend NAME`: the shared backends, then those a dialect declares for its own runs; an
/// alias is taken as its backend's name.
fn backend_parser() -> impl TypedValueParser<Value = String> {
    let mut values: Vec<PossibleValue> = pipewright_runtime::backend::SHARED
        .iter()
        .map(|(name, help)| PossibleValue::new(*name).help(*help))
        .collect();
    for family in runtimes().filter_map(|r| r.backends()) {
        for b in family.backends {
            values.push(
                PossibleValue::new(b.name)
                    .help(b.help)
                    .aliases(b.aliases.iter().copied()),
            );
        }
    }
    let canonical = values.clone();
    PossibleValuesParser::new(values).map(move |given| {
        canonical
            .iter()
            .find(|v| v.matches(&given, false))
            .map_or(given.clone(), |v| v.get_name().to_string())
    })
}

/// The languages `eval` shared by every dialect (R1 and its prompt templates).
const R1_LANGUAGES: [&str; 2] = ["r1", "prompt"];

/// `--lang NAME`: R1's languages, then each dialect's own (`Dialect::eval_languages`).
fn eval_lang_parser() -> PossibleValuesParser {
    let dialects = pipewright_registry::DIALECTS
        .iter()
        .flat_map(|d| d.eval_languages())
        .map(|l| l.name);
    PossibleValuesParser::new(R1_LANGUAGES.into_iter().chain(dialects))
}

/// The runtimes of the registry's dialects.
pub(crate) fn runtimes() -> impl Iterator<Item = &'static dyn Runtime> {
    pipewright_registry::DIALECTS
        .iter()
        .filter_map(|d| d.runtime())
}

/// The dialects' own commands (MEOW's `meow`).
pub(crate) fn dialect_commands() -> impl Iterator<Item = &'static dyn DialectCommand> {
    pipewright_registry::DIALECTS
        .iter()
        .filter_map(|d| d.command())
}

/// The command line with every dialect's own `run` flags and commands declared.
pub(crate) fn command() -> clap::Command {
    let root = Cli::command().mut_subcommand("run", |mut run| {
        for flag in runtimes().flat_map(|r| r.flags()) {
            run = run.arg(flag_arg(flag));
        }
        run
    });
    dialect_commands().fold(root, |root, c| root.subcommand(c.command()))
}

/// What the command line asks for.
pub(crate) enum Parsed {
    /// Boxed: a `Cli` (with every `run` flag) is much larger than the other variant.
    Builtin(Box<Cli>),
    /// A dialect's own command, with its arguments.
    Dialect(&'static dyn DialectCommand, clap::ArgMatches),
}

fn flag_arg(f: &RunFlag) -> Arg {
    let arg = Arg::new(f.long).long(f.long).help(f.help);
    match f.value {
        FlagValue::Switch => arg.action(ArgAction::SetTrue),
        FlagValue::Text { value_name } | FlagValue::Path { value_name } => {
            arg.value_name(value_name).action(ArgAction::Set)
        }
        FlagValue::Count { min } => arg
            .value_name("N")
            .value_parser(clap::value_parser!(u64).range(min..)),
    }
}

/// Parses the command line (exits with clap's message on a usage error).
pub(crate) fn parse(args: Vec<std::ffi::OsString>) -> Parsed {
    let matches = command().get_matches_from(args);
    if let Some((name, m)) = matches.subcommand() {
        if let Some(c) = dialect_commands().find(|c| c.command().get_name() == name) {
            return Parsed::Dialect(c, m.clone());
        }
    }
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let (Command::Run(run), Some(m)) = (&mut cli.command, matches.subcommand_matches("run")) {
        dialect_flags(run, m);
    }
    Parsed::Builtin(Box::new(cli))
}

/// The values of the dialects' own `run` flags, into `run`.
fn dialect_flags(run: &mut RunArgs, m: &clap::ArgMatches) {
    for flag in runtimes().flat_map(|r| r.flags()) {
        let value = match flag.value {
            FlagValue::Switch => m.get_flag(flag.long).then(|| "true".to_string()),
            FlagValue::Text { .. } | FlagValue::Path { .. } => {
                m.get_one::<String>(flag.long).cloned()
            }
            FlagValue::Count { .. } => m.get_one::<u64>(flag.long).map(u64::to_string),
        };
        if let Some(v) = value {
            run.dialect_flags.set(flag.long, v);
        }
    }
}

/// `run`'s arguments (those after `run`) as a worker receives them from the engine; clap's
/// message when they do not parse.
pub(crate) fn parse_run(args: &[String]) -> Result<RunArgs, String> {
    let argv = ["pipewright", "run"]
        .into_iter()
        .map(String::from)
        .chain(args.iter().cloned());
    let matches = command()
        .try_get_matches_from(argv)
        .map_err(|e| e.to_string())?;
    let cli = Cli::from_arg_matches(&matches).map_err(|e| e.to_string())?;
    match (cli.command, matches.subcommand_matches("run")) {
        (Command::Run(mut run), Some(m)) => {
            dialect_flags(&mut run, m);
            Ok(run)
        }
        _ => Err("not a `run` command".into()),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Rustc-style text with the source excerpt, labels and help.
    Human,
    /// One line per diagnostic: `FILE:LINE:COL: CODE [*] severity: message` (`[*]`: `--fix`
    /// can fix it).
    Concise,
    /// One JSON object per run (docs/diagnostics-json.md).
    Json,
    /// SARIF 2.1.0, for code-scanning tools.
    Sarif,
    /// GitHub Actions workflow commands (annotations on the pull request).
    Github,
}

/// `--dialect NAME`: one of the registry's dialect names.
fn dialect_arg(name: &str) -> Result<&'static dyn pipewright_dialect::Dialect, String> {
    pipewright_registry::by_name(name).ok_or_else(|| {
        format!(
            "unknown dialect `{name}` (known: {})",
            pipewright_registry::names().join(", ")
        )
    })
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Deny {
    Warnings,
}

#[derive(Args)]
pub(crate) struct CheckArgs {
    /// Files or directories (searched recursively for .yaml, .yml, .json and .toml files).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Rustc-style text, JSON (docs/diagnostics-json.md), SARIF, or GitHub annotations.
    #[arg(long, alias = "output-format", value_enum, default_value = "human")]
    pub format: Format,
    /// Apply the fixes that resolve a diagnostic unambiguously (did-you-mean renames, YAML 1.1
    /// booleans), rewriting the files in place, then report what remains.
    #[arg(long)]
    pub fix: bool,
    /// Print one line per code with its count and title (most frequent first) instead of each
    /// diagnostic.
    #[arg(long)]
    pub statistics: bool,
    /// Check every file as this dialect instead of detecting it.
    #[arg(long, value_name = "NAME", value_parser = dialect_arg)]
    pub dialect: Option<&'static dyn pipewright_dialect::Dialect>,
    /// Make warnings fail the check (exit 1).
    #[arg(long, value_enum)]
    pub deny: Option<Deny>,
    /// Extra directories of registered pipelines that call/match targets may name.
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Check as an agent-generated (inline) definition: agent identities must be the invoker's.
    #[arg(long)]
    pub inline: bool,
    /// The invoking identity for `--inline` (default: `invoker` under `[check]`).
    #[arg(long, value_name = "NAME", requires = "inline")]
    pub invoker: Option<String>,
    /// Project config file (default: the nearest pipewright.toml above the first path).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Do not report this code (repeatable), in addition to `[check] ignore` in the config.
    #[arg(long, value_name = "CODE", value_parser = code_arg)]
    pub ignore: Vec<String>,
    /// Also note, for each workflow that checks clean, the most agent calls it can make
    /// (PW0014), or why that is known only at run time.
    #[arg(long)]
    pub worst_case: bool,
}

/// `--ignore CODE`: a code this version emits (a typo would otherwise ignore nothing, silently).
fn code_arg(code: &str) -> Result<String, String> {
    let code = code.trim().to_ascii_uppercase();
    if crate::commands::check::is_known_code(&code) {
        Ok(code)
    } else {
        Err(format!(
            "`{code}` is not a pipewright diagnostic code (`pipewright explain --list` lists them)"
        ))
    }
}

#[derive(Args)]
pub(crate) struct ExplainArgs {
    /// A diagnostic code such as PW0253.
    pub code: Option<String>,
    /// List every code with its one-line title, sorted by code.
    #[arg(long)]
    pub list: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ConditionSite {
    TopLevel,
    Loop,
}

#[derive(Args)]
pub(crate) struct EvalArgs {
    /// The language of EXPR: an R1 expression, a pipeline prompt template, a recipe
    /// condition or a recipe template.
    #[arg(long, default_value = "r1", value_parser = eval_lang_parser())]
    pub lang: String,
    /// JSON bound to `ctx`, the named stores (R1 and prompt: `ctx.name` reads `{"name": …}`);
    /// for condition and template, the variables.
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
    /// The whole top-level scope as one JSON object: every name the expression sees, e.g.
    /// '{"ctx": {"n": 1}, "pipe": 2, "item": 3}' (for condition and template, the variables).
    #[arg(long, value_name = "JSON", conflicts_with_all = ["ctx", "pipe", "item", "acc"])]
    pub scope: Option<String>,
    /// Where a recipe condition is written: a step's own `condition` (`top-level`), or a
    /// `while_condition`, `break_when` or a condition inside a loop's `steps:` (`loop`), where
    /// the runner pastes values into the text first (`'{{s}}' == 'done'`).
    #[arg(long, value_enum, default_value = "top-level")]
    pub site: ConditionSite,
    /// The expression or template; it may start with `-` (`-7 / 2`) without a `--` before it.
    #[arg(allow_hyphen_values = true)]
    pub expr: String,
}

#[cfg(test)]
#[path = "cli_help_tests.rs"]
mod help_tests;
