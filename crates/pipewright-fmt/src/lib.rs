//! `pipewright fmt`: rewrites workflow files into one canonical form without losing a comment
//! or changing a value.
//!
//! YAML dialects go through a comment-keeping tree ([`cst`]) and a shared printer ([`print`])
//! steered by per-dialect [`rules`]; every result is re-loaded and compared with the input
//! ([`verify`]) before it is returned, so a formatter bug surfaces as a diagnostic and an
//! untouched file, never as a changed workflow. JSON is pretty-printed; TOML goes through
//! `toml_edit`, which keeps comments.

#[doc(hidden)]
pub mod bench_support;
pub mod cst;
pub mod diff;
mod json;
pub mod print;
pub mod quote;
pub mod round_trip;
pub mod rules;
mod toml;
pub mod trivia;
pub mod verify;

use pipewright_syntax::{Diagnostic, FileId, Span};
use rules::DialectRules;
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;

/// The syntax a file is written in, and for YAML the dialect's canonical rules: the printer is
/// shared, the dialect crates say what is canonical (they implement [`DialectRules`]).
#[derive(Clone, Copy)]
pub enum Syntax<'r> {
    Yaml(&'r dyn DialectRules),
    Json,
    Toml,
}

pub use pipewright_project::KeyOrder;

/// What a project may choose about the canonical form (`[fmt]` in pipewright.toml).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    pub key_order: KeyOrder,
}

impl Options {
    /// Every dialect's documented key order (`key_order = "canonical"`).
    pub const CANONICAL: Options = Options {
        key_order: KeyOrder::Canonical,
    };
    /// The author's key order (`key_order = "preserve"`, the default).
    pub const PRESERVE: Options = Options {
        key_order: KeyOrder::Preserve,
    };
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Formatted {
    pub output: String,
    pub changed: bool,
}

pipewright_syntax::codes! {
    /// The formatter's codes.
    pub const CODES;

    pub const UNFAITHFUL = "PW0900":
        "the formatter could not produce a faithful result; the file was left untouched";
    pub const NOT_REWRITTEN = "PW0901": "a YAML construct the formatter does not rewrite";
}

/// The R1 canonical printer, in one place so the formatter and its verifier agree.
pub(crate) fn canonical_expr(src: &str) -> Option<String> {
    pipewright_r1::parse(src).ok().map(|e| e.to_string())
}

/// Canonical R1 forms by source text, shared by the printer and the digest of the input of one
/// file: the printer may print an expression more than once (a flow attempt that does not fit
/// is redone in block style) and the digest needs the input's form again, so each distinct text
/// is parsed once.
///
/// Most expressions are already in canonical form: those are only a set of texts. A map with a
/// second copy of each (or even a marker per text) was a tenth of the formatter's peak memory on
/// a large file.
#[derive(Default)]
pub struct Canon {
    /// Parse every time instead (see [`Canon::unremembered`]).
    forgetful: bool,
    /// Texts that are their own canonical form.
    canonical: RefCell<FxHashSet<Box<str>>>,
    /// The others: the canonical form, or `None` when R1 cannot parse the text.
    other: RefCell<FxHashMap<Box<str>, Option<Box<str>>>>,
}

impl Canon {
    /// A memo that remembers nothing. The verifier reads each expression of the output once,
    /// and a memo filled while the output's whole tree is loaded was the top of the
    /// formatter's memory on a large file.
    pub(crate) fn unremembered() -> Canon {
        Canon {
            forgetful: true,
            ..Canon::default()
        }
    }

    pub(crate) fn with<R>(&self, src: &str, f: impl FnOnce(Option<&str>) -> R) -> R {
        if self.forgetful {
            return f(canonical_expr(src).as_deref());
        }
        if self.canonical.borrow().contains(src) {
            return f(Some(src));
        }
        if let Some(c) = self.other.borrow().get(src) {
            return f(c.as_deref());
        }
        let c = canonical_expr(src);
        let r = f(c.as_deref());
        match c {
            Some(c) if c == src => {
                self.canonical.borrow_mut().insert(src.into());
            }
            c => {
                self.other
                    .borrow_mut()
                    .insert(src.into(), c.map(String::into_boxed_str));
            }
        }
        r
    }

    /// Whether two expression texts have the same canonical form (texts R1 cannot parse
    /// stand for themselves).
    pub(crate) fn same(&self, p: &str, q: &str) -> bool {
        let cp = self.with(p, |c| c.unwrap_or(p).to_string());
        self.with(q, |c| c.unwrap_or(q) == cp)
    }
}

/// Formats one file's text. `Err` carries diagnostics; the caller leaves the file untouched.
/// A dialect's own passes come before this (the state-machine dialect puts keys in canonical
/// order itself); the TOML formatter always keeps the author's order.
pub fn format_source(
    file: FileId,
    text: &str,
    syntax: Syntax,
    options: Options,
) -> Result<Formatted, Vec<Diagnostic>> {
    let output = match syntax {
        Syntax::Yaml(rules) if options.key_order == KeyOrder::Preserve => {
            format_yaml(file, text, &rules::PreserveOrder(rules))?
        }
        Syntax::Yaml(rules) => format_yaml(file, text, rules)?,
        Syntax::Json => json::format(file, text)?,
        Syntax::Toml => toml::format(file, text)?,
    };
    Ok(Formatted {
        changed: output != text,
        output,
    })
}

pub use diff::{unified_diff, write_unified_diff};

pub(crate) fn internal_error(file: FileId, why: impl Into<String>) -> Diagnostic {
    Diagnostic::error(
        UNFAITHFUL,
        Span::new(file, 0..0),
        "the formatter could not rewrite this file faithfully",
    )
    .with_label("file left untouched")
    .with_note(why.into())
    .with_help("this is a formatter bug: please report it with the file; the file itself is fine")
}

fn has_lone_cr(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter()
        .enumerate()
        .any(|(i, &c)| c == b'\r' && b.get(i + 1) != Some(&b'\n'))
}

fn lone_crs_as_lf(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(if c == '\r' && chars.peek() != Some(&'\n') {
            '\n'
        } else {
            c
        });
    }
    out
}

/// Formats a YAML file with the given dialect rules.
pub fn format_yaml(
    file: FileId,
    text: &str,
    rules: &dyn DialectRules,
) -> Result<String, Vec<Diagnostic>> {
    // A byte-order mark is kept but not shown to the scanner.
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    };
    // A carriage return alone is a line break to YAML and not to the formatter's line scans
    // (a comment ran on over the content after it, which was lost or printed twice: found by
    // the fmt_yaml fuzz target). Made a line feed, the canonical break, it is one to both; the
    // byte offsets of everything else stay as they were.
    let lf_body;
    let body = if has_lone_cr(body) {
        lf_body = lone_crs_as_lf(body);
        lf_body.as_str()
    } else {
        body
    };
    let mut cst = cst::build(file, body)?;
    let comments = std::mem::take(&mut cst.comments);
    let canon = Canon::default();
    let out = print::print_with(&mut cst, rules, &canon);
    let roots: Vec<Option<&pipewright_yaml::Node>> = cst
        .docs
        .iter()
        .take(cst.loaded)
        .map(|d| d.root.as_ref())
        .collect();
    // The input's tree goes before the output's is loaded: holding both at once made the peak
    // memory two trees (each several times the file's size). A digest of the input's values
    // stands in for it; only when the digests differ is the input loaded again, to say what
    // changed.
    let before = verify::digest(&roots, rules, &canon);
    drop(canon);
    let canon = Canon::unremembered();
    drop(roots);
    drop(cst);
    let why = match verify::check_digest(file, before, &comments, &out, rules, &canon) {
        verify::Verdict::Same => None,
        verify::Verdict::Failed(why) => Some(why),
        verify::Verdict::Differs(after) => {
            let (docs, _) = pipewright_yaml::load(file, body, pipewright_yaml::Limits::default());
            let roots: Vec<Option<&pipewright_yaml::Node>> =
                docs.iter().map(|d| d.root.as_ref()).collect();
            Some(
                verify::same_docs_with(&roots, &after, rules, &canon)
                    .err()
                    .unwrap_or_else(|| "the values changed".to_string()),
            )
        }
    };
    if let Some(why) = why {
        return Err(vec![internal_error(file, why)]);
    }
    if bom.is_empty() {
        // No copy of the whole output (a fresh megabyte is page faults, not just a memcpy).
        return Ok(out);
    }
    Ok(format!("{bom}{out}"))
}
