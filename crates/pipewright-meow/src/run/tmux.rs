//! Agents in tmux sessions, started, prompted and stopped as their adapter says (spec: Agent
//! Adapters). An adapter is `adapter.toml` in `<project>/.meow/adapters/<name>/` or
//! `~/.meow/adapters/<name>/`; `claude` (Claude Code) is built in.
//!
//! The built-in `claude` adapter starts Claude Code with `--session-id {{session_id}}` (the
//! reference's does not), so `meow session-id` knows the session from the start.
//!
//! `PIPEWRIGHT_TMUX_SOCKET` names a private tmux server (`tmux -L`), which tests use so their
//! sessions never meet a user's.

use super::duration::{self, DurationError};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// Why an adapter cannot be used: not found, or its adapter.toml says something wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AdapterError {
    #[error("no adapter `{name}`: looked for {}", shown(.looked))]
    NotFound { name: String, looked: Vec<PathBuf> },
    #[error("invalid TOML: {0}")]
    InvalidToml(String),
    #[error("[spawn] command is missing")]
    NoCommand,
    #[error("[{table}] {key}: {error}")]
    BadDuration {
        table: String,
        key: String,
        error: DurationError,
    },
    /// Any of the above, in the adapter.toml that says it.
    #[error("{}: {error}", .path.display())]
    In {
        path: PathBuf,
        error: Box<AdapterError>,
    },
}

fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|c| c.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl From<AdapterError> for String {
    fn from(e: AdapterError) -> String {
        e.to_string()
    }
}

/// Why tmux did not do what an agent's step asked of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TmuxError {
    /// tmux itself could not be started.
    #[error("cannot run tmux (is it installed?): {0}")]
    Unavailable(String),
    /// tmux ran and refused; `stderr` is what it said.
    #[error("tmux {command}: {stderr}")]
    Failed { command: String, stderr: String },
    #[error(
        "the agent's session ended during its startup delay (adapter `{adapter}`: `{command}`)"
    )]
    EndedAtStartup { adapter: String, command: String },
    #[error("the agent's session is gone")]
    SessionGone,
}

impl From<TmuxError> for String {
    fn from(e: TmuxError) -> String {
        e.to_string()
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Adapter {
    pub name: String,
    pub command: String,
    pub resume_command: Option<String>,
    pub startup_delay: Duration,
    pub environment: Vec<(String, String)>,
    pub pre_keys: Vec<String>,
    pub pre_delay: Duration,
    /// `literal` (the text as typed) or `keys` (tmux key names).
    pub literal: bool,
    pub post_keys: Vec<String>,
    pub stop_keys: Vec<String>,
    pub stop_wait: Duration,
}

/// Claude Code, as the reference's built-in adapter starts it.
const CLAUDE: &str = r#"
[adapter]
name = "claude"
description = "Claude Code CLI agent"
[spawn]
command = "claude --dangerously-skip-permissions --session-id {{session_id}}"
resume_command = "claude --dangerously-skip-permissions --resume {{session_id}}"
startup_delay = "3s"
[environment]
TMUX = ""
[prompt_injection]
pre_keys = ["Escape"]
pre_delay = "100ms"
method = "literal"
post_keys = ["Enter"]
[graceful_stop]
keys = ["C-c"]
wait = "2s"
"#;

impl Adapter {
    /// The adapter `name` (or a path to an adapter.toml) as seen from `project`.
    pub(crate) fn find(name: &str, project: &Path) -> Result<Adapter, AdapterError> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if name.ends_with(".toml") {
            candidates.push(super::template::under(project, name));
        } else {
            candidates.push(
                project
                    .join(".meow/adapters")
                    .join(name)
                    .join("adapter.toml"),
            );
            if let Some(home) = std::env::var_os("HOME") {
                candidates.push(
                    PathBuf::from(home)
                        .join(".meow/adapters")
                        .join(name)
                        .join("adapter.toml"),
                );
            }
        }
        for c in &candidates {
            if let Ok(text) = std::fs::read_to_string(c) {
                return Adapter::parse(name, &text).map_err(|e| AdapterError::In {
                    path: c.clone(),
                    error: Box::new(e),
                });
            }
        }
        if name == "claude" {
            return Adapter::parse("claude", CLAUDE);
        }
        Err(AdapterError::NotFound {
            name: name.to_string(),
            looked: candidates,
        })
    }

    pub(crate) fn parse(name: &str, text: &str) -> Result<Adapter, AdapterError> {
        let doc: toml_edit::DocumentMut = text
            .parse()
            .map_err(|e: toml_edit::TomlError| AdapterError::InvalidToml(e.to_string()))?;
        let s = |t: &str, k: &str| {
            doc.get(t)
                .and_then(|x| x.get(k))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        let list = |t: &str, k: &str| -> Vec<String> {
            doc.get(t)
                .and_then(|x| x.get(k))
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let dur = |t: &str, k: &str, d: Duration| -> Result<Duration, AdapterError> {
            match s(t, k) {
                Some(v) => duration::parse(&v).map_err(|error| AdapterError::BadDuration {
                    table: t.to_string(),
                    key: k.to_string(),
                    error,
                }),
                None => Ok(d),
            }
        };
        let command = s("spawn", "command").ok_or(AdapterError::NoCommand)?;
        let environment = doc
            .get("environment")
            .and_then(|e| e.as_table_like())
            .map(|t| {
                t.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.to_string(), v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Adapter {
            name: s("adapter", "name").unwrap_or_else(|| name.to_string()),
            command,
            resume_command: s("spawn", "resume_command"),
            startup_delay: dur("spawn", "startup_delay", Duration::from_secs(3))?,
            environment,
            pre_keys: list("prompt_injection", "pre_keys"),
            pre_delay: dur("prompt_injection", "pre_delay", Duration::ZERO)?,
            literal: s("prompt_injection", "method").as_deref() != Some("keys"),
            post_keys: {
                let k = list("prompt_injection", "post_keys");
                if k.is_empty() {
                    vec!["Enter".to_string()]
                } else {
                    k
                }
            },
            stop_keys: list("graceful_stop", "keys"),
            stop_wait: dur("graceful_stop", "wait", Duration::from_secs(2))?,
        })
    }
}

/// The private tmux server tests name (`tmux -L`), if any.
fn socket() -> Option<std::ffi::OsString> {
    std::env::var_os("PIPEWRIGHT_TMUX_SOCKET").filter(|s| !s.is_empty())
}

fn tmux() -> Command {
    let mut c = Command::new("tmux");
    if let Some(sock) = socket() {
        c.arg("-L").arg(sock);
    }
    c.kill_on_drop(true);
    c
}

/// Pauses an agent whose step was just accepted, as the spec's orchestrator does after
/// `meow done` (`sendEsc`), with the keys its adapter sends before a prompt (`pre_keys`:
/// Escape for `claude`; an adapter without them is not interrupted). Waited for (one short
/// `tmux send-keys`, two seconds at most), so the keys land before the agent's next prompt is
/// typed. A failure changes nothing: the step is done, and the next prompt sends the keys again.
pub(super) fn pause(a: &Adapter, session: &str) {
    use std::process::Stdio;
    if a.pre_keys.is_empty() {
        return;
    }
    let mut c = std::process::Command::new("tmux");
    if let Some(sock) = socket() {
        c.arg("-L").arg(sock);
    }
    let target = format!("={session}:");
    c.args(["send-keys", "-t", &target])
        .args(&a.pre_keys)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let Ok(mut child) = c.spawn() else {
        return;
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while matches!(child.try_wait(), Ok(None)) {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

async fn tmux_ok(args: &[&str]) -> Result<(), TmuxError> {
    let out = tmux()
        .args(args)
        .output()
        .await
        .map_err(|e| TmuxError::Unavailable(e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(TmuxError::Failed {
            command: args.first().unwrap_or(&"").to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// A tmux session name for an agent of a run (tmux forbids `.` and `:`).
pub(super) fn session_name(run_id: &str, agent: &str) -> String {
    let id: Vec<char> = run_id.chars().filter(|c| *c != '-').collect();
    let short: String = id[id.len().saturating_sub(12)..].iter().collect();
    let clean: String = agent
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("pw-{short}-{clean}")
}

pub(super) async fn alive(session: &str) -> bool {
    tmux_ok(&["has-session", "-t", &format!("={session}")])
        .await
        .is_ok()
}

/// What a spawn tells of the agent's session id (`meow session-id`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum SessionId {
    /// A live session was reused (or nothing started): what was recorded still holds.
    #[default]
    Unchanged,
    /// A session started: under this id (the resumed one, or the fresh one put into the
    /// adapter's `{{session_id}}`), or under one the orchestrator cannot know.
    Started(Option<String>),
}

/// The command that starts the agent and the session id it runs under: `resume_command` with
/// the resumed id, else `command`, whose `{{session_id}}` (if any) gets a fresh UUID, so an
/// agent such as Claude Code (`--session-id`) runs under an id the orchestrator knows.
pub(super) fn start_command(a: &Adapter, resume: Option<&str>) -> (String, Option<String>) {
    const SID: &str = "{{session_id}}";
    match (resume, &a.resume_command) {
        (Some(id), Some(r)) if !id.is_empty() => {
            (r.replace(SID, id), r.contains(SID).then(|| id.to_string()))
        }
        _ if a.command.contains(SID) => {
            let id = uuid::Uuid::now_v7().to_string();
            (a.command.replace(SID, &id), Some(id))
        }
        _ => (a.command.clone(), None),
    }
}

/// Starts the agent's session running the adapter's command, then waits its startup delay.
pub(super) async fn spawn(
    a: &Adapter,
    session: &str,
    workdir: &Path,
    env: &[(String, String)],
    extra_args: &str,
    resume: Option<&str>,
) -> Result<SessionId, TmuxError> {
    if alive(session).await {
        return Ok(SessionId::Unchanged);
    }
    let (mut cmd, sid) = start_command(a, resume);
    if !extra_args.trim().is_empty() {
        cmd.push(' ');
        cmd.push_str(extra_args.trim());
    }
    let wd = workdir.display().to_string();
    let mut args: Vec<String> = vec![
        "new-session".into(),
        "-d".into(),
        "-s".into(),
        session.into(),
        "-c".into(),
        wd,
        "-x".into(),
        "200".into(),
        "-y".into(),
        "50".into(),
    ];
    for (k, v) in a.environment.iter().chain(env.iter()) {
        args.push("-e".into());
        args.push(format!("{k}={v}"));
    }
    args.push(cmd);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    // When the last session of the server ends (a foreach's agent killed) just as this one
    // starts, the client reaches a server that is exiting: nothing was created, so try again
    // (a new server starts) instead of failing the step.
    let mut tries = 0;
    loop {
        match tmux_ok(&refs).await {
            Err(TmuxError::Failed { stderr, .. })
                if stderr.contains("server exited unexpectedly") && tries < 3 =>
            {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            r => break r?,
        }
    }
    tokio::time::sleep(a.startup_delay).await;
    if !alive(session).await {
        return Err(TmuxError::EndedAtStartup {
            adapter: a.name.clone(),
            command: a.command.clone(),
        });
    }
    Ok(SessionId::Started(sid))
}

/// Types a prompt into the agent's session as the adapter says.
pub(super) async fn inject(a: &Adapter, session: &str, prompt: &str) -> Result<(), TmuxError> {
    let target = format!("={session}:");
    if !alive(session).await {
        return Err(TmuxError::SessionGone);
    }
    if !a.pre_keys.is_empty() {
        let mut args = vec!["send-keys", "-t", &target];
        args.extend(a.pre_keys.iter().map(String::as_str));
        tmux_ok(&args).await?;
        tokio::time::sleep(a.pre_delay).await;
    }
    if a.literal {
        tmux_ok(&["send-keys", "-t", &target, "-l", prompt]).await?;
    } else {
        tmux_ok(&["send-keys", "-t", &target, prompt]).await?;
    }
    let mut args = vec!["send-keys", "-t", &target];
    args.extend(a.post_keys.iter().map(String::as_str));
    tmux_ok(&args).await
}

/// Stops the session: the adapter's keys and wait when graceful, then kill-session.
pub(super) async fn kill(
    a: Option<&Adapter>,
    session: &str,
    graceful: bool,
) -> Result<(), TmuxError> {
    if !alive(session).await {
        return Ok(());
    }
    if let (true, Some(a)) = (graceful, a) {
        if !a.stop_keys.is_empty() {
            let target = format!("={session}:");
            let mut args = vec!["send-keys", "-t", &target];
            args.extend(a.stop_keys.iter().map(String::as_str));
            let _ = tmux_ok(&args).await;
            tokio::time::sleep(a.stop_wait).await;
        }
    }
    match tmux_ok(&["kill-session", "-t", &format!("={session}")]).await {
        Ok(()) => Ok(()),
        Err(_) if !alive(session).await => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapters_parse_with_defaults_and_claude_is_built_in() {
        let a = Adapter::parse(
            "x",
            "[spawn]\ncommand = \"fake\"\nstartup_delay = \"50ms\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.command, "fake");
        assert_eq!(a.startup_delay, Duration::from_millis(50));
        assert_eq!(a.post_keys, ["Enter"]);
        assert!(a.literal);
        let c =
            Adapter::find("claude", Path::new("/nonexistent")).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.command.starts_with("claude "));
        assert_eq!(c.pre_keys, ["Escape"]);
        assert_eq!(c.environment, [("TMUX".to_string(), String::new())]);
        assert_eq!(
            Adapter::parse("x", "[spawn]\n").unwrap_err(),
            AdapterError::NoCommand
        );
        assert!(Adapter::parse("x", "[spawn]\n")
            .unwrap_err()
            .to_string()
            .contains("command"));
        assert!(Adapter::find("nope", Path::new("/nonexistent"))
            .unwrap_err()
            .to_string()
            .contains("no adapter `nope`"));
        assert!(matches!(
            Adapter::parse("x", "[spawn]\ncommand = \"a\"\n[graceful_stop]\nwait = \"soon\"\n"),
            Err(AdapterError::BadDuration { table, key, .. }) if table == "graceful_stop" && key == "wait"
        ));
        assert_eq!(
            session_name("0123-4567-89ab-cdef", "w.1"),
            "pw-456789abcdef-w_1"
        );
    }

    #[test]
    fn the_start_command_names_the_session_id_it_runs_under() {
        let c =
            Adapter::find("claude", Path::new("/nonexistent")).unwrap_or_else(|e| panic!("{e}"));
        let (cmd, id) = start_command(&c, None);
        let id = id.unwrap_or_default();
        assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
        assert_eq!(
            cmd,
            format!("claude --dangerously-skip-permissions --session-id {id}")
        );
        let (cmd, id) = start_command(&c, Some("s-1"));
        assert_eq!(cmd, "claude --dangerously-skip-permissions --resume s-1");
        assert_eq!(id.as_deref(), Some("s-1"));
        // An empty resume id starts afresh; an adapter without `{{session_id}}` names none.
        assert!(start_command(&c, Some("")).0.contains("--session-id"));
        let plain = Adapter::parse(
            "x",
            "[spawn]\ncommand = \"fake\"\nresume_command = \"fake --continue\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(start_command(&plain, None), ("fake".to_string(), None));
        assert_eq!(
            start_command(&plain, Some("s-1")),
            ("fake --continue".to_string(), None)
        );
    }
}
