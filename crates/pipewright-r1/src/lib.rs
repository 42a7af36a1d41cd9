//! R1, the small total expression language of pipewright pipelines: lexer, parser (with error
//! recovery), canonical printer, evaluator, static type pass, free-variable analysis and agent
//! prompt templates.

pub mod ast;
pub mod codes;
pub mod error;
pub mod eval;
mod fast;
pub mod lexer;
pub mod parser;
pub mod print;
pub mod refs;
pub mod template;
pub mod types;
pub mod value;

pub use ast::{BinOp, ByteRange, Combinator, Expr, ExprKind, Segment};
pub use codes::CODES;
pub use error::ParseError;
pub use eval::{eval, eval_until, eval_with, EvalError, Limits, Scope};
pub use parser::parse;
pub use refs::{certain_path_views, free_path_views, free_paths, PathRef, PathView};
pub use template::{parse_template, render, Template, TemplatePart};
pub use types::{check_types, FieldType, ObjectType, Type, TypeEnv, TypeIssue};
pub use value::Value;
