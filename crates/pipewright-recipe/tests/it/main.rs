//! The integration tests of pipewright-recipe: one module per former `tests/*.rs` file, linked into
//! one executable (one link instead of one per file; docs/ci.md, "Testing pipewright").

mod corpus;
mod dot;
mod python_oracle;
mod robustness;
mod runtime;
mod testdata;
