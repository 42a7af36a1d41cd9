//! The integration tests of pipewright-yaml: one module per former `tests/*.rs` file, linked into
//! one executable (one link instead of one per file; docs/ci.md, "Testing pipewright").

mod differential;
mod load;
