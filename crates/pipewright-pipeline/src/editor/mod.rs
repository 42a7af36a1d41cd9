//! What the pipeline dialect answers an editor: hover over step kinds, their keys, R1
//! functions and words and named stores; completion ([`complete`]); definitions and references
//! of stores, call targets and schemas ([`navigate`]).

mod complete;
mod navigate;
mod vocab;

use crate::dialect::Pipeline;
use pipewright_dialect::editor::text::{line_number, word_at};
use pipewright_dialect::editor::{yaml_at, Completion, EditorDoc, Place, SchemaDocs, Workspace};
use pipewright_dialect::EditorFeatures;

static SCHEMA: SchemaDocs = SchemaDocs::new(crate::schema::json_schema);

impl EditorFeatures for Pipeline {
    fn hover(&self, doc: &EditorDoc, offset: usize) -> Option<String> {
        hover(doc.text, offset)
    }

    fn complete(&self, doc: &EditorDoc, offset: usize) -> Vec<Completion> {
        complete::complete(doc.text, offset)
    }

    fn definition(&self, ws: &Workspace, offset: usize) -> Option<Vec<Place>> {
        navigate::definition(ws, offset)
    }

    fn references(&self, ws: &Workspace, offset: usize) -> Option<Vec<Place>> {
        navigate::references(ws, offset)
    }
}

/// The store a word reads: `ctx.NAME…` gives `NAME`.
fn store_read(word: &str) -> Option<&str> {
    let rest = word.strip_prefix("ctx.")?;
    let name = rest.split('.').next()?;
    (!name.is_empty()).then_some(name)
}

fn hover(text: &str, offset: usize) -> Option<String> {
    let (range, word) = word_at(text, offset)?;
    let parsed = yaml_at::parse(text);
    if let Some(name) = store_read(word) {
        let writes: Vec<String> = yaml_at::values_of(&parsed, &["output"], name)
            .into_iter()
            .map(|r| format!("line {}", line_number(text, r.start)))
            .collect();
        let said = if writes.is_empty() {
            "no step writes it: an input of the pipeline".to_string()
        } else {
            format!(
                "written by the step with `output: {name}` ({})",
                writes.join(", ")
            )
        };
        return Some(format!("named store `{name}`: {said}"));
    }
    let at = yaml_at::locate(&parsed, offset);
    if let Some(at) = at.filter(|a| a.on_key) {
        let keys = at.keys();
        let parent = keys.len().checked_sub(2).map(|i| keys[i]);
        if let Some(d) = vocab::doc(vocab::STEP_KINDS, word) {
            if keys.len() >= 2 || parent.is_none() {
                return Some(format!("step kind `{word}`: {d}"));
            }
        }
        if let Some(kind) = parent.filter(|p| !vocab::keys_of(p).is_empty()) {
            if vocab::keys_of(kind).contains(&word) {
                let d = vocab::doc(vocab::STEP_KEYS, word).unwrap_or("");
                return Some(format!("`{kind}.{word}`: {d}"));
            }
        }
        if keys.len() == 1 {
            if let Some(d) = vocab::doc(vocab::TOP_KEYS, word) {
                return Some(format!("`{word}`: {d}"));
            }
        }
        return SCHEMA.describe(&keys);
    }
    // Inside an expression: an R1 function (a name before `(`) or word.
    if text[range.end..].trim_start().starts_with('(') {
        if let Some((sig, what)) = vocab::r1_function(word) {
            return Some(format!("```\n{sig}\n```\nR1 function. {what}"));
        }
    }
    if let Some(d) = vocab::doc(vocab::R1_WORDS, word) {
        return Some(format!("R1 `{word}`: {d}"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_described_from_the_schema() {
        let d = SCHEMA
            .describe(&["steps", "call", "pass"])
            .unwrap_or_default();
        assert!(d.starts_with("`pass`: The stores"), "{d}");
    }
}
