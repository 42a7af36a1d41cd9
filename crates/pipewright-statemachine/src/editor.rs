//! What the state-machine dialect answers an editor: a `nextStep`/`initialStep` target (hover
//! shows the step's prompt; definition and references lead to the step), keys (their schema's
//! description), and completion of step names and outcomes.

use crate::dialect::StateMachine;
use pipewright_dialect::editor::text::{line_start, word_at};
use pipewright_dialect::editor::yaml_at::{self, At};
use pipewright_dialect::editor::{
    Completion, CompletionKind, EditorDoc, Place, SchemaDocs, Workspace,
};
use pipewright_dialect::EditorFeatures;
use pipewright_yaml::Document;
use std::ops::Range;

static SCHEMA: SchemaDocs = SchemaDocs::new(crate::schema::json_schema);

/// The keys whose value names a step.
const TRANSITIONS: &[&str] = &["nextStep", "initialStep"];

impl EditorFeatures for StateMachine {
    fn hover(&self, doc: &EditorDoc, offset: usize) -> Option<String> {
        let (_, word) = word_at(doc.text, offset)?;
        let parsed = yaml_at::parse(doc.text);
        let at = yaml_at::locate(&parsed, offset)?;
        let keys = at.keys();
        if at.on_key {
            return SCHEMA.describe(&keys);
        }
        // A transition's target: the step it leads to and its prompt's first line.
        if keys.last().is_some_and(|k| TRANSITIONS.contains(k)) {
            let root = yaml_at::roots(&parsed).next()?;
            let step = root.get("steps")?.get(word)?;
            let prompt = step.get("prompt").and_then(|p| p.as_str()).unwrap_or("");
            let first = prompt.lines().next().unwrap_or("");
            return Some(format!("step `{word}`: {first}"));
        }
        None
    }

    fn complete(&self, doc: &EditorDoc, offset: usize) -> Vec<Completion> {
        let before = &doc.text[line_start(doc.text, offset)..offset];
        let parsed = yaml_at::parse_while_typing(doc.text, offset);
        complete(before, &parsed)
    }

    fn definition(&self, ws: &Workspace, offset: usize) -> Option<Vec<Place>> {
        let parsed = yaml_at::parse(ws.doc.text);
        let name = target(ws.doc.text, &parsed, offset)?;
        Some(
            step(&parsed, name)
                .into_iter()
                .map(Place::current)
                .collect(),
        )
    }

    fn references(&self, ws: &Workspace, offset: usize) -> Option<Vec<Place>> {
        let parsed = yaml_at::parse(ws.doc.text);
        let name = target(ws.doc.text, &parsed, offset)?;
        let mut s = step(&parsed, name);
        s.extend(yaml_at::values_of(&parsed, TRANSITIONS, name));
        Some(Place::current_sorted(s))
    }
}

/// The step a transition under the cursor leads to.
fn target<'a>(text: &'a str, parsed: &[Document], offset: usize) -> Option<&'a str> {
    let (_, word) = word_at(text, offset)?;
    let at: At = yaml_at::locate(parsed, offset)?;
    if at.on_key {
        return None;
    }
    let keys = at.keys();
    TRANSITIONS.contains(keys.last()?).then_some(word)
}

/// Step `name` (a key of `steps`).
fn step(docs: &[Document], name: &str) -> Vec<Range<usize>> {
    yaml_at::roots(docs)
        .filter_map(|r| r.get("steps"))
        .filter_map(|s| s.entry(name))
        .map(|e| e.key.span.range())
        .collect()
}

/// Step names after `"nextStep"`/`"initialStep"`; as a key of `onOutcome`, the outcomes the
/// steps declare.
fn complete(before: &str, parsed: &[Document]) -> Vec<Completion> {
    let steps = || -> Vec<String> {
        parsed
            .iter()
            .filter_map(|d| d.root.as_ref()?.get("steps")?.as_map())
            .flatten()
            .filter_map(|e| e.key.key_text())
            .filter(|k| !k.starts_with('$'))
            .map(str::to_string)
            .collect()
    };
    if before.contains("\"nextStep\"") || before.contains("\"initialStep\"") {
        return Completion::names(steps(), CompletionKind::EnumMember, "step");
    }
    let mut outcomes = Vec::new();
    for root in yaml_at::roots(parsed) {
        yaml_at::entries(root, &mut |e| {
            if e.key.key_text() == Some("outcomes") {
                for o in e.value.as_seq().unwrap_or(&[]) {
                    outcomes.extend(o.key_text().map(str::to_string));
                }
            }
        });
    }
    if before.trim_start().starts_with('"') && !before.contains(':') {
        return Completion::names(outcomes, CompletionKind::EnumMember, "outcome");
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_described_through_refs_and_alternatives() {
        let d = SCHEMA.describe(&["steps", "a", "onOutcome", "done", "nextStep"]);
        assert!(d.is_some_and(|d| d.starts_with("`nextStep`")));
    }
}
