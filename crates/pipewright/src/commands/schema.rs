//! `pipewright schema DIALECT`: the JSON Schema of a dialect's files, generated from the tables
//! its loader uses (docs/schemas.md); schemas/ holds the same text.

use crate::cli::SchemaArgs;
use crate::exit::ExitStatus;

/// The schema text `pipewright schema` prints (and schemas/DIALECT.schema.json holds).
pub(crate) fn text(dialect: &dyn pipewright_dialect::Dialect) -> String {
    // A `Value` always serialises (its keys are strings).
    let mut s = serde_json::to_string_pretty(&dialect.json_schema()).unwrap_or_default();
    s.push('\n');
    s
}

pub(crate) fn run(args: &SchemaArgs) -> ExitStatus {
    out!("{}", text(args.dialect));
    ExitStatus::OK
}
