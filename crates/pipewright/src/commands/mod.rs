pub mod check;
pub mod eval;
pub mod explain;
pub mod fmt;
pub mod graph;
pub mod load;
pub mod run;
pub mod runs;
