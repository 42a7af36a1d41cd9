//! One file as detection sees it. Several dialects may look at the same YAML; the parse is
//! done once, on first demand, and shared.

use pipewright_syntax::{Diagnostic, FileId};
use pipewright_yaml::{Document, Node};
use std::cell::OnceCell;
use std::path::Path;

pub struct Source<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    yaml: OnceCell<(Vec<Document>, bool)>,
}

impl<'a> Source<'a> {
    pub fn new(path: &'a Path, text: &'a str) -> Source<'a> {
        Source {
            path,
            text,
            yaml: OnceCell::new(),
        }
    }

    pub fn extension(&self) -> &str {
        self.path.extension().and_then(|x| x.to_str()).unwrap_or("")
    }

    /// Anything that is not `.json` or `.toml` is read as YAML (`.yaml`, `.yml`, stdin, no
    /// extension).
    pub fn is_yaml(&self) -> bool {
        !matches!(self.extension(), "json" | "toml")
    }

    fn parsed(&self) -> &(Vec<Document>, bool) {
        self.yaml.get_or_init(|| {
            let (docs, diags) =
                pipewright_yaml::load(FileId(0), self.text, pipewright_yaml::Limits::default());
            let broken = docs.is_empty() && diags.iter().any(Diagnostic::is_error);
            (docs, broken)
        })
    }

    /// The YAML documents' roots (parsed once).
    pub fn yaml_roots(&self) -> impl Iterator<Item = &Node> {
        self.parsed().0.iter().filter_map(|d| d.root.as_ref())
    }

    /// The text is not YAML at all: detection then falls back to [`Source::top_keys`], so the
    /// user sees the syntax error from the dialect the file was meant for.
    pub fn yaml_is_broken(&self) -> bool {
        self.parsed().1
    }

    /// The keys at column 0 of a YAML text, read line by line (for text that does not parse).
    pub fn top_keys(&self) -> Vec<&str> {
        self.text
            .lines()
            .filter(|l| !l.starts_with([' ', '\t', '#', '-']))
            .filter_map(|l| l.split_once(':').map(|(k, _)| k.trim()))
            .collect()
    }
}
