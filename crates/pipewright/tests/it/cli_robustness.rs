//! The command line under conditions a CI job or a shell pipeline creates: unreadable and
//! missing paths, files that are almost workflows, readers that close the pipe early, stdin as a
//! file, and the exit-code rules around them.

use crate::common;
use crate::common::{bin, run_in, run_with_stdin, tempdir, testdata};
use std::path::Path;
use std::process::{Output, Stdio};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is one JSON document ({e}): {}", stdout(o)))
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    if let Some(parent) = dir.join(name).parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir: {e}"));
    }
    std::fs::write(dir.join(name), bytes).unwrap_or_else(|e| panic!("write {name}: {e}"));
}

const RECIPE_WITH_AN_ERROR: &str =
    "name: r\nversion: \"1.0.0\"\nsteps:\n  - id: a\n    prompt: \"{{nope}}\"\n";

/// A directory with one finding, one file that is not UTF-8 (its first bad byte on line 2,
/// column 5), one file that is not a workflow and one that is almost a recipe.
fn mixed_dir() -> tempfile::TempDir {
    let dir = tempdir();
    write(dir.path(), "broken.yaml", RECIPE_WITH_AN_ERROR.as_bytes());
    write(dir.path(), "latin1.yaml", b"name: r\nbad: caf\xe9\n");
    write(dir.path(), "notes/other.yaml", b"colour: blue\n");
    write(
        dir.path(),
        "typo.yaml",
        b"naem: r\nversion: \"1.0.0\"\nsteps:\n  - id: a\n    prompt: hi\n",
    );
    dir
}

fn sarif_results(o: &Output) -> Vec<(String, String, u64, u64)> {
    let doc = json(o);
    doc["runs"][0]["results"]
        .as_array()
        .unwrap_or_else(|| panic!("results: {doc}"))
        .iter()
        .map(|r| {
            let loc = &r["locations"][0]["physicalLocation"];
            (
                r["ruleId"].as_str().unwrap_or_default().to_string(),
                loc["artifactLocation"]["uri"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                loc["region"]["startLine"].as_u64().unwrap_or_default(),
                loc["region"]["startColumn"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn an_unreadable_file_is_a_diagnostic_and_the_rest_is_still_reported() {
    let dir = mixed_dir();
    let o = run_in(
        dir.path(),
        &["check", "--format", "sarif", ".", "missing.yaml"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let results = sarif_results(&o);
    let has = |code: &str, uri: &str| results.iter().any(|r| r.0 == code && r.1.ends_with(uri));
    assert!(has("PW0009", "latin1.yaml"), "{results:?}");
    assert!(has("PW0009", "missing.yaml"), "{results:?}");
    assert!(has("PW0010", "typo.yaml"), "{results:?}");
    assert!(
        results.iter().any(|r| r.1.ends_with("broken.yaml")),
        "the other files' findings are kept: {results:?}"
    );
    let latin1 = results
        .iter()
        .find(|r| r.1.ends_with("latin1.yaml"))
        .unwrap_or_else(|| panic!("{results:?}"));
    assert_eq!((latin1.2, latin1.3), (2, 9), "points at the first bad byte");
}

#[test]
fn nothing_checkable_exits_2_but_still_prints_the_report() {
    let dir = tempdir();
    write(dir.path(), "latin1.yaml", b"name: caf\xe9\n");
    for format in ["sarif", "json", "github", "human"] {
        let o = run_in(
            dir.path(),
            &["check", "--format", format, "latin1.yaml", "missing.yaml"],
        );
        assert_eq!(o.status.code(), Some(2), "{format}: {}", stderr(&o));
        assert!(stdout(&o).contains("PW0009"), "{format}: {}", stdout(&o));
        assert!(
            stdout(&o).contains("missing.yaml"),
            "{format}: {}",
            stdout(&o)
        );
    }
    let o = run_in(dir.path(), &["check", "--format", "json", "missing.yaml"]);
    let summary = &json(&o)["summary"];
    assert_eq!(summary["files_checked"], 0, "{summary}");
    assert_eq!(summary["files_unreadable"], 1, "{summary}");
}

#[test]
fn skipped_files_are_counted_and_a_near_miss_gets_a_warning() {
    let dir = mixed_dir();
    let o = run_in(dir.path(), &["check", "."]);
    let out = stdout(&o);
    assert!(out.contains("warning[PW0010]"), "{out}");
    assert!(out.contains("did you mean `name`?"), "{out}");
    let last = out.lines().last().unwrap_or_default();
    assert!(last.starts_with("checked 1 file: "), "{last}");
    assert!(last.contains("1 path could not be read"), "{last}");
    assert!(last.contains("skipped 2 files"), "{last}");

    let o = run_in(dir.path(), &["check", "--format", "json", "."]);
    let summary = &json(&o)["summary"];
    assert_eq!(summary["files_checked"], 1, "{summary}");
    assert_eq!(summary["files_skipped"], 2, "{summary}");
    assert_eq!(summary["files_unreadable"], 1, "{summary}");
}

#[test]
fn near_misses_in_every_dialect() {
    let dir = tempdir();
    write(
        dir.path(),
        "p.yaml",
        b"pipline: p\nsteps:\n  - transform: {value: \"1\"}\n",
    );
    write(
        dir.path(),
        "s.json",
        br#"{"initalStep": "a", "steps": {"a": {"prompt": "x"}}}"#,
    );
    write(
        dir.path(),
        "m.toml",
        b"[main]\nname = \"m\"\n[[main.step]]\nid = \"a\"\n",
    );
    write(dir.path(), "plain.json", br#"{"colour": "blue"}"#);
    let o = run_in(dir.path(), &["check", "--format", "json", "."]);
    let doc = json(&o);
    let mut found: Vec<(String, String)> = doc["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"))
        .iter()
        .filter(|d| d["code"] == "PW0010")
        .map(|d| {
            (
                d["file"].as_str().unwrap_or_default().to_string(),
                d["label"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            (
                "./p.yaml".to_string(),
                "did you mean `pipeline`?".to_string()
            ),
            (
                "./s.json".to_string(),
                "did you mean `initialStep`?".to_string()
            ),
        ],
        "{doc}"
    );
    // `[main]` alone already routes the TOML file to the MEOW dialect: it is not skipped.
    assert_eq!(doc["summary"]["files_skipped"], 3, "{doc}");
    // It is checked as one, and the misspelled workflow key is named.
    let o = run_in(dir.path(), &["check", "--format", "json", "m.toml"]);
    let out = stdout(&o);
    assert!(
        out.contains("PW0610") && out.contains("did you mean `steps`?"),
        "{out}"
    );
    write(dir.path(), "m.toml", b"[[flow.step]]\nid = \"a\"\n");
    let o = run_in(dir.path(), &["check", "m.toml"]);
    assert!(
        stdout(&o).contains("did you mean `steps`?"),
        "{}",
        stdout(&o)
    );
}

#[cfg(unix)]
#[test]
fn an_unreadable_subdirectory_is_reported_by_its_own_name() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    write(dir.path(), "top/ok.yaml", RECIPE_WITH_AN_ERROR.as_bytes());
    write(dir.path(), "top/locked/inner.yaml", b"name: r\n");
    let perms = |p: &Path, mode| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("chmod: {e}"));
    };
    perms(dir.path(), 0o755);
    perms(&dir.path().join("top"), 0o755);
    perms(&dir.path().join("top/ok.yaml"), 0o644);
    perms(&dir.path().join("top/locked"), 0o000);
    // Root reads any directory, so the check runs as `nobody` when the tests run as root.
    let mut cmd = if unsafe_is_root() {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_pipewright"));
        c
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_pipewright"))
    };
    let o = cmd
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .args(["check", "--format", "json", "top"])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("setpriv/pipewright runs: {e}"));
    perms(&dir.path().join("top/locked"), 0o755);
    let doc = json(&o);
    let files: Vec<(&str, &str)> = doc["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"))
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default(),
                d["file"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert!(files.contains(&("PW0009", "top/locked")), "{doc}");
    assert!(
        files.iter().any(|(_, f)| *f == "top/ok.yaml"),
        "the readable part is checked: {doc}"
    );
}

fn unsafe_is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// Runs pipewright with stdout a pipe whose reader is already gone, as `… | head -c0` leaves it.
fn with_closed_stdout(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap_or_else(|e| panic!("pipe: {e}"));
    drop(reader);
    bin()
        .current_dir(examples_dir())
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("pipewright runs: {e}"))
}

fn examples_dir() -> std::path::PathBuf {
    common::examples()
}

#[test]
fn a_closed_pipe_ends_output_quietly_with_the_commands_own_exit_code() {
    let err_dir = testdata("pipeline/err");
    let err_dir = err_dir.to_string_lossy();
    let cases: [(&[&str], i32); 7] = [
        (&["explain", "--list"], 0),
        (&["explain", "PW0009"], 0),
        (&["check", &err_dir], 1),
        (&["check", "--format", "sarif", &err_dir], 1),
        (&["graph", "hello.yaml"], 0),
        (&["graph", "hello.yaml", "--format", "json"], 0),
        (&["eval", "1 + 1"], 0),
    ];
    for (args, code) in cases {
        let o = with_closed_stdout(args);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
    }
    let dir = tempdir();
    common::copy_into(&examples_dir().join("hello.yaml"), dir.path());
    let (reader, writer) = std::io::pipe().unwrap_or_else(|e| panic!("pipe: {e}"));
    drop(reader);
    let o = bin()
        .current_dir(dir.path())
        .args(["run", "hello.yaml", "--format", "json"])
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("pipewright runs: {e}"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

#[test]
fn fmt_exit_codes_separate_would_reformat_from_cannot_format() {
    let dir = tempdir();
    common::copy_into(&testdata("fmt/cli/messy.yaml"), dir.path());
    common::copy_into(&testdata("fmt/cli/broken.yaml"), dir.path());
    write(dir.path(), "latin1.yaml", b"name: caf\xe9\n");
    let o = run_in(dir.path(), &["fmt", "--check", "messy.yaml"]);
    assert_eq!(o.status.code(), Some(1), "would reformat: {}", stderr(&o));
    let o = run_in(dir.path(), &["fmt", "--check", "broken.yaml"]);
    assert_eq!(o.status.code(), Some(2), "cannot format: {}", stderr(&o));
    // One bad file never stops the others: messy.yaml is still reported.
    let o = run_in(
        dir.path(),
        &[
            "fmt",
            "--check",
            "latin1.yaml",
            "missing.yaml",
            "messy.yaml",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("would reformat messy.yaml"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("PW0009"), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.yaml"), "{}", stderr(&o));
}

#[test]
fn fmt_diff_of_an_absolute_path_has_a_git_style_header() {
    let dir = tempdir();
    let name = common::copy_into(&testdata("fmt/cli/messy.yaml"), dir.path());
    let abs = dir.path().join(&name);
    let abs = abs.to_string_lossy();
    let o = run_in(dir.path(), &["fmt", "--diff", &abs]);
    let out = stdout(&o);
    let rel = abs.trim_start_matches('/');
    assert!(
        out.starts_with(&format!("--- a/{rel}\n+++ b/{rel}\n")),
        "{out}"
    );
}

#[test]
fn eval_scope_binds_the_whole_top_level_and_exprs_may_start_with_a_minus() {
    let dir = tempdir();
    let o = run_in(dir.path(), &["eval", "-7 / 2"]);
    assert_eq!((o.status.code(), stdout(&o).trim()), (Some(0), "-3.5"));
    let o = run_in(dir.path(), &["eval", "-ctx.n", "--ctx", r#"{"n": 4}"#]);
    assert_eq!((o.status.code(), stdout(&o).trim()), (Some(0), "-4"));
    let o = run_in(
        dir.path(),
        &[
            "eval",
            "--scope",
            r#"{"ctx": {"n": 1}, "pipe": 2, "limit": 10}"#,
            "ctx.n + pipe + limit",
        ],
    );
    assert_eq!((o.status.code(), stdout(&o).trim()), (Some(0), "13"));
    let o = run_in(dir.path(), &["eval", "--scope", "{}", "--ctx", "{}", "1"]);
    assert_eq!(o.status.code(), Some(2), "--scope excludes --ctx");
    let o = run_in(dir.path(), &["eval", "--scope", "[1]", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--scope must be a JSON object"));
    let o = run_in(dir.path(), &["eval", "--help"]);
    assert!(
        stdout(&o).contains("JSON bound to `ctx`"),
        "the help says what --ctx binds: {}",
        stdout(&o)
    );
}

const AGENT_PIPELINE: &str = "pipeline: who\nsteps:\n  - agent:\n      prompt: \"who are you?\"\n";

fn identity_project(run_section: &str) -> tempfile::TempDir {
    let dir = tempdir();
    write(dir.path(), "who.yaml", AGENT_PIPELINE.as_bytes());
    // The agent answers with the identity it was started under.
    let toml = format!(
        "{run_section}[backend.command]\nargv = [\"sh\", \"-c\", \"printf %s \\\"$1\\\"\", \"sh\", \"{{identity}}\"]\n"
    );
    write(dir.path(), "pipewright.toml", toml.as_bytes());
    dir
}

#[test]
fn run_identity_comes_from_the_flag_then_the_config_then_the_default() {
    let dir = identity_project("");
    let o = run_in(dir.path(), &["run", "who.yaml", "--backend", "command"]);
    assert_eq!(stdout(&o).trim(), "\"pipewright\"", "{}", stderr(&o));
    let dir = identity_project("[run]\nidentity = \"release-bot\"\n");
    let o = run_in(dir.path(), &["run", "who.yaml", "--backend", "command"]);
    assert_eq!(stdout(&o).trim(), "\"release-bot\"", "{}", stderr(&o));
    let o = run_in(
        dir.path(),
        &[
            "run",
            "who.yaml",
            "--backend",
            "command",
            "--identity",
            "alice",
        ],
    );
    assert_eq!(stdout(&o).trim(), "\"alice\"", "{}", stderr(&o));
    let o = run_in(dir.path(), &["run", "who.yaml", "--identity", ""]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn graph_and_run_read_stdin_and_agree_on_a_file_without_pipelines() {
    let dir = tempdir();
    let hello = std::fs::read(examples_dir().join("hello.yaml"))
        .unwrap_or_else(|e| panic!("read hello.yaml: {e}"));
    let o = run_with_stdin(dir.path(), &["graph", "-", "--format", "mermaid"], &hello);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("flowchart"), "{}", stdout(&o));
    let o = run_with_stdin(dir.path(), &["run", "-"], &hello);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("Hello, world!"), "{}", stdout(&o));

    // No workflow at all is no dialect's file; a pipeline file with only schemas has nothing
    // to draw or run.
    write(dir.path(), "empty.yaml", b"# nothing yet\n");
    write(
        dir.path(),
        "schemas.yaml",
        b"schema: S\nfields:\n  a: {type: string}\n",
    );
    // `graph` exits 1 as `check` does; `run` 2: it could not start (docs/run.md).
    for (verb, code) in [("graph", 1), ("run", 2)] {
        let o = run_in(dir.path(), &[verb, "empty.yaml"]);
        assert_eq!(o.status.code(), Some(code), "{verb}: {}", stderr(&o));
        assert!(stderr(&o).contains("PW0002"), "{verb}: {}", stderr(&o));
        let o = run_in(dir.path(), &[verb, "schemas.yaml"]);
        assert_eq!(o.status.code(), Some(code), "{verb}: {}", stderr(&o));
        assert!(stderr(&o).contains("PW0201"), "{verb}: {}", stderr(&o));
    }
}

#[test]
fn small_ux_promises() {
    let dir = tempdir();
    write(
        dir.path(),
        "inline.yaml",
        b"pipeline: p\nsteps:\n  - agent:\n      prompt: hi\n      identity: mallory\n",
    );
    let o = run_in(dir.path(), &["check", "--inline", "inline.yaml"]);
    let out = stdout(&o);
    assert!(!out.contains("the invoker`"), "{out}");
    assert!(out.contains("no invoking identity was given"), "{out}");
    let o = run_in(dir.path(), &["check", "--invoker", "alice", "inline.yaml"]);
    assert_eq!(o.status.code(), Some(2), "--invoker needs --inline");

    let clean = testdata("pipeline/ok/hello.yaml");
    let o = run_in(
        dir.path(),
        &["check", "--format", "github", &clean.to_string_lossy()],
    );
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), String::new()));

    let o = run_in(dir.path(), &["check", "--format", "sarif", "inline.yaml"]);
    assert!(
        json(&o)["runs"][0]["tool"]["driver"]
            .get("informationUri")
            .is_none(),
        "no made-up home page"
    );

    let o = run_in(dir.path(), &["explain"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--list"), "{}", stderr(&o));
    let o = run_in(dir.path(), &["explain", "--list"]);
    let codes: Vec<String> = stdout(&o)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect();
    let mut sorted = codes.clone();
    sorted.sort();
    assert_eq!(codes, sorted);
}

#[test]
fn deny_warnings_says_the_warnings_failed_the_check() {
    let dir = mixed_dir();
    std::fs::remove_file(dir.path().join("latin1.yaml")).unwrap_or_else(|e| panic!("rm: {e}"));
    std::fs::remove_file(dir.path().join("broken.yaml")).unwrap_or_else(|e| panic!("rm: {e}"));
    let o = run_in(dir.path(), &["check", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = run_in(dir.path(), &["check", "--deny", "warnings", "."]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let last = stdout(&o).lines().last().unwrap_or_default().to_string();
    assert!(last.contains("warnings fail the check"), "{last}");
}

#[cfg(unix)]
#[test]
fn an_endless_input_stops_at_the_documented_limit() {
    let dir = tempdir();
    let o = run_in(dir.path(), &["check", "--format", "json", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        json(&o)["diagnostics"][0]["code"],
        "PW0011",
        "{}",
        stdout(&o)
    );
    for args in [
        &["graph", "/dev/zero"][..],
        &["fmt", "--check", "/dev/zero"],
    ] {
        let o = run_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("256 MiB input limit"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    write(
        dir.path(),
        "p.yaml",
        b"pipeline: p\nsteps:\n  - transform: {value: \"1\"}\n",
    );
    let o = run_in(dir.path(), &["run", "p.yaml", "--input-file", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("input limit"), "{}", stderr(&o));
}
