//! `pipewright schema DIALECT`: the JSON Schema of a dialect's files, generated from the tables
//! its loader uses (docs/schemas.md); schemas/ holds the same text.

use crate::cli::{SchemaArgs, SchemaDialect};

/// The schema text `pipewright schema` prints (and schemas/DIALECT.schema.json holds).
pub fn text(dialect: SchemaDialect) -> String {
    let schema = match dialect {
        SchemaDialect::Pipeline => pipewright_pipeline::schema::json_schema(),
        SchemaDialect::Recipe => pipewright_recipe::schema::json_schema(),
        SchemaDialect::StateMachine => pipewright_statemachine::schema::json_schema(),
        SchemaDialect::Meow => pipewright_meow::schema::json_schema(),
    };
    // A `Value` always serialises (its keys are strings).
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
    s.push('\n');
    s
}

pub fn run(args: &SchemaArgs) -> u8 {
    out!("{}", text(args.dialect));
    0
}
