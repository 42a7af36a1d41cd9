//! The condition and template languages a dialect's files are written in, for `pipewright eval
//! --lang NAME` (R1 and its prompt templates, the shared expression library's, are the CLI's
//! own).

use pipewright_syntax::{Diagnostic, Span};
use std::ops::Range;

pub struct EvalLanguage {
    /// What `--lang` takes.
    pub name: &'static str,
    /// Evaluates one expression; `Ok` is the JSON `eval` prints.
    pub eval: fn(&EvalInput<'_>) -> Result<String, Vec<Diagnostic>>,
}

/// What `eval` gives a language.
pub struct EvalInput<'a> {
    pub expr: &'a str,
    /// The variables as given (`--scope`, else `--ctx`): the JSON text, which keeps the digits of
    /// big integers, and its value.
    pub vars_text: &'a str,
    pub vars: &'a serde_json::Value,
    /// `--site`: where the expression is written (`top-level`, or `loop`, where a runner pastes
    /// values into the text first).
    pub in_loop: bool,
    /// A range of `expr` as a span of the command line's EXPR, for diagnostics.
    pub at: &'a dyn Fn(Range<usize>) -> Span,
}
