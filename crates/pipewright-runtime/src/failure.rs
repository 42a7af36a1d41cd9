//! Step failures. Each carries the failing step's span and the value that caused it, and
//! becomes a [`Diagnostic`] rendered exactly like a compile error.

use pipewright_r1::Value;
use pipewright_syntax::{Diagnostic, Span};

/// Why a run stopped early.
#[derive(Debug, Clone)]
pub enum Failure {
    Step(Box<RunError>),
    Cancelled { key: String },
}

#[derive(Debug, Clone)]
pub struct RunError {
    pub code: &'static str,
    /// Recovery key of the failing step (`2.for_each.3`).
    pub key: String,
    pub step_kind: &'static str,
    pub message: String,
    /// The step.
    pub span: Span,
    /// A narrower place (the sub-expression that failed), when known.
    pub detail_span: Option<Span>,
    /// The value that caused the failure, if one did. For an expression failure: an object of
    /// the values the failing sub-expression read, by path (`{"ctx.n": 0}`).
    pub value: Option<Value>,
    /// For an expression failure: the paths the failing sub-expression read and their values
    /// (also in `value`), shown one per note.
    pub reads: Vec<(String, Value)>,
    /// Enclosing steps, innermost first (`for_each item 3 of step 2`).
    pub context: Vec<(Span, String)>,
    /// The error in the failing tool's, backend's or expression's own words, when `message`
    /// adds pipewright's context to it (`argument `q` failed: …`, `(on_error='abort')`).
    /// Pipelines read this text as data, so it carries nothing a reader of the run needed.
    pub raw: Option<String>,
}

impl RunError {
    pub fn new(
        code: &'static str,
        key: &str,
        step_kind: &'static str,
        span: Span,
        message: impl Into<String>,
    ) -> RunError {
        RunError {
            code,
            key: key.to_string(),
            step_kind,
            message: message.into(),
            span,
            detail_span: None,
            value: None,
            reads: Vec::new(),
            context: Vec::new(),
            raw: None,
        }
    }

    /// Sets the text a pipeline sees (see [`RunError::raw`]).
    pub fn with_raw(mut self, raw: impl Into<String>) -> RunError {
        self.raw = Some(raw.into());
        self
    }

    /// The error text a pipeline reads as data: `continue` envelopes, `__branch_errors__`
    /// values and fan-out drop markers.
    pub fn raw_text(&self) -> &str {
        self.raw.as_deref().unwrap_or(&self.message)
    }

    /// Records what a failing expression read; `value` becomes `{path: value, …}`.
    pub fn with_reads(mut self, reads: Vec<(String, Value)>) -> RunError {
        if !reads.is_empty() {
            self.value = Some(Value::Object(reads.iter().cloned().collect()));
            self.reads = reads;
        }
        self
    }

    pub fn with_value(mut self, v: Value) -> RunError {
        self.value = Some(v);
        self
    }

    pub fn at(mut self, span: Span) -> RunError {
        self.detail_span = Some(span);
        self
    }

    pub fn diagnostic(&self) -> Diagnostic {
        let primary = self.detail_span.unwrap_or(self.span);
        let mut d = Diagnostic::error(
            self.code,
            primary,
            format!(
                "step {} ({}) failed: {}",
                self.key, self.step_kind, self.message
            ),
        )
        .with_label("failed here at run time");
        if self.detail_span.is_some() {
            d = d.with_secondary(self.span, format!("in this {} step", self.step_kind));
        }
        // Recursion repeats the same call sites once per level: each is labelled once.
        let mut shown: Vec<&(Span, String)> = Vec::new();
        for c in &self.context {
            if !shown.contains(&c) {
                shown.push(c);
                d = d.with_secondary(c.0, c.1.clone());
            }
        }
        if shown.len() < self.context.len() {
            d = d.with_note(format!(
                "the failure passed through {} enclosing steps; each repeated one is labelled once",
                self.context.len()
            ));
        }
        if !self.reads.is_empty() {
            for (path, v) in &self.reads {
                d = d.with_note(format!("{path} was: {}", crate::value::preview(v, 300)));
            }
        } else if let Some(v) = &self.value {
            d = d.with_note(format!("the value was: {}", crate::value::preview(v, 300)));
        }
        d
    }
}

impl From<RunError> for Failure {
    fn from(e: RunError) -> Failure {
        Failure::Step(Box::new(e))
    }
}

impl Failure {
    /// The failure for a reader, with the step it happened in.
    pub fn message(&self) -> String {
        match self {
            Failure::Step(e) => format!("step {} ({}) failed: {}", e.key, e.step_kind, e.message),
            Failure::Cancelled { key } => format!("cancelled at step {key}"),
        }
    }

    /// The failure as data for the pipeline (see [`RunError::raw_text`]).
    pub fn raw_text(&self) -> String {
        match self {
            Failure::Step(e) => e.raw_text().to_string(),
            Failure::Cancelled { key } => format!("cancelled at step {key}"),
        }
    }
}
