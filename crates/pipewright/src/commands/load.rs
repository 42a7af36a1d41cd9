//! Loading one pipeline file for `graph` and `run`: they only work on a file that checks
//! without errors, so the check runs first and its diagnostics are shown when it fails.

use pipewright_pipeline::ast::{PipelineFile, Program};
use pipewright_pipeline::CheckOptions;
use pipewright_syntax::{diagnostic, render, Diagnostic, FileId, SourceMap, Span};
use std::path::Path;

/// Loads one pipeline file; its namespace (what `ns.name` call targets use) is its file stem.
pub fn pipeline_file(
    path: &Path,
    id: FileId,
    text: &str,
    diags: &mut Vec<Diagnostic>,
) -> PipelineFile {
    let mut file = pipewright_pipeline::load_source(id, text, diags);
    file.namespace = path.file_stem().map(|s| s.to_string_lossy().to_string());
    file
}

/// The checked program, or the exit code to return (1: the file has errors, 2: unreadable).
pub fn checked_pipeline(path: &Path, sources: &mut SourceMap) -> Result<Program, u8> {
    let text = crate::read::text(path).map_err(|e| {
        errln!("error: {e}");
        2u8
    })?;
    let id = sources.add(crate::read::display_name(path), text.as_str());
    let mut diags = Vec::new();
    let mut file = pipeline_file(path, id, &text, &mut diags);
    if path.as_os_str() == "-" {
        file.namespace = None;
    }
    if file.pipelines.is_empty() && !diags.iter().any(Diagnostic::is_error) {
        // An empty file (or only comments) loads to nothing at all; `graph` and `run` both
        // need a pipeline, and say so the same way.
        diags.push(
            Diagnostic::error(
                "PW0201",
                Span::new(id, 0..0),
                "this file declares no pipeline",
            )
            .with_label("nothing to graph or run")
            .with_help("a pipeline file needs a document with `pipeline: NAME` and `steps:`"),
        );
    }
    let program = Program { files: vec![file] };
    let (project, _) =
        crate::project::load(None, Some(path), sources, &mut diags).map_err(|e| {
            errln!("error: {e}");
            2u8
        })?;
    let opts = CheckOptions {
        tools: crate::project::catalogue(&project),
        invoker: project.invoker.clone(),
        ..CheckOptions::default()
    };
    diags.extend(pipewright_pipeline::check_program(&program, sources, &opts));
    diagnostic::sort(&mut diags);
    if diags.iter().any(|d| d.is_error()) {
        err!(
            "{}",
            render::human(&diags, sources, crate::output::use_color_stderr())
        );
        errln!("{}", render::summary(&diags, 1));
        return Err(1);
    }
    Ok(program)
}
