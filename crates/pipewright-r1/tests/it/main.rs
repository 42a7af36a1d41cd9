//! The integration tests of pipewright-r1: one module per former `tests/*.rs` file, linked into
//! one executable (one link instead of one per file; docs/ci.md, "Testing pipewright").

mod budget;
mod conformance;
mod diagnostics;
mod properties;
