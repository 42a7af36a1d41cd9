//! Snapshots of the diagnostics for every `testdata/recipe/err` file; every `ok` file is clean;
//! every code is exercised and documented.

use pipewright_syntax::{Diagnostic, SourceMap};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn testdata(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/recipe")
        .join(kind);
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn check(path: &Path) -> (SourceMap, Vec<Diagnostic>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut sources = SourceMap::new();
    let diags = pipewright_recipe::check_file(&mut sources, path, &text);
    (sources, diags)
}

fn render(sources: &SourceMap, diags: &[Diagnostic], root: &Path) -> String {
    pipewright_syntax::render::compact(diags, sources, root)
}

#[test]
fn err_files_snapshot() {
    let files = testdata("err");
    assert!(files.len() >= 41, "testdata/recipe/err is missing");
    for path in files {
        let (sources, diags) = check(&path);
        assert!(
            diags.iter().any(|d| d.code.starts_with("PW05")),
            "{} produced no recipe diagnostic",
            path.display()
        );
        let root = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let prefix = format!("{}/", root.display());
        insta::assert_snapshot!(name, render(&sources, &diags, &root).replace(&prefix, ""));
    }
}

#[test]
fn ok_files_are_clean() {
    let files = testdata("ok");
    assert!(!files.is_empty());
    for path in files {
        let (sources, diags) = check(&path);
        assert!(
            diags.is_empty(),
            "{}:\n{}",
            path.display(),
            render(&sources, &diags, Path::new(""))
        );
    }
}

#[test]
fn every_code_has_an_err_file_that_emits_it() {
    let mut emitted = BTreeSet::new();
    for path in testdata("err") {
        emitted.extend(check(&path).1.iter().map(|d| d.code));
    }
    for c in pipewright_recipe::CODES {
        assert!(emitted.contains(c.code), "no testdata emits {}", c.code);
        let stem = format!("{}-", c.code);
        assert!(
            testdata("err").iter().any(|p| p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&stem))),
            "no err file named for {}",
            c.code
        );
    }
}

#[test]
fn every_code_is_explained_with_examples() {
    let problems = pipewright_syntax::codes::explanation_problems(pipewright_recipe::CODES);
    assert!(problems.is_empty(), "{problems:#?}");
}
