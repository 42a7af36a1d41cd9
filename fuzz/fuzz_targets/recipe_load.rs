#![no_main]
//! Any text given to the recipe checker yields diagnostics that every renderer accepts, never a
//! panic or a hang.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut sources = pipewright_syntax::SourceMap::new();
        // A path in a directory that does not exist: sub-recipe references resolve to nothing.
        let path = std::path::Path::new("/nonexistent-fuzz-dir/recipe.yaml");
        let diags = pipewright_recipe::check_file(&mut sources, path, text);
        pipewright_fuzz::render_all(&diags, &sources);
    }
});
