//! Terminal output, drawn by ariadne, with a rustc-style header and `note:`/`help:` lines.

use super::printable::{escaped, Drawn};
use super::{count, locate, Located};
use crate::diagnostic::{Diagnostic, Severity};
use crate::source::{FileId, SourceMap};
use ariadne::{Cache, Color, Config, IndexType, Label, Report, ReportKind, Source};
use std::collections::hash_map::{Entry, HashMap};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

const RESET: &str = "\x1b[0m";
/// ariadne's own margin colour (`Fixed(246)`), so our trailer lines blend into its frame.
const MARGIN: &str = "\x1b[38;5;246m";

/// Renders diagnostics for a terminal. With `color` false the output contains no escape
/// sequences at all, so it is safe for logs, pipes and snapshot tests.
pub fn human(diags: &[Diagnostic], sources: &SourceMap, color: bool) -> String {
    let mut cache = MapCache {
        sources,
        loaded: HashMap::new(),
        drawn: HashMap::new(),
    };
    let mut out = String::new();
    for (i, d) in diags.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        render_one(&mut out, d, sources, &mut cache, color);
    }
    out
}

/// One line such as `checked 3 files: 2 errors, 1 warning` or `checked 1 file: no problems`.
pub fn summary(diags: &[Diagnostic], files_checked: usize) -> String {
    let c = count(diags);
    let parts: Vec<String> = [
        (c.errors, "error"),
        (c.warnings, "warning"),
        (c.notes, "note"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| plural(n, what))
    .collect();
    let found = if parts.is_empty() {
        "no problems".to_string()
    } else {
        parts.join(", ")
    };
    format!("checked {}: {found}", plural(files_checked, "file"))
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Feeds ariadne straight from the [`SourceMap`], so one report can show several files. A file
/// with control characters is drawn with their pictures instead ([`Drawn`]).
struct MapCache<'a> {
    sources: &'a SourceMap,
    loaded: HashMap<FileId, Source<Arc<str>>>,
    /// The files drawn other than as they are, with their offset maps.
    drawn: HashMap<FileId, Drawn>,
}

impl MapCache<'_> {
    /// Loads `id`, so that [`MapCache::offset`] knows how it is drawn.
    fn load(&mut self, id: FileId) {
        if let (Entry::Vacant(v), Some(file)) = (self.loaded.entry(id), self.sources.get(id)) {
            let text = match Drawn::of(&file.text) {
                Some(drawn) => {
                    let text = Arc::from(drawn.text.as_str());
                    self.drawn.insert(id, drawn);
                    text
                }
                None => Arc::clone(&file.text),
            };
            v.insert(Source::from(text));
        }
    }

    /// Where byte `offset` of file `id` is in the text ariadne draws.
    fn offset(&self, id: FileId, offset: usize) -> usize {
        self.drawn.get(&id).map_or(offset, |d| d.offset(offset))
    }
}

impl Cache<FileId> for MapCache<'_> {
    type Storage = Arc<str>;

    fn fetch(&mut self, id: &FileId) -> Result<&Source<Arc<str>>, impl fmt::Debug> {
        self.load(*id);
        self.loaded
            .get(id)
            .ok_or_else(|| format!("file #{} is not in the source map", id.0))
    }

    fn display<'b>(&self, id: &'b FileId) -> Option<impl fmt::Display + 'b> {
        self.sources.get(*id).map(|f| escaped(&f.name).into_owned())
    }
}

struct Part<'a> {
    at: Located<'a>,
    file: FileId,
    message: &'a str,
    primary: bool,
}

fn render_one(
    out: &mut String,
    d: &Diagnostic,
    sources: &SourceMap,
    cache: &mut MapCache,
    color: bool,
) {
    let paint = |code: &str, text: &str| {
        if color {
            format!("{code}{text}{RESET}")
        } else {
            text.to_string()
        }
    };
    let sev_code = match d.severity {
        Severity::Error => "\x1b[1;31m",
        Severity::Warning => "\x1b[1;33m",
        Severity::Note => "\x1b[1;36m",
    };
    out.push_str(&paint(
        sev_code,
        &format!("{}[{}]", d.severity.as_str(), d.code),
    ));
    out.push_str(&paint("\x1b[1m", &format!(": {}", escaped(&d.message))));
    out.push('\n');

    let parts: Vec<Part> = std::iter::once((&d.primary, true))
        .chain(d.secondary.iter().map(|l| (l, false)))
        .map(|(l, primary)| Part {
            at: locate(sources, l.span),
            file: l.span.file,
            message: &l.message,
            primary,
        })
        .collect();
    let (mut shown, hidden): (Vec<&Part>, Vec<&Part>) =
        parts.iter().partition(|p| p.at.file.is_some());

    // ariadne starts a new file section whenever a label is on an earlier line than the previous
    // one, so hand it labels grouped by file (the primary's first) and in reading order.
    let first_file = shown.first().map(|p| p.file);
    shown.sort_by_key(|p| (Some(p.file) != first_file, p.file, p.at.start, p.at.end));

    let mut trailer: Vec<(&str, String)> = Vec::new();
    for p in &hidden {
        let what = if p.message.is_empty() {
            "the problem".into()
        } else {
            escaped(p.message)
        };
        trailer.push((
            "note",
            format!("{what} (in file #{}, which is not loaded)", p.file.0),
        ));
    }
    trailer.extend(d.notes.iter().map(|n| ("note", escaped(n).into_owned())));
    trailer.extend(d.help.iter().map(|h| ("help", escaped(h).into_owned())));

    let body = shown
        .first()
        .and_then(|first| draw(d.severity, first, &shown, cache, color));
    let Some(body) = body else {
        plain_fallback(out, &parts[0], &trailer);
        return;
    };

    let mut lines: Vec<&str> = body.lines().collect();
    // Without labels ariadne draws no frame; `shown` is non-empty here, so the last line is the
    // frame's closing `───╯`, whose length gives the margin width.
    let tail = lines.pop().unwrap_or_default();
    for line in &lines {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let pad = " ".repeat(tail.chars().filter(|&c| c == '─').count());
    let bar = paint(MARGIN, "│");
    if !trailer.is_empty() {
        out.push_str(&format!("{pad}{bar}\n"));
    }
    for (kind, text) in &trailer {
        let indent = " ".repeat(kind.len() + 2);
        for (i, line) in text.lines().enumerate() {
            let head = if i == 0 {
                format!("{}: ", paint("\x1b[1m", kind))
            } else {
                indent.clone()
            };
            out.push_str(format!("{pad}{bar} {head}{line}").trim_end());
            out.push('\n');
        }
    }
    out.push_str(tail.trim_end());
    out.push('\n');
}

/// The ariadne drawing without its header line (we print our own, rustc-style).
fn draw(
    severity: Severity,
    first: &Part,
    shown: &[&Part],
    cache: &mut MapCache,
    color: bool,
) -> Option<String> {
    let (kind, main_color) = match severity {
        Severity::Error => (ReportKind::Error, Color::Red),
        Severity::Warning => (ReportKind::Warning, Color::Yellow),
        Severity::Note => (ReportKind::Advice, Color::Cyan),
    };
    for p in shown {
        cache.load(p.file);
    }
    let span = |p: &Part| -> (FileId, Range<usize>) {
        (
            p.file,
            cache.offset(p.file, p.at.start)..cache.offset(p.file, p.at.end),
        )
    };
    let labels: Vec<_> = shown
        .iter()
        .map(|p| {
            let label =
                Label::new(span(p)).with_color(if p.primary { main_color } else { Color::Blue });
            let label = if p.primary {
                label.with_priority(1)
            } else {
                label
            };
            if p.message.is_empty() {
                label
            } else {
                label.with_message(escaped(p.message))
            }
        })
        .collect();
    // The report's own span decides the `file:line:col` line; point it at the primary label when
    // it is drawn.
    let anchor = span(shown.iter().find(|p| p.primary).copied().unwrap_or(first));
    let report = Report::build(kind, anchor)
        .with_config(
            Config::new()
                .with_color(color)
                .with_index_type(IndexType::Byte),
        )
        .with_labels(labels)
        .finish();
    let mut buf = Vec::new();
    report.write(&mut *cache, &mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    text.split_once('\n').map(|(_, rest)| rest.to_string())
}

/// Used when no label's file is loaded: there is no source to draw, only where it would be.
fn plain_fallback(out: &mut String, primary: &Part, trailer: &[(&str, String)]) {
    out.push_str(&format!(
        "  --> file #{}, bytes {}..{} (not loaded)\n",
        primary.file.0, primary.at.start, primary.at.end
    ));
    if !primary.message.is_empty() {
        out.push_str(&format!("   = {}\n", escaped(primary.message)));
    }
    for (kind, text) in trailer {
        let indent = " ".repeat(kind.len() + 5);
        for (i, line) in text.lines().enumerate() {
            if i == 0 {
                out.push_str(&format!("   = {kind}: {line}\n"));
            } else {
                out.push_str(&format!("{indent}{line}\n"));
            }
        }
    }
}
