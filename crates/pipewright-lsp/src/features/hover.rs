//! Hover: the explanation of a diagnostic under the cursor (or of a code written in a
//! suppression), step kinds and keys, R1 functions and words, and where a store or recipe
//! variable is written.

use super::symbols::{self, in_template, store_read, template_var};
use super::Doc;
use crate::text::LineIndex;
use crate::vocab;
use crate::yaml_at;
use crate::Config;
use lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind, NumberOrString, Position};

pub fn hover(
    doc: &Doc,
    at: Position,
    config: &Config,
    published: &[lsp_types::Diagnostic],
) -> Option<Hover> {
    let idx = LineIndex::new(&doc.text);
    let offset = idx.offset(at);
    let mut parts: Vec<String> = Vec::new();
    let word = yaml_at::word_at(&doc.text, offset);
    // A code written out (in a suppression comment) or a diagnostic covering the cursor.
    let mut codes: Vec<String> = published
        .iter()
        .filter(|d| d.range.start <= at && at <= d.range.end)
        .filter_map(|d| match &d.code {
            Some(NumberOrString::String(c)) => Some(c.clone()),
            _ => None,
        })
        .collect();
    if let Some((_, w)) = &word {
        if w.len() == 6 && w.starts_with("PW") && w[2..].bytes().all(|b| b.is_ascii_digit()) {
            codes.push(w.to_string());
        }
    }
    codes.dedup();
    for code in codes {
        if let Some(info) = config.codes.iter().find(|c| c.code == code) {
            parts.push(format!(
                "**{}**: {}\n\n{}",
                info.code,
                info.title,
                info.explanation.trim_end()
            ));
        }
    }
    if let Some((range, w)) = word {
        if let Some(s) = about_word(doc, offset, w, range.end) {
            parts.insert(0, s);
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: parts.join("\n\n---\n\n"),
        }),
        range: None,
    })
}

fn about_word(doc: &Doc, offset: usize, word: &str, end: usize) -> Option<String> {
    let text: &str = &doc.text;
    let dialect = doc.dialect().map(|d| d.name());
    let parsed = yaml_at::parse(text);
    let line_of = |at: usize| LineIndex::new(text).position(at).line + 1;
    if dialect == Some("meow") && in_template(text, offset) {
        let name = template_var(word);
        let wf = super::meow::workflow_at(text, offset).unwrap_or_default();
        if let Some(r) = super::meow::step_ids(text, &wf, name).first() {
            return Some(format!(
                "step `{name}` of `[{wf}]` (line {}): `{{{{{name}.outputs.NAME}}}}` reads its outputs",
                line_of(r.start)
            ));
        }
        return Some(match super::meow::variable(text, &wf, name) {
            Some((r, value)) => format!(
                "MEOW variable `{name}`: declared in `[{wf}.variables]` on line {}: `{value}`",
                line_of(r.start)
            ),
            None => format!("MEOW variable `{name}`: not declared in `[{wf}.variables]`"),
        });
    }
    if dialect == Some("recipe") && in_template(text, offset) {
        let name = template_var(word);
        let mut found: Vec<String> = symbols::outputs(&parsed, name)
            .into_iter()
            .map(|r| {
                format!(
                    "written by the step's `output` on line {}",
                    line_of(r.start)
                )
            })
            .collect();
        found.extend(
            symbols::context_values(&parsed, name)
                .into_iter()
                .map(|(r, what)| format!("set in `context` on line {} ({what})", line_of(r.start))),
        );
        let said = if found.is_empty() {
            "not defined in this file (a runtime variable or an input)".to_string()
        } else {
            found.join("; ")
        };
        return Some(format!("recipe variable `{name}`: {said}"));
    }
    if let Some(name) = store_read(word) {
        let writes: Vec<String> = symbols::outputs(&parsed, name)
            .into_iter()
            .map(|r| format!("line {}", line_of(r.start)))
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
    if dialect == Some("meow") {
        let path = super::meow::key_path(text, offset)?;
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        return crate::schema_docs::describe("meow", &path);
    }
    if let Some(d) = dialect.filter(|d| *d != "pipeline") {
        let at = yaml_at::locate(&parsed, offset)?;
        let keys = at.keys();
        if d == "state-machine" && !at.on_key {
            // A transition's target: the step it leads to and its prompt's first line.
            if matches!(keys.last(), Some(&("nextStep" | "initialStep"))) {
                let root = parsed.iter().find_map(|doc| doc.root.as_ref())?;
                let step = root.get("steps")?.get(word)?;
                let prompt = step.get("prompt").and_then(|p| p.as_str()).unwrap_or("");
                let first = prompt.lines().next().unwrap_or("");
                return Some(format!("step `{word}`: {first}"));
            }
            return None;
        }
        // Keys of the other YAML and JSON dialects: their JSON Schema's description.
        return at
            .on_key
            .then(|| crate::schema_docs::describe(d, &keys))
            .flatten();
    }
    if dialect == Some("pipeline") {
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
            return crate::schema_docs::describe("pipeline", &keys);
        }
        // Inside an expression: an R1 function (a name before `(`) or word.
        if text[end..].trim_start().starts_with('(') {
            if let Some((sig, what)) = vocab::r1_function(word) {
                return Some(format!("```\n{sig}\n```\nR1 function. {what}"));
            }
        }
        if let Some(d) = vocab::doc(vocab::R1_WORDS, word) {
            return Some(format!("R1 `{word}`: {d}"));
        }
    }
    None
}
