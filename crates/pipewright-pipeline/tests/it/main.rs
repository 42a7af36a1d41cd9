//! The integration tests of pipewright-pipeline: one module per former `tests/*.rs` file, linked into
//! one executable (one link instead of one per file; docs/ci.md, "Testing pipewright").

mod expr_tags_and_outputs;
mod many_callers;
mod reuse;
mod robustness;
mod run;
