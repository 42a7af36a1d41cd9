//! `pipewright run` on a state-machine recipe: its flags (§9), its backends (the pipeline
//! backends plus the coding-agent CLIs), its live lines and its JSON report.

use crate::cli::{Backend, RunArgs, RunFormat};
use clap::Args;
use pipewright_run::statemachine::{self, agents, session, Line, Observer, Refusal};
use pipewright_run::store::Store;
use pipewright_run::{ProjectConfig, RunOptions};
use pipewright_syntax::{render, SourceMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The flags only state-machine recipes take.
#[derive(Args, Default)]
pub struct StateMachineArgs {
    /// State machines: the model tier of every step (haiku, sonnet, opus), over the step's
    /// and the recipe's.
    #[arg(long, value_name = "TIER")]
    pub model: Option<String>,
    /// State machines: override `maxTotalSteps`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_steps: Option<u64>,
    /// State machines: override `maxStepVisits`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_visits: Option<u64>,
    /// State machines: allow at most N restart-new-session transitions (default: unlimited).
    #[arg(long, value_name = "N")]
    pub max_restarts: Option<u64>,
    /// State machines: where the agent runs (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub working_dir: Option<PathBuf>,
    /// State machines: a system prompt appended to the agent's (claude backend only).
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// State machines: print the `[orchestration]` log on stderr.
    #[arg(long)]
    pub verbose: bool,
}

impl StateMachineArgs {
    /// The first state-machine flag given, for the refusal on other dialects.
    pub fn given(&self) -> Option<&'static str> {
        [
            (self.model.is_some(), "--model"),
            (self.max_steps.is_some(), "--max-steps"),
            (self.max_visits.is_some(), "--max-visits"),
            (self.max_restarts.is_some(), "--max-restarts"),
            (self.working_dir.is_some(), "--working-dir"),
            (self.system_prompt.is_some(), "--system-prompt"),
            (self.verbose, "--verbose"),
        ]
        .into_iter()
        .find_map(|(on, flag)| on.then_some(flag))
    }
}

/// The coding-agent CLI a `--backend` names, if it names one.
pub fn agent_profile(b: Backend) -> Option<agents::Profile> {
    match b {
        Backend::Claude => Some(agents::Profile::Claude),
        Backend::Opencode => Some(agents::Profile::OpenCode),
        Backend::Cursor => Some(agents::Profile::Cursor),
        Backend::Copilot => Some(agents::Profile::Copilot),
        Backend::Mock | Backend::Script | Backend::Command | Backend::Openai => None,
    }
}

/// Prints the lines the run says: progress in the human format, the log with `--verbose`.
struct Lines {
    progress: bool,
    verbose: bool,
}

impl Observer for Lines {
    fn line(&self, kind: Line, text: &str) {
        let on = match kind {
            Line::Progress => self.progress,
            Line::Verbose => self.verbose,
        };
        if on {
            errln!("{text}");
        }
    }
}

fn backend(
    args: &RunArgs,
    cfg: &ProjectConfig,
    workdir: &Path,
) -> Result<Arc<dyn session::SessionBackend>, String> {
    if let Some(p) = agent_profile(args.backend) {
        return Ok(Arc::new(agents::CliAgent::find(p)?));
    }
    let name = match args.backend {
        Backend::Script => "script",
        Backend::Command => "command",
        Backend::Openai => "openai",
        _ => "mock",
    };
    pipewright_run::backend::from_config(name, cfg, workdir, args.script.as_deref())
        .map(|b| Arc::new(session::Stateless(b)) as Arc<dyn session::SessionBackend>)
}

/// A run that could not start: plain on stderr, and with `--format json` also the report
/// shape, so a caller reading JSON gets `error.code` (PW0843 for a configuration error).
fn refused(args: &RunArgs, r: &Refusal) -> u8 {
    errln!("error: {r}");
    if args.format == RunFormat::Json && r.config {
        let report = serde_json::json!({
            "status": "failed",
            "run_id": null,
            "exit_reason": "configuration-error",
            "trace": [],
            "output": null,
            "stores": {},
            "error": {
                "code": pipewright_run::codes::SM_CONFIG,
                "spec_code": 5,
                "message": r.message,
            },
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    }
    2
}

pub async fn run(
    args: &RunArgs,
    file: &Path,
    program: pipewright_ir::Program,
    sources: &SourceMap,
    cwd: &Path,
    cfg: &ProjectConfig,
    store_path: &Path,
) -> u8 {
    let sm_args = &args.state_machine;
    let workdir = session::workdir_or(sm_args.working_dir.clone(), cwd);
    if !workdir.is_dir() {
        let r = Refusal {
            message: format!("--working-dir {} is not a directory", workdir.display()),
            config: true,
        };
        return refused(args, &r);
    }
    let backend = match backend(args, cfg, &workdir) {
        Ok(b) => b,
        Err(message) => {
            return refused(
                args,
                &Refusal {
                    message,
                    config: true,
                },
            )
        }
    };
    let mut o = RunOptions::new(cwd.to_path_buf());
    o.store = match super::runs::open_store(store_path) {
        Ok(s) => Some(Arc::new(s) as Arc<dyn Store>),
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    o.input = match (&args.input, &args.input_file, args.vars.is_empty()) {
        (None, None, true) => serde_json::Value::Null,
        _ => {
            errln!("error: a state-machine recipe takes no input (--input, --input-file, --var): its prompts are sent as written");
            return 2;
        }
    };
    o.force = args.force;
    o.file_label = crate::read::display_name(file);
    o.source_path = Some(file.to_path_buf());
    o.resume = args.resume.clone();
    o.cancel.cancel_on_ctrl_c();
    let mut sm = statemachine::Options::new(backend, workdir);
    sm.model = sm_args.model.clone();
    sm.max_steps = sm_args.max_steps;
    sm.max_visits = sm_args.max_visits;
    sm.max_restarts = sm_args.max_restarts;
    sm.system_prompt = sm_args.system_prompt.clone();
    sm.observer = Some(Arc::new(Lines {
        progress: args.format == RunFormat::Human && !sm_args.verbose,
        verbose: sm_args.verbose,
    }));
    let outcome = match statemachine::run(Arc::new(program), sources, o, sm).await {
        Ok(o) => o,
        Err(r) => return refused(args, &r),
    };
    let run = &outcome.run;
    if let Some(e) = run.unreported_store_error() {
        errln!("error: the run could not be recorded: {e}");
    }
    match args.format {
        RunFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&outcome.to_json(sources)).unwrap_or_default()
        ),
        RunFormat::Human => {
            if let Some(d) = run.diagnostic() {
                err!(
                    "{}",
                    render::human(&[d], sources, crate::output::use_color_stderr())
                );
            }
            let id = &run.run_id;
            // §19.2: the total cost on exit, when the backend reports one.
            let usage = run.stores.to_json()["usage"].clone();
            if let Some(cost) = usage["cost_usd"].as_f64() {
                errln!(
                    "usage: {} input tokens, {} output tokens, ${cost:.4}",
                    usage["input_tokens"].as_u64().unwrap_or(0),
                    usage["output_tokens"].as_u64().unwrap_or(0)
                );
            }
            match run.status {
                pipewright_run::RunStatus::Ok => outln!("exit: {}", outcome.exit_reason),
                pipewright_run::RunStatus::Cancelled => {
                    errln!("run {id} cancelled; continue it with `pipewright run --resume {id}`")
                }
                _ => errln!(
                    "run {id} failed: {} (pipewright runs show {id})",
                    outcome.exit_reason
                ),
            }
        }
    }
    u8::try_from(outcome.exit_code()).unwrap_or(1)
}
