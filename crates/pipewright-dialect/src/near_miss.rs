//! A file that is one misspelled top-level key away from a dialect's shape (`naem:` in a
//! recipe): walking a directory must never skip it in silence.

use crate::Source;
use pipewright_syntax::{Diagnostic, FileId, Span};

pub struct NearMiss {
    /// The dialect's noun ("recipe").
    pub noun: &'static str,
    /// The key as written, and where.
    pub found: String,
    pub span: Span,
    pub expected: &'static str,
}

impl NearMiss {
    /// The warning `check` gives a near-miss file it found by walking a directory.
    pub fn warning(&self) -> Diagnostic {
        Diagnostic::warning(
            "PW0010",
            self.span,
            format!(
                "this file looks like a {} with a misspelled key, so it was skipped",
                self.noun
            ),
        )
        .with_label(format!("did you mean `{}`?", self.expected))
        .with_note(format!(
            "with `{}` this file would be checked as a {}; as written it is not a workflow, and no runtime would load it",
            self.expected, self.noun
        ))
        .with_help(format!("rename `{}` to `{}`", self.found, self.expected))
    }
}

/// The top-level keys of a YAML file's documents, each with its span, one list per document.
pub fn yaml_keys<'s>(src: &'s Source, file: FileId) -> Vec<Vec<(&'s str, Span)>> {
    src.yaml_roots()
        .filter_map(|root| {
            Some(
                root.as_map()?
                    .iter()
                    .filter_map(|e| {
                        let s = e.key.span;
                        Some((e.key.key_text()?, Span::new(file, s.range())))
                    })
                    .collect(),
            )
        })
        .collect()
}

/// The top-level keys of a JSON object file, each with the span of its first occurrence
/// (serde_json keeps no positions, and a top-level key of a near-miss file is almost always
/// its first occurrence).
pub fn json_keys(src: &Source, file: FileId) -> Vec<(String, Span)> {
    let Ok(serde_json::Value::Object(m)) = serde_json::from_str(src.text) else {
        return Vec::new();
    };
    m.keys()
        .map(|k| {
            let quoted = serde_json::Value::String(k.clone()).to_string();
            let span = match src.text.find(&quoted) {
                Some(start) => Span::new(file, start..start + quoted.len()),
                None => Span::new(file, 0..0),
            };
            (k.clone(), span)
        })
        .collect()
}

/// A signature is a set of key groups that must all be present (one key of each). A near miss
/// has exactly one group missing and a present key that is a plausible typo of it.
pub fn by_keys(
    noun: &'static str,
    keys: &[(&str, Span)],
    groups: &[&'static [&'static str]],
) -> Option<NearMiss> {
    let missing: Vec<&[&str]> = groups
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
            noun,
            found: (*k).to_string(),
            span: *span,
            expected,
        })
    })
}
