//! Property tests: printing round-trips, the fast and recovering parsers agree, and no input
//! makes the parser, printer, evaluator or type pass panic.

use pipewright_r1::ast::{BinOp, ByteRange, Combinator, Expr, ExprKind};
use pipewright_r1::parser::parse_slow;
use pipewright_r1::{check_types, eval, free_paths, parse, parse_template, Scope, TypeEnv, Value};
use proptest::prelude::*;

fn e(kind: ExprKind) -> Expr {
    Expr::new(kind, 0..0)
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("ctx".to_string()),
        Just("pipe".to_string()),
        Just("item".to_string()),
        Just("count".to_string()),
        "[a-z_][a-z0-9_]{0,5}".prop_filter("not a keyword", |s| {
            !["true", "false", "null", "and", "or", "not"].contains(&s.as_str())
        }),
    ]
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![name(), Just("and".to_string()), Just("true".to_string())]
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        Just(e(ExprKind::Null)),
        any::<bool>().prop_map(|b| e(ExprKind::Bool(b))),
        (0i64..i64::MAX).prop_map(|n| e(ExprKind::Int(n))),
        (0.0f64..1e20).prop_map(|x| e(ExprKind::Float(x))),
        "[a-z'\"\\\\\n\t é{}]{0,6}".prop_map(|s| e(ExprKind::Str(s.into()))),
        (name(), prop::collection::vec(segment(), 0..3)).prop_map(|(root, segs)| e(
            ExprKind::Path {
                root: root.into(),
                segments: segs
                    .into_iter()
                    .map(|s| (s.into(), ByteRange::default()))
                    .collect()
            }
        )),
    ]
}

fn binop() -> impl Strategy<Value = BinOp> {
    prop::sample::select(vec![
        BinOp::And,
        BinOp::Or,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::Lt,
        BinOp::Gt,
        BinOp::Le,
        BinOp::Ge,
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
    ])
}

fn expr() -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| e(ExprKind::List(v))),
            prop::collection::vec((segment(), inner.clone()), 0..3).prop_map(|v| e(
                ExprKind::Object(
                    v.into_iter()
                        .map(|(k, x)| (k.into(), ByteRange::default(), x))
                        .collect()
                )
            )),
            inner.clone().prop_map(|x| e(ExprKind::Not(Box::new(x)))),
            inner.clone().prop_map(|x| e(ExprKind::Neg(Box::new(x)))),
            (binop(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| e(ExprKind::Binary {
                op,
                lhs: Box::new(l),
                rhs: Box::new(r)
            })),
            (
                prop::sample::select(vec![
                    Combinator::Map,
                    Combinator::Filter,
                    Combinator::All,
                    Combinator::Any,
                    Combinator::Find
                ]),
                inner.clone(),
                name(),
                inner.clone()
            )
                .prop_map(|(func, list, param, body)| e(ExprKind::Call {
                    func,
                    args: vec![
                        list,
                        e(ExprKind::Lambda {
                            param: param.into(),
                            param_span: ByteRange::default(),
                            body: Box::new(body)
                        })
                    ]
                })),
            (
                prop::sample::select(vec![
                    Combinator::Count,
                    Combinator::Sum,
                    Combinator::ParseJson,
                    Combinator::ShellQuote
                ]),
                inner.clone()
            )
                .prop_map(|(func, a)| e(ExprKind::Call {
                    func,
                    args: vec![a]
                })),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| e(ExprKind::Call {
                func: Combinator::Join,
                args: vec![a, b]
            })),
            (
                inner.clone(),
                "[a-z.]{0,5}",
                prop::option::of(inner.clone())
            )
                .prop_map(|(a, p, d)| {
                    let mut args = vec![a, e(ExprKind::Str(p.into()))];
                    args.extend(d);
                    e(ExprKind::Call {
                        func: Combinator::Get,
                        args,
                    })
                }),
        ]
    })
}

fn scope_value() -> Value {
    Value::from_json(
        &serde_json::json!({"a": 1, "l": [1, 2.5, "x", null, {"k": true}], "o": {"and": [], "true": 0}}),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn print_then_parse_round_trips(ast in expr()) {
        let text = ast.to_string();
        let back = parse(&text);
        prop_assert!(back.is_ok(), "{text}: {back:?}");
        let back = back.unwrap_or_else(|_| e(ExprKind::Error));
        prop_assert!(back.same_as(&ast), "{text}\n  reparsed as {back}");
        prop_assert_eq!(back.to_string(), text);
    }

    #[test]
    fn fast_and_recovering_parsers_agree(ast in expr()) {
        let text = ast.to_string();
        prop_assert_eq!(parse(&text), parse_slow(&text));
    }

    #[test]
    fn evaluating_and_checking_never_panics(ast in expr()) {
        let v = scope_value();
        let scope = Scope::new().with("ctx", &v).with("item", &v).with("a", &v);
        let _ = eval(&ast, &scope);
        let _ = check_types(&ast, &TypeEnv::new());
        let _ = free_paths(&ast);
    }

    #[test]
    fn arbitrary_text_never_panics(src in "[a-z0-9 ()\\[\\]{},.:'\"<>=!&|?+*/-]{0,40}|\\PC{0,20}") {
        let fast = parse(&src);
        let slow = parse_slow(&src);
        if let Ok(e) = &fast {
            prop_assert_eq!(Ok(e.clone()), slow);
            let printed = e.to_string();
            let again = parse(&printed);
            prop_assert!(again.as_ref().is_ok_and(|a| a.same_as(e)), "{printed}");
        } else {
            prop_assert!(slow.is_err());
        }
        let _ = parse_template(&src);
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for src in [
        format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000)),
        format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000)),
        format!("{}1", "not ".repeat(100_000)),
        format!("{}1", "-".repeat(100_000)),
        format!("{}1", "- ".repeat(100_000)),
        "(".repeat(100_000),
        format!("{}x{}", "map(l, x -> ".repeat(1000), ")".repeat(1000)),
    ] {
        let errs = parse(&src).err().unwrap_or_default();
        assert!(errs.iter().any(|e| e.code == "PW0113"), "{}", &src[..20]);
        let _ = parse_template(&format!("{{{src}}}"));
    }
    assert!(parse(&format!("{}1{}", "(".repeat(100), ")".repeat(100))).is_ok());
    assert!(parse(&format!("{}1", "not ".repeat(100))).is_ok());
}

#[test]
fn long_chains_do_not_recurse() {
    let v = Value::Int(1);
    let scope = Scope::new().with("a", &v);
    for op in ["+", "and", "or", "*"] {
        let src = vec!["a"; 100_000].join(&format!(" {op} "));
        let expr = parse(&src).unwrap_or_else(|e| panic!("{e:?}"));
        assert!(eval(&expr, &scope).is_ok());
        let _ = check_types(&expr, &TypeEnv::new());
        assert_eq!(free_paths(&expr).len(), 100_000);
        assert_eq!(expr.to_string(), src);
        assert!(expr.same_as(&expr));
        let slow = parse_slow(&src).unwrap_or_else(|e| panic!("{e:?}"));
        assert!(slow.same_as(&expr));
    }
}

/// Found by the `r1_parse` fuzz target (a 475-byte input took 15 s): after a lambda's body
/// stopped short of a `[…]` or an operator with a broken operand, the level around the lambda
/// tried the same continuation again, and a call argument tried as a lambda was tried again as
/// an expression, doubling the work per enclosing lambda or call. Each pattern repeated 30
/// times would take hours that way; parsed once per position it takes
/// milliseconds. The parse runs on a thread so a regression fails here instead of hanging.
#[test]
fn broken_input_after_nested_lambdas_parses_in_linear_time() {
    let patterns = [
        "x -> t[",
        "[x -> x[",
        "x -> !x -> t[",
        "x -> x -> t[",
        "x -> a + [",
        "x -> a * (",
        "x -> a == (",
        "x -> a and (",
        "x -> a or [",
        "x -> a == not (",
        "f(x -> a, x -> b + [",
        "f(a -> [",
        "m(x, a -> [p(",
    ];
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for p in patterns {
            // 30 repetitions stay within the nesting limit (PW0113) for every pattern.
            let src = format!("{}!", p.repeat(30));
            let errs = parse(&src).err().unwrap_or_default();
            tx.send((p, errs.is_empty())).ok();
        }
    });
    for _ in patterns {
        match rx.recv_timeout(std::time::Duration::from_secs(20)) {
            Ok((p, no_errors)) => assert!(!no_errors, "{p:?} repeated parsed without an error"),
            Err(_) => panic!("a pattern took more than 20 s to parse"),
        }
    }
}
