//! The project config (`pipewright.toml`) is parsed by `pipewright-project`; the run crate adds
//! only how its tool declarations become runnable tools.

pub use pipewright_project::*;

use crate::tools::ProjectTool;
use std::collections::BTreeMap;
use std::time::Duration;

pub fn project_tools(cfg: &ProjectConfig) -> BTreeMap<String, ProjectTool> {
    cfg.tools
        .iter()
        .map(|(k, t)| {
            (
                k.clone(),
                ProjectTool {
                    command: t.command.clone(),
                    timeout: Duration::from_secs(t.timeout_secs.max(1)),
                    withhold_env: if t.pass_secrets {
                        Vec::new()
                    } else {
                        withheld_env(cfg)
                    },
                },
            )
        })
        .collect()
}

/// The variables a shell step does not inherit: the API key's (`[backend.openai]
/// api_key_env`), unless `[run] pass_secrets = true`. A pipeline's commands are often built from
/// inputs and agent replies; a key in their environment is one `echo $VAR` from a step's output,
/// the store and the report.
pub fn withheld_env(cfg: &ProjectConfig) -> Vec<String> {
    if cfg.pass_secrets {
        Vec::new()
    } else {
        vec![cfg.secret_env().to_string()]
    }
}
