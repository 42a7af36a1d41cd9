//! Snapshots of the diagnostics for bad expressions and for static type conflicts.

use pipewright_r1::types::{FieldType, ObjectType, Type, TypeEnv};
use pipewright_r1::{check_types, parse};
use pipewright_syntax::{FileId, Span};
use std::fmt::Write;

const BAD: &[&str] = &[
    "(1 + ) and count(",
    "a && b || !c",
    "x = 1",
    "a[0]",
    "ctx.items.0",
    "ctx.ok ? 'yes' : 'no'",
    "cont(ctx.l)",
    "foo(x)",
    "count(a, b)",
    "map(xs)",
    "map(xs, f)",
    "count(x -> x)",
    "x -> x + 1",
    "get(ctx, ctx.path)",
    "",
    "1 < 2 < 3",
    "99999999999999999999",
    "1 == not 2",
    "and",
    "map(xs, true -> 1)",
    "'unterminated",
    "1 % 2",
    "{'a': 1}",
    "[1, 2",
    "ctx.",
    "1e3",
    ".5",
    "a b",
];

#[test]
fn parse_errors() {
    let mut out = String::new();
    for src in BAD {
        let _ = writeln!(out, "=== {src:?}");
        match parse(src) {
            Ok(e) => {
                let _ = writeln!(out, "parsed: {e}");
            }
            Err(errs) => {
                for e in errs {
                    let _ = writeln!(out, "{} {:?} {}", e.code, e.range, e.message);
                    let _ = writeln!(out, "    label: {}", e.label);
                    if let Some(h) = &e.help {
                        let _ = writeln!(out, "    help: {h}");
                    }
                }
            }
        }
    }
    insta::assert_snapshot!(out);
}

fn env() -> TypeEnv {
    let schema_span = Span::new(FileId(1), 10..40);
    let mut review = ObjectType::closed(Some("Review"))
        .with_field("passed", Type::Bool)
        .with_field("score", Type::Int)
        .with_field("notes", Type::list(Type::Str));
    review.origin = Some(schema_span);
    review.fields.insert(
        "title".into(),
        FieldType {
            ty: Type::Str,
            origin: Some(Span::new(FileId(1), 20..25)),
        },
    );
    let ctx = ObjectType::closed(None)
        .with_field("review", Type::object(review.clone()))
        .with_field("reviews", Type::list(Type::object(review)))
        .with_field("flag", Type::Bool)
        .with_field("name", Type::Str)
        .with_field("n", Type::Int)
        .with_field("blob", Type::object(ObjectType::open()));
    TypeEnv::new()
        .with("ctx", Type::object(ctx))
        .with("pipe", Type::Any)
}

const TYPED: &[&str] = &[
    "ctx.review.pased",
    "ctx.review.zzz",
    "ctx.reviw",
    "ctx.blob.anything.deep",
    "pipe.anything + 1",
    "'a' + 1",
    "ctx.name + ctx.n",
    "ctx.flag < 2",
    "ctx.flag + 1",
    "ctx.name < 'b' and ctx.n > 1.5",
    "count(ctx.name)",
    "map(ctx.review, r -> r)",
    "sum(ctx.review.notes)",
    "sum(map(ctx.reviews, r -> r.score))",
    "join(map(ctx.reviews, r -> r.score), ', ')",
    "join(ctx.review.notes, 1)",
    "all(ctx.reviews, r -> r.passd)",
    "ctx.n.value",
    "parse_json(ctx.n)",
    "shell_quote(ctx.n)",
    "-ctx.name",
    "map([1, 2], x -> x.a)",
    "{a: 1}.b",
    "find(ctx.reviews, r -> r.passed) + 1",
    "get(ctx, 'anything.at.all', 1) + 1",
];

#[test]
fn type_issues() {
    let env = env();
    let mut out = String::new();
    for src in TYPED {
        let _ = writeln!(out, "=== {src}");
        let expr = match parse(src) {
            Ok(e) => e,
            Err(e) => {
                let _ = writeln!(out, "parse error: {e:?}");
                continue;
            }
        };
        let (ty, issues) = check_types(&expr, &env);
        let _ = writeln!(out, "type: {ty}");
        for i in issues {
            let d = i.to_diagnostic(|r| Span::new(FileId(0), r));
            let _ = writeln!(
                out,
                "{} {:?} {:?} {}",
                d.severity.as_str(),
                i.code,
                i.range,
                d.message
            );
            let _ = writeln!(out, "    label: {}", d.primary.message);
            if let Some(h) = &d.help {
                let _ = writeln!(out, "    help: {h}");
            }
            for s in &d.secondary {
                let _ = writeln!(out, "    secondary {:?}: {}", s.span.range(), s.message);
            }
        }
    }
    insta::assert_snapshot!(out);
}
