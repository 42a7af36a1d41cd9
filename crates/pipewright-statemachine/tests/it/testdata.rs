//! Snapshots of the diagnostics for every `testdata/statemachine/err` case (a file, or a
//! directory whose files are checked together as `check DIR` does); every `ok` recipe is
//! clean; every code is exercised and documented.

use pipewright_syntax::{Diagnostic, SourceMap};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/statemachine");
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// The err cases: `PW07xx-*.json` files and `PW07xx-*` directories.
fn err_cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root().join("err"))
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("PW"))
                })
                .collect()
        })
        .unwrap_or_default();
    cases.sort();
    cases
}

fn check(case: &Path) -> (SourceMap, Vec<Diagnostic>) {
    let files = if case.is_dir() {
        json_files(case)
    } else {
        vec![case.to_path_buf()]
    };
    let mut sources = SourceMap::new();
    let mut checker = pipewright_statemachine::Checker::default();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let file = sources.add(path.display().to_string(), text.as_str());
        checker.add(&mut sources, &path, file, &text);
    }
    let diags = checker.finish();
    (sources, diags)
}

/// Paths inside messages (a missing `$include`) are made relative too.
fn render(sources: &SourceMap, diags: &[Diagnostic]) -> String {
    let prefix = format!("{}/", root().display());
    pipewright_syntax::render::compact(diags, sources, &root()).replace(&prefix, "")
}

#[test]
fn err_cases_snapshot() {
    let cases = err_cases();
    assert!(cases.len() >= 28, "testdata/statemachine/err is missing");
    for case in cases {
        let (sources, diags) = check(&case);
        let name = case
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let code = &name[..6];
        assert!(
            diags.iter().any(|d| d.code == code),
            "{} does not produce {code}:\n{}",
            case.display(),
            render(&sources, &diags)
        );
        insta::assert_snapshot!(name, render(&sources, &diags));
    }
}

#[test]
fn the_eight_catalogue_recipes_check_clean_together_and_alone() {
    let ok = root().join("ok");
    let files = json_files(&ok);
    assert_eq!(
        files.len(),
        8,
        "the spec's catalogue (§5) has eight recipes"
    );
    let (sources, diags) = check(&ok);
    assert!(diags.is_empty(), "{}", render(&sources, &diags));
    for f in files {
        let (sources, diags) = check(&f);
        assert!(diags.is_empty(), "{}", render(&sources, &diags));
    }
}

#[test]
fn every_code_has_an_err_case_named_for_it_that_emits_it() {
    let mut emitted = BTreeSet::new();
    for case in err_cases() {
        emitted.extend(check(&case).1.iter().map(|d| d.code));
    }
    let general = ["PW0001", "PW0003", "PW0005"];
    for code in pipewright_statemachine::CODES
        .iter()
        .map(|c| c.code)
        .chain(general)
    {
        assert!(emitted.contains(code), "no testdata emits {code}");
        assert!(
            err_cases().iter().any(|p| p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{code}-")))),
            "no err case named for {code}"
        );
    }
}

#[test]
fn every_code_is_explained_with_examples() {
    let problems = pipewright_syntax::codes::explanation_problems(pipewright_statemachine::CODES);
    assert!(problems.is_empty(), "{problems:#?}");
}
