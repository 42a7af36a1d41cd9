//! Truncated and mangled templates give diagnostics, never a panic.

use pipewright_syntax::SourceMap;
use std::path::{Path, PathBuf};

fn meow_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            meow_files(&p, out);
        } else if p.to_string_lossy().ends_with(".meow.toml") {
            out.push(p);
        }
    }
}

#[test]
fn prefixes_and_byte_flips_do_not_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    meow_files(&root.join("testdata/meow"), &mut files);
    let corpus = root.join("../shared/corpus/meow");
    if corpus.is_dir() {
        meow_files(&corpus, &mut files);
    } else {
        eprintln!("corpus not present; skipped");
    }
    assert!(files.len() >= 30);
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let step = (text.len() / 40).max(1);
        for cut in (0..text.len()).step_by(step) {
            if !text.is_char_boundary(cut) {
                continue;
            }
            let mut sources = SourceMap::new();
            pipewright_meow::check_file(&mut sources, &path, &text[..cut]);
            // Swap one byte for a TOML-significant one.
            for c in ["[", "\"", "=", "{", "}", "\n"] {
                let mangled = format!("{}{c}{}", &text[..cut], &text[cut..]);
                pipewright_meow::check_file(&mut sources, &path, &mangled);
            }
        }
    }
}
