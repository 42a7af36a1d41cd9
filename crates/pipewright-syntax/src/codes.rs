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

/// The codes `PW` + `range` + two digits written in the `.rs` files under `src_dir` (a dialect
/// crate's sources, subdirectories included): its tests compare them with its code table, so
/// no emitted code goes undocumented and no documented code is dead.
pub fn codes_in_sources(
    src_dir: &std::path::Path,
    range: &str,
) -> std::collections::BTreeSet<String> {
    let prefix = format!("PW{range}");
    let mut found = std::collections::BTreeSet::new();
    let mut dirs = vec![src_dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let b = text.as_bytes();
            for i in 0..b.len().saturating_sub(6) {
                if b[i..].starts_with(prefix.as_bytes())
                    && b[i + 4].is_ascii_digit()
                    && b[i + 5].is_ascii_digit()
                {
                    found.insert(text[i..i + 6].to_string());
                }
            }
        }
    }
    found
}

/// What is wrong with a table's explanations: each must open with `# CODE: ` and hold a
/// `Wrong:` and a `Right:` example. Empty when every one is right.
pub fn explanation_problems(codes: &[CodeInfo]) -> Vec<String> {
    let mut problems = Vec::new();
    for c in codes {
        if !c.explanation.starts_with(&format!("# {}: ", c.code)) {
            problems.push(format!(
                "{}: the explanation must open with `# {}: `",
                c.code, c.code
            ));
        }
        if !(c.explanation.contains("Wrong:") && c.explanation.contains("Right:")) {
            problems.push(format!(
                "{}: the explanation needs a Wrong: and a Right: example",
                c.code
            ));
        }
    }
    problems
}
