//! `check --worst-case` (issue 25): the most agent calls each workflow can make, as PW0014
//! notes, in every dialect that asks agents; a note never fails the check.

use crate::common::*;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("the workspace root"))
}

fn worst_case(file: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["check", "--worst-case", file];
    args.extend_from_slice(extra);
    run_in(root(), &args)
}

/// Each fixture's notes, as a user reads them: a fan-out over a literal list multiplies its
/// body, a `match` counts its costliest case, a capped loop its cap times its retries, a state
/// machine's cycle its step cap times the prompt and reminder; a list known only at run time
/// has no bound, and the note points at the step that makes it so.
#[test]
fn worst_case_notes_in_every_dialect() {
    for f in [
        "reviews.yaml",
        "per-topic.yaml",
        "polish.yaml",
        "per-file.yaml",
        "review-fix.json",
    ] {
        let o = worst_case(&format!("testdata/worst_case/{f}"), &[]);
        assert_eq!(o.status.code(), Some(0), "a note never fails: {}", text(&o));
        insta::assert_snapshot!(format!("worst_case_{f}"), stdout(&o));
    }
}

/// Without the flag `check` lowers nothing and notes nothing (its speed and output are as
/// before).
#[test]
fn check_without_the_flag_notes_no_worst_case() {
    let o = run_in(root(), &["check", "testdata/worst_case/reviews.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!stdout(&o).contains("PW0014"), "{}", text(&o));
}

/// A configured budget below the worst case is named, with the call it stops before.
#[test]
fn a_budget_below_the_worst_case_is_named() {
    let d = tempdir();
    std::fs::copy(
        root().join("testdata/worst_case/reviews.yaml"),
        d.path().join("reviews.yaml"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        d.path().join("pipewright.toml"),
        "[run]\nmax_agent_calls = 4\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(
        d.path(),
        &[
            "check",
            "--worst-case",
            "reviews.yaml",
            "--deny",
            "warnings",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = stdout(&o);
    assert!(
        out.contains("`reviews` makes at most 5 agent calls")
            && out.contains("`[run] max_agent_calls = 4` stops a run that gets this far before its call number 5"),
        "{out}"
    );
}

/// JSON carries the notes with their code and severity, for editors and CI.
#[test]
fn worst_case_notes_in_json() {
    let o = worst_case("testdata/worst_case/per-topic.yaml", &["--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let s = v.to_string();
    assert!(s.contains("\"PW0014\"") && s.contains("\"note\""), "{s}");
    assert!(s.contains("known only at run time"), "{s}");
}

/// A file with errors gets its errors and no note: nothing is lowered from a broken file.
#[test]
fn a_file_with_errors_gets_no_worst_case() {
    let d = tempdir();
    std::fs::write(
        d.path().join("bad.yaml"),
        "pipeline: bad\nsteps:\n  - agent: {prompt: \"hi\", output: x}\n  - transform: {value: \"ctx.nope +\"}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["check", "--worst-case", "bad.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(!stdout(&o).contains("PW0014"), "{}", text(&o));
}
