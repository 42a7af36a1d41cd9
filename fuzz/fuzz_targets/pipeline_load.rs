//! Arbitrary bytes through the YAML loader, the pipeline loader and every static check: no
//! input may panic, hang or overflow the stack.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipewright_pipeline::ast::Program;
use pipewright_pipeline::{check_program, load_source, CheckOptions};
use pipewright_syntax::SourceMap;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut sources = SourceMap::new();
    let id = sources.add("fuzz.yaml", text);
    let mut diags = Vec::new();
    let file = load_source(id, text, &mut diags);
    let program = Program { files: vec![file] };
    let _ = check_program(&program, &sources, &CheckOptions::default());
});
