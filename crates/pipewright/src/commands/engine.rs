//! Which engine a command uses (`--engine`, `[engine]` in pipewright.toml, the environment),
//! and the commands on the Restate engine: `pipewright worker`, and `run`, `approve|deny` and
//! `runs` with `--engine restate` (docs/engines.md). Built with the `restate` feature (on by
//! default); without it, asking for Restate says so.

use crate::cli::{EngineArgs, EngineKind};
use pipewright_runtime::ProjectConfig;
use std::path::Path;

/// Where a Restate server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Restate {
    pub(crate) ingress: String,
    pub(crate) admin: String,
}

const DEFAULT_INGRESS: &str = "http://127.0.0.1:8080";
const DEFAULT_ADMIN: &str = "http://127.0.0.1:9070";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The engine `args` and the project (of `start`, else the working directory) choose:
/// `None` for the local one. Flags first, then pipewright.toml's `[engine]`, then
/// `PIPEWRIGHT_ENGINE` / `PIPEWRIGHT_RESTATE_INGRESS` / `PIPEWRIGHT_RESTATE_ADMIN`.
pub(crate) fn chosen(args: &EngineArgs, start: Option<&Path>) -> Result<Option<Restate>, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
    let root = super::runs::project_root(start.unwrap_or(&cwd), &cwd);
    let cfg = ProjectConfig::load(&root)?.engine;
    let kind = match args.engine {
        Some(k) => k,
        None => match cfg
            .kind
            .clone()
            .or_else(|| env("PIPEWRIGHT_ENGINE"))
            .as_deref()
        {
            None | Some("local") => EngineKind::Local,
            Some("restate") => EngineKind::Restate,
            Some(other) => {
                return Err(format!(
                    "PIPEWRIGHT_ENGINE is \"local\" or \"restate\", not \"{other}\""
                ))
            }
        },
    };
    if kind == EngineKind::Local {
        return Ok(None);
    }
    Ok(Some(Restate {
        ingress: args
            .ingress
            .clone()
            .or(cfg.ingress)
            .or_else(|| env("PIPEWRIGHT_RESTATE_INGRESS"))
            .unwrap_or_else(|| DEFAULT_INGRESS.into()),
        admin: args
            .admin
            .clone()
            .or(cfg.admin)
            .or_else(|| env("PIPEWRIGHT_RESTATE_ADMIN"))
            .unwrap_or_else(|| DEFAULT_ADMIN.into()),
    }))
}

#[cfg(feature = "restate")]
mod restate;
#[cfg(feature = "restate")]
pub(crate) use restate::{agent_request, cancel, decide, run, runs, worker};
#[cfg(feature = "restate")]
mod restate_ui;
#[cfg(feature = "restate")]
pub(crate) use restate_ui::ui_engine;

#[cfg(not(feature = "restate"))]
mod without {
    use super::Restate;
    use crate::cli::{RunArgs, RunsArgs, WorkerArgs};
    use crate::exit::ExitStatus;
    use pipewright_runtime::approval::Decision;

    fn unavailable() -> ExitStatus {
        errln!(
            "error: this pipewright was built without the Restate engine (cargo feature `restate`)"
        );
        ExitStatus::COULD_NOT_START
    }
    pub(crate) fn run(_: &RunArgs, _: Restate) -> ExitStatus {
        unavailable()
    }
    pub(crate) fn decide(_: &str, _: Option<&str>, _: &Decision, _: Restate) -> ExitStatus {
        unavailable()
    }
    pub(crate) fn runs(_: &RunsArgs, _: Restate) -> ExitStatus {
        unavailable()
    }
    pub(crate) fn worker(_: &WorkerArgs) -> ExitStatus {
        unavailable()
    }
    pub(crate) fn cancel(_: &str, _: Restate) -> ExitStatus {
        unavailable()
    }
    /// Without the engine, no agent's request goes through one.
    pub(crate) fn agent_request(
        _: &str,
        _: &str,
        _: &serde_json::Value,
        _: std::time::Duration,
    ) -> Option<Result<serde_json::Value, String>> {
        None
    }
    pub(crate) fn ui_engine(
        _: Restate,
    ) -> Result<std::sync::Arc<dyn pipewright_ui::Engine>, String> {
        Err("this pipewright was built without the Restate engine (cargo feature `restate`)".into())
    }
}
#[cfg(not(feature = "restate"))]
pub(crate) use without::{agent_request, cancel, decide, run, runs, ui_engine, worker};
