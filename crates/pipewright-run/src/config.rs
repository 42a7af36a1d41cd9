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
                },
            )
        })
        .collect()
}
