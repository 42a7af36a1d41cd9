//! The IR: one petgraph graph per workflow, one node/edge vocabulary for every dialect.
//!
//! [`lower::pipeline`] turns a checked pipeline document set into a [`Program`]; [`export`]
//! renders it as DOT, Mermaid or versioned JSON. `pipewright-run` interprets it.

pub mod export;
pub mod ir;
pub mod lower;

pub use ir::*;
