//! The run core every dialect's runtime stands on: agent backends, tools and child processes,
//! the run store (SQLite by default, `.pipewright/runs.db`) and the session that locks, resumes
//! and records a run ([`session`]), events and progress, cancellation, secrets redaction, and
//! the outcome a run ends with. It names no dialect.
//!
//! See docs/run.md for the semantics and docs/config.md for `pipewright.toml`.

pub mod approval;
pub mod backend;
pub mod cancel;
pub mod codes;
pub mod config;
pub mod failure;
pub mod given;
pub mod journal;
pub mod members;
pub mod outcome;
pub mod plan;
pub mod prerun;
pub mod progress;
mod recorder;
pub mod report;
pub mod run_kv;
pub mod schema;
pub mod secrets;
pub mod session;
pub mod stop;
pub mod store;
pub mod tools;
pub mod usage;
pub mod value;

pub use backend::{AgentBackend, AgentRequest, BackendError};
pub use cancel::CancelToken;
pub use config::ProjectConfig;
pub use failure::RunError;
pub use outcome::{RunOutcome, RunStatus};
pub use pipewright_r1::Limits as EvalLimits;
pub use session::{Caps, RunOptions};
pub use store::{Event, EventKind, EventSink};
