#![no_main]
//! Any text given to the state-machine checker yields diagnostics every renderer accepts, never
//! a panic or a hang; a file without errors lowers and exports as DOT, Mermaid and JSON.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut sources = pipewright_syntax::SourceMap::new();
    // A directory that does not exist: `$include`s and sibling recipes resolve to nothing.
    let path = std::path::Path::new("/nonexistent-fuzz-dir/recipe.json");
    let diags = pipewright_statemachine::check_file(&mut sources, path, text);
    pipewright_fuzz::render_all(&diags, &sources);
    let file = sources.add("recipe.json", text);
    if let Ok(program) = pipewright_statemachine::lower_file(&mut sources, path, file, text) {
        pipewright_fuzz::export_all(&program, &sources);
    }
});
