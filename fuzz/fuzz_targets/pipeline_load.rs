//! Arbitrary bytes through the YAML loader, the pipeline loader and every static check (plain,
//! and as an inline definition checked against an invoker), every diagnostic renderer, and,
//! for a file that checks clean, lowering and all three graph exports: no input may panic,
//! hang or overflow the stack.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipewright_ir::export::{dot::dot, json::json, mermaid::mermaid, ExportOptions};
use pipewright_pipeline::ast::Program;
use pipewright_pipeline::{check_program, load_source, CheckOptions};
use pipewright_syntax::SourceMap;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut sources = SourceMap::new();
    let id = sources.add("fuzz.yaml", text);
    let mut diags = Vec::new();
    let mut file = load_source(id, text, &mut diags);
    // The CLI names a file's namespace after its stem; `ns.name` call targets resolve by it.
    file.namespace = Some("fuzz".to_string());
    let program = Program { files: vec![file] };
    diags.extend(check_program(&program, &sources, &CheckOptions::default()));
    let inline = CheckOptions {
        inline: true,
        invoker: Some("fuzzer".to_string()),
        ..CheckOptions::default()
    };
    let _ = check_program(&program, &sources, &inline);
    pipewright_fuzz::render_all(&diags, &sources);
    if diags.iter().any(|d| d.is_error()) {
        return;
    }
    let ir = pipewright_pipeline::lower::pipeline(program);
    let opts = ExportOptions::default();
    let _ = dot(&ir, &opts);
    let _ = mermaid(&ir, &opts);
    let _ = json(&ir, &sources, &opts);
});
