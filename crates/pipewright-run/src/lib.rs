//! The pipewright interpreter. [`run`] executes one workflow of a lowered
//! [`pipewright_ir::Program`] with an [`AgentBackend`], the built-in and project tools, and an
//! optional run store ([`store::Store`]; by default SQLite in `.pipewright/runs.db`) that
//! makes the run resumable.
//!
//! See docs/run.md for the semantics and docs/config.md for `pipewright.toml`.

pub mod backend;
pub mod cancel;
pub mod codes;
pub mod config;
mod exec;
pub mod failure;
pub mod meow;
pub mod outcome;
pub mod plan;
pub mod prerun;
pub mod progress;
pub mod recipe;
pub mod schema;
pub mod secrets;
pub mod statemachine;
pub mod store;
pub mod tools;
mod value;

pub use backend::{AgentBackend, AgentRequest, BackendError};
pub use cancel::CancelToken;
pub use config::ProjectConfig;
pub use exec::{run, Caps, RunOptions};
pub use failure::RunError;
pub use outcome::{RunOutcome, RunStatus};
pub use pipewright_r1::Limits as EvalLimits;
pub use store::{Event, EventKind, EventSink};
