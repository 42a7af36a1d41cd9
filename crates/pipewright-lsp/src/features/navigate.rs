//! Go to definition and find references: the document's dialect resolves the name under the
//! cursor in byte offsets of this document, the other open documents of its directory or files
//! on disk; here they become the protocol's locations.

use super::Doc;
use crate::text::LineIndex;
use lsp_types::{Location, Position, Url};
use pipewright_dialect::editor::{Place, PlaceFile, Workspace};
use std::collections::HashMap;

pub(crate) fn definition(
    doc: &Doc,
    at: Position,
    docs: &HashMap<Url, Doc>,
) -> Option<Vec<Location>> {
    let offset = LineIndex::new(&doc.text).offset(at);
    let siblings = siblings(doc, docs);
    let places = doc
        .editor()?
        .definition(&workspace(doc, &siblings), offset)?;
    Some(locations(doc, &siblings, places))
}

/// The definitions and uses of the name under the cursor.
pub(crate) fn references(
    doc: &Doc,
    at: Position,
    docs: &HashMap<Url, Doc>,
) -> Option<Vec<Location>> {
    let offset = LineIndex::new(&doc.text).offset(at);
    let siblings = siblings(doc, docs);
    let places = doc
        .editor()?
        .references(&workspace(doc, &siblings), offset)?;
    Some(locations(doc, &siblings, places))
}

/// The other open documents of `doc`'s directory, in path order.
fn siblings<'a>(doc: &Doc, docs: &'a HashMap<Url, Doc>) -> Vec<&'a Doc> {
    let mut others: Vec<&Doc> = docs
        .values()
        .filter(|d| d.uri != doc.uri && d.dir() == doc.dir())
        .collect();
    others.sort_by(|a, b| a.path.cmp(&b.path));
    others
}

fn workspace<'a>(doc: &'a Doc, siblings: &[&'a Doc]) -> Workspace<'a> {
    Workspace {
        doc: doc.as_editor_doc(),
        siblings: siblings.iter().map(|d| d.as_editor_doc()).collect(),
    }
}

/// A file on disk whose path is no URL is left out.
fn locations(doc: &Doc, siblings: &[&Doc], places: Vec<Place>) -> Vec<Location> {
    places
        .into_iter()
        .filter_map(|p| {
            let (uri, text) = match &p.file {
                PlaceFile::Current => (doc.uri.clone(), &*doc.text),
                PlaceFile::Sibling(i) => {
                    let d = siblings.get(*i)?;
                    (d.uri.clone(), &*d.text)
                }
                PlaceFile::Disk { path, text } => (Url::from_file_path(path).ok()?, &**text),
            };
            Some(Location::new(uri, LineIndex::new(text).range(p.span)))
        })
        .collect()
}
