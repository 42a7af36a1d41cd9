//! `agent` steps: the prompt with its expected-outputs block, the declared outputs and their
//! validation (notes §4.6), and the offline path where the run's backend answers instead of
//! an agent in tmux.

use crate::executor::OutputDecl;
use pipewright_runtime::backend::{AgentBackend, AgentRequest};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The text sent: the prompt, then what to report and how.
pub(super) fn full_prompt(prompt: &str, decl: &[OutputDecl], fire_forget: bool) -> String {
    if fire_forget {
        return prompt.to_string();
    }
    let mut p = prompt.trim_end().to_string();
    if decl.is_empty() {
        p.push_str("\n\nWhen complete, run: `pipewright meow done`");
        return p;
    }
    p.push_str("\n\n## Expected Outputs\n\nWhen complete, run `pipewright meow done` with `--output <name>=<value>` for each output:\n");
    for d in decl {
        let req = if d.required { ", required" } else { "" };
        p.push_str(&format!("- {} ({}{req})", d.name, d.ty));
        if !d.description.is_empty() {
            p.push_str(&format!(": {}", d.description));
        }
        p.push('\n');
    }
    p
}

/// Checks reported outputs against the declarations and gives them their declared types
/// (`number` `"42"` becomes 42); undeclared outputs are kept as they are.
pub(super) fn validate(
    decl: &[OutputDecl],
    mut outs: Map<String, Value>,
    workdir: &Path,
) -> Result<Map<String, Value>, Vec<String>> {
    let mut errs = Vec::new();
    for d in decl {
        let v = match outs.get(&d.name) {
            None | Some(Value::Null) => {
                if d.required {
                    errs.push(format!("missing required output `{}`", d.name));
                }
                continue;
            }
            Some(v) => v.clone(),
        };
        let typed = match (d.ty.as_str(), &v) {
            ("string", Value::String(s)) if !s.is_empty() => Ok(v.clone()),
            ("string", Value::String(_)) => Err("is empty".to_string()),
            ("string", _) => Err("is not a string".into()),
            ("number", Value::Number(_)) => Ok(v.clone()),
            ("number", Value::String(s)) => match s.trim().parse::<i64>() {
                Ok(n) => Ok(Value::from(n)),
                Err(_) => s
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| format!("`{s}` is not a number")),
            },
            ("number", _) => Err("is not a number".into()),
            ("boolean", Value::Bool(_)) => Ok(v.clone()),
            ("boolean", Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => Ok(Value::Bool(true)),
                "false" | "0" | "no" => Ok(Value::Bool(false)),
                _ => Err(format!("`{s}` is not true or false")),
            },
            ("boolean", _) => Err("is not a boolean".into()),
            ("json", Value::String(s)) => {
                serde_json::from_str::<Value>(s).map_err(|e| format!("is not valid JSON: {e}"))
            }
            ("json", _) => Ok(v.clone()),
            ("file_path", Value::String(s)) => {
                let p = super::template::under(workdir, s);
                if p.exists() {
                    Ok(v.clone())
                } else {
                    Err(format!("file `{}` does not exist", p.display()))
                }
            }
            ("file_path", _) => Err("is not a path".into()),
            _ => Ok(v.clone()),
        };
        match typed {
            Ok(t) => {
                outs.insert(d.name.clone(), t);
            }
            Err(e) => errs.push(format!("output `{}` ({}) {e}", d.name, d.ty)),
        }
    }
    if errs.is_empty() {
        Ok(outs)
    } else {
        Err(errs)
    }
}

/// The JSON Schema an offline backend answers with. A `file_path` answer is `.` (the agent's
/// working directory), the one path sure to exist.
fn shape(decl: &[OutputDecl]) -> Value {
    let mut props = Map::new();
    for d in decl {
        let s = match d.ty.as_str() {
            "number" => json!({"type": "number"}),
            "boolean" => json!({"type": "boolean"}),
            "json" => json!({"type": "object"}),
            "file_path" => json!({"type": "string", "enum": ["."]}),
            _ => json!({"type": "string"}),
        };
        props.insert(d.name.clone(), s);
    }
    json!({"type": "object", "properties": props})
}

pub(super) struct Ask {
    pub backend: Arc<dyn AgentBackend>,
    pub run_id: String,
    pub step: String,
    pub workflow: String,
    pub agent: String,
    pub prompt: String,
    pub identity: String,
    pub decl: Vec<OutputDecl>,
    pub workdir: PathBuf,
    pub timeout: Option<Duration>,
}

/// How many answers an agent step may give before its outputs are accepted or it fails (a
/// rejected answer is sent back with why, as `meow done` returns the error to a live agent).
pub(super) const ATTEMPTS: usize = 3;

/// Asks the backend, re-asking with the validation errors until the outputs are valid.
/// The outputs, or the failure's error type (`_failed_step.error_type`) and message.
pub(super) async fn ask(a: Ask) -> Result<Map<String, Value>, (&'static str, String)> {
    let mut prompt = a.prompt.clone();
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        let req = AgentRequest {
            run_id: a.run_id.clone(),
            step: a.step.clone(),
            workflow: a.workflow.clone(),
            prompt: prompt.clone(),
            identity: a.identity.clone(),
            tools: Vec::new(),
            schema_name: None,
            schema: None,
            model: None,
            mode: None,
            shape: (!a.decl.is_empty()).then(|| shape(&a.decl)),
        };
        let call = a.backend.complete(&req);
        let reply = match a.timeout {
            Some(t) => match tokio::time::timeout(t, call).await {
                Ok(r) => r,
                Err(_) => {
                    let why = format!("step timed out after {}", super::duration::show(t));
                    return Err((super::recovery::TIMEOUT, why));
                }
            },
            None => call.await,
        }
        .map_err(|e| {
            let why = format!("agent `{}`: {}", a.agent, e.message);
            (super::recovery::AGENT_CRASHED, why)
        })?;
        let outs = match serde_json::from_str::<Value>(reply.trim()) {
            Ok(Value::Object(m)) => m,
            _ if a.decl.is_empty() => Map::new(),
            _ => {
                last = "the reply is not a JSON object of outputs".to_string();
                prompt = retry_prompt(&a.prompt, &last, attempt);
                continue;
            }
        };
        match validate(&a.decl, outs, &a.workdir) {
            Ok(o) => return Ok(o),
            Err(errs) => {
                last = errs.join("; ");
                prompt = retry_prompt(&a.prompt, &last, attempt);
            }
        }
    }
    Err((
        super::recovery::AGENT_CRASHED,
        format!("output validation failed after {ATTEMPTS} answers: {last}"),
    ))
}

/// The prompt `meow prime` repeats to an agent whose last `meow done` was refused.
pub(super) fn refused_prompt(prompt: &str, why: &str) -> String {
    format!("{prompt}\n\nYour last `pipewright meow done` was refused: {why}. Report again.")
}

fn retry_prompt(prompt: &str, why: &str, attempt: usize) -> String {
    format!("{prompt}\n\nYour answer {attempt} was rejected: {why}. Answer again.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(name: &str, ty: &str, required: bool) -> OutputDecl {
        OutputDecl {
            name: name.into(),
            required,
            ty: ty.into(),
            description: String::new(),
        }
    }

    #[test]
    fn outputs_are_validated_and_typed() {
        let decl = [
            d("n", "number", true),
            d("ok", "boolean", false),
            d("j", "json", false),
        ];
        let got = validate(
            &decl,
            json!({"n": "42", "ok": "yes", "j": "[1]", "extra": "x"})
                .as_object()
                .cloned()
                .unwrap(),
            Path::new("."),
        )
        .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"n": 42, "ok": true, "j": [1], "extra": "x"})
        );
        let errs = validate(
            &decl,
            json!({"ok": "perhaps"}).as_object().cloned().unwrap(),
            Path::new("."),
        )
        .unwrap_err();
        assert_eq!(
            errs,
            vec![
                "missing required output `n`".to_string(),
                "output `ok` (boolean) `perhaps` is not true or false".to_string()
            ]
        );
    }

    #[test]
    fn file_paths_must_exist_under_the_workdir() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        let decl = [d("f", "file_path", true)];
        let ok = json!({"f": "a.txt"}).as_object().cloned().unwrap();
        assert!(validate(&decl, ok, dir.path()).is_ok());
        let bad = json!({"f": "b.txt"}).as_object().cloned().unwrap();
        assert!(validate(&decl, bad, dir.path()).unwrap_err()[0].contains("does not exist"));
    }
}

#[cfg(test)]
mod failure_kinds {
    use super::*;
    use pipewright_runtime::backend::{AgentRequest, BackendError};

    /// A backend that answers after `delay`, or fails at once when told to.
    struct Slow {
        delay: Duration,
        fail: bool,
    }

    impl AgentBackend for Slow {
        fn name(&self) -> &str {
            "slow"
        }
        fn complete<'a>(
            &'a self,
            _req: &'a AgentRequest,
        ) -> pipewright_runtime::backend::BoxFuture<'a, Result<String, BackendError>> {
            Box::pin(async move {
                if self.fail {
                    return Err(BackendError::new("the model is gone"));
                }
                tokio::time::sleep(self.delay).await;
                Ok("{}".to_string())
            })
        }
    }

    fn ask(delay: Duration, fail: bool, timeout: Option<Duration>) -> Ask {
        Ask {
            backend: Arc::new(Slow { delay, fail }),
            run_id: "r".into(),
            step: "s".into(),
            workflow: "w".into(),
            agent: "a".into(),
            prompt: "p".into(),
            identity: "i".into(),
            decl: Vec::new(),
            workdir: std::env::temp_dir(),
            timeout,
        }
    }

    #[tokio::test]
    async fn an_agent_failure_carries_its_error_type() {
        // A timeout of the offline backend was told from its message (`timed out`) before.
        let late = super::ask(ask(
            Duration::from_secs(5),
            false,
            Some(Duration::from_millis(20)),
        ));
        assert!(
            matches!(&late.await, Err((k, m)) if *k == crate::run::recovery::TIMEOUT && m.contains("timed out")),
        );
        let gone = super::ask(ask(Duration::ZERO, true, None)).await;
        assert!(
            matches!(&gone, Err((k, m)) if *k == crate::run::recovery::AGENT_CRASHED && m.contains("gone")),
            "{gone:?}"
        );
        assert!(super::ask(ask(Duration::ZERO, false, None)).await.is_ok());
    }
}
