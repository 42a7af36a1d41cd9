//! `verify: schema` at run time: validation (§5.2 of the runtime notes), a JSON Schema for
//! backends that can constrain generation, and the synthetic values of the mock backend.

use indexmap::IndexMap;
use pipewright_ir::schema::{Field, FieldKind, FieldType};
use pipewright_ir::{Schema, SchemaSet};
use pipewright_r1::Value;
use serde_json::json;

/// Refs deeper than this stop expanding; registered schemas are acyclic, so this only bounds
/// pathological but legal nesting.
const MAX_DEPTH: usize = 32;

/// Every violation as `path: message`, fields in declaration order. Fields are optional unless
/// `required`, and extra fields are allowed.
pub fn validate(value: &Value, schema: &Schema, set: &SchemaSet) -> Vec<String> {
    let mut errors = Vec::new();
    match value {
        Value::Object(o) => fields(o, &schema.fields, set, "", &mut errors, 0),
        other => errors.push(format!("expected object, got {}", other.type_name())),
    }
    errors
}

fn fields(
    o: &IndexMap<String, Value>,
    fs: &[Field],
    set: &SchemaSet,
    prefix: &str,
    errors: &mut Vec<String>,
    depth: usize,
) {
    for f in fs {
        let path = if prefix.is_empty() {
            f.name.clone()
        } else {
            format!("{prefix}.{}", f.name)
        };
        match o.get(&f.name) {
            None if f.required => errors.push(format!("{path}: required field is missing")),
            None => {}
            Some(v) => check(v, &f.ty, set, &path, errors, depth),
        }
    }
}

fn check(
    v: &Value,
    ty: &FieldType,
    set: &SchemaSet,
    path: &str,
    errors: &mut Vec<String>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        errors.push(format!("{path}: nesting deeper than {MAX_DEPTH}"));
        return;
    }
    let mismatch = |errors: &mut Vec<String>, want: &str| {
        errors.push(format!("{path}: expected {want}, got {}", v.type_name()))
    };
    match &ty.kind {
        FieldKind::Bool => {
            if !matches!(v, Value::Bool(_)) {
                mismatch(errors, "bool");
            }
        }
        FieldKind::String => {
            if !matches!(v, Value::Str(_)) {
                mismatch(errors, "string");
            }
        }
        FieldKind::Number { minimum, maximum } => match v.as_number() {
            None => mismatch(errors, "number"),
            Some(n) => {
                let x = n.as_f64();
                if let Some(min) = minimum.filter(|m| x < *m) {
                    errors.push(format!("{path}: {v} is below minimum {min}"));
                }
                if let Some(max) = maximum.filter(|m| x > *m) {
                    errors.push(format!("{path}: {v} is above maximum {max}"));
                }
            }
        },
        FieldKind::Enum(values) => {
            if !values.iter().any(|e| Value::from_json(e).deep_eq(v)) {
                let list: Vec<String> = values.iter().map(|e| e.to_string()).collect();
                errors.push(format!("{path}: {v} not in [{}]", list.join(", ")));
            }
        }
        FieldKind::List(of) => match v {
            Value::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    check(item, of, set, &format!("{path}[{i}]"), errors, depth + 1);
                }
            }
            _ => mismatch(errors, "list"),
        },
        FieldKind::Object(fs) => match v {
            Value::Object(o) => fields(o, fs, set, path, errors, depth + 1),
            _ => mismatch(errors, "object"),
        },
        FieldKind::Ref(name) => match set.get(name) {
            None => errors.push(format!("{path}: schema `{}` is not declared", name)),
            Some(s) => match v {
                Value::Object(o) => fields(o, &s.fields, set, path, errors, depth + 1),
                _ => mismatch(errors, &format!("object (ref {})", name)),
            },
        },
    }
}

/// A JSON Schema (draft 2020-12 subset) with refs inlined, for backends that constrain output.
pub fn json_schema(schema: &Schema, set: &SchemaSet) -> serde_json::Value {
    object_schema(&schema.fields, set, 0)
}

fn object_schema(fs: &[Field], set: &SchemaSet, depth: usize) -> serde_json::Value {
    let mut props = serde_json::Map::new();
    let mut required = Vec::new();
    for f in fs {
        props.insert(f.name.clone(), type_schema(&f.ty, set, depth + 1));
        if f.required {
            required.push(json!(f.name));
        }
    }
    let mut o = json!({"type": "object", "properties": props});
    if !required.is_empty() {
        o["required"] = json!(required);
    }
    o
}

fn type_schema(ty: &FieldType, set: &SchemaSet, depth: usize) -> serde_json::Value {
    if depth > MAX_DEPTH {
        return json!({});
    }
    match &ty.kind {
        FieldKind::Bool => json!({"type": "boolean"}),
        FieldKind::String => json!({"type": "string"}),
        FieldKind::Number { minimum, maximum } => {
            let mut o = json!({"type": "number"});
            if let Some(m) = minimum {
                o["minimum"] = json!(m);
            }
            if let Some(m) = maximum {
                o["maximum"] = json!(m);
            }
            o
        }
        FieldKind::Enum(values) => json!({"enum": values}),
        FieldKind::List(of) => json!({"type": "array", "items": type_schema(of, set, depth + 1)}),
        FieldKind::Object(fs) => object_schema(fs, set, depth + 1),
        FieldKind::Ref(name) => match set.get(name) {
            Some(s) => object_schema(&s.fields, set, depth + 1),
            None => json!({"type": "object"}),
        },
    }
}
