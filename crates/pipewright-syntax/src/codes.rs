//! Stable diagnostic codes and their long explanations.
//!
//! Each crate that emits diagnostics declares its codes with [`codes!`](crate::codes!), which
//! gives each a const to emit it by and a table of [`CodeInfo`]; the CLI gathers the tables for
//! `pipewright explain`, `--list`, SARIF rules and the language server.

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

/// Declares a crate's diagnostic codes in one place: for each code a `&str` const named for what
/// it reports, and its [`CodeInfo`] in a table, in the order written. The explanation is the
/// calling crate's `explain/CODE.md`, so a code without one does not compile; neither does a
/// table with a malformed or repeated code.
///
/// ```
/// pipewright_syntax::codes! {
///     /// Every code this crate emits.
///     pub const CODES;
///
///     /// Doc comments and attributes go on the const.
///     pub const INVALID_SYNTAX = "PW0001": "the file is not valid YAML, JSON or TOML";
/// }
/// # fn main() {
/// assert_eq!(INVALID_SYNTAX, "PW0001");
/// assert_eq!(CODES[0].title, "the file is not valid YAML, JSON or TOML");
/// # }
/// ```
#[macro_export]
macro_rules! codes {
    (
        $(#[$table_attr:meta])*
        $table_vis:vis const $table:ident;
        $(
            $(#[$attr:meta])*
            $vis:vis const $name:ident = $code:literal : $title:literal;
        )*
    ) => {
        $(
            $(#[$attr])*
            $vis const $name: &str = $code;
        )*

        $(#[$table_attr])*
        $table_vis const $table: &[$crate::CodeInfo] = &[
            $(
                $crate::CodeInfo {
                    code: $code,
                    title: $title,
                    explanation: ::core::include_str!(::core::concat!(
                        ::core::env!("CARGO_MANIFEST_DIR"),
                        "/explain/",
                        $code,
                        ".md"
                    )),
                },
            )*
        ];

        const _: () = $crate::codes::check_table($table);
    };
}

/// The compile-time check of a [`codes!`] table: every code is `PW` and four digits and none is
/// declared twice.
///
/// ```compile_fail
/// pipewright_syntax::codes! {
///     pub const CODES;
///     pub const ONE = "PW0001": "one";
///     pub const AGAIN = "PW0001": "the same code again";
/// }
/// # fn main() {}
/// ```
#[doc(hidden)]
pub const fn check_table(codes: &[CodeInfo]) {
    let mut i = 0;
    while i < codes.len() {
        let code = codes[i].code.as_bytes();
        let well_formed = code.len() == 6
            && code[0] == b'P'
            && code[1] == b'W'
            && code[2].is_ascii_digit()
            && code[3].is_ascii_digit()
            && code[4].is_ascii_digit()
            && code[5].is_ascii_digit();
        if !well_formed {
            panic!("a diagnostic code is `PW` and four digits");
        }
        let mut j = 0;
        while j < i {
            if same_bytes(codes[j].code.as_bytes(), code) {
                panic!("a diagnostic code is declared twice");
            }
            j += 1;
        }
        i += 1;
    }
}

const fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

codes! {
    /// Codes of the file loader and YAML layer shared by every YAML dialect (`PW00xx`).
    pub const GENERAL;

    pub const INVALID_SYNTAX = "PW0001": "the file is not valid YAML, JSON or TOML";
    pub const UNKNOWN_DIALECT = "PW0002": "the file's dialect could not be recognised";
    pub const TOO_DEEP = "PW0003": "nesting is too deep";
    pub const UNSUPPORTED_YAML = "PW0004":
        "a YAML feature pipewright does not accept (unknown tag, alias, non-scalar key)";
    pub const DUPLICATE_KEY = "PW0005": "duplicate mapping key";
}

/// Looks a code up in a set of tables.
pub fn find<'a>(tables: &[&'a [CodeInfo]], code: &str) -> Option<&'a CodeInfo> {
    let code = code.trim().to_ascii_uppercase();
    tables
        .iter()
        .flat_map(|t| t.iter())
        .find(|c| c.code == code)
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
