//! Every amplifier recipe of the shared corpus gets the verdict `EXPECTED.tsv` names.
//! Skipped when the corpus is not present.

use std::path::Path;

/// Verdicts pipewright deliberately disagrees with, with the reason (see docs/recipe.md).
const KNOWN_DISAGREEMENTS: &[(&str, &str)] = &[(
    "amplifier/examples/context-intelligence/workflows/full-analysis-workflow.yaml",
    "the approval prompt of stage `execution` uses `{{else}}`, an undefined variable the runner fails on when it renders the prompt",
)];

#[test]
fn corpus_verdicts() {
    let root = Path::new("/work/shared/corpus");
    let Ok(tsv) = std::fs::read_to_string(root.join("EXPECTED.tsv")) else {
        eprintln!("corpus not present; skipped");
        return;
    };
    let mut mismatches = Vec::new();
    let mut n = 0;
    for line in tsv.lines() {
        let mut cols = line.split('\t');
        let (Some(file), Some(expected)) = (cols.next(), cols.next()) else {
            continue;
        };
        if !file.starts_with("amplifier/") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        n += 1;
        let mut sources = pipewright_syntax::SourceMap::new();
        let diags = pipewright_recipe::check_file(&mut sources, &root.join(file), &text);
        let got = if diags.iter().any(|d| d.is_error()) {
            "error"
        } else {
            "ok"
        };
        if got != expected && !KNOWN_DISAGREEMENTS.iter().any(|(f, _)| *f == file) {
            let first: Vec<String> = diags
                .iter()
                .filter(|d| d.is_error())
                .take(3)
                .map(|d| format!("{} {}", d.code, d.message))
                .collect();
            mismatches.push(format!("{file}: expected {expected}, got {got} {first:?}"));
        }
    }
    assert!(n >= 50, "only {n} amplifier files found");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
