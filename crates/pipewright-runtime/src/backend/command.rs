//! Runs a CLI agent per turn. Profiles: `claude` (`claude -p --output-format json`, prompt on
//! stdin, the reply in the JSON `result` field) and a generic argv template where `{prompt}`,
//! `{schema}`, `{step}` and `{identity}` are substituted inside arguments in one pass (never
//! through a shell; substituted text is not scanned again). Without `{prompt}` in argv the
//! prompt goes to stdin; with it, `--` is put before the argument that `{prompt}` opens (unless
//! argv has `--` before it), so a prompt starting with `-` is never an option. Output is
//! captured through temporary files; the child is killed on timeout.

use super::{AgentBackend, AgentRequest, BackendError, BoxFuture};
use crate::tools::process;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub enum Profile {
    Claude,
    /// `argv` with placeholders; the prompt also goes to stdin when `stdin_prompt`.
    Generic {
        argv: Vec<String>,
        stdin_prompt: bool,
    },
}

#[derive(Debug, Clone)]
pub struct CommandBackend {
    pub profile: Profile,
    /// Overrides the program of the claude profile (tests use a fake agent).
    pub program: Option<String>,
    pub timeout: Duration,
    pub workdir: PathBuf,
}

impl CommandBackend {
    fn argv_and_stdin(&self, req: &AgentRequest) -> (Vec<String>, Option<Vec<u8>>) {
        match &self.profile {
            Profile::Claude => {
                let mut argv = vec![
                    self.program.clone().unwrap_or_else(|| "claude".into()),
                    "-p".into(),
                    "--output-format".into(),
                    "json".into(),
                ];
                if !req.tools.is_empty() {
                    argv.push("--allowedTools".into());
                    argv.push(req.tools.join(","));
                }
                if let Some(m) = &req.model {
                    argv.push("--model".into());
                    argv.push(m.clone());
                }
                (argv, Some(prompt_with_schema(req).into_bytes()))
            }
            Profile::Generic { argv, stdin_prompt } => {
                let schema = req
                    .schema
                    .as_ref()
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                let values = [
                    ("prompt", req.prompt.as_str()),
                    ("schema", schema.as_str()),
                    ("step", req.step.as_str()),
                    ("identity", req.identity.as_str()),
                    ("model", req.model.as_deref().unwrap_or("")),
                    ("mode", req.mode.as_deref().unwrap_or("")),
                    ("workflow", req.workflow.as_str()),
                ];
                let mut out = Vec::with_capacity(argv.len() + 1);
                let mut end_of_options = false;
                for a in argv {
                    // A prompt opening an argument could read as an option (`--version`,
                    // `-rf`): `--` ends the options first, unless argv already did.
                    if a.starts_with("{prompt}") && !end_of_options {
                        out.push("--".to_string());
                        end_of_options = true;
                    }
                    end_of_options |= a == "--";
                    out.push(substitute(a, &values));
                }
                (
                    out,
                    stdin_prompt.then(|| prompt_with_schema(req).into_bytes()),
                )
            }
        }
    }
}

/// Replaces each `{name}` of `values` in `template` in one left-to-right pass: substituted text
/// is never scanned again, so a prompt holding `{identity}` stays as written. Any other brace
/// text is kept.
fn substitute(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let hit = values
            .iter()
            .find(|(name, _)| after.starts_with(name) && after[name.len()..].starts_with('}'));
        match hit {
            Some((name, value)) => {
                out.push_str(value);
                rest = &after[name.len() + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The prompt, plus the schema the reply must follow when the step has one: CLI agents have no
/// structured-output switch, so the contract travels in the text.
fn prompt_with_schema(req: &AgentRequest) -> String {
    match &req.schema {
        Some(s) => format!(
            "{}\n\nReply with only a JSON value that satisfies this JSON Schema:\n{s}",
            req.prompt
        ),
        None => req.prompt.clone(),
    }
}

impl CommandBackend {
    /// Runs the agent once; the reply, with what the claude profile's JSON says it cost.
    async fn turn(&self, req: &AgentRequest) -> Result<super::Reply, BackendError> {
        let (argv, stdin) = self.argv_and_stdin(req);
        let env = vec![
            ("PIPEWRIGHT_STEP".to_string(), req.step.clone()),
            ("PIPEWRIGHT_RUN_ID".to_string(), req.run_id.clone()),
        ];
        let out = process::run(process::Spec {
            argv: &argv,
            stdin,
            cwd: &self.workdir,
            timeout: self.timeout,
            env: &env,
            // The agent program is the backend the user chose; like the openai backend it
            // is trusted with the environment's credentials.
            env_remove: &[],
        })
        .await
        .map_err(BackendError::new)?;
        if out.code != Some(0) {
            return Err(BackendError::new(format!(
                "the agent command {}",
                out.failure_text()
            )));
        }
        match self.profile {
            Profile::Claude => {
                let r = super::claude_json::parse(&out.stdout)?;
                Ok(super::Reply {
                    text: r.text,
                    usage: r.usage,
                    model: req.model.clone(),
                })
            }
            // An argv agent prints its answer and nothing else: no usage to read.
            Profile::Generic { .. } => Ok(super::Reply {
                text: out.stdout.trim_end().to_string(),
                usage: crate::usage::Usage::unknown(),
                model: req.model.clone(),
            }),
        }
    }
}

impl AgentBackend for CommandBackend {
    fn name(&self) -> &str {
        "command"
    }

    /// Claude Code's JSON says what each turn cost (`total_cost_usd`).
    fn reports_cost(&self) -> bool {
        self.profile == Profile::Claude
    }

    fn complete<'a>(
        &'a self,
        req: &'a AgentRequest,
    ) -> BoxFuture<'a, Result<String, BackendError>> {
        Box::pin(async move { self.turn(req).await.map(|r| r.text) })
    }

    fn reply<'a>(
        &'a self,
        req: &'a AgentRequest,
    ) -> BoxFuture<'a, Result<super::Reply, BackendError>> {
        Box::pin(self.turn(req))
    }
}

#[cfg(test)]
mod tests {
    use super::substitute;

    #[test]
    fn one_pass_leaves_substituted_text_alone() {
        let v = [("prompt", "{step} {x"), ("step", "3"), ("identity", "me")];
        assert_eq!(
            substitute("{prompt}|{step}|{identity}", &v),
            "{step} {x|3|me"
        );
        assert_eq!(substitute("-p={prompt}", &v), "-p={step} {x");
        assert_eq!(substitute("{other} {step {step}}", &v), "{other} {step 3}");
        assert_eq!(substitute("{", &v), "{");
    }
}
