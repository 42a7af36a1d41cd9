//! The state-machine (JSON) formatter: whatever formats, formats again to the same text, and
//! the output holds the same JSON value with every string and number literal as written.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipewright_fmt::{format_source, Options, Syntax};
use pipewright_syntax::FileId;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let formatted = match format_source(FileId(0), text, Syntax::Json, Options::CANONICAL)
    {
        Ok(f) => f,
        Err(diags) => {
            pipewright_fuzz::no_internal_error(&diags, text, "state-machine");
            return;
        }
    };
    let out = &formatted.output;
    match format_source(FileId(0), out, Syntax::Json, Options::CANONICAL) {
        Ok(again) => assert!(
            again.output == *out,
            "not idempotent on {text:?}\nfirst: {out:?}\nsecond: {:?}",
            again.output
        ),
        Err(d) => panic!("the output of {text:?} does not format: {out:?}\n{d:#?}"),
    }
    let before: Result<serde_json::Value, _> = serde_json::from_str(text);
    let after: Result<serde_json::Value, _> = serde_json::from_str(out);
    match (before, after) {
        (Ok(a), Ok(b)) => assert!(a == b, "{text:?} formatted as {out:?} reads differently"),
        (a, b) => panic!("{text:?} formatted as {out:?}: {a:?} / {b:?}"),
    }
});
