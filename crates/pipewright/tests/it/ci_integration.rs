//! CI integration: the pre-commit hooks run by pre-commit itself, the GitHub Action's shape
//! (it cannot run here), and `--version`.

use crate::common::{bin, skip_slow_test, tempdir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("git runs: {e}"))
}

/// A YAML file loaded with PyYAML (as GitHub and pre-commit read these files), as JSON.
fn pyyaml(path: &Path) -> serde_json::Value {
    let o = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("python3 runs: {e}"));
    assert!(
        o.status.success(),
        "PyYAML cannot load {} (.ci/run installs PyYAML): {}",
        path.display(),
        text(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("JSON from python: {e}"))
}

#[test]
fn version_names_the_commit() {
    let o = bin()
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let out = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let prefix = format!("pipewright {} (commit ", env!("CARGO_PKG_VERSION"));
    let commit = out
        .strip_prefix(&prefix)
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("unexpected --version: {out}"));
    if commit == "unknown" {
        // Built outside a git checkout: nothing more to compare.
        assert!(!repo_root().join(".git").exists(), "a checkout, yet: {out}");
        return;
    }
    assert!(
        commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "{out}"
    );
    // Another commit may have landed since the build: the commit must exist, not be HEAD.
    let o = git(
        &repo_root(),
        &["cat-file", "-e", &format!("{commit}^{{commit}}")],
    );
    assert!(
        o.status.success(),
        "{commit} is no commit here: {}",
        text(&o)
    );
}

#[test]
fn the_action_is_a_composite_action_that_installs_checks_and_uploads() {
    let a = pyyaml(&repo_root().join("action.yml"));
    assert_eq!(a["runs"]["using"], "composite");
    for input in ["paths", "format", "args", "fail-on-findings", "sarif-file"] {
        assert!(
            a["inputs"][input]["description"].is_string(),
            "input {input}: {a}"
        );
    }
    assert_eq!(a["inputs"]["format"]["default"], "sarif");
    let steps = a["runs"]["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps"));
    // A composite action's `run` steps must each name their shell.
    for s in steps {
        if s.get("run").is_some() {
            assert_eq!(s["shell"], "bash", "{s}");
        }
    }
    let uses: Vec<&str> = steps.iter().filter_map(|s| s["uses"].as_str()).collect();
    assert!(
        uses.iter().any(|u| u.starts_with("actions/cache@")),
        "{uses:?}"
    );
    assert!(
        uses.iter()
            .any(|u| u.starts_with("github/codeql-action/upload-sarif@")),
        "{uses:?}"
    );
    let runs: String = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(runs.contains(
        "cargo install --locked --force --path \"$GITHUB_ACTION_PATH/crates/pipewright\""
    ));
    assert!(runs.contains("pipewright check --format sarif"));
    assert!(runs.contains("pipewright check --format github"));
    // Inputs reach scripts through the environment only (no `${{ inputs.… }}` in a script).
    assert!(!runs.contains("${{"), "{runs}");
    let sh = Command::new("bash")
        .arg("-n")
        .arg("-c")
        .arg(&runs)
        .output()
        .unwrap_or_else(|e| panic!("bash: {e}"));
    assert!(sh.status.success(), "{}", text(&sh));
}

/// The action's `pipewright check` step, run here with bash as the runner would run it (the
/// runner itself cannot run here): SARIF written, exit code recorded, a bad format refused.
#[test]
fn the_actions_check_step_runs_locally() {
    let a = pyyaml(&repo_root().join("action.yml"));
    let script = a["runs"]["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["id"] == "check"))
        .and_then(|s| s["run"].as_str())
        .unwrap_or_else(|| panic!("no step with id check: {a}"))
        .to_string();
    let dir = tempdir();
    std::fs::write(
        dir.path().join("p.yaml"),
        "pipeline: main\nsteps:\n  - call: {pipeline: nowhere}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_pipewright"));
    let path = std::env::join_paths(exe.parent().into_iter().map(Path::to_path_buf).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let run = |format: &str| {
        let out_file = dir.path().join(format!("github-output-{format}"));
        let o = Command::new("bash")
            .current_dir(dir.path())
            .arg("-e")
            .arg("-c")
            .arg(&script)
            .env("PATH", &path)
            .env("GITHUB_OUTPUT", &out_file)
            .env("PW_PATHS", "p.yaml")
            .env("PW_FORMAT", format)
            .env("PW_ARGS", "--deny warnings")
            .env("PW_SARIF", "report.sarif")
            .output()
            .unwrap_or_else(|e| panic!("bash: {e}"));
        (o, std::fs::read_to_string(out_file).unwrap_or_default())
    };
    let (o, outputs) = run("sarif");
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(outputs.trim(), "exit-code=1");
    let sarif: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("report.sarif")).unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("SARIF is JSON: {e}"));
    assert_eq!(sarif["runs"][0]["results"][0]["ruleId"], "PW0251");

    let (o, outputs) = run("github");
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(outputs.trim(), "exit-code=1");
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("::error file=p.yaml"),
        "{}",
        text(&o)
    );

    let (o, _) = run("xml");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stdout).contains("input format must be sarif or github"));
}

#[test]
fn the_hooks_file_declares_both_hooks() {
    let hooks = pyyaml(&repo_root().join(".pre-commit-hooks.yaml"));
    let ids: Vec<&str> = hooks
        .as_array()
        .map(|h| h.iter().filter_map(|h| h["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(ids, ["pipewright-check", "pipewright-fmt"]);
}

fn pre_commit_available() -> bool {
    Command::new("python3")
        .args(["-m", "pre_commit", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs the hooks of this repository (at HEAD) with pre-commit in a scratch git repository,
/// the way a user's `.pre-commit-config.yaml` names them: pre-commit clones this repository
/// and builds the hooks (`language: rust`) itself. Slow (pre-commit builds the whole CLI with
/// `cargo install`): runs with `PIPEWRIGHT_SLOW_TESTS=1`.
#[test]
fn pre_commit_runs_the_hooks_from_this_repository() {
    if skip_slow_test() {
        return;
    }
    if !pre_commit_available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "pre-commit is missing under CI: .ci/run installs it"
        );
        eprintln!(
            "pre-commit is not installed (python3 -m pip install --user pre-commit); skipped"
        );
        return;
    }
    let root = repo_root();
    let head = git(&root, &["rev-parse", "HEAD"]);
    let has_hooks = git(&root, &["cat-file", "-e", "HEAD:.pre-commit-hooks.yaml"]);
    if !head.status.success() || !has_hooks.status.success() {
        eprintln!("this checkout has no commit with .pre-commit-hooks.yaml; skipped");
        return;
    }
    let rev = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let started = Instant::now();
    let scratch = tempdir();
    let dir = scratch.path().join("repo");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(git(&dir, &["init", "-q"]).status.success());
    let config = format!(
        "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: pipewright-check\n      - id: pipewright-fmt\n",
        root.canonicalize().unwrap_or(root.clone()).display()
    );
    std::fs::write(dir.join(".pre-commit-config.yaml"), config).unwrap_or_else(|e| panic!("{e}"));
    // Not canonical (the spaces after `transform:`), and a call to a pipeline that does not
    // exist (an error).
    std::fs::write(
        dir.join("p.yaml"),
        "pipeline: main\nsteps:\n  - transform:   {value: \"pipe\"}\n  - call: {pipeline: nowhere}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Not a workflow: the directory walk skips it.
    std::fs::write(dir.join("other.yaml"), "a: 1\n").unwrap_or_else(|e| panic!("{e}"));
    assert!(git(&dir, &["add", "-A"]).status.success());

    // `language: rust`: pre-commit builds the hooks with `cargo install --path .` in its own
    // clone of this repository, so this build's binary stays off PATH. The environment keeps
    // that build offline and cheap: the dependencies come from cargo's local cache (the
    // workspace build fetched them) and compile once into a target directory kept between
    // runs; only this repository's crates are rebuilt, unoptimised, without the whole-program
    // LTO in one code generation unit that the shipped binary is built with (minutes here,
    // for a binary this test only runs).
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_pipewright"));
    let install_target = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("."))
        .join("pre-commit-install");
    let pre_commit = |args: &[&str]| {
        Command::new("python3")
            .current_dir(&dir)
            .args(["-m", "pre_commit"])
            .args(args)
            .env("PRE_COMMIT_HOME", scratch.path().join("cache"))
            .env("NO_COLOR", "1")
            .env("PRE_COMMIT_COLOR", "never")
            .env("CARGO_NET_OFFLINE", "true")
            .env("CARGO_TARGET_DIR", &install_target)
            .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
            .env("CARGO_PROFILE_RELEASE_DEBUG", "0")
            .env("CARGO_PROFILE_RELEASE_LTO", "false")
            .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
            .output()
            .unwrap_or_else(|e| panic!("pre-commit runs: {e}"))
    };

    let o = pre_commit(&["install-hooks"]);
    assert!(o.status.success(), "installing the hooks: {}", text(&o));
    // The hook's binary is the one pre-commit built, and it is the CLI.
    let installed = std::fs::read_dir(scratch.path().join("cache"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("rustenv-system/bin/pipewright-pre-commit"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no rustenv-system/bin/pipewright-pre-commit in the cache"));
    let o = Command::new(&installed)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with(&format!(
            "pipewright {} (commit {}",
            env!("CARGO_PKG_VERSION"),
            &rev[..7]
        )),
        "{}",
        text(&o)
    );

    let o = pre_commit(&["run", "--all-files"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("pipewright check"), "{out}");
    assert!(
        out.contains("error[PW0251]: no pipeline named `nowhere`"),
        "{out}"
    );
    assert!(out.contains("files were modified by this hook"), "{out}");
    let formatted = std::fs::read_to_string(dir.join("p.yaml")).unwrap_or_default();
    assert!(
        formatted.contains("  - transform: {value: pipe}\n"),
        "{formatted}"
    );

    // Fixed: both hooks pass.
    std::fs::write(
        dir.join("p.yaml"),
        "pipeline: main\nsteps:\n  - transform: {value: pipe}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(git(&dir, &["add", "-A"]).status.success());
    let o = pre_commit(&["run", "--all-files"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(out.matches("Passed").count(), 2, "{out}");
    eprintln!(
        "pre-commit test took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
