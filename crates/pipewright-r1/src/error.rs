//! The syntax error type shared by the expression parser and the template parser.

use pipewright_syntax::{Diagnostic, Span};
use std::ops::Range;

/// One problem found while parsing R1 source. `range` is a byte range into the parsed source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub range: Range<usize>,
    pub code: &'static str,
    pub message: String,
    pub label: String,
    pub help: Option<String>,
}

impl ParseError {
    pub fn new(
        range: Range<usize>,
        code: &'static str,
        message: impl Into<String>,
        label: impl Into<String>,
    ) -> ParseError {
        ParseError {
            range,
            code,
            message: message.into(),
            label: label.into(),
            help: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> ParseError {
        self.help = Some(help.into());
        self
    }

    /// `map` turns a range of the expression source into a file span (usually
    /// `|r| scalar_span.sub(r)` for an expression embedded in a YAML scalar).
    pub fn to_diagnostic(&self, map: impl Fn(Range<usize>) -> Span) -> Diagnostic {
        Diagnostic::error(self.code, map(self.range.clone()), self.message.clone())
            .with_label(self.label.clone())
            .with_optional_help(self.help.clone())
    }

    /// Moves the error by `offset` bytes: used when the source was a slice of a larger text.
    pub(crate) fn shifted(mut self, offset: usize) -> ParseError {
        self.range = self.range.start + offset..self.range.end + offset;
        self
    }
}
