//! `schema:` documents.

use crate::ast::*;
use crate::codes;
use pipewright_syntax::suggest::help_for_unknown;
use pipewright_syntax::Diagnostic;
use pipewright_yaml::{Node, NodeKind, ScalarValue};

pub(crate) const FIELD_TYPES: &[&str] =
    &["bool", "string", "number", "enum", "list", "object", "ref"];
/// The keys of a schema document, both required.
pub(crate) const SCHEMA_KEYS: &[&str] = &["schema", "fields"];
/// The attributes a field of each type means (others are ignored, PW0301), and the ones it
/// needs.
pub(crate) const FIELD_KEYS: &[(&str, &[&str])] = &[
    ("bool", &["type", "required", "description"]),
    ("string", &["type", "required", "description"]),
    (
        "number",
        &["type", "required", "minimum", "maximum", "description"],
    ),
    ("enum", &["type", "required", "values", "description"]),
    ("list", &["type", "required", "of", "description"]),
    ("object", &["type", "required", "fields", "description"]),
    ("ref", &["type", "required", "schema", "description"]),
];
pub(crate) const FIELD_REQUIRED_KEYS: &[(&str, &[&str])] = &[
    ("enum", &["values"]),
    ("list", &["of"]),
    ("object", &["fields"]),
    ("ref", &["schema"]),
];

pub(crate) fn load_schema(
    root: &Node,
    source: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<Schema> {
    let mut l = crate::load::Loader { source, diags };
    if let Some(m) = root.as_map() {
        l.unknown_keys(m, SCHEMA_KEYS, "a schema document", &[]);
    }
    let name = root
        .get("schema")
        .and_then(|n| l.name(n, "the schema name"));
    let fields = match root.entry("fields") {
        Some(e) => field_map(&mut l, &e.value, "`fields`"),
        None => {
            if let Some(k) = root.entry("schema") {
                l.missing(
                    k.key.span,
                    "fields",
                    "a schema",
                    "add `fields: {NAME: {type: string}, …}`",
                );
            }
            None
        }
    };
    Some(Schema {
        name: name?,
        fields: fields?,
        span: root.span,
    })
}

fn field_map(l: &mut crate::load::Loader, node: &Node, what: &str) -> Option<Vec<Field>> {
    let Some(m) = node.as_map().filter(|m| !m.is_empty()) else {
        l.diags.push(
            Diagnostic::error(
                codes::BAD_FIELD_TYPE,
                node.span,
                format!("{what} must be a non-empty mapping of field names to types"),
            )
            .with_label(format!("found {}", node.describe()))
            .with_help("for example `fields: {passed: {type: bool}}`"),
        );
        return None;
    };
    // A bad field is reported and left out; the schema itself stays, so references to it
    // still resolve.
    let mut out = Vec::new();
    for e in m {
        let Some(name) = l.name(&e.key, "a field name") else {
            continue;
        };
        let required = match e.value.get("required") {
            None => false,
            Some(r) => match r.as_scalar().map(|s| s.resolve()) {
                Some(ScalarValue::Bool(b)) => b,
                _ => {
                    l.wrong_type(r, "`required`", "`true` or `false`");
                    false
                }
            },
        };
        if let Some(ty) = field_type(l, &e.value, &name.text) {
            out.push(Field { name, ty, required });
        }
    }
    Some(out)
}

fn field_type(l: &mut crate::load::Loader, node: &Node, field: &str) -> Option<FieldType> {
    l.reject_tag(node);
    let Some(m) = node.as_map() else {
        let mut d = Diagnostic::error(
            codes::BAD_FIELD_TYPE,
            node.span,
            format!("the type of field `{field}` must be a mapping like `{{type: string}}`"),
        )
        .with_label(format!("found {}", node.describe()));
        if let NodeKind::Scalar(s) = &node.kind {
            if FIELD_TYPES.contains(&&*s.text) {
                d = d.with_help(format!("write `{{type: {}}}`", s.text));
            }
        }
        l.diags.push(d);
        return None;
    };
    let Some(t) = node.get("type") else {
        l.missing(
            node.span,
            "type",
            &format!("field `{field}`"),
            "add `type:` (one of bool, string, number, enum, list, object, ref)",
        );
        return None;
    };
    let ty = t.as_str().unwrap_or("");
    let allowed = crate::step_load::keys_of(FIELD_KEYS, ty);
    if FIELD_TYPES.contains(&ty) {
        for e in m {
            let k = e.key.key_text().unwrap_or("");
            if !allowed.contains(&k) {
                let d = Diagnostic::warning(
                    codes::MEANINGLESS_ATTRIBUTE,
                    e.key.span,
                    format!("`{k}` has no meaning for a `{ty}` field"),
                )
                .with_label("ignored attribute")
                .with_optional_help(help_for_unknown(k, allowed.iter().copied()));
                l.diags.push(d);
            }
        }
    }
    let kind = match ty {
        "bool" => FieldKind::Bool,
        "string" => FieldKind::String,
        "number" => {
            let bound = |l: &mut crate::load::Loader, k: &str| -> Option<f64> {
                let n = node.get(k)?;
                match n.as_scalar().map(|s| s.resolve()) {
                    Some(ScalarValue::Int(i)) => Some(i as f64),
                    Some(ScalarValue::Float(f)) => Some(f),
                    _ => {
                        l.wrong_type(n, &format!("`{k}`"), "a number");
                        None
                    }
                }
            };
            let (minimum, maximum) = (bound(l, "minimum"), bound(l, "maximum"));
            if let (Some(lo), Some(hi)) = (minimum, maximum) {
                if lo > hi {
                    let d = Diagnostic::error(
                        codes::UNSATISFIABLE_BOUNDS,
                        node.get("minimum").map_or(node.span, |n| n.span),
                        format!("`minimum` ({lo}) exceeds `maximum` ({hi})"),
                    )
                    .with_label("no number satisfies both bounds");
                    let d = match node.get("maximum") {
                        Some(mx) => d.with_secondary(mx.span, "maximum set here"),
                        None => d,
                    };
                    l.diags.push(d);
                }
            }
            FieldKind::Number { minimum, maximum }
        }
        "enum" => match node.get("values").and_then(|v| v.as_seq()) {
            Some(vals) if !vals.is_empty() => {
                FieldKind::Enum(vals.iter().map(crate::literal::to_json).collect())
            }
            _ => {
                l.diags.push(
                    Diagnostic::error(
                        codes::EMPTY_ENUM,
                        node.get("values").map_or(t.span, |v| v.span),
                        format!("enum field `{field}` needs a non-empty `values` list"),
                    )
                    .with_label("no allowed values")
                    .with_help("for example `{type: enum, values: [low, high]}`"),
                );
                return None;
            }
        },
        "list" => {
            let Some(of) = node.get("of") else {
                l.diags.push(
                    Diagnostic::error(
                        codes::BAD_LIST_TYPE,
                        t.span,
                        format!("list field `{field}` needs `of:` (lists are typed)"),
                    )
                    .with_label("element type missing")
                    .with_help("for example `{type: list, of: {type: string}}`"),
                );
                return None;
            };
            let inner = field_type(l, of, field)?;
            if matches!(inner.kind, FieldKind::List(_)) {
                l.diags.push(
                    Diagnostic::error(codes::BAD_LIST_TYPE, of.span, format!("list field `{field}` is a list of lists"))
                        .with_label("lists of lists are not allowed")
                        .with_help("wrap the inner list in an object: `{type: list, of: {type: object, fields: {items: {type: list, of: …}}}}`"),
                );
                return None;
            }
            FieldKind::List(Box::new(inner))
        }
        "object" => {
            let Some(f) = node.get("fields") else {
                l.missing(
                    t.span,
                    "fields",
                    &format!("object field `{field}`"),
                    "add `fields: {NAME: {type: …}}`",
                );
                return None;
            };
            FieldKind::Object(field_map(l, f, &format!("the fields of `{field}`"))?)
        }
        "ref" => match node.get("schema") {
            Some(s) => FieldKind::Ref(l.name(s, "the referenced schema")?),
            None => {
                l.missing(
                    t.span,
                    "schema",
                    &format!("ref field `{field}`"),
                    "add `schema: NAME`",
                );
                return None;
            }
        },
        other => {
            let mut d = Diagnostic::error(
                codes::BAD_FIELD_TYPE,
                t.span,
                format!("unknown field type `{other}`"),
            )
            .with_label("not a field type");
            let alias = match other {
                "integer" | "int" | "float" => Some("number"),
                "boolean" => Some("bool"),
                "str" | "text" => Some("string"),
                "array" => Some("list"),
                "dict" | "map" => Some("object"),
                _ => None,
            };
            d = match alias {
                Some(a) => d.with_help(format!("use `{a}`")),
                None => d.with_optional_help(help_for_unknown(other, FIELD_TYPES.iter().copied())),
            };
            l.diags.push(d);
            return None;
        }
    };
    Some(FieldType {
        kind,
        span: node.span,
    })
}
