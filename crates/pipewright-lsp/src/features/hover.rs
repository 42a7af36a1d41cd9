use super::Doc;
use crate::Config;
use lsp_types::{Hover, Position};

pub fn hover(_doc: &Doc, _at: Position, _config: &Config) -> Option<Hover> {
    None
}
