//! Parses arbitrary UTF-8, prints what parsed, re-parses the print (it must give the same tree)
//! and evaluates it; also runs the template parser and the static passes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipewright_r1::{check_types, eval, free_paths, parse, parse_template, Scope, TypeEnv, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_template(src);
    let Ok(expr) = parse(src) else { return };
    let printed = expr.to_string();
    match parse(&printed) {
        Ok(again) => assert!(
            again.same_as(&expr),
            "{src:?} printed as {printed:?} reparsed differently"
        ),
        Err(e) => panic!("{src:?} printed as {printed:?} does not parse: {e:?}"),
    }
    let ctx = parse("{a: 1, f: 2.5, s: 'x', l: [1, 'x', null, {k: true}], o: {and: [], n: null}}")
        .ok()
        .and_then(|e| eval(&e, &Scope::new()).ok())
        .unwrap_or(Value::Null);
    let scope = Scope::new()
        .with("ctx", &ctx)
        .with("pipe", &ctx)
        .with("item", &ctx);
    let _ = eval(&expr, &scope);
    let _ = check_types(&expr, &TypeEnv::new());
    let _ = free_paths(&expr);
});
