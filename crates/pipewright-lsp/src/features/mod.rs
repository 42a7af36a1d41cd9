//! What the server answers about one open document.

pub mod actions;
pub mod complete;
pub mod format;
pub mod hover;
pub mod navigate;

use lsp_types::Url;
use pipewright_dialect::editor::EditorDoc;
use pipewright_dialect::{Dialect, EditorFeatures, Source};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Clone)]
pub struct Doc {
    pub uri: Url,
    /// The file's path; for a document not saved yet (`untitled:`), the URI's path, which still
    /// carries the extension detection goes by.
    pub path: PathBuf,
    pub text: Arc<str>,
    pub version: i32,
}

impl Doc {
    pub fn new(uri: &Url, version: i32, text: String) -> Doc {
        let path = uri
            .to_file_path()
            .unwrap_or_else(|_| PathBuf::from(uri.path()));
        Doc {
            uri: uri.clone(),
            path,
            text: text.into(),
            version,
        }
    }

    pub fn dir(&self) -> PathBuf {
        self.path.parent().map(PathBuf::from).unwrap_or_default()
    }

    pub fn dialect(&self) -> Option<&'static dyn Dialect> {
        pipewright_registry::detect(&Source::new(&self.path, &self.text))
    }

    /// What the document's dialect answers an editor, if it is a workflow.
    pub fn editor(&self) -> Option<&'static dyn EditorFeatures> {
        self.dialect()?.editor()
    }

    pub fn as_editor_doc(&self) -> EditorDoc<'_> {
        EditorDoc {
            path: &self.path,
            text: &self.text,
        }
    }
}
