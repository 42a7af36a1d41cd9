//! The integration tests of pipewright-run: one module per former `tests/*.rs` file, linked into
//! one executable (one link instead of one per file; docs/ci.md, "Testing pipewright").

mod common;

mod backends;
mod budget;
mod cancel;
mod confine;
mod example;
mod openai;
mod openai_proxy;
mod openai_tls;
mod partial;
mod recursion;
mod sqlite_store;
mod steps;
mod store;
