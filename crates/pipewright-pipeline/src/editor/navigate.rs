//! Go to definition and find references in pipelines: named stores (`ctx.NAME` and the step
//! with `output: NAME`), and call and match targets and schemas (in the document, the other
//! open documents of its directory and the YAML files there on disk).

use super::store_read;
use pipewright_dialect::editor::text::{occurrences, word_at};
use pipewright_dialect::editor::yaml_at::{self, At};
use pipewright_dialect::editor::{Place, PlaceFile, Workspace};
use pipewright_yaml::Document;
use std::borrow::Cow;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the cursor names.
enum Target<'a> {
    Store(&'a str),
    Pipeline(&'a str),
    Schema(&'a str),
}

fn target<'a>(text: &'a str, parsed: &[Document], offset: usize) -> Option<Target<'a>> {
    let (_, word) = word_at(text, offset)?;
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
    match last {
        "pipeline" => Some(Target::Pipeline(word)),
        "schema" if inner => Some(Target::Schema(word)),
        "output" => Some(Target::Store(word)),
        _ => None,
    }
}

/// The steps writing a store.
fn outputs(parsed: &[Document], name: &str) -> Vec<Range<usize>> {
    yaml_at::values_of(parsed, &["output"], name)
}

pub(super) fn definition(ws: &Workspace, offset: usize) -> Option<Vec<Place>> {
    let parsed = yaml_at::parse(ws.doc.text);
    let found = match target(ws.doc.text, &parsed, offset)? {
        Target::Store(name) => outputs(&parsed, name)
            .into_iter()
            .map(Place::current)
            .collect(),
        Target::Pipeline(name) => across_files(ws, "pipeline", name),
        Target::Schema(name) => across_files(ws, "schema", name),
    };
    Some(found)
}

/// The definitions and uses of the name under the cursor: a pipeline across the directory, a
/// store in this document.
pub(super) fn references(ws: &Workspace, offset: usize) -> Option<Vec<Place>> {
    let text = ws.doc.text;
    let parsed = yaml_at::parse(text);
    match target(text, &parsed, offset)? {
        Target::Pipeline(name) => Some(pipeline_references(ws, name)),
        Target::Store(name) => {
            let mut s = outputs(&parsed, name);
            s.extend(
                occurrences(text, &format!("ctx.{name}"))
                    .into_iter()
                    .map(|r| r.start + 4..r.end),
            );
            Some(Place::current_sorted(s))
        }
        Target::Schema(_) => None,
    }
}

/// The top-level `KEY: name` of a document (`pipeline: NAME`, `schema: NAME`).
fn declared(docs: &[Document], key: &str, name: &str) -> Vec<Range<usize>> {
    yaml_at::roots(docs)
        .filter_map(|r| r.get(key))
        .filter(|v| v.key_text() == Some(name))
        .map(|v| v.span.range())
        .collect()
}

/// One file of the document's directory, as navigation reads it.
struct DirFile<'a> {
    origin: Origin,
    path: Cow<'a, Path>,
    text: Cow<'a, str>,
}

enum Origin {
    Current,
    Sibling(usize),
    Disk,
}

impl DirFile<'_> {
    fn place_file(&self) -> PlaceFile {
        match self.origin {
            Origin::Current => PlaceFile::Current,
            Origin::Sibling(i) => PlaceFile::Sibling(i),
            Origin::Disk => PlaceFile::Disk {
                path: self.path.to_path_buf(),
                text: Arc::from(&*self.text),
            },
        }
    }

    fn places(&self, spans: Vec<Range<usize>>) -> Vec<Place> {
        if spans.is_empty() {
            return Vec::new();
        }
        let file = self.place_file();
        spans
            .into_iter()
            .map(|span| Place {
                file: file.clone(),
                span,
            })
            .collect()
    }
}

/// `KEY: NAME` documents: in this document first, then the open documents and the files of
/// its directory. `NAMESPACE.NAME` looks only in the file whose stem is `NAMESPACE`.
fn across_files(ws: &Workspace, key: &str, name: &str) -> Vec<Place> {
    let (ns, bare) = split_target(name);
    for f in dir_files(ws) {
        if ns.is_some_and(|ns| stem(&f.path).as_deref() != Some(ns)) {
            continue;
        }
        let found = f.places(declared(&yaml_at::parse(&f.text), key, bare));
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
fn dir_files<'a>(ws: &'a Workspace) -> Vec<DirFile<'a>> {
    let open = |origin, doc: &pipewright_dialect::editor::EditorDoc<'a>| DirFile {
        origin,
        path: Cow::Borrowed(doc.path),
        text: Cow::Borrowed(doc.text),
    };
    let mut files = vec![open(Origin::Current, &ws.doc)];
    files.extend(
        ws.siblings
            .iter()
            .enumerate()
            .map(|(i, d)| open(Origin::Sibling(i), d)),
    );
    if !ws.doc.path.is_absolute() {
        return files;
    }
    let mut on_disk: Vec<PathBuf> = std::fs::read_dir(ws.doc.dir())
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .filter(|p| !files.iter().any(|f| f.path == p.as_path()))
        .collect();
    on_disk.sort();
    for p in on_disk {
        if let Ok(text) = std::fs::read_to_string(&p) {
            files.push(DirFile {
                origin: Origin::Disk,
                path: Cow::Owned(p),
                text: Cow::Owned(text),
            });
        }
    }
    files
}

/// A pipeline's declaration and every call or match target naming it (`NAME`, or
/// `STEM.NAME` from other files), across the directory.
fn pipeline_references(ws: &Workspace, name: &str) -> Vec<Place> {
    let (ns, bare) = split_target(name);
    let files = dir_files(ws);
    // The file declaring it: the namespace's, else the first that does.
    let home = files.iter().position(|f| {
        ns.is_none_or(|ns| stem(&f.path).as_deref() == Some(ns))
            && !declared(&yaml_at::parse(&f.text), "pipeline", bare).is_empty()
    });
    let home_stem = home.and_then(|i| stem(&files[i].path));
    let qualified = home_stem.as_ref().map(|s| format!("{s}.{bare}"));
    let mut out = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let parsed = yaml_at::parse(&f.text);
        let is_home = home == Some(i);
        let mut spans = Vec::new();
        if is_home {
            spans.extend(declared(&parsed, "pipeline", bare));
        }
        for root in yaml_at::roots(&parsed) {
            let Some(steps) = root.get("steps") else {
                continue;
            };
            yaml_at::entries(steps, &mut |e| {
                let Some(v) = e.value.key_text() else { return };
                let same_file_call = is_home && v == bare;
                let qualified_call = qualified.as_deref() == Some(v);
                if e.key.key_text() == Some("pipeline") && (same_file_call || qualified_call) {
                    spans.push(e.value.span.range());
                }
            });
        }
        out.extend(f.places(spans));
    }
    out
}
