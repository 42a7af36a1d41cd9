//! The verdicts of ../shared/corpus/EXPECTED.tsv for the MEOW files: `ok` files have no error,
//! `error` files have at least one.

use pipewright_syntax::{Diagnostic, SourceMap};
use std::path::Path;

#[test]
fn corpus_verdicts_hold() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    let Ok(expected) = std::fs::read_to_string(corpus.join("EXPECTED.tsv")) else {
        eprintln!("corpus not present; skipped");
        return;
    };
    let (mut ok, mut err) = (0, 0);
    for line in expected.lines().filter(|l| l.starts_with("meow/")) {
        let mut cols = line.split('\t');
        let (Some(path), Some(verdict)) = (cols.next(), cols.next()) else {
            continue;
        };
        let full = corpus.join(path);
        let text = std::fs::read_to_string(&full).unwrap_or_default();
        let mut sources = SourceMap::new();
        let diags = pipewright_meow::check_file(&mut sources, &full, &text);
        let has_error = diags.iter().any(Diagnostic::is_error);
        assert_eq!(has_error, verdict == "error", "{path}: {diags:#?}");
        if has_error {
            err += 1;
        } else {
            ok += 1;
        }
    }
    assert_eq!((ok, err), (37, 5));
}
