//! The formatter's round-trip property on one text, in one place for the `fmt_yaml` fuzz
//! target and the minimiser (`examples/fuzz_minimize.rs`): whatever formats formats again to
//! the same text, and loads to the same values as its input. A refusal (PW0901, a YAML error)
//! holds the property; PW0900, which its help calls a formatter bug, breaks it.

use crate::rules::DialectRules;
use crate::{format_source, verify, Options, Syntax};
use pipewright_syntax::{Diagnostic, FileId};
use pipewright_yaml::{load, Limits, Node};

/// How the property failed. [`Failure::kind`] names the class a minimiser must keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The formatter gave up with PW0900 on the input.
    Unfaithful { message: String, notes: Vec<String> },
    /// The output formats to something else again.
    NotIdempotent { first: String, second: String },
    /// The output is refused by the formatter.
    OutputDoesNotFormat {
        first: String,
        diags: Vec<Diagnostic>,
    },
    /// The output loads to other values than the input.
    LoadsDifferently { first: String, why: String },
}

impl Failure {
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Unfaithful { .. } => "PW0900",
            Failure::NotIdempotent { .. } => "not idempotent",
            Failure::OutputDoesNotFormat { .. } => "output does not format",
            Failure::LoadsDifferently { .. } => "loads differently",
        }
    }
}

fn body(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Checks the property for one YAML dialect's rules. `Ok(Err(diags))` is a refusal of the
/// input, with its diagnostics (the fuzz target renders them); `Err` is a failure.
pub fn check(
    text: &str,
    rules: &dyn DialectRules,
    options: Options,
) -> Result<Result<(), Vec<Diagnostic>>, Failure> {
    let first = match format_source(FileId(0), text, Syntax::Yaml(rules), options) {
        Ok(f) => f.output,
        Err(diags) => {
            return match diags.iter().find(|d| d.code == "PW0900") {
                Some(d) => Err(Failure::Unfaithful {
                    message: d.message.clone(),
                    notes: d.notes.clone(),
                }),
                None => Ok(Err(diags)),
            }
        }
    };
    match format_source(FileId(0), &first, Syntax::Yaml(rules), options) {
        Ok(again) if again.output == first && !again.changed => {}
        Ok(again) => {
            return Err(Failure::NotIdempotent {
                first,
                second: again.output,
            })
        }
        Err(diags) => return Err(Failure::OutputDoesNotFormat { first, diags }),
    }
    let (before, _) = load(FileId(0), body(text), Limits::default());
    let (after, _) = load(FileId(0), body(&first), Limits::default());
    let roots: Vec<Option<&Node>> = before.iter().map(|d| d.root.as_ref()).collect();
    match verify::same_docs(&roots, &after, rules) {
        Ok(()) => Ok(Ok(())),
        Err(why) => Err(Failure::LoadsDifferently { first, why }),
    }
}
