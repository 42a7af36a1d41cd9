//! The pipewright interpreter. [`run`] executes one workflow of a lowered
//! [`pipewright_ir::Program`] with an [`AgentBackend`], the built-in and project tools, and an
//! optional run store ([`store::Store`]; by default SQLite in `.pipewright/runs.db`) that
//! makes the run resumable.
//!
//! See docs/run.md for the semantics and docs/config.md for `pipewright.toml`.

// The run core, re-exported: the executors below (moving into their dialect crates) and the
// CLI name its modules through this crate until they do.
pub use pipewright_runtime::{
    backend, cancel, codes, config, failure, outcome, progress, schema, secrets, session, store,
    tools, value,
};

mod exec;
pub mod meow;
pub mod plan;
pub mod prerun;
pub mod recipe;
pub mod statemachine;

pub use exec::run;
pub use pipewright_runtime::{
    AgentBackend, AgentRequest, BackendError, CancelToken, Caps, EvalLimits, Event, EventKind,
    EventSink, ProjectConfig, RunError, RunOptions, RunOutcome, RunStatus,
};
