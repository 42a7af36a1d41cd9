//! Printing diagnostics in the format the user asked for.

use crate::cli::Format;
use crate::commands::check::Files;
use pipewright_syntax::{render, CodeInfo, Diagnostic, SourceMap};
use std::io::IsTerminal;

/// Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org).
pub(crate) fn use_color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// The same rule for output written to stderr.
pub(crate) fn use_color_stderr() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

pub(crate) fn print(format: Format, diags: &[Diagnostic], sources: &SourceMap, files: &Files) {
    let text = match format {
        Format::Human => {
            let mut s = render::human(diags, sources, use_color());
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&summary(diags, files));
            s
        }
        Format::Concise => {
            let mut s = render::concise(diags, sources);
            s.push_str(&summary(diags, files));
            s
        }
        Format::Json => render::json_with_files(
            diags,
            sources,
            render::FileCounts {
                checked: files.checked,
                skipped: files.skipped,
                unreadable: files.unreadable,
            },
        ),
        Format::Sarif => render::sarif(diags, sources, env!("CARGO_PKG_VERSION"), &all_codes()),
        // Workflow commands only: a run with no findings prints nothing at all.
        Format::Github => render::github(diags, sources),
    };
    if text.is_empty() || text.ends_with('\n') {
        out!("{text}");
    } else {
        outln!("{text}");
    }
}

/// `check --statistics`: one line per code, `COUNT  CODE  [*] title` (`[*]`: `--fix` fixes at
/// least one of them), the most frequent first, as ruff prints it; with `--format json`, an
/// array of `{code, count, fixable, title}`.
pub(crate) fn statistics(format: Format, diags: &[Diagnostic], sources: &SourceMap) {
    let codes = all_codes();
    let mut rows: Vec<(&str, usize, bool)> = Vec::new();
    for d in diags {
        let fixable = sources
            .get(d.span().file)
            .is_some_and(|f| pipewright_syntax::fix::automatic(d, &f.text).is_some());
        match rows.iter_mut().find(|r| r.0 == d.code) {
            Some(r) => {
                r.1 += 1;
                r.2 |= fixable;
            }
            None => rows.push((d.code, 1, fixable)),
        }
    }
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let title = |code: &str| {
        codes
            .iter()
            .find(|c| c.code == code)
            .map_or("", |c| c.title)
    };
    if format == Format::Json {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|(code, count, fixable)| {
                serde_json::json!({"code": code, "count": count, "fixable": fixable, "title": title(code)})
            })
            .collect();
        let text = serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".into());
        outln!("{text}");
        return;
    }
    let width = rows
        .iter()
        .map(|r| r.1.to_string().len())
        .max()
        .unwrap_or(1);
    for (code, count, fixable) in rows {
        let mark = if fixable { "[*] " } else { "" };
        outln!("{count:>width$}  {code}  {mark}{}", title(code));
    }
}

/// The human summary line: what was found, then what was not looked at and why.
fn summary(diags: &[Diagnostic], files: &Files) -> String {
    let mut line = render::summary(diags, files.checked);
    if files.warnings_denied {
        line.push_str(" (warnings fail the check: --deny warnings)");
    }
    if files.unreadable > 0 {
        let n = files.unreadable;
        line.push_str(&format!(
            "; {n} {} could not be read",
            if n == 1 { "path" } else { "paths" }
        ));
    }
    if files.skipped > 0 {
        let n = files.skipped;
        line.push_str(&format!(
            "; skipped {n} {} not recognised as a workflow of any dialect (name a file to check it anyway)",
            if n == 1 { "file" } else { "files" }
        ));
    }
    line
}

/// Every documented code, from every crate that emits diagnostics.
pub(crate) fn all_codes() -> Vec<CodeInfo> {
    let tables: &[&[CodeInfo]] = &[
        pipewright_syntax::codes::GENERAL,
        crate::commands::check::CLI_CODES,
        crate::read::CODES,
        pipewright_r1::CODES,
    ];
    let after: &[&[CodeInfo]] = &[pipewright_runtime::codes::CODES, pipewright_fmt::CODES];
    let dialects = pipewright_registry::DIALECTS.iter().map(|d| d.codes());
    tables
        .iter()
        .copied()
        .chain(dialects)
        .chain(after.iter().copied())
        .flat_map(|t| t.iter().copied())
        .collect()
}

/// Set when writing to stdout or stderr failed for a reason other than a closed pipe.
static WRITE_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes to stdout or stderr without ever panicking (`out!` panics when the reader has gone).
/// A closed pipe (`pipewright check . | head -1`) is how a reader says it has seen enough: the
/// rest is dropped quietly, as Unix tools do, and the exit code stays the command's verdict.
/// Any other failure (a full disk behind a redirect) loses output, so it is reported once and
/// turns the exit code into 2 (see [`write_failed`]).
pub(crate) fn write(to_stderr: bool, args: std::fmt::Arguments) {
    use std::io::Write;
    let captured = CAPTURED.try_with(|c| {
        let mut c = c.borrow_mut();
        let into = if to_stderr {
            &mut c.stderr
        } else {
            &mut c.stdout
        };
        let _ = std::fmt::Write::write_fmt(into, args);
    });
    if captured.is_ok() {
        return;
    }
    let result = if to_stderr {
        std::io::stderr().lock().write_fmt(args)
    } else {
        let mut out = std::io::stdout().lock();
        out.write_fmt(args).and_then(|()| out.flush())
    };
    if let Err(e) = result {
        write_error(&e, if to_stderr { "stderr" } else { "stdout" });
    }
}

tokio::task_local! {
    /// What a command prints while it runs for a worker of a durable engine: kept for the
    /// engine's caller instead of printed on the worker's terminal.
    static CAPTURED: std::cell::RefCell<Captured>;
}

/// What a captured command printed.
#[derive(Debug, Default, Clone)]
pub(crate) struct Captured {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    /// A run's report in both of its forms, kept instead of printed (see [`keep_report`]).
    pub(crate) report: Option<Rendered>,
}

/// A run's report as `--format json` prints it and as a person reads it (stdout, stderr).
#[derive(Debug, Default, Clone)]
pub(crate) struct Rendered {
    pub(crate) json: Option<String>,
    pub(crate) human: Option<(String, String)>,
}

/// Keeps a captured run's report in both forms: whoever follows the run picks one later. Not
/// captured, it is dropped (only a worker's run keeps it).
pub(crate) fn keep_report(r: Rendered) {
    let _ = CAPTURED.try_with(|c| c.borrow_mut().report = Some(r));
}

/// Runs `f` with everything it prints through [`write`] captured (in this task only).
pub(crate) async fn capture<F: std::future::Future>(f: F) -> (F::Output, Captured) {
    CAPTURED
        .scope(std::cell::RefCell::new(Captured::default()), async move {
            let out = f.await;
            (out, CAPTURED.with(|c| c.take()))
        })
        .await
}

/// Reports a failed write once (a closed pipe is not a failure: see [`write`]).
pub(crate) fn write_error(e: &std::io::Error, stream: &str) {
    use std::io::Write;
    if e.kind() != std::io::ErrorKind::BrokenPipe
        && !WRITE_FAILED.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        let _ = writeln!(std::io::stderr(), "error: cannot write to {stream}: {e}");
    }
}

/// `fmt --diff`'s unified diff of one file, written to stdout as it is made (see [`write`]
/// for what a failed write does).
pub(crate) fn write_diff(path: &str, before: &str, after: &str) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let result = pipewright_fmt::write_unified_diff(&mut out, path, before, after)
        .and_then(|()| out.flush());
    if let Err(e) = result {
        write_error(&e, "stdout");
    }
}

/// [`write`] for bytes that need not be UTF-8 (standard input echoed back by `fmt -`).
pub(crate) fn write_bytes(bytes: &[u8]) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        write_error(&e, "stdout");
    }
}

/// True when some output could not be written (other than to a closed pipe).
pub(crate) fn write_failed() -> bool {
    WRITE_FAILED.load(std::sync::atomic::Ordering::Relaxed)
}
