//! End to end: inline suppressions, `--ignore` and the `[check]` rule configuration, as every
//! output format and the exit status see them.

use crate::common::{run_in, tempdir, testdata};
use std::path::Path;
use std::process::Output;

/// Two PW0259 warnings: line 6 (`true:`) and line 7 (`"false":`).
const PIPELINE: &str = "pipeline: main
steps:
  - match:
      on: \"1 == 1\"
      cases:
        true: {pipeline: yes_path}
        \"false\": {pipeline: yes_path}
---
pipeline: yes_path
steps:
  - transform: {value: \"pipe\"}
";

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir: {e}"));
    }
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {name}: {e}"));
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

/// (code, severity, 1-based line) of every diagnostic of `check --format json`.
fn found(o: &Output) -> Vec<(String, String, u64)> {
    json(o)["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("no diagnostics array: {}", stdout(o)))
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default().to_string(),
                d["severity"].as_str().unwrap_or_default().to_string(),
                d["span"]["start_line"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

fn row(code: &str, severity: &str, line: u64) -> (String, String, u64) {
    (code.to_string(), severity.to_string(), line)
}

fn with_comment(line: usize, comment: &str) -> String {
    PIPELINE
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == line {
                format!("{l}  {comment}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

#[test]
fn the_file_as_is_has_two_warnings() {
    let dir = tempdir();
    write(dir.path(), "p.yaml", PIPELINE);
    let o = run_in(dir.path(), &["check", "--format", "json", "p.yaml"]);
    assert_eq!(
        found(&o),
        [row("PW0259", "warning", 6), row("PW0259", "warning", 7)]
    );
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn an_inline_suppression_removes_the_diagnostic_in_every_format() {
    let dir = tempdir();
    write(
        dir.path(),
        "p.yaml",
        &with_comment(7, "# pipewright: ignore[PW0259]"),
    );
    let o = run_in(dir.path(), &["check", "--format", "json", "p.yaml"]);
    assert_eq!(found(&o), [row("PW0259", "warning", 6)]);

    let o = run_in(dir.path(), &["check", "p.yaml"]);
    let human = stdout(&o);
    assert!(human.contains("p.yaml:6:9"), "{human}");
    assert!(!human.contains("p.yaml:7"), "{human}");
    assert!(human.contains("checked 1 file: 1 warning"), "{human}");

    let o = run_in(dir.path(), &["check", "--format", "sarif", "p.yaml"]);
    let sarif = json(&o);
    let results = sarif["runs"][0]["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {sarif}"));
    let lines: Vec<u64> = results
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(lines, [6]);

    let o = run_in(dir.path(), &["check", "--format", "github", "p.yaml"]);
    let gh = stdout(&o);
    assert_eq!(gh.lines().count(), 1, "{gh}");
    assert!(gh.contains("line=6"), "{gh}");
}

#[test]
fn a_comment_alone_on_the_line_before_suppresses_and_ignore_file_covers_the_file() {
    let dir = tempdir();
    let text = PIPELINE.replace(
        "        \"false\"",
        "        # pipewright: ignore[PW0259]\n        \"false\"",
    );
    write(dir.path(), "p.yaml", &text);
    let o = run_in(dir.path(), &["check", "--format", "json", "p.yaml"]);
    assert_eq!(found(&o), [row("PW0259", "warning", 6)]);

    write(
        dir.path(),
        "f.yaml",
        &format!("# pipewright: ignore-file[PW0259]\n{PIPELINE}"),
    );
    let o = run_in(dir.path(), &["check", "--format", "json", "f.yaml"]);
    assert_eq!(found(&o), []);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn an_unused_suppression_is_a_warning_that_deny_warnings_fails_on() {
    let dir = tempdir();
    write(
        dir.path(),
        "p.yaml",
        &with_comment(7, "# pipewright: ignore[PW0259, PW0100]"),
    );
    let o = run_in(dir.path(), &["check", "--format", "json", "p.yaml"]);
    assert_eq!(
        found(&o),
        [row("PW0259", "warning", 6), row("PW0012", "warning", 7)]
    );
    let d = &json(&o)["diagnostics"][1];
    assert_eq!(d["help"], "remove `PW0100` from the list");
    // The span is the code inside the comment.
    let col = d["span"]["start_col"].as_u64().unwrap_or_default() as usize;
    let line = with_comment(7, "# pipewright: ignore[PW0259, PW0100]");
    let line7 = line.lines().nth(6).unwrap_or_default();
    assert_eq!(line7.get(col - 1..col + 5), Some("PW0100"));
    assert_eq!(o.status.code(), Some(0));

    let o = run_in(dir.path(), &["check", "--deny", "warnings", "p.yaml"]);
    assert_eq!(o.status.code(), Some(1));
    let human = stdout(&o);
    assert!(human.contains("warning[PW0012]: unused suppression: no PW0100 diagnostic here"));

    // With both warnings gone, --deny warnings passes.
    write(
        dir.path(),
        "q.yaml",
        &with_comment(7, "# pipewright: ignore[PW0259]").replace(
            "        true:",
            "        # pipewright: ignore[PW0259]\n        true:",
        ),
    );
    let o = run_in(dir.path(), &["check", "--deny", "warnings", "q.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn unknown_codes_and_blanket_suppressions_are_reported_and_suppress_nothing() {
    let dir = tempdir();
    write(
        dir.path(),
        "p.yaml",
        &with_comment(7, "# pipewright: ignore[PW9999]"),
    );
    let o = run_in(dir.path(), &["check", "--format", "json", "p.yaml"]);
    assert_eq!(
        found(&o),
        [
            row("PW0259", "warning", 6),
            row("PW0259", "warning", 7),
            row("PW0013", "warning", 7)
        ]
    );
    write(
        dir.path(),
        "b.yaml",
        &with_comment(7, "# pipewright: ignore"),
    );
    let o = run_in(dir.path(), &["check", "--format", "json", "b.yaml"]);
    assert_eq!(
        found(&o),
        [
            row("PW0259", "warning", 6),
            row("PW0259", "warning", 7),
            row("PW0013", "warning", 7)
        ]
    );
}

#[test]
fn errors_can_be_suppressed_and_the_exit_status_follows_what_remains() {
    let dir = tempdir();
    let toml = std::fs::read_to_string(testdata("meow/err/PW0606-duplicate-id.meow.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    write(dir.path(), "t.meow.toml", &toml);
    let o = run_in(dir.path(), &["check", "t.meow.toml"]);
    assert_eq!(o.status.code(), Some(1));
    // TOML comments: the error is on the second `id = "a"` (line 7).
    let text = toml.replacen(
        "id = \"a\"\nexecutor = \"shell\"\ncommand = \"false\"",
        "id = \"a\" # pipewright: ignore[PW0606]\nexecutor = \"shell\"\ncommand = \"false\"",
        1,
    );
    assert_ne!(text, toml);
    write(dir.path(), "t.meow.toml", &text);
    let o = run_in(dir.path(), &["check", "--format", "json", "t.meow.toml"]);
    assert_eq!(found(&o), []);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn json_files_use_the_command_line_and_the_config() {
    let dir = tempdir();
    let sm = testdata("statemachine/err/PW0702-unknown-keys.json");
    std::fs::copy(&sm, dir.path().join("sm.json")).unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(dir.path(), &["check", "--format", "json", "sm.json"]);
    let rows = found(&o);
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r.0 == "PW0702"),
        "{rows:?}"
    );
    let o = run_in(
        dir.path(),
        &["check", "--format", "json", "--ignore", "PW0702", "sm.json"],
    );
    assert_eq!(found(&o), []);
    // A typo in --ignore would silently ignore nothing: it is a usage error.
    let o = run_in(dir.path(), &["check", "--ignore", "PW9999", "sm.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a pipewright diagnostic code"));
}

#[test]
fn config_severity_and_per_path_overrides() {
    let dir = tempdir();
    write(dir.path(), "p.yaml", PIPELINE);
    write(dir.path(), "legacy/old.yaml", PIPELINE);
    write(
        dir.path(),
        "pipewright.toml",
        "[check]\nerror = [\"PW0259\"]\n\n[[check.per-path]]\npaths = [\"legacy/**\"]\nignore = [\"PW0259\"]\n",
    );
    let o = run_in(
        dir.path(),
        &["check", "--format", "json", "p.yaml", "legacy"],
    );
    assert_eq!(
        found(&o),
        [row("PW0259", "error", 6), row("PW0259", "error", 7)]
    );
    let report = json(&o);
    let files: Vec<&str> = report["diagnostics"]
        .as_array()
        .map(|a| a.iter().filter_map(|d| d["file"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(files, ["p.yaml", "p.yaml"]);
    assert_eq!(o.status.code(), Some(1));
    let human = stdout(&run_in(dir.path(), &["check", "p.yaml"]));
    assert!(
        human.contains("reported as an error by `error` in the project config"),
        "{human}"
    );

    write(
        dir.path(),
        "pipewright.toml",
        "[check]\nwarn = [\"PW0259\", \"PW9998\"]\nignore = \"PW0012\"\n",
    );
    let o = run_in(dir.path(), &["check", "--format", "json", "p.yaml"]);
    let rows = found(&o);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows.iter().any(|r| r.0 == "PW0008"), "{rows:?}");
    assert!(json(&o)["diagnostics"]
        .as_array()
        .is_some_and(|a| a.iter().any(|d| d["message"]
            .as_str()
            .is_some_and(|m| m.contains("must be an array of strings")))));

    write(
        dir.path(),
        "pipewright.toml",
        "[check]\nwarn = [\"PW0259\", \"PW9998\"]\n",
    );
    let o = run_in(dir.path(), &["check", "--format", "json", "p.yaml"]);
    let d = json(&o)["diagnostics"]
        .as_array()
        .and_then(|a| a.iter().find(|d| d["code"] == "PW0008").cloned())
        .unwrap_or_else(|| panic!("no PW0008: {}", stdout(&o)));
    assert!(d["message"].as_str().is_some_and(|m| m.contains("PW9998")));
    assert_eq!(d["span"]["start_line"], 2);
    assert_eq!(o.status.code(), Some(1));
}
