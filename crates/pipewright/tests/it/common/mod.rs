//! Helpers shared by the end-to-end tests of `fmt`, `graph` and `run`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pipewright"));
    c.env("NO_COLOR", "1");
    c
}

/// Whether `program ARG` runs and succeeds (an optional tool a test needs is installed).
pub(crate) fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The environment switch of the slow suites (MEOW agents in tmux, Neovim as an LSP client,
/// pre-commit building the hooks): `PIPEWRIGHT_SLOW_TESTS=1` runs them. .ci/run sets it; a
/// plain `cargo test` skips them and stays quick.
pub(crate) const SLOW_TESTS: &str = "PIPEWRIGHT_SLOW_TESTS";

/// Whether a slow test is to be skipped: yes, after one line on stderr saying so and how to run
/// it, unless `PIPEWRIGHT_SLOW_TESTS=1`.
pub(crate) fn skip_slow_test() -> bool {
    if std::env::var_os(SLOW_TESTS).is_some_and(|v| v == "1") {
        return false;
    }
    // libtest and nextest name a test's thread after the test.
    let test = std::thread::current()
        .name()
        .unwrap_or("this slow test")
        .to_string();
    eprintln!("skipped {test} (a slow test): set {SLOW_TESTS}=1 to run it");
    true
}

pub(crate) fn testdata(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(sub)
}

pub(crate) fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

pub(crate) fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
}

/// Copies the files of `from`, and of its subdirectories one level down, into `to` (a
/// dialect's fixtures with the files they include).
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let p = entry.unwrap_or_else(|e| panic!("{e}")).path();
        if p.is_file() {
            copy_into(&p, to);
        } else if let Some(name) = p.file_name() {
            let sub = to.join(name);
            std::fs::create_dir_all(&sub).unwrap_or_else(|e| panic!("{e}"));
            for f in std::fs::read_dir(&p).unwrap_or_else(|e| panic!("{e}")) {
                copy_into(&f.unwrap_or_else(|e| panic!("{e}")).path(), &sub);
            }
        }
    }
}

/// Copies `from` into `dir` (keeping the file name) and returns the name.
pub(crate) fn copy_into(from: &Path, dir: &Path) -> String {
    let name = from
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| panic!("{} has no file name", from.display()));
    std::fs::copy(from, dir.join(&name)).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    name
}

pub(crate) fn run_in(dir: &Path, args: &[&str]) -> Output {
    bin()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("the pipewright binary runs: {e}"))
}

pub(crate) fn run_with_stdin(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = bin()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("the pipewright binary runs: {e}"));
    let mut input = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    input
        .write_all(stdin)
        .unwrap_or_else(|e| panic!("write stdin: {e}"));
    drop(input);
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("wait: {e}"))
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Both streams, for failure messages.
pub(crate) fn text(o: &Output) -> String {
    format!("--- stdout\n{}--- stderr\n{}", stdout(o), stderr(o))
}

pub(crate) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Polls `cond` every 10 ms until it holds; panics with `what` after `timeout`.
pub(crate) fn wait_for<T>(timeout: Duration, what: &str, mut cond: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts `pipewright run ARGS --format json` in `dir` in the background.
pub(crate) fn spawn_run(dir: &Path, args: &[&str]) -> std::process::Child {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    bin()
        .current_dir(dir)
        .args(&all)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("the pipewright binary runs: {e}"))
}

/// Waits for a spawned run and collects its output.
pub(crate) fn finish(child: std::process::Child) -> Output {
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("wait: {e}"))
}

/// Runs `pipewright meow ARGS…` outside any MEOW run (no `MEOW_ORCH_SOCK`, no `MEOW_AGENT`) and
/// asserts that it did nothing: exit 0, no output (the reference's helpers are silent there).
#[allow(dead_code)]
pub(crate) fn assert_meow_is_a_silent_no_op(dir: &Path, args: &[&str]) {
    let o = bin()
        .current_dir(dir)
        .env_remove("MEOW_ORCH_SOCK")
        .env_remove("MEOW_AGENT")
        .arg("meow")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
    assert!(
        o.stdout.is_empty() && o.stderr.is_empty(),
        "{args:?}: {}",
        text(&o)
    );
}

/// One HTTP/1.1 request as a test server on loopback reads it: the head and the body its
/// `Content-Length` announces, or whatever came before the peer closed.
pub(crate) fn read_http_request(sock: &mut impl std::io::Read) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(k) = sock.read(&mut buf) {
        if k == 0 {
            break;
        }
        got.extend_from_slice(&buf[..k]);
        let text = String::from_utf8_lossy(&got);
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(str::to_string)
                })
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if got.len() >= end + 4 + len {
                break;
            }
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}
