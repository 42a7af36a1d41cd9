//! The output formats of `pipewright check`: terminal text ([`human`]), one line per diagnostic
//! ([`concise`]), a versioned JSON document
//! ([`json`]), SARIF 2.1.0 for code-scanning services ([`sarif`]) and GitHub Actions workflow
//! commands ([`github`]).
//!
//! Every renderer takes spans as untrusted: offsets past the end of a file, offsets inside a
//! multi-byte character and files missing from the [`SourceMap`] all render something sensible
//! instead of panicking.

mod compact;
mod concise;
mod github;
mod human;
mod json;
mod printable;
mod sarif;

pub use compact::compact;
pub use concise::concise;
pub use github::github;
pub use human::{human, summary};
pub use json::{json, json_with_files, FileCounts, JSON_SCHEMA_VERSION};
pub use sarif::sarif;

use crate::diagnostic::{Diagnostic, Severity};
use crate::source::{LineCol, SourceFile, SourceMap, Span};

/// A span resolved against its file. When the file is unknown the offsets are the raw ones and
/// there are no line/column positions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Located<'a> {
    pub file: Option<&'a SourceFile>,
    /// Byte offsets, clamped to the text and to character boundaries when `file` is known.
    pub start: usize,
    pub end: usize,
    /// 1-based; the end position is that of the first character after the span.
    pub start_lc: Option<LineCol>,
    pub end_lc: Option<LineCol>,
}

impl Located<'_> {
    pub(crate) fn file_name(&self) -> Option<&str> {
        self.file.map(|f| f.name.as_str())
    }
}

pub(crate) fn locate(sources: &SourceMap, span: Span) -> Located<'_> {
    let Some(file) = sources.get(span.file) else {
        return Located {
            file: None,
            start: span.start as usize,
            end: span.end as usize,
            start_lc: None,
            end_lc: None,
        };
    };
    let text = &*file.text;
    let start = floor_char_boundary(text, span.start as usize);
    let end = ceil_char_boundary(text, (span.end as usize).max(start));
    Located {
        file: Some(file),
        start,
        end,
        start_lc: Some(file.line_col(start)),
        end_lc: Some(file.line_col(end)),
    }
}

fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut i = offset.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(text: &str, offset: usize) -> usize {
    let mut i = offset.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The 1-based column of a character position counted in UTF-16 code units, the unit SARIF
/// consumers (and JavaScript-based viewers) expect by default.
pub(crate) fn utf16_col(file: &SourceFile, lc: LineCol) -> usize {
    let line = file.line_text(lc.line);
    let before = lc.col.saturating_sub(1);
    let mut units = 0;
    let mut seen = 0;
    for c in line.chars().take(before) {
        units += c.len_utf16();
        seen += 1;
    }
    // Characters past `line_text` are the stripped `\r` of a CRLF: one unit each.
    units + (before - seen) + 1
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub errors: usize,
    pub warnings: usize,
    pub notes: usize,
}

pub(crate) fn count(diags: &[Diagnostic]) -> Counts {
    let mut c = Counts::default();
    for d in diags {
        match d.severity {
            Severity::Error => c.errors += 1,
            Severity::Warning => c.warnings += 1,
            Severity::Note => c.notes += 1,
        }
    }
    c
}

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod tests;
