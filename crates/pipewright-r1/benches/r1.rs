use criterion::{criterion_group, criterion_main, Criterion};
use pipewright_r1::{eval, parse, Scope, Value};
use std::hint::black_box;

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

criterion_group!(benches, bench);
criterion_main!(benches);
