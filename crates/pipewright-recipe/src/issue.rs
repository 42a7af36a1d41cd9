//! A problem found in an embedded language (template or condition), located by a byte range of
//! the expression text. The checker maps the range into the YAML source; `pipewright eval`
//! prints it directly.

use crate::value::Value;
use pipewright_syntax::{Diagnostic, Severity, Span};
use std::fmt;
use std::ops::Range;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    /// Byte range inside the expression text.
    pub range: Range<usize>,
    pub label: String,
    pub help: Option<String>,
}

impl Issue {
    pub fn error(code: &'static str, range: Range<usize>, message: impl Into<String>) -> Issue {
        Issue {
            code,
            severity: Severity::Error,
            message: message.into(),
            range,
            label: String::new(),
            help: None,
        }
    }

    pub fn warning(code: &'static str, range: Range<usize>, message: impl Into<String>) -> Issue {
        Issue {
            severity: Severity::Warning,
            ..Issue::error(code, range, message)
        }
    }

    pub fn label(mut self, label: impl Into<String>) -> Issue {
        self.label = label.into();
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Issue {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The diagnostic, with the expression's byte ranges mapped into the file by `map` (as
    /// R1's errors do): an `Issue` never leaves the recipe languages as anything else.
    pub fn to_diagnostic(&self, map: impl Fn(Range<usize>) -> Span) -> Diagnostic {
        Diagnostic::new(
            self.severity,
            self.code,
            map(self.range.clone()),
            self.message.clone(),
        )
        .with_label(self.label.clone())
        .with_optional_help(self.help.clone())
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}[{}] at {}..{}: {}",
            self.severity.as_str(),
            self.code,
            self.range.start,
            self.range.end,
            self.message
        )
    }
}

impl std::error::Error for Issue {}

/// `\w` as the reference runner's regex understands it (Unicode letters, digits, `_`).
pub(crate) fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Length in bytes of a variable path (`a.b.c`) at the start of `s`, if one is there.
pub(crate) fn path_len(s: &str) -> Option<usize> {
    let mut end = 0;
    let mut need_word = true;
    for (i, c) in s.char_indices() {
        if is_word(c) {
            need_word = false;
            end = i + c.len_utf8();
        } else if c == '.' && !need_word {
            // A dot only continues the path when a word follows it.
            need_word = true;
        } else {
            break;
        }
    }
    if end == 0 {
        None
    } else {
        Some(end)
    }
}

/// Resolves `path` in a context through mappings only, as the runner does.
pub(crate) fn lookup<'v>(ctx: &'v Value, path: &[&str]) -> Result<&'v Value, String> {
    let mut cur = ctx;
    for (i, part) in path.iter().enumerate() {
        match cur {
            Value::Map(m) => match m.get(*part) {
                Some(v) => cur = v,
                None if i == 0 => return Err(format!("undefined variable `{part}`")),
                None => {
                    let mut keys: Vec<&str> = m.keys().map(String::as_str).collect();
                    keys.sort_unstable();
                    return Err(format!(
                        "`{}` has no key `{part}` (keys: {})",
                        path[..i].join("."),
                        keys.join(", ")
                    ));
                }
            },
            other => {
                return Err(format!(
                    "cannot access `{part}` on `{}`: it is {}, not a mapping",
                    path[..i].join("."),
                    other.kind()
                ))
            }
        }
    }
    Ok(cur)
}
