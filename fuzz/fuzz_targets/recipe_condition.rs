#![no_main]
//! The condition and template languages parse, evaluate and render any text without panicking,
//! and every reported range lies inside the input.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data) {
        let ctx = serde_json::json!({"a": "x", "n": 3, "b": true, "d": {"k": [1, 2]}, "z": null});
        let (_, issues) = pipewright_recipe::condition::parse(src);
        for i in &issues {
            assert!(i.range.start <= i.range.end && i.range.end <= src.len());
        }
        let _ = pipewright_recipe::condition::eval(src, &ctx);
        let (_, issues) = pipewright_recipe::template::parse(src);
        for i in &issues {
            assert!(i.range.start <= i.range.end && i.range.end <= src.len());
        }
        let _ = pipewright_recipe::template::render(src, &ctx);
    }
});
