//! Tools a `tool`/`shell` step dispatches: `shell`, `file__read`, `file__write` built in, plus
//! the project's `[tools.NAME]` commands (JSON arguments on stdin, a JSON result on stdout).

pub mod files;
pub mod process;

use crate::value::obj;
use indexmap::IndexMap;
use pipewright_r1::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct ProjectTool {
    pub command: Vec<String>,
    pub timeout: Duration,
    /// Variables removed from the tool's environment (the API key's, unless the project
    /// passes secrets).
    pub withhold_env: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Tools {
    /// File tools are confined here and commands run here.
    pub workdir: PathBuf,
    pub shell_timeout: Duration,
    pub project: BTreeMap<String, ProjectTool>,
    /// Variables removed from a shell step's environment (see
    /// [`crate::config::withheld_env`]).
    pub withhold_env: Vec<String>,
}

impl Tools {
    pub fn new(workdir: PathBuf) -> Tools {
        Tools {
            workdir,
            shell_timeout: Duration::from_secs(60),
            project: BTreeMap::new(),
            withhold_env: Vec::new(),
        }
    }

    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = ["shell", "file__read", "file__write"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(self.project.keys().cloned());
        v
    }

    /// Runs a tool. `Err` is a raised error (the tool could not run); an error the tool
    /// reports itself comes back as an error-flagged result.
    pub async fn dispatch(
        &self,
        name: &str,
        args: &IndexMap<String, Value>,
    ) -> Result<Value, String> {
        if let Some(t) = self.project.get(name) {
            return self.project_tool(name, t, args).await;
        }
        match name {
            "shell" => self.shell(args).await,
            "file__read" => {
                let path = str_arg(args, "path")?;
                files::read(&self.workdir, path)
                    .await
                    .map(Value::Str)
                    .map_err(String::from)
            }
            "file__write" => {
                let path = str_arg(args, "path")?;
                let content = match args.get("content") {
                    Some(Value::Str(s)) => s.clone(),
                    Some(v) => v.to_json_string(),
                    None => return Err("missing argument `content`".into()),
                };
                let n = files::write(&self.workdir, path, &content).await?;
                Ok(obj(vec![("path", Value::Str(path.to_string())), ("bytes", Value::Int(n as i64))]))
            }
            other => Err(format!(
                "`{other}` does not resolve to a tool: pipewright runs `shell`, `file__read`, `file__write` and the tools declared under [tools] in pipewright.toml"
            )),
        }
    }

    async fn shell(&self, args: &IndexMap<String, Value>) -> Result<Value, String> {
        let argv: Vec<String> = match args.get("command") {
            Some(Value::Str(s)) => vec!["sh".into(), "-c".into(), s.clone()],
            Some(Value::List(l)) if !l.is_empty() => l
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        format!("a command list holds only strings, found {}", v.type_name())
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(v) => {
                return Err(format!(
                    "`command` must be a string or a non-empty list of strings, got {}",
                    v.type_name()
                ))
            }
            None => return Err("missing argument `command`".into()),
        };
        let out = process::run(process::Spec {
            argv: &argv,
            stdin: None,
            cwd: &self.workdir,
            timeout: self.shell_timeout,
            env: &[],
            env_remove: &self.withhold_env,
        })
        .await?;
        if out.code == Some(0) {
            return Ok(Value::Str(out.stdout));
        }
        let status = match (out.code, out.signal_text()) {
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(s)) => format!("killed by {s}"),
            (None, None) => "no exit status".to_string(),
        };
        Ok(obj(vec![
            ("isError", Value::Bool(true)),
            (
                "error",
                Value::Str(match out.stderr.trim_end() {
                    "" => status,
                    err => format!("{status}: {err}"),
                }),
            ),
            ("stdout", Value::Str(out.stdout)),
            ("stderr", Value::Str(out.stderr)),
            (
                "exit_code",
                out.code.map_or(Value::Null, |c| Value::Int(c.into())),
            ),
        ]))
    }

    async fn project_tool(
        &self,
        name: &str,
        t: &ProjectTool,
        args: &IndexMap<String, Value>,
    ) -> Result<Value, String> {
        let input = Value::Object(args.clone()).to_json_string().into_bytes();
        let out = process::run(process::Spec {
            argv: &t.command,
            stdin: Some(input),
            cwd: &self.workdir,
            timeout: t.timeout,
            env: &[],
            env_remove: &t.withhold_env,
        })
        .await?;
        if out.code != Some(0) {
            return Err(format!("tool `{name}` {}", out.failure_text()));
        }
        let text = out.stdout.trim();
        serde_json::from_str::<serde_json::Value>(text)
            .map(|j| Value::from_json(&j))
            .map_err(|e| {
                format!(
                    "tool `{name}` printed something that is not JSON ({e}): {}",
                    crate::value::preview(&Value::Str(text.to_string()), 200)
                )
            })
    }
}

fn str_arg<'a>(args: &'a IndexMap<String, Value>, name: &str) -> Result<&'a str, String> {
    match args.get(name) {
        Some(Value::Str(s)) => Ok(s),
        Some(v) => Err(format!(
            "argument `{name}` must be a string, got {}",
            v.type_name()
        )),
        None => Err(format!("missing argument `{name}`")),
    }
}

/// The "ctx shape" of a tool result (§6.4): `{text, structured?, meta?}`.
pub fn normalise(raw: Value) -> Value {
    match raw {
        Value::Str(s) => obj(vec![("text", Value::Str(s))]),
        Value::Object(m) => {
            let flagged = m.get("isError").is_some_and(Value::truthy)
                || m.get("status").and_then(Value::as_str) == Some("error");
            let mut out = IndexMap::new();
            if flagged {
                let text = ["error_message", "error"]
                    .iter()
                    .find_map(|k| {
                        m.get(*k)
                            .and_then(Value::as_str)
                            .filter(|s| !s.is_empty())
                            .map(str::to_string)
                    })
                    .or_else(|| {
                        m.get("error_kind")
                            .and_then(Value::as_str)
                            .map(|k| format!("error: {k}"))
                    })
                    .unwrap_or_else(|| "error".into());
                out.insert("text".into(), Value::Str(text));
            } else {
                let text = m
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                out.insert("text".into(), Value::Str(text));
            }
            if !m.is_empty() {
                out.insert("structured".into(), Value::Object(m));
            }
            if flagged {
                out.insert("meta".into(), obj(vec![("isError", Value::Bool(true))]));
            }
            Value::Object(out)
        }
        other => obj(vec![
            ("text", Value::Str(String::new())),
            ("structured", other),
        ]),
    }
}

/// True for a normalised result that signals an error.
pub fn is_error(v: &Value) -> bool {
    v.as_object()
        .and_then(|o| o.get("meta"))
        .and_then(Value::as_object)
        .and_then(|m| m.get("isError"))
        .is_some_and(Value::truthy)
}

/// The envelope `on_error: continue` binds for a raised error.
pub fn error_envelope(message: &str) -> Value {
    obj(vec![
        ("text", Value::Str(message.to_string())),
        (
            "structured",
            obj(vec![("error", Value::Str(message.to_string()))]),
        ),
        ("meta", obj(vec![("isError", Value::Bool(true))])),
    ])
}
