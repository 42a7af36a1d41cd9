//! Which language a file is written in. Detection never guesses silently: a file that matches
//! no dialect gets a diagnostic naming what each one expects at its top level.

use crate::cli::DialectArg;
use pipewright_syntax::{Diagnostic, FileId, Span};
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Pipeline,
    Recipe,
    StateMachine,
    Meow,
}

impl From<DialectArg> for Dialect {
    fn from(d: DialectArg) -> Dialect {
        match d {
            DialectArg::Pipeline => Dialect::Pipeline,
            DialectArg::Recipe => Dialect::Recipe,
            DialectArg::StateMachine => Dialect::StateMachine,
            DialectArg::Meow => Dialect::Meow,
        }
    }
}

impl Dialect {
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Pipeline => "pipeline",
            Dialect::Recipe => "recipe",
            Dialect::StateMachine => "state-machine",
            Dialect::Meow => "meow",
        }
    }
}

/// Detects the dialect from the extension and the top-level shape of the content.
pub fn detect(path: &Path, text: &str) -> Option<Dialect> {
    match path.extension().and_then(|x| x.to_str()).unwrap_or("") {
        "json" => {
            let v: serde_json::Value = serde_json::from_str(text).ok()?;
            (v.get("initialStep").is_some() && v.get("steps").is_some())
                .then_some(Dialect::StateMachine)
        }
        "toml" => {
            // MEOW modules are TOML with workflow tables; a quick look for a table header that
            // owns `steps` is enough to route the file.
            text.lines()
                .any(|l| {
                    let l = l.trim();
                    l.starts_with("[[") && l.ends_with(".steps]]") || l == "[main]"
                })
                .then_some(Dialect::Meow)
        }
        _ => {
            // The full parse below costs as much as the check's own parse, so the common shape
            // (a document opening with `pipeline:`) is recognised from the raw lines first.
            if opens_a_document_with_pipeline_key(text) {
                return Some(Dialect::Pipeline);
            }
            detect_yaml_by_parse(text)
        }
    }
}

fn detect_yaml_by_parse(text: &str) -> Option<Dialect> {
    let (docs, diags) = pipewright_yaml::load(FileId(0), text, pipewright_yaml::Limits::default());
    if docs.is_empty() && diags.iter().any(Diagnostic::is_error) {
        // Unparseable YAML: route by the top-level keys so the user sees the real
        // syntax error from the right dialect's loader.
        return detect_by_keys(text);
    }
    let roots: Vec<&pipewright_yaml::Node> = docs.iter().filter_map(|d| d.root.as_ref()).collect();
    let first = roots.first()?;
    if roots
        .iter()
        .any(|r| pipewright_pipeline::looks_like_pipeline(r))
    {
        Some(Dialect::Pipeline)
    } else if first.entry("name").is_some()
        && (first.entry("steps").is_some() || first.entry("stages").is_some())
    {
        Some(Dialect::Recipe)
    } else {
        None
    }
}

/// True when some document's first content line is a `pipeline:` key at column 0. Only that
/// position is trusted: nothing earlier in the document can have opened a block scalar, a quoted
/// string or a flow collection that would make the line content rather than a root key, and a
/// column-0 `---` ends any such construct (or is a syntax error, which the by-keys fallback of
/// the full parse also routes to the pipeline dialect). Anything else is left to the full parse.
fn opens_a_document_with_pipeline_key(text: &str) -> bool {
    let mut at_document_start = true;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if is_document_marker(line) {
            at_document_start = true;
            continue;
        }
        if at_document_start {
            if let Some(rest) = line.strip_prefix("pipeline:") {
                if rest.is_empty() || rest.starts_with([' ', '\t', '\r']) {
                    return true;
                }
            }
        }
        at_document_start = false;
    }
    false
}

/// A bare `---` line, optionally followed by blanks or a comment; `--- value` is not trusted.
fn is_document_marker(line: &str) -> bool {
    line.strip_prefix("---").is_some_and(|rest| {
        let rest = rest.trim_start_matches([' ', '\t', '\r']);
        rest.is_empty() || (rest.starts_with('#') && rest.len() < line.len() - 3)
    })
}

fn detect_by_keys(text: &str) -> Option<Dialect> {
    let top: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with([' ', '\t', '#', '-']))
        .filter_map(|l| l.split_once(':').map(|(k, _)| k.trim()))
        .collect();
    if top.contains(&"pipeline") || (top.contains(&"schema") && top.contains(&"fields")) {
        Some(Dialect::Pipeline)
    } else if top.contains(&"name") && (top.contains(&"steps") || top.contains(&"stages")) {
        Some(Dialect::Recipe)
    } else {
        None
    }
}

pub fn unrecognised(file: FileId, text: &str) -> Diagnostic {
    let first = text
        .lines()
        .position(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let start: usize = text
        .lines()
        .take(first.unwrap_or(0))
        .map(|l| l.len() + 1)
        .sum();
    let len = first.and_then(|i| text.lines().nth(i)).map_or(0, str::len);
    Diagnostic::error("PW0002", Span::new(file, start..start + len), "this file is not a workflow pipewright recognises")
        .with_label("unrecognised top level")
        .with_note("a pipeline is YAML with `pipeline: NAME` and `steps:` (plus optional `schema: NAME` documents)")
        .with_note("a recipe is YAML with `name`, `version` and `steps` or `stages`")
        .with_note("a state-machine recipe is JSON with `initialStep` and `steps`")
        .with_note("a MEOW template is TOML with workflow tables such as `[main]` and `[[main.steps]]`")
        .with_help("pass `--dialect` to check it as a particular dialect")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line scan may only ever agree with the full parse; where it cannot tell, it defers.
    #[test]
    fn the_line_scan_agrees_with_the_full_parse() {
        let cases = [
            "pipeline: a\nsteps: []\n",
            "# c\n\npipeline: a\nsteps: []\n",
            "schema: S\nfields: {}\n---\npipeline: a\nsteps: []\n",
            "--- # c\npipeline: a\n",
            "---\r\npipeline: a\r\nsteps: []\r\n",
            "pipeline:\n  a\n",
            "pipeline:x\n",
            "--- |\n pipeline: a\n",
            "--- |\npipeline: a\n",
            "a: |\n  x\n---\npipeline: a\n",
            "a: \"x\n---\npipeline: a\"\n",
            "a: 'x\n---\npipeline: a'\n",
            "a: [x,\n---\npipeline: a]\n",
            "a: b\n---#x\npipeline: a\n",
            "---x\npipeline: a\n",
            "- a\n---\npipeline: a\n",
            "name: r\nsteps: []\n",
            "pipeline: a\n  : bad\n\t- [\n",
            "\u{feff}pipeline: a\n",
            "%YAML 1.2\n---\npipeline: a\n",
            "...\npipeline: a\n",
            "pipeline: [a\n",
        ];
        for text in cases {
            if opens_a_document_with_pipeline_key(text) {
                assert_eq!(
                    detect_yaml_by_parse(text),
                    Some(Dialect::Pipeline),
                    "{text:?}"
                );
            }
        }
        assert!(opens_a_document_with_pipeline_key(cases[2]));
        assert!(!opens_a_document_with_pipeline_key("pipeline:x\n"));
        assert!(!opens_a_document_with_pipeline_key("--- |\npipeline: a\n"));
    }
}
