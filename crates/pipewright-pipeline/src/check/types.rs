//! R1 types of schemas and of step results.

use super::schemas::Registry;
use crate::ast::{Field, FieldKind, Schema, Step, StepKind};
use pipewright_r1::{FieldType, ObjectType, Type};

/// Refs nest at most this deep before the type is left as `Any` (cycles are reported
/// separately; this only keeps a cyclic registry from looping).
const MAX_REF_DEPTH: usize = 16;

pub(super) fn schema_type(s: &Schema, reg: &Registry) -> Type {
    object(Some(&s.name.text), &s.fields, Some(s.name.span), reg, 0)
}

fn object(
    name: Option<&str>,
    fields: &[Field],
    origin: Option<pipewright_syntax::Span>,
    reg: &Registry,
    depth: usize,
) -> Type {
    let mut o = ObjectType::closed(name);
    o.origin = origin;
    for f in fields {
        o.fields.insert(
            f.name.text.to_string(),
            FieldType {
                ty: field(&f.ty.kind, reg, depth),
                origin: Some(f.name.span),
            },
        );
    }
    Type::object(o)
}

fn field(k: &FieldKind, reg: &Registry, depth: usize) -> Type {
    match k {
        FieldKind::Bool => Type::Bool,
        FieldKind::String => Type::Str,
        FieldKind::Number { .. } => Type::Number,
        FieldKind::Enum(values) => {
            if values.iter().all(serde_json::Value::is_string) {
                Type::Str
            } else {
                Type::Any
            }
        }
        FieldKind::List(inner) => Type::list(field(&inner.kind, reg, depth)),
        FieldKind::Object(fs) => object(None, fs, None, reg, depth),
        FieldKind::Ref(n) => match reg.get(&n.text) {
            Some(s) if depth < MAX_REF_DEPTH => object(
                Some(&s.name.text),
                &s.fields,
                Some(s.name.span),
                reg,
                depth + 1,
            ),
            _ => Type::Any,
        },
    }
}

/// What a leaf step yields, where that is known without running it. Built once per schema name
/// and handed out as clones (which share the object type): rebuilding a schema's object type
/// for every agent step was a large share of checking a long pipeline.
#[derive(Default)]
pub(super) struct LeafResults<'a> {
    schemas: std::collections::HashMap<&'a str, Option<Type>>,
    tool: Option<Type>,
}

impl<'a> LeafResults<'a> {
    pub(super) fn of(&mut self, step: &'a Step, reg: &Registry) -> Option<Type> {
        match &step.kind {
            StepKind::Agent(a) => {
                let from_schema = a.schema.as_ref().and_then(|n| {
                    self.schemas
                        .entry(&*n.text)
                        .or_insert_with(|| reg.get(&n.text).map(|s| schema_type(s, reg)))
                        .clone()
                });
                Some(from_schema.unwrap_or(Type::Str))
            }
            StepKind::Tool { .. } | StepKind::Shell { .. } => {
                Some(self.tool.get_or_insert_with(tool_result).clone())
            }
            _ => None,
        }
    }
}

/// Tool results are normalised to `{text, structured?, meta?}`. A schema verifies the raw
/// result, and how the raw result maps onto `structured` depends on the tool, so `structured`
/// stays unknown.
fn tool_result() -> Type {
    let mut o = ObjectType::closed(Some("tool result"));
    o.fields.insert(
        "text".into(),
        FieldType {
            ty: Type::Str,
            origin: None,
        },
    );
    o.fields.insert(
        "structured".into(),
        FieldType {
            ty: Type::Any,
            origin: None,
        },
    );
    o.fields.insert(
        "meta".into(),
        FieldType {
            ty: Type::Any,
            origin: None,
        },
    );
    Type::object(o)
}
