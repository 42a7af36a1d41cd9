//! Runs parse, eval or both a fixed number of times, for `perf stat -e instructions` or
//! callgrind, whose counts do not depend on machine load the way criterion timings do.
//! Usage: `r1_profile parse|eval|both [iterations]`.

use pipewright_r1::{eval, parse, Scope, Value};
use std::hint::black_box;

const SRC: &str = "all(ctx.reviews, r -> r.passed) and count(ctx.reviews) > 2";

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "both".to_string());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let ctx = Value::from_json(&serde_json::json!({
        "reviews": [{"passed": true, "by": "a"}, {"passed": true, "by": "b"}, {"passed": true, "by": "c"}]
    }));
    let scope = Scope::new().with("ctx", &ctx);
    let Ok(expr) = parse(SRC) else {
        eprintln!("benchmark expression does not parse");
        std::process::exit(1);
    };
    for _ in 0..n {
        match mode.as_str() {
            "parse" => drop(black_box(parse(black_box(SRC)))),
            "eval" => drop(black_box(eval(black_box(&expr), &scope))),
            _ => drop(black_box(parse(black_box(SRC)).map(|e| eval(&e, &scope)))),
        }
    }
}
