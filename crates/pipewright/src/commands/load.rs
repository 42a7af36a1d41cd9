//! Loading one file for `graph` and `run`: they only work on a file that checks without
//! errors, so the check runs first and its diagnostics are shown when it fails.

use crate::exit::ExitStatus;
use pipewright_dialect::{Context, Dialect, Lowered, Source, Verb};
use pipewright_syntax::{diagnostic, render, Diagnostic, SourceMap};
use std::path::Path;

/// The file's dialect and its checked, lowered program, or the exit code to return (1: the
/// file has errors or is no workflow, 2: unreadable, or its dialect cannot do `verb` yet).
pub(crate) fn lowered(
    path: &Path,
    verb: Verb,
    sources: &mut SourceMap,
) -> Result<(&'static dyn Dialect, Lowered), ExitStatus> {
    let text: std::sync::Arc<str> = crate::read::text(path)
        .map_err(|e| {
            errln!("error: {e}");
            ExitStatus::COULD_NOT_START
        })?
        .into();
    // One copy of the text, shared with the source map (a large file's text is a tenth of
    // what `graph` may hold).
    let id = sources.add(crate::read::display_name(path), text.clone());
    let Some(d) = pipewright_registry::detect(&Source::new(path, &text)) else {
        return Err(show(
            &[pipewright_registry::unrecognised(id, &text)],
            sources,
        ));
    };
    if !d.supports(verb) {
        errln!(
            "error: {}: {}",
            crate::read::display_name(path),
            crate::dialect::unsupported_verb(d, verb)
        );
        return Err(ExitStatus::COULD_NOT_START);
    }
    let mut diags = Vec::new();
    let (project, _) = pipewright_dialect::project::load(None, Some(path), sources, &mut diags)
        .map_err(|e| {
            errln!("error: {e}");
            ExitStatus::COULD_NOT_START
        })?;
    if diags.iter().any(Diagnostic::is_error) {
        return Err(show(&diags, sources));
    }
    let ctx = Context {
        project,
        drawn_only: verb == Verb::Graph,
        ..Context::default()
    };
    d.lower(path, id, &text, sources, &ctx)
        .map(|l| (d, l))
        .map_err(|mut diags| {
            diagnostic::sort(&mut diags);
            show(&diags, sources)
        })
}

fn show(diags: &[Diagnostic], sources: &SourceMap) -> ExitStatus {
    err!(
        "{}",
        render::human(diags, sources, crate::output::use_color_stderr())
    );
    errln!("{}", render::summary(diags, 1));
    ExitStatus::FAILED
}
