//! No input makes check, fmt or lowering panic: every prefix and many single-byte changes of
//! every testdata file.

use pipewright_syntax::{FileId, SourceMap};
use std::path::{Path, PathBuf};

fn files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/statemachine");
    let mut v = Vec::new();
    for kind in ["ok", "err"] {
        for e in std::fs::read_dir(root.join(kind))
            .into_iter()
            .flatten()
            .flatten()
        {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "json") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

fn exercise(path: &Path, text: &str) {
    let mut sources = SourceMap::new();
    let file = sources.add(path.display().to_string(), text);
    let mut c = pipewright_statemachine::Checker::default();
    c.add(&mut sources, path, file, text);
    let diags = c.finish();
    for d in &diags {
        let f = sources.get(d.span().file).map(|f| f.slice(d.span()).len());
        assert!(
            f.is_some(),
            "{}: a diagnostic outside any file",
            path.display()
        );
    }
    if let Ok(out) = pipewright_statemachine::fmt::format(FileId(0), text) {
        assert_eq!(
            pipewright_statemachine::fmt::format(FileId(0), &out)
                .ok()
                .as_deref(),
            Some(out.as_str()),
            "{}: not idempotent",
            path.display()
        );
    }
    let _ = pipewright_statemachine::lower_file(&mut sources, path, file, text);
}

#[test]
fn prefixes_and_byte_changes_do_not_panic() {
    let paths = files();
    assert!(paths.len() > 30);
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let bytes = text.as_bytes();
        let step = (bytes.len() / 48).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            if text.is_char_boundary(cut) {
                exercise(&path, &text[..cut]);
            }
        }
        for (n, i) in (0..bytes.len()).step_by(step).enumerate() {
            let mut b = bytes.to_vec();
            b[i] = b"{}[]\",:0 -\\e"[n % 12];
            if let Ok(t) = String::from_utf8(b) {
                exercise(&path, &t);
            }
        }
    }
}
