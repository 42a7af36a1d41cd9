//! `check --fix`, `--format concise` (alias `--output-format`) and `--statistics`, end to end.

use crate::common::*;

/// A recipe with two misspelled keys, each with one did-you-mean.
const TYPOS: &str = "name: demo\ndescription: a demo\nversion: \"1.0.0\"\nsteps:\n  - id: a\n    agent: foundation:x\n    promt: \"Say hi\"\n    timout: 30\n";

#[test]
fn fix_applies_did_you_means_and_the_file_then_checks_clean() {
    let d = tempdir();
    let path = d.path().join("r.yaml");
    std::fs::write(&path, TYPOS).unwrap_or_else(|e| panic!("{e}"));
    let before = run_in(d.path(), &["check", "--format", "concise", "r.yaml"]);
    assert_eq!(before.status.code(), Some(1), "{}", text(&before));
    insta::assert_snapshot!("fix_before_concise", stdout(&before));

    let o = run_in(d.path(), &["check", "--fix", "r.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    insta::assert_snapshot!("fix_report", stdout(&o));
    let fixed = read(&path);
    assert_eq!(
        fixed,
        TYPOS
            .replace("promt:", "prompt:")
            .replace("timout:", "timeout:")
    );
    let again = run_in(d.path(), &["check", "r.yaml"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));

    // Idempotent: a second --fix finds nothing to do and changes nothing.
    let o = run_in(d.path(), &["check", "--fix", "r.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        stdout(&o).contains("applied 0 fixes in 0 files"),
        "{}",
        text(&o)
    );
    assert_eq!(read(&path), fixed);
}

#[test]
fn fix_with_a_machine_format_keeps_stdout_to_the_format() {
    let d = tempdir();
    std::fs::write(d.path().join("r.yaml"), TYPOS).unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["check", "--fix", "--format", "json", "r.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(doc["summary"]["errors"], 0);
    assert!(
        stderr(&o).contains("applied 2 fixes in 1 file"),
        "{}",
        text(&o)
    );
}

#[test]
fn output_format_is_an_alias_of_format_and_concise_is_one_line_each() {
    let d = tempdir();
    std::fs::write(d.path().join("r.yaml"), TYPOS).unwrap_or_else(|e| panic!("{e}"));
    let a = run_in(d.path(), &["check", "--output-format", "concise", "r.yaml"]);
    let b = run_in(d.path(), &["check", "--format", "concise", "r.yaml"]);
    assert_eq!(a.status.code(), Some(1), "{}", text(&a));
    assert_eq!(stdout(&a), stdout(&b));
    // Three diagnostics (two typos, the missing prompt), three lines, then the summary.
    assert_eq!(stdout(&a).lines().count(), 4, "{}", stdout(&a));
    assert!(stdout(&a).lines().all(|l| !l.starts_with(' ')));
}

#[test]
fn statistics_counts_per_code_most_frequent_first() {
    let d = tempdir();
    std::fs::write(d.path().join("r.yaml"), TYPOS).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        d.path().join("s.yaml"),
        "name: demo2\ndescription: d\nversion: \"1.0\"\nsteps:\n  - id: a\n    agent: foundation:x\n    prompt: hi\n    modle: m\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["check", "--statistics", "."]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    insta::assert_snapshot!("statistics", stdout(&o));
    let o = run_in(
        d.path(),
        &["check", "--statistics", "--format", "json", "."],
    );
    let rows: serde_json::Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(rows[0]["code"], "PW0504");
    assert_eq!(rows[0]["count"], 3);
    assert_eq!(rows[0]["fixable"], true);
}

/// `parallel: no` is False to the recipe runner (PyYAML) and the string "no" to YAML 1.2.
const YAML11: &str = "name: demo\ndescription: yes\nversion: \"1.0.0\"\ncontext:\n  items: [a, b]\nsteps:\n  - id: each\n    agent: foundation:x\n    prompt: \"Do {{item}}\"\n    foreach: \"{{items}}\"\n    parallel: no\n";

#[test]
fn a_yaml11_boolean_is_a_warning_that_fix_settles_for_both_readers() {
    let d = tempdir();
    let path = d.path().join("r.yaml");
    std::fs::write(&path, YAML11).unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["check", "r.yaml"]);
    // A warning now (it was PW0502, an error, "found a string"), with the runner's value.
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    insta::assert_snapshot!("yaml11_human", stdout(&o));
    let o = run_in(d.path(), &["check", "--fix", "r.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        read(&path),
        YAML11
            .replace("parallel: no", "parallel: false")
            .replace("description: yes", "description: \"yes\"")
    );
    let o = run_in(d.path(), &["check", "--deny", "warnings", "r.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // fmt leaves a plain `no` plain: quoting it would make the runner's False a string.
    std::fs::write(&path, YAML11).unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["fmt", "r.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = read(&path);
    assert!(out.contains("parallel: no\n"), "{out}");
    assert!(out.contains("description: yes\n"), "{out}");
}
