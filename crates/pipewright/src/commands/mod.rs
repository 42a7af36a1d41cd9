pub mod check;
pub mod eval;
pub mod explain;
