//! Coding-agent CLIs as session backends (spec §4, §13, §17): one process per turn, the
//! prompt as the last argument, stdin closed, output through temporary files
//! (`tools::process`), the child killed on timeout or cancellation.
//!
//! | profile | program | new session | later turns | output |
//! |---|---|---|---|---|
//! | `claude` | `claude` (`$CLAUDE_CLI_PATH`, `~/.claude/local/claude`, `PATH`) | `--session-id UUID` | `--resume ID` (the `session_id` of the last answer) | JSON: `result`, `session_id`, `usage`, `total_cost_usd` |
//! | `opencode` | `opencode run` | (none; the id comes back) | `--session ID` | JSON lines: `text` parts, `sessionID`, `step_finish` tokens and cost |
//! | `cursor` | `cursor-agent` | (none; the id comes back) | `--resume ID` | JSON: `result`, `session_id` |
//! | `copilot` | `copilot` | (none) | `--continue` | text (`-s`) |

use super::session::{AgentResponse, SessionBackend, Turn};
use pipewright_runtime::backend::{BackendError, BoxFuture};
use pipewright_runtime::tools::process;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Claude,
    OpenCode,
    Cursor,
    Copilot,
}

impl Profile {
    pub fn by_name(name: &str) -> Option<Profile> {
        match name {
            "claude" | "claude-code" => Some(Profile::Claude),
            "opencode" => Some(Profile::OpenCode),
            "cursor" => Some(Profile::Cursor),
            "copilot" | "github-copilot" => Some(Profile::Copilot),
            _ => None,
        }
    }

    /// §9's backend names.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Claude => "claude-code",
            Profile::OpenCode => "opencode",
            Profile::Cursor => "cursor",
            Profile::Copilot => "github-copilot",
        }
    }

    fn program(self) -> &'static str {
        match self {
            Profile::Claude => "claude",
            Profile::OpenCode => "opencode",
            Profile::Cursor => "cursor-agent",
            Profile::Copilot => "copilot",
        }
    }
}

/// §13.2: a recipe step may run for a day before it is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(86_400);

/// Why a coding-agent CLI cannot be used: a configuration error that names what is missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// `looked` says where, with a leading space.
    #[error("configuration error: the {backend} backend needs the `{program}` command, which was not found{looked}")]
    NotFound {
        backend: &'static str,
        program: &'static str,
        looked: &'static str,
    },
}

impl From<AgentError> for String {
    fn from(e: AgentError) -> String {
        e.to_string()
    }
}

#[derive(Debug, Clone)]
pub struct CliAgent {
    pub profile: Profile,
    /// The resolved executable.
    pub program: PathBuf,
    pub timeout: Duration,
}

impl CliAgent {
    /// Finds the profile's executable (§13.3); a missing one is a configuration error that
    /// names it.
    pub fn find(profile: Profile) -> Result<CliAgent, AgentError> {
        CliAgent::find_with(profile, |name| std::env::var_os(name))
    }

    /// [`CliAgent::find`] with the environment `var` gives.
    fn find_with(
        profile: Profile,
        var: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<CliAgent, AgentError> {
        let program = resolve(profile, var).ok_or_else(|| AgentError::NotFound {
            backend: profile.name(),
            program: profile.program(),
            looked: match profile {
                Profile::Claude => " (looked at $CLAUDE_CLI_PATH, ~/.claude/local/claude and PATH)",
                _ => " (looked on PATH)",
            },
        })?;
        Ok(CliAgent {
            profile,
            program,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// The command line of one turn.
    pub fn argv(&self, turn: &Turn<'_>) -> Vec<String> {
        let mut a = vec![self.program.display().to_string()];
        let mut push = |xs: &[&str]| a.extend(xs.iter().map(|s| s.to_string()));
        match self.profile {
            Profile::Claude => {
                push(&[
                    "--print",
                    "--output-format",
                    "json",
                    "--dangerously-skip-permissions",
                ]);
                if turn.is_new {
                    push(&["--session-id", turn.session]);
                } else {
                    // The id the last turn answered under (Claude Code gives a resumed
                    // conversation a new one), else the id it was created with.
                    push(&["--resume", turn.backend_session.unwrap_or(turn.session)]);
                }
                if let Some(m) = turn.model {
                    push(&["--model", m]);
                }
                if let Some(s) = turn.system_prompt {
                    push(&["--append-system-prompt", s]);
                }
            }
            Profile::OpenCode => {
                push(&["run", "--format", "json"]);
                if let (false, Some(id)) = (turn.is_new, turn.backend_session) {
                    push(&["--session", id]);
                }
                if let Some(m) = turn.model {
                    push(&["--model", m]);
                }
            }
            Profile::Cursor => {
                push(&["--print", "--output-format", "json", "--force"]);
                if let (false, Some(id)) = (turn.is_new, turn.backend_session) {
                    push(&["--resume", id]);
                }
                if let Some(m) = turn.model {
                    push(&["--model", m]);
                }
            }
            Profile::Copilot => {
                push(&["-s", "--allow-all-tools"]);
                if !turn.is_new {
                    push(&["--continue"]);
                }
                if let Some(m) = turn.model {
                    push(&["--model", m]);
                }
                // `-p PROMPT`: the prompt is the option's value, so it cannot read as one.
                push(&["-p", turn.prompt]);
                return a;
            }
        }
        // A prompt that starts with `-` must not read as an option.
        if turn.prompt.starts_with('-') {
            a.push("--".into());
        }
        a.push(turn.prompt.to_string());
        a
    }

    fn parse(&self, stdout: &str) -> Result<AgentResponse, BackendError> {
        match self.profile {
            Profile::Claude | Profile::Cursor => result_object(stdout),
            Profile::OpenCode => opencode_events(stdout),
            Profile::Copilot => Ok(AgentResponse {
                text: stdout.trim_end().to_string(),
                ..AgentResponse::default()
            }),
        }
    }
}

fn resolve(profile: Profile, var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    if profile == Profile::Claude {
        if let Some(p) = var("CLAUDE_CLI_PATH").filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(p)).filter(|p| is_executable(p));
        }
        if let Some(home) = var("HOME") {
            let local = Path::new(&home).join(".claude/local/claude");
            if is_executable(&local) {
                return Some(local);
            }
        }
    }
    let path = var("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(profile.program()))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

fn not_json(e: impl std::fmt::Display) -> BackendError {
    BackendError::new(format!("the agent's output is not the expected JSON ({e})"))
}

/// Claude Code's and Cursor's result object, as the shared parser reads it.
fn result_object(stdout: &str) -> Result<AgentResponse, BackendError> {
    let r = pipewright_runtime::backend::claude_json::parse(stdout)?;
    Ok(AgentResponse {
        text: r.text,
        session_id: r.session_id,
        input_tokens: r.usage.input_tokens,
        output_tokens: r.usage.output_tokens,
        cost_usd: r.usage.cost_usd,
        cache_read_tokens: r.usage.cache_read_tokens,
        cache_write_tokens: r.usage.cache_write_tokens,
        model: None,
    })
}

/// `opencode run --format json` prints one event per line: the reply is the text of its
/// `text` events, usage and cost are summed over its `step_finish` events, and an `error`
/// event fails the turn.
fn opencode_events(stdout: &str) -> Result<AgentResponse, BackendError> {
    let mut r = AgentResponse::default();
    let mut texts: Vec<String> = Vec::new();
    let mut seen = false;
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        seen = true;
        if r.session_id.is_none() {
            r.session_id = e
                .get("sessionID")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        let part = e.get("part");
        match e.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = part.and_then(|p| p.get("text")).and_then(Value::as_str) {
                    texts.push(t.to_string());
                }
            }
            Some("step_finish") => {
                let tokens = part.and_then(|p| p.get("tokens"));
                let add = |acc: &mut Option<u64>, k: &str| {
                    if let Some(n) = tokens.and_then(|t| t.get(k)).and_then(Value::as_u64) {
                        *acc = Some(acc.unwrap_or(0) + n);
                    }
                };
                add(&mut r.input_tokens, "input");
                add(&mut r.output_tokens, "output");
                if let Some(c) = part.and_then(|p| p.get("cost")).and_then(Value::as_f64) {
                    r.cost_usd = Some(r.cost_usd.unwrap_or(0.0) + c);
                }
            }
            Some("error") => {
                let msg = e
                    .get("error")
                    .and_then(|x| {
                        x.get("data")
                            .and_then(|d| d.get("message"))
                            .or(x.get("message"))
                    })
                    .or(e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error");
                return Err(BackendError::new(format!(
                    "the agent reported an error: {msg}"
                )));
            }
            _ => {}
        }
    }
    if !seen {
        return Err(not_json("no JSON event"));
    }
    r.text = texts.join("\n");
    Ok(r)
}

impl SessionBackend for CliAgent {
    fn name(&self) -> &str {
        self.profile.name()
    }

    /// §4.2's mapping for Claude Code; §4.3–4.5 leave the other CLIs' mappings open (their
    /// model names are provider-specific), so they run their default model.
    fn resolve_model(&self, tier: &str) -> Option<String> {
        match self.profile {
            Profile::Claude => Some(tier.to_string()),
            _ => None,
        }
    }

    fn supports_system_prompt(&self) -> bool {
        self.profile == Profile::Claude
    }

    /// Claude Code's `total_cost_usd` and OpenCode's `step_finish` cost; Cursor's and
    /// Copilot's output says none.
    fn reports_cost(&self) -> bool {
        matches!(self.profile, Profile::Claude | Profile::OpenCode)
    }

    fn send<'a>(
        &'a self,
        turn: &'a Turn<'a>,
    ) -> BoxFuture<'a, Result<AgentResponse, BackendError>> {
        Box::pin(async move {
            let argv = self.argv(turn);
            let env = vec![
                ("PIPEWRIGHT_STEP".to_string(), turn.step.to_string()),
                ("PIPEWRIGHT_RUN_ID".to_string(), turn.run_id.to_string()),
            ];
            // §4.2: Claude Code refuses to start inside what looks like another session.
            let strip: Vec<String> = match self.profile {
                Profile::Claude => vec!["CLAUDE_CODE_ENTRYPOINT".into(), "CLAUDECODE".into()],
                _ => Vec::new(),
            };
            let out = process::run(process::Spec {
                argv: &argv,
                stdin: None,
                cwd: turn.workdir,
                timeout: self.timeout,
                env: &env,
                env_remove: &strip,
            })
            .await
            .map_err(|e| BackendError::new(format!("{}: {e}", self.profile.name())))?;
            if out.code != Some(0) {
                return Err(BackendError::new(format!(
                    "the {} command {}",
                    self.profile.program(),
                    out.failure_text()
                )));
            }
            self.parse(&out.stdout)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn<'a>(is_new: bool, prompt: &'a str, backend: Option<&'a str>) -> Turn<'a> {
        Turn {
            prompt,
            session: "0190-abc",
            backend_session: backend,
            is_new,
            model: Some("opus"),
            system_prompt: Some("be brief"),
            workdir: Path::new("."),
            run_id: "r",
            recipe: "x",
            step: "s",
            mock_outcome: None,
        }
    }

    fn agent(p: Profile) -> CliAgent {
        CliAgent {
            profile: p,
            program: PathBuf::from(p.program()),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    #[test]
    fn a_missing_cli_is_a_configuration_error_naming_it() {
        let e = CliAgent::find_with(Profile::Claude, |_| None).err();
        assert_eq!(
            e,
            Some(AgentError::NotFound {
                backend: "claude-code",
                program: "claude",
                looked: " (looked at $CLAUDE_CLI_PATH, ~/.claude/local/claude and PATH)",
            })
        );
        let e = CliAgent::find_with(Profile::OpenCode, |_| Some("/nonexistent".into())).err();
        assert_eq!(
            e.map(String::from).unwrap_or_default(),
            "configuration error: the opencode backend needs the `opencode` command, which was not found (looked on PATH)"
        );
    }

    #[test]
    fn claude_creates_then_resumes_the_session() {
        let a = agent(Profile::Claude);
        assert_eq!(
            a.argv(&turn(true, "hi", None)),
            [
                "claude",
                "--print",
                "--output-format",
                "json",
                "--dangerously-skip-permissions",
                "--session-id",
                "0190-abc",
                "--model",
                "opus",
                "--append-system-prompt",
                "be brief",
                "hi"
            ]
        );
        let later = a.argv(&turn(false, "-rf", None));
        assert_eq!(&later[5..7], ["--resume", "0190-abc"]);
        assert_eq!(&later[later.len() - 2..], ["--", "-rf"]);
        let chained = a.argv(&turn(false, "p", Some("0190-def")));
        assert_eq!(&chained[5..7], ["--resume", "0190-def"]);
    }

    #[test]
    fn other_profiles_resume_the_id_their_cli_gave() {
        let o = agent(Profile::OpenCode);
        assert_eq!(
            o.argv(&turn(true, "p", None)),
            ["opencode", "run", "--format", "json", "--model", "opus", "p"]
        );
        assert_eq!(
            o.argv(&turn(false, "p", Some("ses_1"))),
            [
                "opencode",
                "run",
                "--format",
                "json",
                "--session",
                "ses_1",
                "--model",
                "opus",
                "p"
            ]
        );
        let c = agent(Profile::Cursor);
        assert_eq!(
            c.argv(&turn(false, "p", Some("c-1"))),
            [
                "cursor-agent",
                "--print",
                "--output-format",
                "json",
                "--force",
                "--resume",
                "c-1",
                "--model",
                "opus",
                "p"
            ]
        );
        let g = agent(Profile::Copilot);
        assert_eq!(
            g.argv(&turn(false, "-p", None)),
            [
                "copilot",
                "-s",
                "--allow-all-tools",
                "--continue",
                "--model",
                "opus",
                "-p",
                "-p"
            ]
        );
    }

    #[test]
    fn claude_output_in_both_shapes() {
        let obj = r#"{"type":"result","is_error":false,"session_id":"s1","result":"done\n{\"outcome\": \"a\"}","usage":{"input_tokens":5,"output_tokens":7},"total_cost_usd":0.25}"#;
        let r = result_object(obj).unwrap();
        assert_eq!(r.text, "done\n{\"outcome\": \"a\"}");
        assert_eq!(r.session_id.as_deref(), Some("s1"));
        assert_eq!((r.input_tokens, r.output_tokens), (Some(5), Some(7)));
        assert_eq!(r.cost_usd, Some(0.25));
        let arr = format!(r#"[{{"type":"system"}},{obj}]"#);
        assert_eq!(result_object(&arr).unwrap(), r);
        let err =
            result_object(r#"{"type":"result","is_error":true,"result":"quota"}"#).unwrap_err();
        assert!(err.message.contains("quota"), "{}", err.message);
        assert!(result_object("not json").is_err());
        assert!(result_object(r#"[{"type":"system"}]"#).is_err());
        assert!(result_object(r#"{"type":"result"}"#).is_err());
    }

    #[test]
    fn opencode_events_are_summed() {
        let out = r#"{"type":"step_start","sessionID":"ses_9","part":{}}
{"type":"text","sessionID":"ses_9","part":{"type":"text","text":"working"}}
{"type":"step_finish","sessionID":"ses_9","part":{"tokens":{"input":3,"output":4},"cost":0.5}}
{"type":"text","sessionID":"ses_9","part":{"type":"text","text":"{\"outcome\": \"a\"}"}}
{"type":"step_finish","sessionID":"ses_9","part":{"tokens":{"input":1,"output":1},"cost":0.25}}
"#;
        let r = opencode_events(out).unwrap();
        assert_eq!(r.text, "working\n{\"outcome\": \"a\"}");
        assert_eq!(r.session_id.as_deref(), Some("ses_9"));
        assert_eq!((r.input_tokens, r.output_tokens), (Some(4), Some(5)));
        assert_eq!(r.cost_usd, Some(0.75));
        let e = opencode_events(
            r#"{"type":"error","error":{"name":"X","data":{"message":"bad key"}}}"#,
        )
        .unwrap_err();
        assert!(e.message.contains("bad key"));
        assert!(opencode_events("").is_err());
    }

    #[test]
    fn profiles_by_name() {
        assert_eq!(Profile::by_name("claude-code"), Some(Profile::Claude));
        assert_eq!(Profile::by_name("github-copilot"), Some(Profile::Copilot));
        assert_eq!(Profile::by_name("vim"), None);
    }
}
