//! The evaluation budget (issue 11): an expression that would build more bytes or take more
//! steps than its limits fails with an error at the expression, instead of exhausting memory
//! (an abort) or running for minutes.

use pipewright_r1::eval::{eval_with, Limits};
use pipewright_r1::{parse, Scope, Value};

fn scope_with(name: &str, v: Value) -> Scope<'static> {
    Scope::new().with_owned(name, v)
}

#[test]
fn building_more_bytes_than_the_limit_fails_at_the_operation() {
    let src = "'<' + (s + s)";
    let e = parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    let scope = scope_with("s", Value::Str("x".repeat(1 << 20)));
    let limits = Limits {
        max_bytes: 1 << 20,
        ..Limits::default()
    };
    let err = eval_with(&e, &scope, &limits).expect_err("2 MiB built under a 1 MiB budget");
    assert_eq!(&src[err.range.clone()], "(s + s)", "{err:?}");
    assert!(err.message.contains("max_eval_bytes"), "{}", err.message);
    // Under the default budget the same expression is fine.
    assert!(eval_with(&e, &scope, &Limits::default()).is_ok());
}

#[test]
fn copies_of_large_values_count_too() {
    let e = parse("map([1, 2, 3, 4], i -> big)").unwrap_or_else(|e| panic!("{e:?}"));
    let scope = scope_with("big", Value::Str("x".repeat(1 << 20)));
    let limits = Limits {
        max_bytes: 3 << 20,
        ..Limits::default()
    };
    let err = eval_with(&e, &scope, &limits).expect_err("four copies of 1 MiB");
    assert!(err.message.contains("max_eval_bytes"), "{}", err.message);
}

#[test]
fn taking_more_steps_than_the_limit_fails_naming_the_whole_expression() {
    let src = "count(map(xs, x -> map(xs, y -> x)))";
    let e = parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    let xs = Value::List((0..1000).map(Value::Int).collect());
    let scope = scope_with("xs", xs);
    let limits = Limits {
        max_steps: 100_000,
        ..Limits::default()
    };
    let err = eval_with(&e, &scope, &limits).expect_err("a million steps under 100,000");
    assert_eq!(err.range, 0..src.len(), "{err:?}");
    assert!(err.message.contains("max_eval_steps"), "{}", err.message);
    let ok = eval_with(&e, &scope, &Limits::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok, Value::Int(1000));
}

#[test]
fn string_doubling_stops_at_the_default_budget_instead_of_aborting() {
    // What a fold of `acc + acc` does one step at a time.
    let e = parse("acc + acc").unwrap_or_else(|e| panic!("{e:?}"));
    let mut acc = Value::Str("x".repeat(1024));
    for _ in 0..40 {
        let scope = Scope::new().with("acc", &acc);
        match eval_with(&e, &scope, &Limits::default()) {
            Ok(v) => acc = v,
            Err(err) => {
                assert!(err.message.contains("max_eval_bytes"), "{}", err.message);
                return;
            }
        }
    }
    panic!("doubled 40 times without hitting the budget");
}

/// A set stop flag ends a long evaluation within a few thousand steps, at the whole expression;
/// unset, it changes nothing.
#[test]
fn a_stop_flag_ends_the_evaluation() {
    use std::sync::atomic::AtomicBool;
    let src = "sum(map(xs, a -> sum(map(xs, b -> a * b))))";
    let e = parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    let xs = Value::List((0..20_000).map(|i| Value::from_json(&i.into())).collect());
    let scope = scope_with("xs", xs);
    let limits = Limits {
        max_steps: u64::MAX,
        max_bytes: u64::MAX,
    };
    let t0 = std::time::Instant::now();
    let err = pipewright_r1::eval_until(&e, &scope, &limits, &AtomicBool::new(true))
        .expect_err("stopped");
    assert!(t0.elapsed() < std::time::Duration::from_secs(1));
    assert!(err.message.contains("cancelled"), "{}", err.message);
    assert_eq!(err.range, 0..src.len());
    let small = parse("1 + 2").unwrap_or_else(|e| panic!("{e:?}"));
    let v = pipewright_r1::eval_until(&small, &scope, &limits, &AtomicBool::new(false));
    assert_eq!(v.ok().map(|v| v.to_json()), Some(3.into()));
}

/// A string literal on the right of an operator, or as `join`'s separator, is read where it
/// stands in the tree instead of being built as a value: the result, the error and what the
/// budget counts must be what the general path gives for the same string held in a variable.
#[test]
fn a_string_literal_operand_evaluates_as_the_same_string_in_a_variable() {
    let lefts = [
        Value::Str("b".into()),
        Value::Str(String::new()),
        Value::Str("a long left side".into()),
        Value::Int(1),
        Value::Null,
        Value::List(vec![Value::Str("x".into())]),
    ];
    let lits = ["b", "", "a", "zz"];
    let ops = [
        "+", "==", "!=", "<", ">", "<=", ">=", "-", "*", "/", "and", "or",
    ];
    for left in &lefts {
        for lit in lits {
            for op in ops {
                let with_lit = format!("l {op} '{lit}'");
                let with_var = format!("l {op} r");
                let scope = Scope::new()
                    .with_owned("l", left.clone())
                    .with_owned("r", Value::Str(lit.to_string()));
                for limits in [
                    Limits::default(),
                    // Enough steps for the operands, not for the operation; and a byte limit the
                    // literal alone, or the joined string, goes over.
                    Limits {
                        max_steps: 2,
                        ..Limits::default()
                    },
                    Limits {
                        max_bytes: 1,
                        ..Limits::default()
                    },
                    Limits {
                        max_bytes: 20,
                        ..Limits::default()
                    },
                ] {
                    // Building the literal counts its bytes, reading a variable does not: the
                    // variable's side gets that much less room. (A literal longer than the
                    // limit fails as any literal does, before the operator is reached.)
                    if lit.len() as u64 > limits.max_bytes {
                        continue;
                    }
                    let var_limits = Limits {
                        max_bytes: limits.max_bytes - lit.len() as u64,
                        ..limits
                    };
                    let run = |src: &str, limits: &Limits| {
                        let e = parse(src).unwrap_or_else(|e| panic!("{src}: {e:?}"));
                        eval_with(&e, &scope, limits)
                            .map_err(|e| (e.message, src[e.range].to_string()))
                    };
                    let (a, b) = (run(&with_lit, &limits), run(&with_var, &var_limits));
                    // The error names the operand in its own words: the literal, or `r`.
                    let b = b.map_err(|(m, at)| {
                        let m = m.replace(
                            &format!("more than {} bytes", var_limits.max_bytes),
                            &format!("more than {} bytes", limits.max_bytes),
                        );
                        (m, at.replace(" r", &format!(" '{lit}'")))
                    });
                    assert_eq!(a, b, "{with_lit} with l = {left:?} under {limits:?}");
                }
            }
        }
    }
    let scope = Scope::new().with_owned(
        "xs",
        Value::List(vec![Value::Str("a".into()), Value::Str("b".into())]),
    );
    for (lit, var) in [
        ("join(xs, ', ')", "join(xs, s)"),
        ("join(xs, 1)", "join(xs, n)"),
    ] {
        let scope = scope
            .clone()
            .with_owned("s", Value::Str(", ".into()))
            .with_owned("n", Value::Int(1));
        let run = |src: &str| {
            let e = parse(src).unwrap_or_else(|e| panic!("{src}: {e:?}"));
            eval_with(&e, &scope, &Limits::default()).map_err(|e| e.message)
        };
        assert_eq!(run(lit), run(var), "{lit}");
    }
}
