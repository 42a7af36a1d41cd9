//! The IR: one petgraph graph per workflow, one node/edge vocabulary for every dialect.
//!
//! Each dialect crate lowers its checked AST into a [`Program`] (`pipewright_pipeline::lower`);
//! [`export`] renders it as DOT, Mermaid or versioned JSON. Each dialect's runtime runs it (or its own checked AST) on `pipewright-runtime`.

pub mod export;
pub mod expr;
pub mod ir;
pub mod schema;
pub mod worst_case;

pub use ir::*;
