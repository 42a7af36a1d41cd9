//! Declared shapes of values: what an agent's reply or a tool's result must look like. The
//! pipeline dialect's `schema:` documents lower to these; the interpreter validates against
//! them and gives them to backends as JSON Schema.

use pipewright_syntax::Span;

#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    pub name: String,
    pub fields: Vec<Field>,
    /// Where the schema is declared.
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: FieldType,
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FieldType {
    pub kind: FieldKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Bool,
    String,
    Number {
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Enum(Vec<serde_json::Value>),
    List(Box<FieldType>),
    Object(Vec<Field>),
    /// Another schema of the same set, by name.
    Ref(String),
}
