//! One problem found in a source file, in the shape every output format renders.

use crate::fix::Fix;
use crate::source::Span;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    /// Informational: never affects the exit status, even under `--deny warnings`.
    Note,
}

impl Severity {
    pub fn as_str(&self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// A span with the text printed under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// A finding. `code` is stable (`PW` + 4 digits) and has a long explanation
/// (`pipewright explain CODE`); `primary` is the exact place the problem is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub primary: Label,
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
    /// Changes that resolve it, beyond the did-you-means read from `help` (see [`crate::fix`]).
    pub fixes: Vec<Fix>,
}

impl Diagnostic {
    pub fn error(code: &'static str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, span, message)
    }

    pub fn warning(code: &'static str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, span, message)
    }

    pub fn new(
        severity: Severity,
        code: &'static str,
        span: Span,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            code,
            severity,
            message: message.into(),
            primary: Label {
                span,
                message: String::new(),
            },
            secondary: Vec::new(),
            notes: Vec::new(),
            help: None,
            fixes: Vec::new(),
        }
    }

    /// The text printed under the primary span.
    pub fn with_label(mut self, message: impl Into<String>) -> Diagnostic {
        self.primary.message = message.into();
        self
    }

    /// Another place involved in the problem (the schema a field is missing from, the first
    /// definition of a duplicate, …).
    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn with_fix(mut self, fix: Fix) -> Diagnostic {
        self.fixes.push(fix);
        self
    }

    /// Appends `help` to existing help text instead of replacing it.
    pub fn with_optional_help(self, help: Option<String>) -> Diagnostic {
        match help {
            Some(h) => self.with_help(h),
            None => self,
        }
    }

    pub fn span(&self) -> Span {
        self.primary.span
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Sorts diagnostics into reading order (file, position, then code) so output is deterministic.
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by(|a, b| {
        (
            a.primary.span.file,
            a.primary.span.start,
            a.primary.span.end,
            a.code,
            &a.message,
        )
            .cmp(&(
                b.primary.span.file,
                b.primary.span.start,
                b.primary.span.end,
                b.code,
                &b.message,
            ))
    });
}
