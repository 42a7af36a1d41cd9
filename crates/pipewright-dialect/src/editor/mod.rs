//! What an editor asks of a dialect: hover, completion, go to definition and references. The
//! language server finds the document's dialect in the registry, asks its [`EditorFeatures`]
//! in byte offsets of the document's text and turns the answers into the protocol's types;
//! nothing here knows the protocol.
//!
//! The helpers the dialects share (where an offset falls in a YAML tree, the word under the
//! cursor, `{{…}}` templates, key documentation from a JSON Schema) live beside the interface.

pub mod schema_docs;
pub mod text;
pub mod yaml_at;

pub use schema_docs::SchemaDocs;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A document open in the editor.
#[derive(Clone, Copy)]
pub struct EditorDoc<'a> {
    /// The file's path; for a document not saved yet, the path its URI names.
    pub path: &'a Path,
    /// The text being edited (unsaved changes included).
    pub text: &'a str,
}

impl EditorDoc<'_> {
    /// The document's directory (empty when its path has none).
    pub fn dir(&self) -> PathBuf {
        self.path.parent().map(PathBuf::from).unwrap_or_default()
    }
}

/// What navigation may look at: the document the cursor is in, and the other open documents
/// of its directory (whose unsaved text wins over what is on disk).
pub struct Workspace<'a> {
    pub doc: EditorDoc<'a>,
    /// In path order.
    pub siblings: Vec<EditorDoc<'a>>,
}

/// Which text a [`Place`]'s span is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlaceFile {
    /// The document asked about.
    Current,
    /// [`Workspace::siblings`]`[i]`.
    Sibling(usize),
    /// A file read from disk, with the text the span is in.
    Disk { path: PathBuf, text: Arc<str> },
}

/// A span of a file: where a name is defined or used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: PlaceFile,
    /// Byte offsets in the file's text.
    pub span: Range<usize>,
}

impl Place {
    pub fn current(span: Range<usize>) -> Place {
        Place {
            file: PlaceFile::Current,
            span,
        }
    }

    /// Spans of the current document in text order, each once (what references list).
    pub fn current_sorted(mut spans: Vec<Range<usize>>) -> Vec<Place> {
        spans.sort_by_key(|s| s.start);
        spans.dedup();
        spans.into_iter().map(Place::current).collect()
    }
}

/// What a completion proposes; editors pick an icon by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    Variable,
    /// A kind of step.
    Class,
    /// A key.
    Property,
    Function,
    Keyword,
    /// One of a fixed set of values.
    EnumMember,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub label: String,
    pub kind: CompletionKind,
    /// One line shown beside the label.
    pub detail: String,
    /// Markdown shown with the selected item.
    pub documentation: Option<String>,
}

impl Completion {
    pub fn new(label: &str, kind: CompletionKind, detail: &str, doc: Option<&str>) -> Completion {
        Completion {
            label: label.to_string(),
            kind,
            detail: detail.to_string(),
            documentation: doc.map(str::to_string),
        }
    }

    /// One item per name, sorted, each once.
    pub fn names(mut list: Vec<String>, kind: CompletionKind, detail: &str) -> Vec<Completion> {
        list.sort();
        list.dedup();
        list.iter()
            .map(|n| Completion::new(n, kind, detail, None))
            .collect()
    }
}

/// A dialect's answers to an editor, at a byte offset of a document. Every answer is optional:
/// a dialect says nothing where it has nothing to say.
pub trait EditorFeatures: Sync {
    /// Markdown about the word under the cursor (a key, a name, a function).
    fn hover(&self, _doc: &EditorDoc, _offset: usize) -> Option<String> {
        None
    }

    /// What may be typed at the cursor. The document is often not valid mid-edit.
    fn complete(&self, _doc: &EditorDoc, _offset: usize) -> Vec<Completion> {
        Vec::new()
    }

    /// Where the name under the cursor is defined. `None` when the cursor is on no name the
    /// dialect resolves; an empty list when it is one but its definition is not found.
    fn definition(&self, _ws: &Workspace, _offset: usize) -> Option<Vec<Place>> {
        None
    }

    /// Where the name under the cursor is defined and used.
    fn references(&self, _ws: &Workspace, _offset: usize) -> Option<Vec<Place>> {
        None
    }
}
