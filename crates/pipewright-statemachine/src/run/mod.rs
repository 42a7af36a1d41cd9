//! The state-machine runtime (spec ../shared/specs/agent-recipes-spec.md §2–§4, §9, §13): a
//! recipe's steps are agent turns whose reported outcome picks the next step, until an exit
//! transition, a guardrail, or an orchestration error ends it; `restart-new-session` starts a
//! recipe again in a fresh session.
//!
//! The pure rules are in [`semantics`]; [`machine`] builds the recipes from the checked AST;
//! [`session`] is the backend interface with sessions (and the session lock); [`agents`] the
//! coding-agent CLIs. Every turn that yields an outcome lands in the run store with the state
//! it started from and the decision taken, so `--resume` rebuilds the state and asks nothing
//! that landed (docs/statemachine.md "run").

pub mod agents;
mod exec;
pub mod machine;
pub mod plan;
mod report;
pub mod request;
pub mod semantics;
pub mod session;

pub use exec::{run, Refusal};
pub use report::{Outcome, TraceEntry};

use session::SessionBackend;
use std::path::PathBuf;
use std::sync::Arc;

/// The flags of `pipewright run` that only state machines have (§9).
pub struct Options {
    pub backend: Arc<dyn SessionBackend>,
    /// `--model TIER`: the tier of every step (over the step's and the recipe's).
    pub model: Option<String>,
    /// `--max-steps`: overrides `maxTotalSteps`.
    pub max_steps: Option<u64>,
    /// `--max-visits`: overrides `maxStepVisits`.
    pub max_visits: Option<u64>,
    /// `--max-restarts`: restart-new-session transitions allowed (default: unlimited).
    pub max_restarts: Option<u64>,
    /// `--working-dir`: where the agent runs.
    pub workdir: PathBuf,
    pub system_prompt: Option<String>,
    /// Receives the progress lines.
    pub observer: Option<Arc<dyn Observer>>,
}

impl Options {
    pub fn new(backend: Arc<dyn SessionBackend>, workdir: PathBuf) -> Options {
        Options {
            backend,
            model: None,
            max_steps: None,
            max_visits: None,
            max_restarts: None,
            workdir,
            system_prompt: None,
            observer: None,
        }
    }
}

/// What a run says as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// The live progress: a line per step, its outcome and its transition.
    Progress,
    /// §9's `[orchestration]` log (`--verbose`).
    Verbose,
}

pub trait Observer: Send + Sync {
    fn line(&self, kind: Line, text: &str);
    /// Whether lines of `kind` are wanted: a run does not write those that are not (a step's
    /// lines cost more than its turn with the mock backend).
    fn hears(&self, kind: Line) -> bool {
        let _ = kind;
        true
    }
}

/// Model tiers (§1).
pub const TIERS: &[&str] = &["haiku", "sonnet", "opus"];
