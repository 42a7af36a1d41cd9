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
    /// What one file of the dialect is called in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Dialect::Pipeline => "pipeline file",
            Dialect::Recipe => "recipe",
            Dialect::StateMachine => "state-machine recipe",
            Dialect::Meow => "MEOW template",
        }
    }

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

/// The keys that make a top level one dialect's: every group must be present (one key of it).
struct Signature {
    dialect: Dialect,
    groups: &'static [&'static [&'static str]],
}

const YAML_SIGNATURES: &[Signature] = &[
    Signature {
        dialect: Dialect::Pipeline,
        groups: &[&["pipeline"], &["steps"]],
    },
    Signature {
        dialect: Dialect::Pipeline,
        groups: &[&["schema"], &["fields"]],
    },
    Signature {
        dialect: Dialect::Recipe,
        groups: &[&["name"], &["steps", "stages"]],
    },
];

const JSON_SIGNATURE: Signature = Signature {
    dialect: Dialect::StateMachine,
    groups: &[&["initialStep"], &["steps"]],
};

/// A file that is one misspelled top-level key away from a dialect's shape.
pub struct NearMiss {
    pub dialect: Dialect,
    /// The key as written, and where.
    pub found: String,
    pub span: Span,
    pub expected: &'static str,
}

/// Finds a file that would be recognised if one top-level key were spelled right (`naem:` in a
/// recipe), so that walking a directory never skips it in silence.
pub fn near_miss(file: FileId, path: &Path, text: &str) -> Option<NearMiss> {
    match path.extension().and_then(|x| x.to_str()).unwrap_or("") {
        "json" => {
            let v: serde_json::Value = serde_json::from_str(text).ok()?;
            let keys: Vec<(&str, Span)> = v
                .as_object()?
                .keys()
                .map(|k| (k.as_str(), json_key_span(file, text, k)))
                .collect();
            near_miss_keys(&keys, std::slice::from_ref(&JSON_SIGNATURE))
        }
        "toml" => toml_near_miss(file, text),
        _ => {
            let (docs, _) = pipewright_yaml::load(file, text, pipewright_yaml::Limits::default());
            docs.iter()
                .filter_map(|d| d.root.as_ref())
                .find_map(|root| {
                    let keys: Vec<(&str, Span)> = root
                        .as_map()?
                        .iter()
                        .filter_map(|e| Some((e.key.key_text()?, e.key.span)))
                        .collect();
                    near_miss_keys(&keys, YAML_SIGNATURES)
                })
        }
    }
}

/// One group missing, the others present, and a present key that is a plausible typo of the
/// missing group's key.
fn near_miss_keys(keys: &[(&str, Span)], signatures: &[Signature]) -> Option<NearMiss> {
    signatures.iter().find_map(|sig| {
        let missing: Vec<&[&str]> = sig
            .groups
            .iter()
            .filter(|g| !keys.iter().any(|(k, _)| g.contains(k)))
            .copied()
            .collect();
        let [group] = missing.as_slice() else {
            return None;
        };
        keys.iter().find_map(|(k, span)| {
            let expected = pipewright_syntax::suggest::did_you_mean(k, group.iter().copied())?;
            Some(NearMiss {
                dialect: sig.dialect,
                found: (*k).to_string(),
                span: *span,
                expected,
            })
        })
    })
}

/// The first `"key"` in the text: serde_json keeps no positions, and a top-level key of a
/// near-miss file is almost always its first occurrence.
fn json_key_span(file: FileId, text: &str, key: &str) -> Span {
    let quoted = serde_json::Value::String(key.to_string()).to_string();
    match text.find(&quoted) {
        Some(start) => Span::new(file, start..start + quoted.len()),
        None => Span::new(file, 0..0),
    }
}

/// MEOW workflows own a `steps` array of tables; `[[main.step]]` is the near miss.
fn toml_near_miss(file: FileId, text: &str) -> Option<NearMiss> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let t = line.trim();
        let Some(inner) = t.strip_prefix("[[").and_then(|t| t.strip_suffix("]]")) else {
            continue;
        };
        let Some((_, last)) = inner.rsplit_once('.') else {
            continue;
        };
        let last = last.trim();
        if last != "steps" && pipewright_syntax::suggest::did_you_mean(last, ["steps"]).is_some() {
            let at = start + line.find(last).unwrap_or(0);
            return Some(NearMiss {
                dialect: Dialect::Meow,
                found: last.to_string(),
                span: Span::new(file, at..at + last.len()),
                expected: "steps",
            });
        }
    }
    None
}

impl NearMiss {
    /// The warning `check` gives a near-miss file it found by walking a directory.
    pub fn warning(&self) -> Diagnostic {
        Diagnostic::warning(
            "PW0010",
            self.span,
            format!(
                "this file looks like a {} with a misspelled key, so it was skipped",
                self.dialect.noun()
            ),
        )
        .with_label(format!("did you mean `{}`?", self.expected))
        .with_note(format!(
            "with `{}` this file would be checked as a {}; as written it is not a workflow, and no runtime would load it",
            self.expected,
            self.dialect.noun()
        ))
        .with_help(format!("rename `{}` to `{}`", self.found, self.expected))
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
