//! YAML with positions. serde-style loaders throw away where a value came from; every
//! pipewright diagnostic needs it, so this crate builds its own small node tree from the
//! events of `saphyr-parser`, keeping for each node its byte span, scalar style and tag.

mod load;
mod node;
mod offsets;
mod scalar;

pub use load::{load, Document, Limits};
pub use node::{Entry, Node, NodeKind, Tag};
pub use offsets::map_scalar_range;
pub use scalar::{Scalar, ScalarStyle, ScalarValue};
