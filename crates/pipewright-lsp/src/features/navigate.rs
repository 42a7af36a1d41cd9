use super::Doc;
use lsp_types::{Location, Position, Url};
use std::collections::HashMap;

pub fn definition(doc: &Doc, _at: Position, _docs: &HashMap<Url, Doc>) -> Option<Vec<Location>> {
    let _ = &doc.uri;
    None
}

pub fn references(_doc: &Doc, _at: Position, _docs: &HashMap<Url, Doc>) -> Option<Vec<Location>> {
    None
}
