//! Backends with sessions (spec §4.1) and the session lock (§3.3).
//!
//! A coding-agent CLI keeps a conversation per session: the first turn creates it, later turns
//! resume it. [`SessionBackend`] is §4.1's interface; the pipeline backends (mock, script,
//! command, openai), which answer one prompt at a time, take part through [`Stateless`].

use pipewright_runtime::backend::{AgentBackend, AgentRequest, BackendError, BoxFuture};
use pipewright_runtime::store::{RunLock, Store, StoreError};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// One turn of a session.
#[derive(Debug, Clone)]
pub struct Turn<'a> {
    pub prompt: &'a str,
    /// pipewright's id of the session (a UUID): what a backend that takes the id from its
    /// caller (Claude Code's `--session-id`) is given.
    pub session: &'a str,
    /// The id the backend gave the session on its first turn, for backends that choose it
    /// themselves (OpenCode, Cursor); `None` before that.
    pub backend_session: Option<&'a str>,
    /// §3.1 `sessionCreated == false`: this turn creates the session.
    pub is_new: bool,
    /// The backend's model for the step's tier, or `None` for its default.
    pub model: Option<&'a str>,
    pub system_prompt: Option<&'a str>,
    pub workdir: &'a std::path::Path,
    pub run_id: &'a str,
    pub recipe: &'a str,
    /// The state's name (a script reply rule's `step`).
    pub step: &'a str,
    /// For offline backends only (a real agent never sees it): the outcome the mock reports.
    pub mock_outcome: Option<&'a str>,
}

/// §4.1 `AgentResponse` (a failure is the `Err` of [`SessionBackend::send`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentResponse {
    pub text: String,
    pub session_id: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    /// Prompt-cache tokens, where the backend reports them (not part of §4.1).
    pub cache_read_tokens: Option<u64>,
    pub cache_write_tokens: Option<u64>,
    /// The model that answered, when the backend says (for `[prices]`).
    pub model: Option<String>,
}

pub trait SessionBackend: Send + Sync {
    /// The name the verbose log and errors use (`claude-code`, `script`).
    fn name(&self) -> &str;
    /// §4.1 `resolveModel`: the backend's model for a tier, `None` for its default.
    fn resolve_model(&self, tier: &str) -> Option<String>;
    /// Whether `--system-prompt` can reach the agent (§2.2: backend-dependent).
    fn supports_system_prompt(&self) -> bool {
        false
    }
    /// Whether its turns say what they cost in dollars (`--max-cost` counts only known costs).
    fn reports_cost(&self) -> bool {
        false
    }
    /// Whether pipewright computes the answers itself (the mock): see
    /// `AgentBackend::reproducible`. A coding-agent CLI never is.
    fn reproducible(&self) -> bool {
        false
    }
    fn send<'a>(&'a self, turn: &'a Turn<'a>)
        -> BoxFuture<'a, Result<AgentResponse, BackendError>>;
}

/// A pipeline backend in a state machine: each turn is one request; there is no conversation
/// to keep, so a session is only a name in the trace. The tier is passed as the model, except
/// to the openai backend, whose endpoint knows its own model names (its configured `model`).
pub struct Stateless(pub Arc<dyn AgentBackend>);

impl SessionBackend for Stateless {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn resolve_model(&self, tier: &str) -> Option<String> {
        (self.0.name() != "openai").then(|| tier.to_string())
    }

    fn reports_cost(&self) -> bool {
        self.0.reports_cost()
    }

    fn reproducible(&self) -> bool {
        self.0.reproducible()
    }

    fn send<'a>(
        &'a self,
        turn: &'a Turn<'a>,
    ) -> BoxFuture<'a, Result<AgentResponse, BackendError>> {
        Box::pin(async move {
            // The mock answers with JSON that satisfies `shape`: the outcome object, on one
            // line, which is what §2.3 reads.
            let shape = turn.mock_outcome.map(|o| {
                serde_json::json!({
                    "type": "object",
                    "properties": {"outcome": {"enum": [o]}},
                })
            });
            let req = AgentRequest {
                run_id: turn.run_id.to_string(),
                step: turn.step.to_string(),
                workflow: turn.recipe.to_string(),
                prompt: turn.prompt.to_string(),
                identity: "pipewright".into(),
                tools: Vec::new(),
                schema_name: None,
                schema: None,
                model: turn.model.map(str::to_string),
                mode: None,
                shape,
            };
            let reply = self.0.reply(&req).await?;
            Ok(AgentResponse {
                text: reply.text,
                session_id: None,
                input_tokens: reply.usage.input_tokens,
                output_tokens: reply.usage.output_tokens,
                cost_usd: reply.usage.cost_usd,
                cache_read_tokens: reply.usage.cache_read_tokens,
                cache_write_tokens: reply.usage.cache_write_tokens,
                model: reply.model,
            })
        })
    }
}

/// The sessions this process holds (§3.3: one prompt in flight per session).
static HELD: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn held() -> std::sync::MutexGuard<'static, Option<HashSet<String>>> {
    HELD.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why a session cannot be had: another recipe execution is using it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionLockError {
    #[error("session {0} is locked: another recipe execution in this process is using it")]
    HeldHere(String),
    /// The lock file beside the run store's run locks could not be taken.
    #[error("session {id} is locked: {error}")]
    Locked { id: String, error: StoreError },
}

impl From<SessionLockError> for String {
    fn from(e: SessionLockError) -> String {
        e.to_string()
    }
}

/// Ownership of a session for as long as a recipe execution uses it: within this process,
/// and across processes through a lock file beside the run store's run locks (the same
/// `flock` mechanism, which the kernel releases when the process dies).
pub struct SessionLock {
    id: String,
    _file: Option<Box<dyn RunLock>>,
}

impl SessionLock {
    pub fn acquire(
        id: &str,
        store: Option<&Arc<dyn Store>>,
    ) -> Result<SessionLock, SessionLockError> {
        if !held()
            .get_or_insert_with(HashSet::new)
            .insert(id.to_string())
        {
            return Err(SessionLockError::HeldHere(id.to_string()));
        }
        // Session ids are UUIDs like run ids, and never equal one (v7 ids with their own
        // random bits), so they can share the run locks' directory.
        let file = match store.map(|s| s.lock_run(id)) {
            None => None,
            Some(Ok(l)) => Some(l),
            Some(Err(error)) => {
                release(id);
                return Err(SessionLockError::Locked {
                    id: id.to_string(),
                    error,
                });
            }
        };
        Ok(SessionLock {
            id: id.to_string(),
            _file: file,
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }
}

fn release(id: &str) {
    if let Some(set) = held().as_mut() {
        set.remove(id);
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        release(&self.id);
    }
}

/// A new session id.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Where the agent runs (§14.1: `--working-dir`, default the current directory).
pub fn workdir_or(dir: Option<PathBuf>, cwd: &std::path::Path) -> PathBuf {
    match dir {
        Some(d) if d.is_absolute() => d,
        Some(d) => cwd.join(d),
        None => cwd.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_session_cannot_be_locked_again_until_released() {
        let id = new_session_id();
        let first = SessionLock::acquire(&id, None).unwrap();
        let err = SessionLock::acquire(&id, None).err().unwrap();
        assert_eq!(err, SessionLockError::HeldHere(id.clone()));
        assert!(err.to_string().contains("is locked"), "{err}");
        drop(first);
        assert!(SessionLock::acquire(&id, None).is_ok());
    }

    #[test]
    fn a_session_lock_is_also_a_lock_file_in_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let st: Arc<dyn Store> = Arc::new(
            pipewright_runtime::store::SqliteStore::open(&dir.path().join("runs.db")).unwrap(),
        );
        let id = new_session_id();
        let l = SessionLock::acquire(&id, Some(&st)).unwrap();
        assert!(st.is_owned(&id));
        drop(l);
        assert!(!st.is_owned(&id));
    }
}
