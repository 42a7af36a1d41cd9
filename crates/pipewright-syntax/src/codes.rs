//! Stable diagnostic codes and their long explanations.
//!
//! Each crate that emits diagnostics owns a `CODES` table of [`CodeInfo`]; the CLI gathers them
//! for `pipewright explain` and tests assert that every emitted code is documented.

/// The documentation of one diagnostic code.
#[derive(Debug, Clone, Copy)]
pub struct CodeInfo {
    /// `PW` + 4 digits, never reused.
    pub code: &'static str,
    /// One line: what the code is about.
    pub title: &'static str,
    /// Markdown: why it matters, a wrong example and a right example.
    pub explanation: &'static str,
}

/// Codes of the file loader and YAML layer shared by every YAML dialect (`PW00xx`).
pub const GENERAL: &[CodeInfo] = &[
    CodeInfo {
        code: "PW0001",
        title: "the file is not valid YAML, JSON or TOML",
        explanation: include_str!("../explain/PW0001.md"),
    },
    CodeInfo {
        code: "PW0002",
        title: "the file's dialect could not be recognised",
        explanation: include_str!("../explain/PW0002.md"),
    },
    CodeInfo {
        code: "PW0003",
        title: "nesting is too deep",
        explanation: include_str!("../explain/PW0003.md"),
    },
    CodeInfo {
        code: "PW0004",
        title: "a YAML feature pipewright does not accept (unknown tag, alias, non-scalar key)",
        explanation: include_str!("../explain/PW0004.md"),
    },
    CodeInfo {
        code: "PW0005",
        title: "duplicate mapping key",
        explanation: include_str!("../explain/PW0005.md"),
    },
];

/// Looks a code up in a set of tables.
pub fn find<'a>(tables: &[&'a [CodeInfo]], code: &str) -> Option<&'a CodeInfo> {
    let code = code.trim().to_ascii_uppercase();
    tables
        .iter()
        .flat_map(|t| t.iter())
        .find(|c| c.code == code)
}
