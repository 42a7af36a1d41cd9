//! End-to-end tests of `pipewright check`, `explain` and `eval` through the real binary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pipewright"));
    c.env("NO_COLOR", "1");
    c
}

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/pipeline")
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    bin()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the pipewright binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn files(sub: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(testdata().join(sub))
        .expect("testdata directory")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    v.sort();
    v
}

fn check_args(name: &str) -> Vec<String> {
    let mut args = vec!["check".to_string(), name.to_string()];
    if name.ends_with("_inline.yaml") {
        args.extend(["--inline", "--invoker", "alice"].map(String::from));
    }
    args
}

#[test]
fn ok_files_check_clean() {
    for name in files("ok") {
        let o = run_in(&testdata().join("ok"), &["check", &name]);
        assert_eq!(o.status.code(), Some(0), "{name}:\n{}", text(&o));
        assert!(text(&o).contains("no problems"), "{name}:\n{}", text(&o));
    }
}

#[test]
fn error_files_match_their_snapshots() {
    let dir = testdata().join("err");
    for name in files("err") {
        let args = check_args(&name);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_in(&dir, &args);
        let code = o.status.code();
        let snapshot = format!("exit: {code:?}\n{}", text(&o));
        insta::assert_snapshot!(name.trim_end_matches(".yaml"), snapshot);
        // The file name says which code it demonstrates; it must be reported.
        let expected = name.split('_').next().unwrap_or("");
        if !expected.contains("xx") {
            assert!(
                snapshot.contains(&format!("[{expected}]")),
                "{name} does not report {expected}"
            );
        }
    }
}

/// Every documented pipeline code (and every general one) has an error case in testdata.
#[test]
fn every_code_has_an_error_case() {
    let dir = testdata().join("err");
    let mut seen = BTreeSet::new();
    for name in files("err") {
        let args = check_args(&name);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = text(&run_in(&dir, &args));
        for part in out.split('[').skip(1) {
            if let Some(code) = part.get(..6).filter(|c| c.starts_with("PW")) {
                seen.insert(code.to_string());
            }
        }
    }
    let o = bin().args(["explain", "--list"]).output().expect("runs");
    let listed = String::from_utf8_lossy(&o.stdout).to_string();
    let mut missing = Vec::new();
    for line in listed.lines() {
        let code = line.split_whitespace().next().unwrap_or("");
        let owned_here =
            code.starts_with("PW02") || code.starts_with("PW03") || code.starts_with("PW000");
        // PW0006–PW0009 (command-line JSON, unsupported dialects, project config, unreadable
        // paths) have tests of their own (PW0009 in tests/cli_robustness.rs).
        if owned_here
            && !["PW0006", "PW0007", "PW0008", "PW0009"].contains(&code)
            && !seen.contains(code)
        {
            missing.push(code.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "codes without an error case in testdata/pipeline/err: {missing:?}"
    );
}

#[test]
fn one_pass_reports_every_file_and_sums_up() {
    let dir = testdata().join("err");
    let o = run_in(
        &dir,
        &[
            "check",
            "PW0203_unknown_key.yaml",
            "PW0256_unknown_tool.yaml",
        ],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(t.contains("PW0203") && t.contains("PW0256"), "{t}");
    assert!(t.trim_end().ends_with("checked 2 files: 2 errors"), "{t}");
}

#[test]
fn directories_are_walked_recursively() {
    let o = run_in(&testdata(), &["check", "ok"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("checked {} files", files("ok").len())),
        "{}",
        text(&o)
    );
}

#[test]
fn warnings_pass_unless_denied() {
    let dir = testdata().join("err");
    let o = run_in(&dir, &["check", "PW0259_match_label.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run_in(
        &dir,
        &["check", "--deny", "warnings", "PW0259_match_label.yaml"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn usage_and_io_failures_exit_2() {
    let o = run_in(&testdata(), &["check", "does-not-exist.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("does-not-exist.yaml"));
    let o = run_in(&testdata(), &["check", "--format", "xml", "ok/hello.yaml"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn machine_formats() {
    let dir = testdata().join("err");
    let json = run_in(
        &dir,
        &["check", "--format", "json", "PW0254_not_passed.yaml"],
    );
    assert_eq!(json.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json output parses");
    assert_eq!(v["version"], 1);
    assert_eq!(v["diagnostics"][0]["code"], "PW0254");
    assert_eq!(
        v["diagnostics"][0]["secondary"].as_array().map(Vec::len),
        Some(1)
    );

    let sarif = run_in(
        &dir,
        &["check", "--format", "sarif", "PW0254_not_passed.yaml"],
    );
    let v: serde_json::Value = serde_json::from_slice(&sarif.stdout).expect("sarif output parses");
    assert_eq!(v["version"], "2.1.0");
    assert_eq!(v["runs"][0]["results"][0]["ruleId"], "PW0254");
    assert_eq!(
        v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"],
        8
    );

    let gh = run_in(
        &dir,
        &["check", "--format", "github", "PW0254_not_passed.yaml"],
    );
    let out = String::from_utf8_lossy(&gh.stdout);
    assert!(
        out.starts_with("::error file=PW0254_not_passed.yaml,line=8,col="),
        "{out}"
    );
}

#[test]
fn color_never_with_no_color_or_without_a_tty() {
    let dir = testdata().join("err");
    let o = run_in(&dir, &["check", "PW0253_read_before_write.yaml"]);
    assert!(!text(&o).contains('\u{1b}'), "escape codes in piped output");
}

#[test]
fn explain_prints_wrong_and_right_examples() {
    let o = bin().args(["explain", "PW0253"]).output().expect("runs");
    assert_eq!(o.status.code(), Some(0));
    let t = text(&o);
    assert!(t.contains("Wrong") && t.contains("Right"), "{t}");
    let o = bin().args(["explain", "PW9999"]).output().expect("runs");
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn every_documented_code_explains_with_examples() {
    let o = bin().args(["explain", "--list"]).output().expect("runs");
    let listed = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(listed.lines().count() > 40, "{listed}");
    for line in listed.lines() {
        let code = line.split_whitespace().next().unwrap_or("");
        let t = text(&bin().args(["explain", code]).output().expect("runs"));
        assert!(
            t.contains("Wrong") && t.contains("Right"),
            "{code} lacks examples:\n{t}"
        );
    }
}

#[test]
fn eval_keeps_int_and_float_apart() {
    for (expr, want) in [
        ("6/2", "3"),
        ("6.0/2", "3.0"),
        ("7/2", "3.5"),
        ("ctx.n + 1", "3"),
        ("'a' + 'b'", "\"ab\""),
    ] {
        let o = bin()
            .args(["eval", "--ctx", r#"{"n": 2}"#, expr])
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(0), "{expr}: {}", text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), want, "{expr}");
    }
    let o = bin()
        .args([
            "eval",
            "--lang",
            "prompt",
            "--ctx",
            r#"{"xs": [1, "a"]}"#,
            "got {ctx.xs}",
        ])
        .output()
        .expect("runs");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        r#""got [1,\"a\"]""#
    );
}

#[test]
fn eval_errors_point_into_the_expression() {
    let o = bin().args(["eval", "ctx.a && 1"]).output().expect("runs");
    assert_eq!(o.status.code(), Some(1));
    insta::assert_snapshot!("eval_parse_error", text(&o));
    let o = bin()
        .args(["eval", "--ctx", "{}", "1 / 0"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(1));
    insta::assert_snapshot!("eval_runtime_error", text(&o));
}

#[test]
fn project_config_declares_tools_and_the_invoker() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("pipewright.toml"),
        "[tools.summarise]\ncommand = [\"python3\", \"s.py\"]\n\n[check]\ninvoker = \"alice\"\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("p.yaml"), "pipeline: p\nsteps:\n  - tool: {name: summarise}\n  - agent: {prompt: \"x\", identity: alice}\n").expect("write");
    let o = run_in(dir.path(), &["check", "--inline", "p.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    std::fs::write(
        dir.path().join("pipewright.toml"),
        "tools = [\"summarise\"]\n",
    )
    .expect("write");
    let o = run_in(dir.path(), &["check", "p.yaml"]);
    assert_eq!(o.status.code(), Some(1));
    let t = text(&o);
    assert!(t.contains("[PW0008]") && t.contains("[PW0256]"), "{t}");
}

#[test]
fn include_dirs_resolve_targets_without_reporting_their_problems() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = dir.path().join("lib");
    std::fs::create_dir(&lib).expect("mkdir");
    std::fs::write(lib.join("shared.yaml"), "pipeline: summarize\nsteps:\n  - transform: {value: \"ctx.nope + 1\"}\n  - tool: {name: bogus}\n").expect("write");
    std::fs::write(
        dir.path().join("main.yaml"),
        "pipeline: main\nsteps:\n  - call: {pipeline: shared.summarize}\n",
    )
    .expect("write");
    let o = run_in(dir.path(), &["check", "main.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("[PW0251]"));
    let o = run_in(dir.path(), &["check", "-I", "lib", "main.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// The real pipelines of the reference project check clean (skipped where the corpus is absent).
#[test]
fn real_world_pipelines_check_clean() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    let Ok(expected) = std::fs::read_to_string(corpus.join("EXPECTED.tsv")) else {
        eprintln!("corpus not present; skipping");
        return;
    };
    for line in expected.lines().filter(|l| l.starts_with("reyn/")) {
        let mut cols = line.split('\t');
        let (path, want) = (cols.next().unwrap_or(""), cols.next().unwrap_or(""));
        let o = run_in(&corpus, &["check", path]);
        let want_code = if want == "ok" { 0 } else { 1 };
        assert_eq!(o.status.code(), Some(want_code), "{path}:\n{}", text(&o));
    }
}

#[test]
fn eval_recipe_conditions_and_templates() {
    let cond = |ctx: &str, src: &str| {
        bin()
            .args(["eval", "--lang", "condition", "--ctx", ctx, src])
            .output()
            .expect("runs")
    };
    let o = cond(r#"{"n": 3, "s": "ok"}"#, "{{n}} > 2 and {{s}} == 'ok'");
    assert_eq!(
        (o.status.code(), String::from_utf8_lossy(&o.stdout).trim()),
        (Some(0), "true")
    );
    let o = cond(r#"{"n": "10"}"#, "{{n}} < 9");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "false",
        "numeric-aware comparison"
    );
    let o = cond("{}", "{{n}} >");
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("EXPR:1:8"), "{}", text(&o));
    let o = bin()
        .args([
            "eval",
            "--lang",
            "template",
            "--ctx",
            r#"{"a": {"b": 2}}"#,
            "x={{a.b}}",
        ])
        .output()
        .expect("runs");
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), r#""x=2""#);
}

#[test]
fn recipes_and_meow_templates_are_checked() {
    let recipes = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/recipe");
    let o = run_in(&recipes, &["check", "ok"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("w.meow.toml"),
        "[main]\nname = \"x\"\n[[main.steps]]\nid = \"a\"\n",
    )
    .expect("write");
    let o = run_in(dir.path(), &["check", "w.meow.toml"]);
    assert_eq!(o.status.code(), Some(1));
    // A step without an executor, no longer "cannot be checked" (PW0007).
    assert!(text(&o).contains("[PW0608]"), "{}", text(&o));
}

#[test]
fn config_include_dirs_resolve_targets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = dir.path().join("lib");
    std::fs::create_dir(&lib).expect("mkdir");
    std::fs::write(
        lib.join("shared.yaml"),
        "pipeline: summarize\nsteps:\n  - transform: {value: \"pipe\"}\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("main.yaml"),
        "pipeline: main\nsteps:\n  - call: {pipeline: shared.summarize}\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("pipewright.toml"),
        "[check]\ninclude = [\"lib\"]\n",
    )
    .expect("write");
    let o = run_in(dir.path(), &["check", "main.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// `--site loop` evaluates a recipe condition as `while_condition`/`break_when` are: values
/// pasted into the text first, so the quoted form authors are told to use works there.
#[test]
fn eval_condition_site_loop_renders_first() {
    let eval = |site: &str| {
        let o = bin()
            .args([
                "eval",
                "--lang",
                "condition",
                "--site",
                site,
                "--ctx",
                r#"{"s": "done"}"#,
                "'{{s}}' == 'done'",
            ])
            .output()
            .expect("runs");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).trim().to_string(),
        )
    };
    assert_eq!(eval("loop"), (Some(0), "true".to_string()));
    assert_eq!(eval("top-level"), (Some(0), "false".to_string()));
}

/// Found by the `recipe_load` fuzz target: a file with control characters in a quoted scalar
/// checked as YAML (PyYAML, which the reference runtimes load files with, refuses it), and the
/// characters reached the terminal as themselves, one diagnostic each.
#[test]
fn control_characters_are_invalid_yaml_and_never_printed_raw() {
    let dir = testdata().join("err");
    for format in ["human", "concise", "github"] {
        let o = run_in(
            &dir,
            &["check", "--format", format, "PW0001_control_character.yaml"],
        );
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let out = text(&o);
        assert!(
            out.contains("invalid YAML: the control character U+0015 is not allowed (and 3 more in this file)"),
            "{format}: {out}"
        );
        assert!(
            out.contains("PW0001_control_character.yaml:5:26")
                || out.contains("PW0001_control_character.yaml,line=5,col=26"),
            "{format}: {out}"
        );
        assert_eq!(
            out.matches("control character U+").count(),
            1,
            "{format}: {out}"
        );
        let raw: Vec<char> = out
            .chars()
            .filter(|&c| c.is_control() && c != '\n')
            .collect();
        assert!(raw.is_empty(), "{format}: {raw:?} in {out}");
    }
}
