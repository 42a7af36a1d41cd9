//! The vocabulary every stage of pipewright shares: where something is in a source file
//! ([`Span`], [`SourceMap`]) and what is wrong with it ([`Diagnostic`]).

pub mod codes;
pub mod diagnostic;
pub mod fix;
pub mod json_schema;
pub mod render;
pub mod source;
pub mod suggest;

pub use codes::CodeInfo;
pub use diagnostic::{Diagnostic, Label, Severity};
pub use fix::{Edit, Fix};
pub use source::{FileId, LineCol, SourceFile, SourceMap, Span};
