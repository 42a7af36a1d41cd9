//! Static checks over a loaded program: what the reference runtime leaves to run time (or never
//! checks) is found here, before anything runs.

mod dataflow;
mod recursion;
mod schemas;
mod shell;
mod targets;
mod types;

use crate::ast::Program;
use crate::catalogue::ToolCatalogue;
use pipewright_syntax::{Diagnostic, SourceMap};

#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    pub tools: ToolCatalogue,
    /// The definitions are agent-generated (`run_pipeline_inline`): an agent step may only
    /// run under the invoker's own identity.
    pub inline: bool,
    /// The invoking identity, for `inline` checks.
    pub invoker: Option<String>,
}

pub fn check_program(
    program: &Program,
    sources: &SourceMap,
    opts: &CheckOptions,
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let index = targets::Index::new(program, &mut diags);
    for (fi, file) in program.files.iter().enumerate() {
        let source = sources.get(file.file).map(|f| &*f.text).unwrap_or("");
        let registry = schemas::check_schemas(file, &mut diags);
        for (pi, p) in file.pipelines.iter().enumerate() {
            dataflow::check_pipeline(
                &dataflow::Env {
                    source,
                    registry: &registry,
                    index: &index,
                    opts,
                },
                (fi, pi),
                p,
                &mut diags,
            );
        }
    }
    recursion::check(program, &index, &mut diags);
    diags
}
