//! YAML with positions. serde-style loaders throw away where a value came from; every
//! pipewright diagnostic needs it, so this crate builds its own small node tree from the
//! events of `saphyr-parser`, keeping for each node its byte span, scalar style and tag.

mod fast;
mod json;
mod load;
mod node;
mod offsets;
mod printable;
mod scalar;
pub mod yaml11;

pub use load::{load, Document, Limits};

/// The two loaders behind `load`, for the differential tests and benchmarks only.
#[doc(hidden)]
pub mod paths {
    pub use crate::load::load_reference;

    /// The fast path alone: `None` where `load` falls back to the reference path.
    pub fn load_fast(
        file: pipewright_syntax::FileId,
        text: &str,
        limits: crate::Limits,
    ) -> Option<(Vec<crate::Document>, Vec<pipewright_syntax::Diagnostic>)> {
        crate::fast::load(file, text, limits)
    }
}
pub use json::to_json;
pub use node::{Entry, Node, NodeKind, Tag};
pub use offsets::map_scalar_range;
pub use scalar::{Scalar, ScalarStyle, ScalarValue};
