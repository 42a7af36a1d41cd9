//! What the CLI says about a dialect that cannot do a verb yet. Which dialects exist, and how a
//! file's dialect is found, is `pipewright_dialect`'s.

use pipewright_dialect::{Dialect, Verb};
use pipewright_syntax::{Diagnostic, FileId, Span};

/// The error on a file whose dialect is recognised but cannot do `verb` yet.
pub(crate) fn unsupported(file: FileId, d: &dyn Dialect, verb: Verb) -> Diagnostic {
    let what = match verb {
        Verb::Check => "checked",
        Verb::Fmt => "formatted",
        Verb::Graph => "drawn",
        Verb::Run => "run",
    };
    Diagnostic::error(
        crate::commands::check::UNSUPPORTED_DIALECT,
        Span::new(file, 0..0),
        format!(
            "the {} dialect cannot be {what} by this version of pipewright",
            d.name()
        ),
    )
    .with_label(format!("recognised, but not {what} yet"))
    .with_help("nothing in this file was verified")
}

/// The one-line refusal `graph` and `run` print for such a file.
pub(crate) fn unsupported_verb(d: &dyn Dialect, verb: Verb) -> String {
    format!("{} does not support {} files yet", verb.name(), d.name())
}
