//! The integration tests of pipewright-lsp: one module per former `tests/*.rs` file, linked into
//! one executable (one link instead of one per file; docs/ci.md, "Testing pipewright").

mod common;

mod completion;
mod diagnostics;
mod features;
