//! Shell commands of `shell` steps and `branch` conditions, and what they capture (notes
//! §2.6, §4.4): `sh -c` in the step's `workdir` with its `env` applied (the reference records
//! both and applies neither; the spec applies them), under the step's `timeout`.

use pipewright_runtime::tools::process;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;

/// One capture: `name = { source = "stdout"|"stderr"|"exit_code"|"file:PATH", type = "json" }`.
pub(super) struct Capture {
    pub name: String,
    pub source: String,
    pub json: bool,
}

pub(super) struct Command {
    pub script: String,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub env_remove: Vec<String>,
    pub timeout: Option<Duration>,
    pub captures: Vec<Capture>,
}

/// How a command ended: `outcome` is `true`, `false` or `timeout`.
pub(crate) struct Ran {
    pub outcome: &'static str,
    pub exit_code: i64,
    pub stderr: String,
    pub outputs: Map<String, Value>,
    /// Why the command could not start, or a capture that failed.
    pub problem: Option<String>,
}

/// Without a `timeout` a command may run this long (a day: approval gates wait for people).
const NO_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

pub(super) async fn run(c: Command) -> Ran {
    let argv = ["sh".to_string(), "-c".to_string(), c.script.clone()];
    let limit = c.timeout.unwrap_or(NO_TIMEOUT);
    let res = process::run(process::Spec {
        argv: &argv,
        stdin: None,
        cwd: &c.cwd,
        timeout: limit,
        env: &c.env,
        env_remove: &c.env_remove,
    })
    .await;
    let out = match res {
        Ok(o) => o,
        Err(process::ProcessError::TimedOut { .. }) => {
            let mut outputs = Map::new();
            outputs.insert("outcome".into(), Value::from("timeout"));
            outputs.insert("exit_code".into(), Value::from(-1));
            return Ran {
                outcome: "timeout",
                exit_code: -1,
                stderr: String::new(),
                outputs,
                problem: Some(format!(
                    "the command timed out after {}",
                    super::duration::show(limit)
                )),
            };
        }
        Err(e) => {
            let e = String::from(e);
            let mut outputs = Map::new();
            outputs.insert("outcome".into(), Value::from("false"));
            outputs.insert("exit_code".into(), Value::from(-1));
            return Ran {
                outcome: "false",
                exit_code: -1,
                stderr: e.clone(),
                outputs,
                problem: Some(e),
            };
        }
    };
    let code = out.code.map_or(-1, i64::from);
    let outcome = if code == 0 { "true" } else { "false" };
    let mut outputs = Map::new();
    outputs.insert("outcome".into(), Value::from(outcome));
    outputs.insert("exit_code".into(), Value::from(code));
    let mut problem = None;
    for cap in &c.captures {
        match capture(cap, &out, code, &c) {
            Ok(v) => {
                outputs.insert(cap.name.clone(), v);
            }
            Err(e) => {
                problem.get_or_insert(format!("output `{}`: {e}", cap.name));
            }
        }
    }
    if code != 0 && problem.is_none() {
        problem = Some(out.failure_text());
    }
    Ran {
        outcome,
        exit_code: code,
        stderr: out.stderr.trim().to_string(),
        outputs,
        problem,
    }
}

fn capture(
    cap: &Capture,
    out: &process::ProcOutput,
    code: i64,
    c: &Command,
) -> Result<Value, String> {
    let text = match cap.source.as_str() {
        "stdout" => out.stdout.trim().to_string(),
        "stderr" => out.stderr.trim().to_string(),
        "exit_code" => return Ok(Value::from(code)),
        s => match s.strip_prefix("file:") {
            Some(p) => {
                let path = super::template::under(&c.cwd, p.trim());
                std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?
                    .trim()
                    .to_string()
            }
            None => {
                return Err(format!(
                    "unknown source `{s}` (stdout, stderr, exit_code or file:PATH)"
                ))
            }
        },
    };
    if cap.json {
        serde_json::from_str(&text).map_err(|e| format!("not valid JSON: {e}"))
    } else {
        Ok(Value::String(text))
    }
}
