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

/// Why a tool could not run: a raised error, which fails the step unless it continues on
/// error. A tool that runs and reports a failure of its own returns an error-flagged result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("`{0}` does not resolve to a tool: pipewright runs `shell`, `file__read`, `file__write` and the tools declared under [tools] in pipewright.toml")]
    Unknown(String),
    #[error("missing argument `{0}`")]
    MissingArgument(&'static str),
    #[error("argument `{name}` must be a string, got {got}")]
    NotAString {
        name: &'static str,
        got: &'static str,
    },
    #[error("`command` must be a string or a non-empty list of strings, got {0}")]
    BadCommand(&'static str),
    #[error("a command list holds only strings, found {0}")]
    CommandListItem(&'static str),
    #[error(transparent)]
    File(#[from] files::FileError),
    #[error(transparent)]
    Process(#[from] process::ProcessError),
    /// A project tool's command ended unsuccessfully; `failure` is how, and its stderr.
    #[error("tool `{name}` {failure}")]
    Failed { name: String, failure: String },
    /// A project tool's stdout is its result, so it must be JSON.
    #[error("tool `{name}` printed something that is not JSON ({reason}): {preview}")]
    NotJson {
        name: String,
        reason: String,
        preview: String,
    },
}

impl From<ToolError> for String {
    fn from(e: ToolError) -> String {
        e.to_string()
    }
}

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
    ) -> Result<Value, ToolError> {
        if let Some(t) = self.project.get(name) {
            return self.project_tool(name, t, args).await;
        }
        match name {
            "shell" => self.shell(args).await,
            "file__read" => {
                let path = str_arg(args, "path")?;
                Ok(Value::Str(files::read(&self.workdir, path).await?))
            }
            "file__write" => {
                let path = str_arg(args, "path")?;
                let content = match args.get("content") {
                    Some(Value::Str(s)) => s.clone(),
                    Some(v) => v.to_json_string(),
                    None => return Err(ToolError::MissingArgument("content")),
                };
                let n = files::write(&self.workdir, path, &content).await?;
                Ok(obj(vec![
                    ("path", Value::Str(path.to_string())),
                    ("bytes", Value::Int(n as i64)),
                ]))
            }
            other => Err(ToolError::Unknown(other.to_string())),
        }
    }

    async fn shell(&self, args: &IndexMap<String, Value>) -> Result<Value, ToolError> {
        let argv: Vec<String> = match args.get("command") {
            Some(Value::Str(s)) => vec!["sh".into(), "-c".into(), s.clone()],
            Some(Value::List(l)) if !l.is_empty() => l
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| ToolError::CommandListItem(v.type_name()))
                })
                .collect::<Result<_, _>>()?,
            Some(v) => return Err(ToolError::BadCommand(v.type_name())),
            None => return Err(ToolError::MissingArgument("command")),
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
    ) -> Result<Value, ToolError> {
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
            return Err(ToolError::Failed {
                name: name.to_string(),
                failure: out.failure_text(),
            });
        }
        let text = out.stdout.trim();
        serde_json::from_str::<serde_json::Value>(text)
            .map(|j| Value::from_json(&j))
            .map_err(|e| ToolError::NotJson {
                name: name.to_string(),
                reason: e.to_string(),
                preview: crate::value::preview(&Value::Str(text.to_string()), 200),
            })
    }
}

fn str_arg<'a>(
    args: &'a IndexMap<String, Value>,
    name: &'static str,
) -> Result<&'a str, ToolError> {
    match args.get(name) {
        Some(Value::Str(s)) => Ok(s),
        Some(v) => Err(ToolError::NotAString {
            name,
            got: v.type_name(),
        }),
        None => Err(ToolError::MissingArgument(name)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatch(tools: &Tools, name: &str, args: &[(&str, Value)]) -> Result<Value, ToolError> {
        let args: IndexMap<String, Value> = args
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
            .block_on(tools.dispatch(name, &args))
    }

    #[test]
    fn a_tool_that_cannot_run_says_why_in_its_variant() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut tools = Tools::new(t.path().to_path_buf());
        let path = |p: &str| ("path", Value::Str(p.into()));
        assert_eq!(
            dispatch(&tools, "file__read", &[path("../outside.txt")]),
            Err(ToolError::File(files::FileError::Escapes(
                "../outside.txt".into()
            )))
        );
        assert_eq!(
            dispatch(&tools, "file__write", &[path("a.txt")]),
            Err(ToolError::MissingArgument("content"))
        );
        assert_eq!(
            dispatch(&tools, "file__read", &[("path", Value::Int(3))]),
            Err(ToolError::NotAString {
                name: "path",
                got: "int"
            })
        );
        assert_eq!(
            dispatch(&tools, "shell", &[("command", Value::List(vec![]))]),
            Err(ToolError::BadCommand("list"))
        );
        assert!(matches!(
            dispatch(&tools, "nope", &[]),
            Err(ToolError::Unknown(n)) if n == "nope"
        ));
        tools.project.insert(
            "lint".into(),
            ProjectTool {
                command: vec!["sh".into(), "-c".into(), "echo not json".into()],
                timeout: Duration::from_secs(30),
                withhold_env: Vec::new(),
            },
        );
        let e = dispatch(&tools, "lint", &[]);
        assert!(
            matches!(&e, Err(ToolError::NotJson { name, .. }) if name == "lint"),
            "{e:?}"
        );
        assert_eq!(
            e.map_err(String::from),
            Err("tool `lint` printed something that is not JSON (expected ident at line 1 column 2): \"not json\"".into())
        );
        // A command that fails is a result the step sees, not a raised error.
        let out = dispatch(&tools, "shell", &[("command", Value::Str("exit 4".into()))]);
        assert!(
            out.as_ref().is_ok_and(|v| is_error(&normalise(v.clone()))),
            "{out:?}"
        );
    }
}
