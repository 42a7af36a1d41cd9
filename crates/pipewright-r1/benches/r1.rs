use criterion::{criterion_group, criterion_main, Criterion};
use pipewright_r1::{eval, parse, Scope, Value};
use std::hint::black_box;

// What `pipewright` and its language server evaluate on: the figures are theirs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SRC: &str = "all(ctx.reviews, r -> r.passed) and count(ctx.reviews) > 2";

fn bench(c: &mut Criterion) {
    let ctx = Value::from_json(&serde_json::json!({
        "reviews": [{"passed": true, "by": "a"}, {"passed": true, "by": "b"}, {"passed": true, "by": "c"}]
    }));
    let scope = Scope::new().with("ctx", &ctx);
    let expr = parse(SRC).unwrap_or_else(|e| panic!("{e:?}"));
    c.bench_function("parse", |b| b.iter(|| parse(black_box(SRC))));
    c.bench_function("eval", |b| b.iter(|| eval(black_box(&expr), &scope)));
    c.bench_function("parse+eval", |b| {
        b.iter(|| parse(black_box(SRC)).map(|e| eval(&e, &scope)))
    });
}

/// The expressions a pipeline is mostly made of (the shapes of the `check` bench's generated
/// input and of the pipeline fixtures): a store read, a field test, string building, a call.
/// `per expression` is the time for all of them divided by their number.
const MIX: [&str; 6] = [
    "ctx.review.tags",
    "ctx.review.passed and 'OK' or 'NEEDS WORK'",
    "item + ' (' + ctx.verdict + ')'",
    "join(pipe, ', ')",
    "count(ctx.items) > 2",
    "ctx.n + 1",
];

fn mix(c: &mut Criterion) {
    let ctx = Value::from_json(&serde_json::json!({
        "review": {"passed": true, "tags": ["a", "b"]},
        "verdict": "OK",
        "items": [1, 2, 3],
        "n": 41
    }));
    let item = Value::from_json(&serde_json::json!("tag"));
    let pipe = Value::from_json(&serde_json::json!(["x", "y"]));
    let scope = Scope::new()
        .with("ctx", &ctx)
        .with("item", &item)
        .with("pipe", &pipe);
    let parsed: Vec<_> = MIX
        .iter()
        .map(|s| parse(s).unwrap_or_else(|e| panic!("{s}: {e:?}")))
        .collect();
    for e in &parsed {
        assert!(eval(e, &scope).is_ok(), "{e:?} evaluates");
    }
    let mut g = c.benchmark_group("mix of 6 (divide by 6 for per expression)");
    g.bench_function("parse", |b| {
        b.iter(|| {
            for s in MIX {
                let _ = black_box(parse(black_box(s)));
            }
        })
    });
    g.bench_function("eval", |b| {
        b.iter(|| {
            for e in &parsed {
                let _ = black_box(eval(black_box(e), &scope));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench, mix);
criterion_main!(benches);
