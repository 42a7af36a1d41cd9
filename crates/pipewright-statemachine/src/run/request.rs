//! `pipewright run` on a state-machine recipe: its flags (§9), its backends (the shared ones
//! plus the coding-agent CLIs), its live lines and its report.

use super::{agents, session, Line, Observer, Options, Outcome};
use pipewright_dialect::{BackendFamily, FlagValue, RunBackend, RunFlag, RunRequest};
use pipewright_runtime::codes;
use pipewright_runtime::outcome::RunStatus;
use pipewright_runtime::report::{Human, Refusal, Report};
use pipewright_syntax::{render, SourceMap};
use std::io::Write;
use std::sync::Arc;

pub const FLAGS: &[RunFlag] = &[
    RunFlag {
        long: "model",
        value: FlagValue::Text { value_name: "TIER" },
        help: "State machines: the model tier of every step (haiku, sonnet, opus), over the step's and the recipe's",
    },
    RunFlag {
        long: "max-steps",
        value: FlagValue::Count { min: 1 },
        help: "State machines: override `maxTotalSteps`",
    },
    RunFlag {
        long: "max-visits",
        value: FlagValue::Count { min: 1 },
        help: "State machines: override `maxStepVisits`",
    },
    RunFlag {
        long: "max-restarts",
        value: FlagValue::Count { min: 0 },
        help: "State machines: allow at most N restart-new-session transitions (default: unlimited)",
    },
    RunFlag {
        long: "working-dir",
        value: FlagValue::Path { value_name: "DIR" },
        help: "State machines: where the agent runs (default: the current directory)",
    },
    RunFlag {
        long: "system-prompt",
        value: FlagValue::Text { value_name: "TEXT" },
        help: "State machines: a system prompt appended to the agent's (claude backend only)",
    },
    RunFlag {
        long: "verbose",
        value: FlagValue::Switch,
        help: "State machines: print the `[orchestration]` log on stderr",
    },
];

pub static BACKENDS: BackendFamily = BackendFamily {
    what: "the coding-agent CLI backends",
    backends: &[
        RunBackend {
            name: "claude",
            aliases: &["claude-code"],
            help: "Claude Code (`claude`), with sessions; state-machine recipes only",
        },
        RunBackend {
            name: "opencode",
            aliases: &[],
            help: "OpenCode (`opencode run`), with sessions; state-machine recipes only",
        },
        RunBackend {
            name: "cursor",
            aliases: &[],
            help: "Cursor's agent CLI (`cursor-agent`), with sessions; state-machine recipes only",
        },
        RunBackend {
            name: "copilot",
            aliases: &["github-copilot"],
            help: "GitHub Copilot CLI (`copilot`); state-machine recipes only",
        },
    ],
};

/// The coding-agent CLI a `--backend` names, if it names one.
fn agent_profile(name: &str) -> Option<agents::Profile> {
    match name {
        "claude" => Some(agents::Profile::Claude),
        "opencode" => Some(agents::Profile::OpenCode),
        "cursor" => Some(agents::Profile::Cursor),
        "copilot" => Some(agents::Profile::Copilot),
        _ => None,
    }
}

/// Prints the lines the run says: progress for a person, the log with `--verbose`.
struct Lines {
    progress: bool,
    verbose: bool,
}

impl Observer for Lines {
    fn line(&self, kind: Line, text: &str) {
        if self.hears(kind) {
            // A closed stderr loses the line, never the run.
            let _ = writeln!(std::io::stderr(), "{text}");
        }
    }

    fn hears(&self, kind: Line) -> bool {
        match kind {
            Line::Progress => self.progress,
            Line::Verbose => self.verbose,
        }
    }
}

/// A run that could not start: its message, and the report shape so that a caller reading
/// JSON gets `error.code` (PW0843 for a configuration error).
fn refused(r: super::Refusal) -> Refusal {
    let report = r.config.then(|| {
        serde_json::json!({
            "status": "failed",
            "run_id": null,
            "exit_reason": "configuration-error",
            "trace": [],
            "output": null,
            "stores": {},
            "error": {
                "code": codes::SM_CONFIG,
                "spec_code": 5,
                "message": r.message,
            },
        })
    });
    Refusal {
        message: r.message,
        report,
    }
}

fn config_error(message: String) -> Refusal {
    refused(super::Refusal {
        message,
        config: true,
    })
}

pub async fn run(
    program: Arc<pipewright_ir::Program>,
    sources: &SourceMap,
    mut req: RunRequest,
) -> Result<Box<dyn Report>, Refusal> {
    let ast = req.ast.take();
    let recipe = crate::dialect::checked(ast.as_ref()).map_err(config_error)?;
    let flags = std::mem::take(&mut req.flags);
    let cwd = req.opts.tools.workdir.clone();
    let workdir = session::workdir_or(flags.text("working-dir").map(Into::into), &cwd);
    if !workdir.is_dir() {
        return Err(config_error(format!(
            "--working-dir {} is not a directory",
            workdir.display()
        )));
    }
    let backend: Arc<dyn session::SessionBackend> = match &req.backend {
        Some((name, script)) => match agent_profile(name) {
            Some(profile) => {
                Arc::new(agents::CliAgent::find(profile).map_err(|e| config_error(e.into()))?)
            }
            None => {
                let b = pipewright_runtime::backend::from_config(
                    name,
                    &req.opts.config,
                    &workdir,
                    script.as_deref(),
                )
                .map_err(|e| config_error(e.into()))?;
                Arc::new(session::Stateless(b))
            }
        },
        None => Arc::new(session::Stateless(req.opts.backend.clone())),
    };
    req.open_store()?;
    let mut sm = Options::new(backend, workdir);
    sm.model = flags.text("model").map(Into::into);
    sm.max_steps = flags.count("max-steps");
    sm.max_visits = flags.count("max-visits");
    sm.max_restarts = flags.count("max-restarts");
    sm.system_prompt = flags.text("system-prompt").map(Into::into);
    let verbose = flags.switch("verbose");
    sm.observer = Some(Arc::new(Lines {
        progress: req.human && !verbose,
        verbose,
    }));
    let outcome = super::run(program, recipe, sources, req.opts, sm)
        .await
        .map_err(refused)?;
    Ok(Box::new(outcome))
}

impl Report for Outcome {
    fn to_json(&self, sources: &SourceMap) -> serde_json::Value {
        Outcome::to_json(self, sources)
    }

    fn human(&self, sources: &SourceMap, color: bool) -> Human {
        let run = &self.run;
        let mut h = Human::default();
        if let Some(d) = run.diagnostic() {
            h.stderr.push_str(&render::human(&[d], sources, color));
        }
        let id = &run.run_id;
        // §19.2: the total cost on exit, when the backend reports one.
        let usage = run.stores.to_json()["usage"].clone();
        if let Some(cost) = usage["cost_usd"].as_f64() {
            h.stderr.push_str(&format!(
                "usage: {} input tokens, {} output tokens, ${cost:.4}\n",
                usage["input_tokens"].as_u64().unwrap_or(0),
                usage["output_tokens"].as_u64().unwrap_or(0)
            ));
        }
        match run.status {
            RunStatus::Ok => h.stdout = format!("exit: {}\n", self.exit_reason),
            RunStatus::Cancelled => h.stderr.push_str(&format!(
                "run {id} cancelled; continue it with `pipewright run --resume {id}`\n"
            )),
            _ => h.stderr.push_str(&format!(
                "run {id} failed: {} (pipewright runs show {id})\n",
                self.exit_reason
            )),
        }
        h
    }

    fn unreported_store_error(&self) -> Option<&str> {
        self.run.unreported_store_error()
    }

    fn exit_code(&self) -> i32 {
        Outcome::exit_code(self)
    }
}
