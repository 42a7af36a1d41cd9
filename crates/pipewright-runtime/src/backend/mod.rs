//! Agent backends: where an `agent` step's prompt goes.

pub mod claude_json;
pub mod command;
mod http;
pub mod mock;
pub mod openai;
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
    /// The step's mode (a recipe's `mode`), already written into the prompt.
    pub mode: Option<String>,
    /// The shape later steps read from the reply (a JSON Schema), for an offline backend to
    /// answer with; a real agent never sees it.
    pub shape: Option<serde_json::Value>,
}

#[derive(Debug, Clone)]
pub struct BackendError {
    pub message: String,
}

impl BackendError {
    pub fn new(message: impl Into<String>) -> BackendError {
        BackendError {
            message: message.into(),
        }
    }
}

/// A backend returns the reply text; the interpreter parses and verifies JSON when the step
/// has a schema.
pub trait AgentBackend: Send + Sync {
    fn name(&self) -> &str;
    fn complete<'a>(&'a self, req: &'a AgentRequest)
        -> BoxFuture<'a, Result<String, BackendError>>;
    /// Whether its calls say what they cost in dollars (`--max-cost` counts only known costs).
    fn reports_cost(&self) -> bool {
        false
    }
    /// Whether pipewright computes its replies from the request alone: a call reaches nothing
    /// outside the run, and made again it answers the same. A runtime may land such a call
    /// like a pure step's result, which a crash may lose because a resume computes it again
    /// (the state machine does: docs/statemachine.md). A backend that talks to an agent, a
    /// command or a server, or keeps state across calls (the script's reply lists), is not.
    fn reproducible(&self) -> bool {
        false
    }
    /// [`AgentBackend::complete`] with what the call cost, as far as the backend knows it
    /// (unknown unless it says: never 0).
    fn reply<'a>(&'a self, req: &'a AgentRequest) -> BoxFuture<'a, Result<Reply, BackendError>> {
        Box::pin(async move {
            self.complete(req).await.map(|text| Reply {
                text,
                usage: crate::usage::Usage::unknown(),
                model: None,
            })
        })
    }
}

/// What an agent call answered, and what it cost.
#[derive(Debug, Clone)]
pub struct Reply {
    pub text: String,
    pub usage: crate::usage::Usage,
    /// The model that answered, when the backend knows (for `[prices]`).
    pub model: Option<String>,
}

/// The offline backends' usage: a token per four characters, in and out, so that tests can
/// assert totals; their calls cost nothing that is known.
pub fn counted_usage(prompt: &str, text: &str) -> crate::usage::Usage {
    let tokens = |s: &str| (s.chars().count() as u64).div_ceil(4);
    crate::usage::Usage {
        input_tokens: Some(tokens(prompt)),
        output_tokens: Some(tokens(text)),
        ..crate::usage::Usage::unknown()
    }
}

/// Why the backend `--backend NAME` asks for cannot be built; what to add or fix is in the
/// message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("unknown backend `{0}` (known: mock, script, command, openai)")]
    Unknown(String),
    #[error("the script backend needs a reply file (--script FILE)")]
    NoScriptFile,
    #[error("cannot read {}: {reason}", path.display())]
    ReadScript {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error(transparent)]
    Script(#[from] script::ScriptError),
    /// No silent default: which agent CLI runs is the project's choice.
    #[error("{}", COMMAND_NEEDS_CONFIG)]
    CommandNeedsConfig,
    #[error("unknown command backend profile `{0}` (known: claude; or set `argv`)")]
    UnknownProfile(String),
    #[error("the openai backend needs [backend.openai] url = \"…\" in pipewright.toml")]
    OpenAiNeedsConfig,
}

impl From<SetupError> for String {
    fn from(e: SetupError) -> String {
        e.to_string()
    }
}

/// Why `--backend command` cannot start without `[backend.command]`, and what to add.
pub const COMMAND_NEEDS_CONFIG: &str = "the command backend needs [backend.command] in pipewright.toml: `profile = \"claude\"` (Claude Code: `claude -p`, the prompt on stdin) or `argv = [\"my-agent\", \"{prompt}\"]` (any agent CLI; docs/config.md)";

/// The backend of a MEOW run under `--backend command` without `[backend.command]`: its agents
/// run in tmux sessions through adapters, so it is never asked; its name is what tells the
/// MEOW executor to use tmux.
pub fn tmux_agents(workdir: &std::path::Path) -> std::sync::Arc<dyn AgentBackend> {
    std::sync::Arc::new(command::CommandBackend {
        profile: command::Profile::Claude,
        program: None,
        timeout: std::time::Duration::from_secs(600),
        workdir: workdir.to_path_buf(),
    })
}

/// The backends every dialect's runs can use, by name, with `--help`'s text for each.
pub const SHARED: &[(&str, &str)] = &[
    ("mock", "Offline: replies shaped like what each step reads (dry runs)"),
    ("script", "Replies from the file `--script` names"),
    (
        "command",
        "An agent CLI from `[backend.command]` in pipewright.toml; MEOW agents run in tmux through adapters",
    ),
    (
        "openai",
        "An OpenAI-compatible chat completions endpoint from `[backend.openai]` in pipewright.toml",
    ),
];

/// Builds the backend `--backend NAME` asks for from the project configuration.
/// `script` needs `script_file` (`--script FILE`).
pub fn from_config(
    name: &str,
    cfg: &crate::config::ProjectConfig,
    workdir: &std::path::Path,
    script_file: Option<&std::path::Path>,
) -> Result<std::sync::Arc<dyn AgentBackend>, SetupError> {
    use std::sync::Arc;
    use std::time::Duration;
    // Whatever the backend: a shell step or a tool that prints the key must not record it either.
    if let Ok(key) = std::env::var(cfg.secret_env()) {
        crate::secrets::register(&key);
    }
    match name {
        "mock" => Ok(Arc::new(mock::MockBackend)),
        "script" => {
            let path = script_file.ok_or(SetupError::NoScriptFile)?;
            let text = std::fs::read_to_string(path).map_err(|e| SetupError::ReadScript {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
            Ok(Arc::new(script::ScriptBackend::from_text(
                &path.display().to_string(),
                &text,
            )?))
        }
        "command" => {
            let c = cfg.command.clone().ok_or(SetupError::CommandNeedsConfig)?;
            let profile = match (&c.argv, c.profile.as_deref()) {
                (Some(argv), _) if !argv.is_empty() => command::Profile::Generic {
                    argv: argv.clone(),
                    stdin_prompt: !argv.iter().any(|a| a.contains("{prompt}")),
                },
                (_, None | Some("claude")) => command::Profile::Claude,
                (_, Some(other)) => return Err(SetupError::UnknownProfile(other.to_string())),
            };
            Ok(Arc::new(command::CommandBackend {
                profile,
                program: None,
                timeout: Duration::from_secs(c.timeout_secs.max(1)),
                workdir: workdir.to_path_buf(),
            }))
        }
        "openai" => {
            let o = cfg.openai.clone().ok_or(SetupError::OpenAiNeedsConfig)?;
            Ok(Arc::new(openai::OpenAiBackend {
                url: o.url,
                model: o.model,
                api_key: std::env::var(&o.api_key_env).ok(),
                timeout: Duration::from_secs(o.timeout_secs.max(1)),
                max_retries: o.max_retries,
                base_delay: Duration::from_millis(500),
                ca_file: o.ca_file,
            }))
        }
        other => Err(SetupError::Unknown(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_that_cannot_be_built_says_what_is_missing() {
        let cfg = crate::config::ProjectConfig::default();
        let dir = std::path::Path::new(".");
        let build = |name: &str, script: Option<&std::path::Path>| {
            from_config(name, &cfg, dir, script).err()
        };
        assert_eq!(build("command", None), Some(SetupError::CommandNeedsConfig));
        assert_eq!(
            build("command", None).map(String::from).as_deref(),
            Some(COMMAND_NEEDS_CONFIG)
        );
        assert_eq!(build("openai", None), Some(SetupError::OpenAiNeedsConfig));
        assert_eq!(build("script", None), Some(SetupError::NoScriptFile));
        assert_eq!(build("gpt", None), Some(SetupError::Unknown("gpt".into())));
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let script = t.path().join("replies.yaml");
        assert!(matches!(
            build("script", Some(&script)),
            Some(SetupError::ReadScript { path, .. }) if path == script
        ));
        std::fs::write(&script, "- a list\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            build("script", Some(&script)),
            Some(SetupError::Script(script::ScriptError::Shape {
                shape: script::Shape::NoReplies,
                ..
            }))
        ));
    }
}
