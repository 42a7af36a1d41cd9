//! `check --worst-case`: a note per workflow with the most agent calls it can make
//! (`pipewright_ir::worst_case`), for setting budgets before a run pays for them.

use pipewright_dialect::{Context, Dialect, Verb};
use pipewright_ir::worst_case::{worst_cases, Calls};
use pipewright_syntax::{Diagnostic, FileId, Severity, SourceMap, Span};
use std::path::Path;

/// Appends the notes of one file, which checked without errors.
pub(crate) fn notes(
    dialect: &dyn Dialect,
    path: &Path,
    file: FileId,
    text: &str,
    sources: &mut SourceMap,
    ctx: &Context,
    out: &mut Vec<Diagnostic>,
) {
    if !dialect.supports(Verb::Graph) {
        return;
    }
    // Lowering checks again; its diagnostics were reported already by the check itself.
    let Ok(lowered) = dialect.lower(path, file, text, sources, ctx) else {
        return;
    };
    let program = &lowered.program;
    // A step's span covers all its lines; the notes point at the first one.
    let line = |span: Span| first_line(text, span);
    let budget = ctx.project.max_agent_calls;
    for wc in worst_cases(program) {
        let Some(w) = program.workflows.get(wc.workflow.0) else {
            continue;
        };
        // Workflows of other files (a called pipeline's own file) get their note there.
        if w.file != file || (wc.agent_steps == 0 && wc.calls == Calls::AtMost(0)) {
            if wc.spawns_sessions && w.file == file {
                out.push(
                    Diagnostic::new(
                        Severity::Note,
                        super::check::WORST_CASE,
                        line(w.span),
                        format!("`{}` asks no agent directly", w.name),
                    )
                    .with_label("its agent sessions (spawn) report no usage to count")
                    .with_help("a `--max-agent-calls` budget counts no call of a spawned session"),
                );
            }
            continue;
        }
        let steps = match wc.agent_steps {
            1 => "1 agent step".to_string(),
            n => format!("{n} agent steps"),
        };
        let d = match &wc.calls {
            Calls::AtMost(n) => {
                let calls = if *n == 1 { "call" } else { "calls" };
                let mut d = Diagnostic::new(
                    Severity::Note,
                    super::check::WORST_CASE,
                    line(w.span),
                    format!("`{}` makes at most {n} agent {calls}", w.name),
                )
                .with_label(format!(
                    "{steps}, every condition taken and every retry spent"
                ));
                d = factors(d, &wc.factors, w.span, &line);
                match budget {
                    Some(b) if b < *n => d.with_help(format!(
                        "`[run] max_agent_calls = {b}` stops a run that gets this far before \
                         its call number {}",
                        b + 1
                    )),
                    Some(_) => d,
                    None => d.with_help(format!(
                        "`--max-agent-calls {n}` (or `[run] max_agent_calls`) would never stop it"
                    )),
                }
            }
            Calls::Unbounded { at, why } => {
                let mut d = Diagnostic::new(
                    Severity::Note,
                    super::check::WORST_CASE,
                    line(w.span),
                    format!(
                        "`{}` has no bound on its agent calls before it runs",
                        w.name
                    ),
                )
                .with_label(steps)
                .with_secondary(line(*at), why.clone());
                d = factors(d, &wc.factors, w.span, &line);
                match budget {
                    Some(b) => d.with_note(format!("`[run] max_agent_calls = {b}` bounds it")),
                    None => d.with_help(
                        "bound it with `--max-agent-calls N` or `[run] max_agent_calls = N` \
                         in pipewright.toml",
                    ),
                }
            }
        };
        out.push(if wc.spawns_sessions {
            d.with_note("its agent sessions (spawn) report no usage and are not counted")
        } else {
            d
        });
    }
}

/// `span` up to the end of its first line (a span of another file is kept as it is).
fn first_line(text: &str, span: Span) -> Span {
    let (start, end) = (span.start as usize, span.end as usize);
    let Some(body) = text.get(start..end) else {
        return span;
    };
    let trimmed = body.trim_end_matches(['\n', '\r', ' ']);
    let len = trimmed.find('\n').unwrap_or(trimmed.len());
    Span::new(span.file, start..start + len)
}

/// The fan-outs and loops that multiply the calls, each at its step; one that is the workflow
/// itself (a state machine's cycle) is a note, not a second label on the same line.
fn factors(
    mut d: Diagnostic,
    factors: &[(Span, String)],
    workflow: Span,
    line: &dyn Fn(Span) -> Span,
) -> Diagnostic {
    for (span, why) in factors {
        d = if *span == workflow {
            d.with_note(why.clone())
        } else {
            d.with_secondary(line(*span), why.clone())
        };
    }
    d
}
