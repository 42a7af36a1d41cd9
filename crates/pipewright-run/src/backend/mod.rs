//! Agent backends: where an `agent` step's prompt goes.

pub mod command;
mod http;
pub mod openai;
pub mod mock;
pub mod script;

use std::future::Future;
use std::pin::Pin;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One agent turn.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    pub run_id: String,
    /// The step's recovery key (`0`, `2.for_each.3`).
    pub step: String,
    pub workflow: String,
    pub prompt: String,
    pub identity: String,
    /// The tools the session may use: the step's `capabilities` narrowed to the invoker's.
    pub tools: Vec<String>,
    pub schema_name: Option<String>,
    /// A JSON Schema the reply must satisfy (JSON text), when the step has `schema:`.
    pub schema: Option<serde_json::Value>,
    pub model: Option<String>,
}

#[derive(Debug, Clone)]
pub struct BackendError {
    pub message: String,
}

impl BackendError {
    pub fn new(message: impl Into<String>) -> BackendError {
        BackendError { message: message.into() }
    }
}

/// A backend returns the reply text; the interpreter parses and verifies JSON when the step
/// has a schema.
pub trait AgentBackend: Send + Sync {
    fn name(&self) -> &str;
    fn complete<'a>(&'a self, req: &'a AgentRequest) -> BoxFuture<'a, Result<String, BackendError>>;
}
