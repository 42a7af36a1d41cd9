//! The integration tests of pipewright-fmt: one module per former `tests/*.rs` file, linked into
//! one executable (one link instead of one per file; docs/ci.md, "Testing pipewright").

mod common;

mod fmt;
mod memory;
mod prop;
mod pyyaml;
