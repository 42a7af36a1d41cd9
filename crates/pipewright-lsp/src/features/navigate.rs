//! Go to definition and find references: call and match targets and schemas (in the document,
//! the open documents and the files of its directory), named stores (`ctx.NAME` and the step
//! with `output: NAME`), recipe variables (`{{NAME}}`: a step's `output` or the `context`),
//! sub-recipe paths, state-machine `nextStep`/`initialStep`.

use super::symbols::{self, in_template, store_read, template_var};
use super::Doc;
use crate::text::LineIndex;
use crate::yaml_at::{self, At};
use lsp_types::{Location, Position, Range, Url};
use pipewright_yaml::Document;
use std::collections::HashMap;
use std::ops::Range as Span;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the cursor names.
enum Target<'a> {
    Store(&'a str),
    RecipeVar(&'a str),
    Pipeline(&'a str),
    Schema(&'a str),
    StateStep(&'a str),
    File(&'a str),
    MeowStep(&'a str),
    MeowTemplate(&'a str),
    /// `{{name…}}` in MEOW: a variable of the workflow, or a step's outputs.
    MeowVar(&'a str),
}

fn target<'a>(doc: &'a Doc, parsed: &[Document], offset: usize) -> Option<Target<'a>> {
    let text: &'a str = &doc.text;
    let (_, word) = yaml_at::word_at(text, offset)?;
    let dialect = doc.dialect().map(|d| d.name());
    if dialect == Some("meow") && in_template(text, offset) {
        return Some(Target::MeowVar(template_var(word)));
    }
    if dialect == Some("meow") {
        let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let key = text[line_start..].trim_start();
        let (range, _) = yaml_at::word_at(text, offset)?;
        // The whole quoted value: a template path holds `#` and `/`.
        let value = quoted_at(text, range.start)?;
        return if key.starts_with("needs") {
            Some(Target::MeowStep(value))
        } else if key.starts_with("template") || key.contains("template =") {
            Some(Target::MeowTemplate(value))
        } else {
            None
        };
    }
    if dialect == Some("recipe") && in_template(text, offset) {
        return Some(Target::RecipeVar(template_var(word)));
    }
    if let Some(name) = store_read(word) {
        return Some(Target::Store(name));
    }
    let at: At = yaml_at::locate(parsed, offset)?;
    if at.on_key {
        return None;
    }
    let keys = at.keys();
    let last = *keys.last()?;
    let inner = keys.len() >= 2;
    match (dialect, last) {
        (Some("pipeline"), "pipeline") => Some(Target::Pipeline(word)),
        (Some("pipeline"), "schema") if inner => Some(Target::Schema(word)),
        (Some("pipeline"), "output") => Some(Target::Store(word)),
        (Some("recipe"), "output") => Some(Target::RecipeVar(word)),
        (Some("recipe"), "recipe") => Some(Target::File(word)),
        (Some("state-machine"), "nextStep" | "initialStep") => Some(Target::StateStep(word)),
        _ => None,
    }
}

/// The text inside the double quotes around `at`, on its line.
fn quoted_at(text: &str, at: usize) -> Option<&str> {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let open = line_start + text[line_start..at].rfind('"')?;
    let close = at + text[at..].find(['"', '\n'])?;
    (text.as_bytes().get(close) == Some(&b'"')).then(|| &text[open + 1..close])
}

fn location(uri: &Url, text: &str, span: Span<usize>) -> Location {
    Location::new(uri.clone(), LineIndex::new(text).range(span))
}

pub fn definition(doc: &Doc, at: Position, docs: &HashMap<Url, Doc>) -> Option<Vec<Location>> {
    let offset = LineIndex::new(&doc.text).offset(at);
    let parsed = yaml_at::parse(&doc.text);
    let here = |spans: Vec<Span<usize>>| -> Vec<Location> {
        spans
            .into_iter()
            .map(|s| location(&doc.uri, &doc.text, s))
            .collect()
    };
    let found = match target(doc, &parsed, offset)? {
        Target::Store(name) => here(symbols::outputs(&parsed, name)),
        Target::RecipeVar(name) => {
            let mut s = symbols::outputs(&parsed, name);
            s.extend(symbols::context_vars(&parsed, name));
            here(s)
        }
        Target::StateStep(name) => here(symbols::state_step(&parsed, name)),
        Target::Pipeline(name) => across_files(doc, docs, "pipeline", name),
        Target::Schema(name) => across_files(doc, docs, "schema", name),
        Target::MeowStep(name) => {
            let wf = super::meow::workflow_at(&doc.text, offset).unwrap_or_default();
            here(super::meow::step_ids(&doc.text, &wf, name))
        }
        Target::MeowVar(name) => {
            let wf = super::meow::workflow_at(&doc.text, offset).unwrap_or_default();
            let mut spans = super::meow::step_ids(&doc.text, &wf, name);
            spans.extend(super::meow::variable(&doc.text, &wf, name).map(|(r, _)| r));
            here(spans)
        }
        Target::MeowTemplate(r) => match super::meow::reference(r, &doc.dir()) {
            Some(super::meow::Reference::Local(wf)) => {
                here(super::meow::workflow_header(&doc.text, &wf))
            }
            Some(super::meow::Reference::File {
                candidates,
                workflow,
            }) => candidates
                .iter()
                .find(|p| p.is_file())
                .and_then(|p| {
                    let text = std::fs::read_to_string(p).ok()?;
                    let uri = Url::from_file_path(std::fs::canonicalize(p).ok()?).ok()?;
                    Some(
                        super::meow::workflow_header(&text, &workflow)
                            .into_iter()
                            .map(|s| location(&uri, &text, s))
                            .collect(),
                    )
                })
                .unwrap_or_default(),
            None => Vec::new(),
        },
        Target::File(rel) => {
            let path = doc.dir().join(rel);
            let uri = Url::from_file_path(&path).ok().filter(|_| path.is_file());
            uri.map(|u| vec![Location::new(u, Range::default())])
                .unwrap_or_default()
        }
    };
    Some(found)
}

/// `KEY: NAME` documents: in this document first, then the open documents and the files of
/// its directory. `NAMESPACE.NAME` looks only in the file whose stem is `NAMESPACE`.
fn across_files(doc: &Doc, docs: &HashMap<Url, Doc>, key: &str, name: &str) -> Vec<Location> {
    let (ns, bare) = split_target(name);
    for (uri, path, text) in dir_files(doc, docs) {
        if ns.is_some_and(|ns| stem(&path).as_deref() != Some(ns)) {
            continue;
        }
        let parsed = yaml_at::parse(&text);
        let found: Vec<Location> = symbols::declared(&parsed, key, bare)
            .into_iter()
            .map(|s| location(&uri, &text, s))
            .collect();
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

fn split_target(name: &str) -> (Option<&str>, &str) {
    match name.rsplit_once('.') {
        Some((ns, bare)) => (Some(ns), bare),
        None => (None, name),
    }
}

fn stem(p: &Path) -> Option<String> {
    p.file_stem().map(|s| s.to_string_lossy().to_string())
}

/// This document, then the other open documents of its directory, then its directory's YAML
/// files on disk (each file once, open text first).
fn dir_files(doc: &Doc, docs: &HashMap<Url, Doc>) -> Vec<(Url, PathBuf, Arc<str>)> {
    let mut files: Vec<(Url, PathBuf, Arc<str>)> =
        vec![(doc.uri.clone(), doc.path.clone(), doc.text.clone())];
    let mut others: Vec<&Doc> = docs
        .values()
        .filter(|d| d.uri != doc.uri && d.dir() == doc.dir())
        .collect();
    others.sort_by(|a, b| a.path.cmp(&b.path));
    files.extend(
        others
            .iter()
            .map(|d| (d.uri.clone(), d.path.clone(), d.text.clone())),
    );
    if !doc.path.is_absolute() {
        return files;
    }
    let mut on_disk: Vec<PathBuf> = std::fs::read_dir(doc.dir())
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .filter(|p| !files.iter().any(|(_, q, _)| q == p))
        .collect();
    on_disk.sort();
    for p in on_disk {
        if let (Ok(text), Ok(uri)) = (std::fs::read_to_string(&p), Url::from_file_path(&p)) {
            files.push((uri, p, text.into()));
        }
    }
    files
}

/// A pipeline's declaration and every call or match target naming it (`NAME`, or
/// `STEM.NAME` from other files), across the directory.
fn pipeline_references(doc: &Doc, docs: &HashMap<Url, Doc>, name: &str) -> Vec<Location> {
    let (ns, bare) = split_target(name);
    let files = dir_files(doc, docs);
    // The file declaring it: the namespace's, else the first that does.
    let home = files.iter().find(|(_, path, text)| {
        ns.is_none_or(|ns| stem(path).as_deref() == Some(ns))
            && !symbols::declared(&yaml_at::parse(text), "pipeline", bare).is_empty()
    });
    let home_stem = home.and_then(|(_, p, _)| stem(p));
    let qualified = home_stem.as_ref().map(|s| format!("{s}.{bare}"));
    let mut out = Vec::new();
    for (uri, _, text) in &files {
        let parsed = yaml_at::parse(text);
        let is_home = home.is_some_and(|(u, _, _)| u == uri);
        let mut spans = Vec::new();
        if is_home {
            spans.extend(symbols::declared(&parsed, "pipeline", bare));
        }
        for root in parsed.iter().filter_map(|d| d.root.as_ref()) {
            let Some(steps) = root.get("steps") else {
                continue;
            };
            symbols::entries(steps, &mut |e| {
                let Some(v) = e.value.key_text() else { return };
                let same_file_call = is_home && v == bare;
                let qualified_call = qualified.as_deref() == Some(v);
                if e.key.key_text() == Some("pipeline") && (same_file_call || qualified_call) {
                    spans.push(e.value.span.range());
                }
            });
        }
        out.extend(spans.into_iter().map(|s| location(uri, text, s)));
    }
    out
}

/// The definitions and uses of the name under the cursor: a pipeline across the directory; a
/// store, recipe variable or state-machine step in this document.
pub fn references(doc: &Doc, at: Position, docs: &HashMap<Url, Doc>) -> Option<Vec<Location>> {
    let offset = LineIndex::new(&doc.text).offset(at);
    let parsed = yaml_at::parse(&doc.text);
    let text: &str = &doc.text;
    let spans: Vec<Span<usize>> = match target(doc, &parsed, offset)? {
        Target::Pipeline(name) => return Some(pipeline_references(doc, docs, name)),
        Target::Store(name) => {
            let mut s = symbols::outputs(&parsed, name);
            s.extend(
                symbols::occurrences(text, &format!("ctx.{name}"))
                    .into_iter()
                    .map(|r| r.start + 4..r.end),
            );
            s
        }
        Target::RecipeVar(name) => {
            let mut s = symbols::outputs(&parsed, name);
            s.extend(symbols::context_vars(&parsed, name));
            s.extend(
                symbols::occurrences(text, name)
                    .into_iter()
                    .filter(|r| in_template(text, r.start)),
            );
            s
        }
        Target::StateStep(name) => {
            let mut s = symbols::state_step(&parsed, name);
            s.extend(symbols::values_of(
                &parsed,
                &["nextStep", "initialStep"],
                name,
            ));
            s
        }
        _ => return None,
    };
    let mut spans = spans;
    spans.sort_by_key(|s| s.start);
    spans.dedup();
    Some(
        spans
            .into_iter()
            .map(|s| location(&doc.uri, text, s))
            .collect(),
    )
}
