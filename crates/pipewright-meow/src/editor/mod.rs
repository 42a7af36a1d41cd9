//! What the MEOW dialect answers an editor, reading the TOML text line by line ([`names`]):
//! `{{…}}` variables and step outputs (hover, definition), `needs` (the step's `id`),
//! template references (the workflow's table, in this file or another), keys (the schema's
//! description, by their table header) and executor names.

mod names;

use crate::dialect::Meow;
use names::Reference;
use pipewright_dialect::editor::text::{
    in_template, line_number, line_start, template_var, word_at,
};
use pipewright_dialect::editor::{
    Completion, CompletionKind, EditorDoc, Place, PlaceFile, SchemaDocs, Workspace,
};
use pipewright_dialect::EditorFeatures;
use std::sync::Arc;

static SCHEMA: SchemaDocs = SchemaDocs::new(crate::schema::json_schema);

/// Where the schema lists the executors.
const EXECUTOR: &[&str] = &["main", "steps", "executor"];

impl EditorFeatures for Meow {
    fn hover(&self, doc: &EditorDoc, offset: usize) -> Option<String> {
        let text = doc.text;
        let (_, word) = word_at(text, offset)?;
        if in_template(text, offset) {
            let name = template_var(word);
            let wf = names::workflow_at(text, offset).unwrap_or_default();
            if let Some(r) = names::step_ids(text, &wf, name).first() {
                return Some(format!(
                    "step `{name}` of `[{wf}]` (line {}): `{{{{{name}.outputs.NAME}}}}` reads its outputs",
                    line_number(text, r.start)
                ));
            }
            return Some(match names::variable(text, &wf, name) {
                Some((r, value)) => format!(
                    "MEOW variable `{name}`: declared in `[{wf}.variables]` on line {}: `{value}`",
                    line_number(text, r.start)
                ),
                None => format!("MEOW variable `{name}`: not declared in `[{wf}.variables]`"),
            });
        }
        let path = names::key_path(text, offset)?;
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        SCHEMA.describe(&path)
    }

    fn complete(&self, doc: &EditorDoc, offset: usize) -> Vec<Completion> {
        let before = &doc.text[line_start(doc.text, offset)..offset];
        if !before.trim_start().starts_with("executor") {
            return Vec::new();
        }
        Completion::names(
            SCHEMA.enum_values(EXECUTOR),
            CompletionKind::EnumMember,
            "MEOW executor",
        )
    }

    fn definition(&self, ws: &Workspace, offset: usize) -> Option<Vec<Place>> {
        let text = ws.doc.text;
        let here = |spans: Vec<std::ops::Range<usize>>| -> Vec<Place> {
            spans.into_iter().map(Place::current).collect()
        };
        let found = match target(text, offset)? {
            Target::Step(name) => {
                let wf = names::workflow_at(text, offset).unwrap_or_default();
                here(names::step_ids(text, &wf, name))
            }
            Target::Variable(name) => {
                let wf = names::workflow_at(text, offset).unwrap_or_default();
                let mut spans = names::step_ids(text, &wf, name);
                spans.extend(names::variable(text, &wf, name).map(|(r, _)| r));
                here(spans)
            }
            Target::Template(r) => match names::reference(r, &ws.doc.dir()) {
                Some(Reference::Local(wf)) => here(names::workflow_header(text, &wf)),
                Some(Reference::File {
                    candidates,
                    workflow,
                }) => candidates
                    .iter()
                    .find(|p| p.is_file())
                    .and_then(|p| {
                        let text = std::fs::read_to_string(p).ok()?;
                        let path = std::fs::canonicalize(p).ok()?;
                        let spans = names::workflow_header(&text, &workflow);
                        let file = PlaceFile::Disk {
                            path,
                            text: Arc::from(text),
                        };
                        Some(
                            spans
                                .into_iter()
                                .map(|span| Place {
                                    file: file.clone(),
                                    span,
                                })
                                .collect(),
                        )
                    })
                    .unwrap_or_default(),
                None => Vec::new(),
            },
        };
        Some(found)
    }
}

/// What the cursor names.
enum Target<'a> {
    /// A step of the cursor's workflow, in `needs`.
    Step(&'a str),
    /// A template reference (`.name`, `#name`, `path#workflow`).
    Template(&'a str),
    /// `{{name…}}`: a variable of the workflow, or a step's outputs.
    Variable(&'a str),
}

fn target(text: &str, offset: usize) -> Option<Target<'_>> {
    let (range, word) = word_at(text, offset)?;
    if in_template(text, offset) {
        return Some(Target::Variable(template_var(word)));
    }
    let key = text[line_start(text, offset)..].trim_start();
    // The whole quoted value: a template path holds `#` and `/`.
    let value = quoted_at(text, range.start)?;
    if key.starts_with("needs") {
        Some(Target::Step(value))
    } else if key.starts_with("template") || key.contains("template =") {
        Some(Target::Template(value))
    } else {
        None
    }
}

/// The text inside the double quotes around `at`, on its line.
fn quoted_at(text: &str, at: usize) -> Option<&str> {
    let line_start = line_start(text, at);
    let open = line_start + text[line_start..at].rfind('"')?;
    let close = at + text[at..].find(['"', '\n'])?;
    (text.as_bytes().get(close) == Some(&b'"')).then(|| &text[open + 1..close])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_executors_come_from_the_schema() {
        let d = SCHEMA.describe(EXECUTOR).unwrap_or_default();
        assert!(d.starts_with("`executor` (string)"), "{d}");
        assert_eq!(SCHEMA.enum_values(EXECUTOR).len(), 7);
    }
}
