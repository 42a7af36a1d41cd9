//! What the server answers about one open document.

pub(crate) mod actions;
pub(crate) mod complete;
pub(crate) mod format;
pub(crate) mod hover;
pub(crate) mod navigate;

use lsp_types::Url;
use pipewright_dialect::editor::EditorDoc;
use pipewright_dialect::{Dialect, EditorFeatures, Source};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Clone)]
pub(crate) struct Doc {
    pub uri: Url,
    /// The file's path; for a document not saved yet (`untitled:`), the URI's path, which still
    /// carries the extension detection goes by.
    pub path: PathBuf,
    pub text: Arc<str>,
    pub version: i32,
    /// What the last check kept of this document, for the next one to reuse.
    pub kept: pipewright_dialect::Kept,
}

impl Doc {
    pub(crate) fn new(uri: &Url, version: i32, text: String) -> Doc {
        let path = uri
            .to_file_path()
            .unwrap_or_else(|_| PathBuf::from(uri.path()));
        Doc {
            uri: uri.clone(),
            path,
            text: text.into(),
            version,
            kept: Default::default(),
        }
    }

    pub(crate) fn dir(&self) -> PathBuf {
        self.path.parent().map(PathBuf::from).unwrap_or_default()
    }

    pub(crate) fn dialect(&self) -> Option<&'static dyn Dialect> {
        pipewright_registry::detect(&Source::new(&self.path, &self.text))
    }

    /// What the document's dialect answers an editor, if it is a workflow.
    pub(crate) fn editor(&self) -> Option<&'static dyn EditorFeatures> {
        self.dialect()?.editor()
    }

    pub(crate) fn as_editor_doc(&self) -> EditorDoc<'_> {
        EditorDoc {
            path: &self.path,
            text: &self.text,
        }
    }
}
