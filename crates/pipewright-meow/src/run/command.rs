//! `pipewright meow …`: what agents and branch conditions of a running MEOW workflow say to its
//! orchestrator (done, events, approvals) and ask of it (the prompt again, a step's status, an
//! agent's session id), over the socket named by `MEOW_ORCH_SOCK` (notes §4.12; the spec's IPC
//! Message Protocol and CLI listing). Identity comes from
//! `MEOW_AGENT`, `MEOW_WORKFLOW` and `MEOW_STEP`. Without `MEOW_ORCH_SOCK` (and without
//! `--run`) every agent-side command is a silent no-op that succeeds, so a template runs
//! unchanged outside an orchestrator; a human's `approve`/`reject` fails there instead, since
//! nothing was decided.

use clap::{Args, FromArgMatches, Subcommand};
use pipewright_dialect::{CommandContext, DialectCommand, ProjectRuns};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

use super::DurationError;
use pipewright_runtime::store::StoreError;

/// Why a `meow` command cannot put its question to a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum CommandError {
    /// `what` names the flag or argument (`--output`, `event data`).
    #[error("{what} takes KEY=VALUE, got `{got}`")]
    NotKeyValue { what: &'static str, got: String },
    #[error("--output-json takes a JSON object")]
    OutputJsonNotAnObject,
    #[error("`meow prime` runs in an agent session: MEOW_AGENT is not set")]
    NoAgent,
    #[error("whose session? give --agent, or run in an agent session (MEOW_AGENT)")]
    WhoseSession,
    #[error(transparent)]
    Timeout(#[from] DurationError),
    #[error(transparent)]
    RunId(#[from] StoreError),
    /// No project to look for the run in.
    #[error("{0}")]
    NoProject(String),
    #[error("run {id} is not running in this project: no orchestrator socket at {} (the run store is {}; `pipewright runs` lists the runs)", .sock.display(), .store.display())]
    NotRunning {
        id: String,
        sock: PathBuf,
        store: PathBuf,
    },
}

#[derive(Args)]
pub struct MeowArgs {
    /// The run whose orchestrator to reach (its socket is in the run's directory), instead of
    /// `MEOW_ORCH_SOCK`.
    #[arg(long, value_name = "RUN_ID", global = true)]
    pub run: Option<String>,
    #[command(subcommand)]
    pub command: MeowCommand,
}

#[derive(Subcommand)]
pub enum MeowCommand {
    /// Report the current step done, with its outputs.
    Done {
        /// The step (default: `MEOW_STEP`, else the agent's running step).
        step: Option<String>,
        /// An output, `NAME=VALUE` (repeatable).
        #[arg(long = "output", value_name = "NAME=VALUE")]
        outputs: Vec<String>,
        /// Outputs as a JSON object, applied after `--output`.
        #[arg(long = "output-json", visible_alias = "json", value_name = "JSON")]
        output_json: Option<String>,
        /// Notes for whoever reads the run later, kept with the step in the run store
        /// (`pipewright runs show RUN_ID`: `completed.<step>.notes`).
        #[arg(long, value_name = "TEXT")]
        notes: Option<String>,
    },
    /// Print the prompt of this agent's running step again (for a Stop hook).
    ///
    /// The agent is `MEOW_AGENT`. The prompt is the text that was typed, expected outputs
    /// included, and after a refused `meow done` why it was refused. Nothing is printed when the
    /// agent has no running step or the step is `interactive` (a human talks to the agent then).
    Prime {
        /// `prompt`: the text alone; `json`: `{"step", "mode", "prompt"}`; `stop-hook`: a Claude
        /// Code Stop hook's answer, `{"decision": "block", "reason": PROMPT}` (Claude Code
        /// shows a hook's plain output to the model only in this form), nothing when empty.
        #[arg(long, value_enum, default_value = "prompt")]
        format: PrimeFormat,
    },
    /// Print an agent's session id, to resume it later with a spawn's `resume_session`.
    ///
    /// Known when the adapter's command holds `{{session_id}}`, when the agent was spawned
    /// with `resume_session`, or when the agent reported it with an event carrying
    /// `session_id` (`pipewright meow event session-started session_id=ID`). Exit 1 when the
    /// orchestrator does not know it.
    SessionId {
        /// The agent (default: `MEOW_AGENT`).
        #[arg(long)]
        agent: Option<String>,
    },
    /// Print a step's status, or test it with `--is`/`--is-not`.
    ///
    /// The status is pending, running, done, failed or skipped. With `--is` or `--is-not`
    /// nothing is printed: exit 0 when the status is (is not) the one given, else 1. A step that
    /// does not exist is an error (exit 1).
    StepStatus {
        /// The step id (from inside an expansion, looked up in the nearest scope first).
        step: String,
        /// Exit 0 when the step has this status, else 1.
        #[arg(long, value_enum, value_name = "STATUS", conflicts_with = "is_not")]
        is: Option<StepState>,
        /// Exit 0 when the step does not have this status, else 1.
        #[arg(long, value_enum, value_name = "STATUS")]
        is_not: Option<StepState>,
    },
    /// Emit an event to whoever waits for it.
    Event {
        /// The event's type, as `await-event` names it.
        event_type: String,
        /// Event data, `KEY=VALUE`.
        #[arg(value_name = "KEY=VALUE")]
        data: Vec<String>,
        /// The same as the `KEY=VALUE` arguments, in the reference's form (repeatable).
        #[arg(long = "data", value_name = "KEY=VALUE")]
        data_flag: Vec<String>,
    },
    /// Wait for an event; exit 0 with its data on stdout, 1 on timeout.
    AwaitEvent {
        /// The event type to wait for.
        event_type: String,
        /// Only an event whose data has KEY equal to VALUE (repeatable).
        #[arg(long = "filter", value_name = "KEY=VALUE")]
        filter: Vec<String>,
        /// How long to wait (`30s`, `5m`); default: forever.
        #[arg(long)]
        timeout: Option<String>,
    },
    /// Approve a human gate: `meow approve GATE` inside the run (or with `--run RUN_ID`),
    /// `meow approve RUN_ID GATE` from anywhere in the project (the spec's form).
    Approve {
        /// The gate; followed by GATE, the run.
        #[arg(value_name = "RUN_ID|GATE")]
        first: String,
        /// The gate, when the first argument is the run.
        #[arg(value_name = "GATE")]
        gate: Option<String>,
        /// Why, for whoever reads the run later.
        #[arg(long, visible_alias = "notes")]
        reason: Option<String>,
    },
    /// Reject a human gate (`meow reject [RUN_ID] GATE`).
    Reject {
        /// The gate; followed by GATE, the run.
        #[arg(value_name = "RUN_ID|GATE")]
        first: String,
        /// The gate, when the first argument is the run.
        #[arg(value_name = "GATE")]
        gate: Option<String>,
        /// Why, for whoever reads the run later.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Wait for a gate's decision: exit 0 approved, 1 rejected or timed out (default 24h).
    AwaitApproval {
        /// The gate's id.
        gate: String,
        /// How long to wait (`30s`, `5m`; default 24h).
        #[arg(long)]
        timeout: Option<String>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PrimeFormat {
    Prompt,
    Json,
    StopHook,
}

/// The statuses a step of a running workflow has, as the run's JSON report names them.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StepState {
    Pending,
    Running,
    Done,
    Failed,
    Skipped,
}

impl StepState {
    fn name(self) -> &'static str {
        match self {
            StepState::Pending => "pending",
            StepState::Running => "running",
            StepState::Done => "done",
            StepState::Failed => "failed",
            StepState::Skipped => "skipped",
        }
    }
}

fn pairs(items: &[String], what: &'static str) -> Result<Map<String, Value>, CommandError> {
    let mut m = Map::new();
    for kv in items {
        let Some((k, v)) = kv.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            return Err(CommandError::NotKeyValue {
                what,
                got: kv.clone(),
            });
        };
        m.insert(k.to_string(), Value::String(v.to_string()));
    }
    Ok(m)
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn timeout_ms(t: &Option<String>, default: Option<u64>) -> Result<Option<u64>, CommandError> {
    match t {
        Some(t) => {
            let d = super::parse_duration(t)?;
            Ok(Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)))
        }
        None => Ok(default),
    }
}

/// The run a human's `approve`/`reject` names in the spec's two-argument form.
fn decision_run(c: &MeowCommand) -> Option<&str> {
    match c {
        MeowCommand::Approve {
            first,
            gate: Some(_),
            ..
        }
        | MeowCommand::Reject {
            first,
            gate: Some(_),
            ..
        } => Some(first),
        _ => None,
    }
}

fn run(args: &MeowArgs, cx: &CommandContext<'_>) -> u8 {
    macro_rules! errln {
        ($($t:tt)*) => { (cx.err)(format_args!("{}\n", format_args!($($t)*))) };
    }
    let human = matches!(
        args.command,
        MeowCommand::Approve { .. } | MeowCommand::Reject { .. }
    );
    let run = match (args.run.as_deref(), decision_run(&args.command)) {
        (Some(a), Some(b)) if a != b => {
            errln!("error: two runs named: --run {a} and {b}");
            return 2;
        }
        (Some(id), _) | (None, Some(id)) => Some(id),
        (None, None) => None,
    };
    let route = match (run, orchestrator(&args.command)) {
        (Some(id), _) => match run_socket(id, cx) {
            Ok(s) => Route::Socket(s),
            // Not running here: it may run on the engine, on another host.
            Err(e @ (CommandError::NotRunning { .. } | CommandError::NoProject(_))) => {
                Route::Engine(id.to_string(), Err(e.to_string()))
            }
            Err(e) => {
                errln!("error: {e}");
                return 2;
            }
        },
        // The run's socket is on another host (the run's worker, when this agent runs
        // elsewhere): its engine relays the request there.
        (None, Some(s)) => match env("MEOW_WORKFLOW") {
            Some(id) if !Path::new(&s).exists() => Route::Engine(id, Ok(PathBuf::from(s))),
            _ => Route::Socket(PathBuf::from(s)),
        },
        // A human deciding a gate outside any run must hear that nothing was decided.
        (None, None) if human => {
            errln!("error: no run to decide a gate of: `pipewright meow approve|reject GATE` works inside a running MEOW workflow (MEOW_ORCH_SOCK); from a terminal, name the run: `pipewright approve RUN_ID [--step STEP]`, or `pipewright meow approve RUN_ID GATE` (`pipewright runs` lists the runs)");
            return 2;
        }
        // Outside an orchestrator: nothing to tell, nobody to wait for.
        (None, None) => return 0,
    };
    let req = match request(&args.command) {
        Ok(r) => r,
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            errln!("error: cannot start the runtime: {e}");
            return 2;
        }
    };
    if let (Some(own), Some(_)) = (env("MEOW_ORCH_SOCK"), env(RUN_SOCK)) {
        let own = Path::new(&own);
        match &args.command {
            // An agent's event may say which session it runs: the orchestrator of its steps
            // keeps that, when it is not the run's (which hears the event for its waiters).
            MeowCommand::Event { .. } => {
                let _ = runtime.block_on(super::channel::ask(own, &req));
            }
            // The member's orchestrator knows what its steps came to before the run does.
            MeowCommand::StepStatus { .. } => {
                if let Ok(answer) = runtime.block_on(super::channel::ask(own, &req)) {
                    if answer["type"] == "step_status" {
                        return answered(&args.command, &answer, cx);
                    }
                }
            }
            _ => {}
        }
    }
    let sock = match route {
        Route::Socket(sock) => sock,
        Route::Engine(id, otherwise) => {
            match (cx.engine_request)("meow", &id, &req, engine_wait(&req)) {
                Some(Ok(answer)) => return answered(&args.command, &answer, cx),
                Some(Err(e)) => {
                    errln!("error: {e}");
                    return 2;
                }
                None => match otherwise {
                    Ok(sock) => sock,
                    Err(e) => {
                        errln!("error: {e}");
                        return 2;
                    }
                },
            }
        }
    };
    let answer = match runtime.block_on(super::channel::ask(&sock, &req)) {
        Ok(a) => a,
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    answered(&args.command, &answer, cx)
}

/// Names the socket of the run's orchestrator in a member of the run on the engine, which
/// has one of its own (`MEOW_ORCH_SOCK`): events and approvals are the run's.
pub(super) const RUN_SOCK: &str = "MEOW_RUN_SOCK";

/// The socket a command inside a run talks to: `MEOW_ORCH_SOCK`, the orchestrator of the
/// agent's steps; events, approvals, and the status of a step the member's orchestrator does
/// not hold, go to the run's ([`RUN_SOCK`]) when that differs.
fn orchestrator(command: &MeowCommand) -> Option<String> {
    let runs = matches!(
        command,
        MeowCommand::Event { .. }
            | MeowCommand::AwaitEvent { .. }
            | MeowCommand::Approve { .. }
            | MeowCommand::Reject { .. }
            | MeowCommand::AwaitApproval { .. }
            | MeowCommand::StepStatus { .. }
    );
    match runs {
        true => env(RUN_SOCK).or_else(|| env("MEOW_ORCH_SOCK")),
        false => env("MEOW_ORCH_SOCK"),
    }
}

/// Where a command's request goes: the run's socket on this host, or the engine the run is
/// on (with what to do when no engine is known here: that socket, or that error).
enum Route {
    Socket(PathBuf),
    Engine(String, Result<PathBuf, String>),
}

/// How long a request through the engine may wait for its answer: a waiting request's own
/// timeout, and a minute more for the relay.
fn engine_wait(req: &Value) -> std::time::Duration {
    let own = req["timeout_ms"].as_u64().unwrap_or(0);
    std::time::Duration::from_millis(own.saturating_add(60_000))
}

/// What the command prints and exits with, from the orchestrator's answer.
fn answered(command: &MeowCommand, answer: &Value, cx: &CommandContext<'_>) -> u8 {
    macro_rules! outln {
        ($($t:tt)*) => { (cx.out)(format_args!("{}\n", format_args!($($t)*))) };
    }
    macro_rules! errln {
        ($($t:tt)*) => { (cx.err)(format_args!("{}\n", format_args!($($t)*))) };
    }
    match answer["type"].as_str() {
        Some("ack") => 0,
        Some("prompt") => {
            let content = answer["content"].as_str().unwrap_or("");
            match command {
                MeowCommand::Prime {
                    format: PrimeFormat::Json,
                } => outln!(
                    "{}",
                    json!({"step": answer["step"], "mode": answer["mode"], "prompt": content})
                ),
                // Nothing at all when there is nothing to say: a Stop hook then stays quiet.
                _ if content.is_empty() => {}
                MeowCommand::Prime {
                    format: PrimeFormat::StopHook,
                } => outln!("{}", json!({"decision": "block", "reason": content})),
                _ => outln!("{content}"),
            }
            0
        }
        Some("session_id") => {
            outln!("{}", answer["session_id"].as_str().unwrap_or(""));
            0
        }
        Some("step_status") => {
            let status = answer["status"].as_str().unwrap_or("");
            match command {
                MeowCommand::StepStatus { is: Some(s), .. } => u8::from(status != s.name()),
                MeowCommand::StepStatus {
                    is_not: Some(s), ..
                } => u8::from(status == s.name()),
                _ => {
                    outln!("{status}");
                    0
                }
            }
        }
        Some("event_received") => {
            let approval = matches!(command, MeowCommand::AwaitApproval { .. });
            if approval {
                match answer["event_type"].as_str() {
                    Some("gate-approved") => 0,
                    _ => {
                        let reason = answer["data"]["reason"].as_str().unwrap_or("");
                        errln!(
                            "rejected{}",
                            if reason.is_empty() {
                                String::new()
                            } else {
                                format!(": {reason}")
                            }
                        );
                        1
                    }
                }
            } else {
                outln!("{}", answer["data"]);
                0
            }
        }
        Some("timeout") => {
            errln!("{}", answer["message"].as_str().unwrap_or("timed out"));
            1
        }
        _ => {
            errln!(
                "error: {}",
                answer["message"]
                    .as_str()
                    .unwrap_or("the orchestrator refused")
            );
            1
        }
    }
}

/// The orchestrator socket of run `id`, in the project's store's run directories (the same
/// place `run` put it, whichever directory of the project this is called from).
fn run_socket(id: &str, cx: &CommandContext<'_>) -> Result<PathBuf, CommandError> {
    pipewright_runtime::store::check_run_id(id)?;
    let ProjectRuns { store, runs_dir } = (cx.project_runs)().map_err(CommandError::NoProject)?;
    let sock = super::channel::socket_path(&runs_dir.join(id));
    if !sock.exists() {
        return Err(CommandError::NotRunning {
            id: id.to_string(),
            sock,
            store,
        });
    }
    Ok(sock)
}

fn request(c: &MeowCommand) -> Result<Value, CommandError> {
    let (agent, workflow) = (env("MEOW_AGENT"), env("MEOW_WORKFLOW"));
    Ok(match c {
        MeowCommand::Done {
            step,
            outputs,
            output_json,
            notes,
        } => {
            let mut outs = pairs(outputs, "--output")?;
            if let Some(j) = output_json {
                match serde_json::from_str::<Value>(j) {
                    Ok(Value::Object(m)) => outs.extend(m),
                    _ => return Err(CommandError::OutputJsonNotAnObject),
                }
            }
            json!({"type": "step_done", "workflow": workflow, "agent": agent,
                   "step": step.clone().or_else(|| env("MEOW_STEP")), "outputs": outs,
                   "notes": notes})
        }
        MeowCommand::Prime { .. } => {
            let agent = agent.ok_or(CommandError::NoAgent)?;
            json!({"type": "get_prompt", "agent": agent})
        }
        MeowCommand::SessionId { agent: given } => {
            let agent = given.clone().or(agent).ok_or(CommandError::WhoseSession)?;
            json!({"type": "get_session_id", "agent": agent})
        }
        MeowCommand::StepStatus { step, .. } => {
            json!({"type": "get_step_status", "workflow": workflow, "step_id": step,
                   "step": env("MEOW_STEP")})
        }
        MeowCommand::Event {
            event_type,
            data,
            data_flag,
        } => {
            let all: Vec<String> = data.iter().chain(data_flag).cloned().collect();
            json!({"type": "event", "workflow": workflow, "agent": agent,
                   "event_type": event_type, "data": pairs(&all, "event data")?})
        }
        MeowCommand::AwaitEvent {
            event_type,
            filter,
            timeout,
        } => json!({"type": "await_event", "event_type": event_type,
                    "filter": pairs(filter, "--filter")?, "timeout_ms": timeout_ms(timeout, None)?}),
        MeowCommand::Approve {
            first,
            gate,
            reason,
        }
        | MeowCommand::Reject {
            first,
            gate,
            reason,
        } => {
            let approved = matches!(c, MeowCommand::Approve { .. });
            let gate = gate.as_ref().unwrap_or(first);
            json!({"type": "approval", "gate_id": gate, "approved": approved,
                   "reason": reason.clone().unwrap_or_default()})
        }
        MeowCommand::AwaitApproval { gate, timeout } => {
            json!({"type": "await_approval", "gate_id": gate, "step": env("MEOW_STEP"),
                   "timeout_ms": timeout_ms(timeout, Some(24 * 3600 * 1000))?})
        }
    })
}

/// `pipewright meow …`, and the executable called `meow` (the link a MEOW run puts on its
/// steps' PATH): the reference's `meow done …`.
pub struct Meow;

impl DialectCommand for Meow {
    fn command(&self) -> clap::Command {
        MeowArgs::augment_args(clap::Command::new("meow").about(
            "Talk to the orchestrator of a running MEOW workflow (from its agents and conditions)",
        ))
    }

    fn run(&self, matches: &clap::ArgMatches, cx: &CommandContext<'_>) -> u8 {
        match MeowArgs::from_arg_matches(matches) {
            Ok(args) => run(&args, cx),
            Err(e) => {
                (cx.err)(format_args!("{e}"));
                2
            }
        }
    }

    fn program_name(&self) -> Option<&'static str> {
        Some("meow")
    }

    /// Puts the request of an agent on another host to the run's orchestrator socket here.
    fn answer_relayed(&self, run_dir: &std::path::Path, request: &Value) -> Result<Value, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?;
        let sock = super::channel::socket_path(run_dir);
        runtime
            .block_on(super::channel::ask(&sock, request))
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_without_its_key_is_refused_naming_the_flag() {
        let e = pairs(&["a=1".into(), "=2".into()], "--filter");
        assert_eq!(
            e,
            Err(CommandError::NotKeyValue {
                what: "--filter",
                got: "=2".into()
            })
        );
        assert_eq!(
            e.err().map(|e| e.to_string()).unwrap_or_default(),
            "--filter takes KEY=VALUE, got `=2`"
        );
        assert!(matches!(
            timeout_ms(&Some("soon".into()), None),
            Err(CommandError::Timeout(_))
        ));
    }
}
