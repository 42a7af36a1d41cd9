//! What the recipe dialect answers an editor: variables inside `{{…}}` (hover, completion,
//! definition and references: a step's `output` or the `context` key), keys (their schema's
//! description on hover; at a key position, the keys the loader accepts there) and sub-recipe
//! paths.

use crate::dialect::Recipe;
use pipewright_dialect::editor::text::{
    in_template, line_number, line_start, occurrences, template_var, word_at,
};
use pipewright_dialect::editor::yaml_at::{self, At};
use pipewright_dialect::editor::{
    Completion, CompletionKind, EditorDoc, Place, PlaceFile, SchemaDocs, Workspace,
};
use pipewright_dialect::EditorFeatures;
use pipewright_yaml::Document;
use std::ops::Range;

static SCHEMA: SchemaDocs = SchemaDocs::new(crate::schema::json_schema);

impl EditorFeatures for Recipe {
    fn hover(&self, doc: &EditorDoc, offset: usize) -> Option<String> {
        let text = doc.text;
        let (_, word) = word_at(text, offset)?;
        let parsed = yaml_at::parse(text);
        if in_template(text, offset) {
            let name = template_var(word);
            let mut found: Vec<String> = outputs(&parsed, name)
                .into_iter()
                .map(|r| {
                    format!(
                        "written by the step's `output` on line {}",
                        line_number(text, r.start)
                    )
                })
                .collect();
            found.extend(context_values(&parsed, name).into_iter().map(|(r, what)| {
                format!(
                    "set in `context` on line {} ({what})",
                    line_number(text, r.start)
                )
            }));
            let said = if found.is_empty() {
                "not defined in this file (a runtime variable or an input)".to_string()
            } else {
                found.join("; ")
            };
            return Some(format!("recipe variable `{name}`: {said}"));
        }
        let at = yaml_at::locate(&parsed, offset)?;
        at.on_key.then(|| SCHEMA.describe(&at.keys())).flatten()
    }

    fn complete(&self, doc: &EditorDoc, offset: usize) -> Vec<Completion> {
        let text = doc.text;
        if in_template(text, offset) {
            let parsed = yaml_at::parse_while_typing(text, offset);
            return Completion::names(
                recipe_vars(&parsed),
                CompletionKind::Variable,
                "recipe variable",
            );
        }
        let line_start = line_start(text, offset);
        keys(text, &text[line_start..offset], line_start)
    }

    fn definition(&self, ws: &Workspace, offset: usize) -> Option<Vec<Place>> {
        let parsed = yaml_at::parse(ws.doc.text);
        let found = match target(ws.doc.text, &parsed, offset)? {
            Target::Variable(name) => {
                let mut s = outputs(&parsed, name);
                s.extend(context_vars(&parsed, name));
                s.into_iter().map(Place::current).collect()
            }
            Target::File(rel) => {
                let path = ws.doc.dir().join(rel);
                if path.is_file() {
                    vec![Place {
                        file: PlaceFile::Disk {
                            path,
                            text: "".into(),
                        },
                        span: 0..0,
                    }]
                } else {
                    Vec::new()
                }
            }
        };
        Some(found)
    }

    fn references(&self, ws: &Workspace, offset: usize) -> Option<Vec<Place>> {
        let text = ws.doc.text;
        let parsed = yaml_at::parse(text);
        let Target::Variable(name) = target(text, &parsed, offset)? else {
            return None;
        };
        let mut s = outputs(&parsed, name);
        s.extend(context_vars(&parsed, name));
        s.extend(
            occurrences(text, name)
                .into_iter()
                .filter(|r| in_template(text, r.start)),
        );
        Some(Place::current_sorted(s))
    }
}

/// What the cursor names.
enum Target<'a> {
    /// `{{NAME}}`, or a step's `output: NAME`.
    Variable(&'a str),
    /// A sub-recipe's path, relative to the document's directory.
    File(&'a str),
}

fn target<'a>(text: &'a str, parsed: &[Document], offset: usize) -> Option<Target<'a>> {
    let (_, word) = word_at(text, offset)?;
    if in_template(text, offset) {
        return Some(Target::Variable(template_var(word)));
    }
    let at: At = yaml_at::locate(parsed, offset)?;
    if at.on_key {
        return None;
    }
    match *at.keys().last()? {
        "output" => Some(Target::Variable(word)),
        "recipe" => Some(Target::File(word)),
        _ => None,
    }
}

/// The steps' `output: NAME` values naming `name`.
fn outputs(docs: &[Document], name: &str) -> Vec<Range<usize>> {
    yaml_at::values_of(docs, &["output"], name)
}

/// The `context:` key `name` with what its default value is ("a string", …).
fn context_values(docs: &[Document], name: &str) -> Vec<(Range<usize>, &'static str)> {
    yaml_at::roots(docs)
        .filter_map(|r| r.get("context"))
        .filter_map(|c| c.entry(name))
        .map(|e| (e.key.span.range(), e.value.describe()))
        .collect()
}

/// Where `context:` declares `name`.
fn context_vars(docs: &[Document], name: &str) -> Vec<Range<usize>> {
    context_values(docs, name)
        .into_iter()
        .map(|(r, _)| r)
        .collect()
}

/// Every variable the file defines: the `context` keys and the steps' outputs.
fn recipe_vars(parsed: &[Document]) -> Vec<String> {
    let mut out = Vec::new();
    for root in yaml_at::roots(parsed) {
        if let Some(ctx) = root.get("context").and_then(|c| c.as_map()) {
            out.extend(
                ctx.iter()
                    .filter_map(|e| e.key.key_text().map(str::to_string)),
            );
        }
        yaml_at::entries(root, &mut |e| {
            if e.key.key_text() == Some("output") {
                out.extend(e.value.key_text().map(str::to_string));
            }
        });
    }
    out
}

/// At a key position: the keys the loader accepts there (top level, a stage, a step), found
/// from the list the cursor's item belongs to.
fn keys(text: &str, before: &str, line_start: usize) -> Vec<Completion> {
    let key_part = before.trim_start().trim_start_matches("- ");
    if key_part.contains(':') || !key_part.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Vec::new();
    }
    let indent = before.len() - before.trim_start().len();
    let keys: &[&str] = if indent == 0 {
        crate::load::TOP_KEYS
    } else {
        // The item line (this one when it opens with `- `), then the key holding the list.
        let above: Vec<&str> = text[..line_start].lines().collect();
        let item_indent = if before.trim_start().starts_with('-') {
            Some(indent)
        } else {
            above.iter().rev().find_map(|l| {
                let t = l.trim_start();
                let i = l.len() - t.len();
                (!t.is_empty() && i < indent)
                    .then_some(i)
                    .filter(|_| t.starts_with('-'))
            })
        };
        let list_key = item_indent.and_then(|ii| {
            above
                .iter()
                .rev()
                .map(|l| (l.len() - l.trim_start().len(), l.trim()))
                .find(|(i, t)| {
                    !t.is_empty() && *i < ii || (*i == ii && !t.starts_with('-') && !t.is_empty())
                })
                .map(|(_, t)| t.trim_start_matches("- ").split(':').next().unwrap_or(""))
        });
        match list_key {
            Some("steps") => crate::load::STEP_KEYS,
            Some("stages") => crate::load::STAGE_KEYS,
            _ => return Vec::new(),
        }
    };
    keys.iter()
        .map(|k| Completion::new(k, CompletionKind::Property, "recipe key", None))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_described_through_refs_and_alternatives() {
        let d = SCHEMA
            .describe(&["recursion", "max_depth"])
            .unwrap_or_default();
        assert!(d.starts_with("`max_depth` (integer): "), "{d}");
        assert!(SCHEMA.describe(&["nothing_like_this"]).is_none());
    }
}
