//! The integration tests of pipewright-meow: one module per former `tests/*.rs` file, linked into
//! one executable (one link instead of one per file; docs/ci.md, "Testing pipewright").

mod corpus;
mod members;
mod robustness;
mod testdata;
