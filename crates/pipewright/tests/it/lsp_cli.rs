//! `pipewright lsp` as an editor starts it: JSON-RPC over the child's standard input and output,
//! and Neovim's own LSP client end to end.

use crate::common;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

fn send(stdin: &mut ChildStdin, msg: &Value) {
    let body = msg.to_string();
    write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len())
        .unwrap_or_else(|e| panic!("write to the server: {e}"));
    stdin.flush().unwrap_or_else(|e| panic!("flush: {e}"));
}

/// One framed message from the server.
fn receive(out: &mut BufReader<ChildStdout>) -> Value {
    let mut len = None;
    loop {
        let mut line = String::new();
        let n = out
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("read from the server: {e}"));
        assert!(n > 0, "the server closed its output");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            len = v.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; len.unwrap_or_else(|| panic!("no Content-Length"))];
    out.read_exact(&mut body)
        .unwrap_or_else(|e| panic!("read the body: {e}"));
    serde_json::from_slice(&body).unwrap_or_else(|e| panic!("a JSON body: {e}"))
}

fn spawn() -> Child {
    common::bin()
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("the pipewright binary runs: {e}"))
}

#[test]
fn the_server_speaks_framed_json_rpc_on_stdio_and_exits_on_request() {
    let mut child = spawn();
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
    let mut out = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("stdout")));
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}),
    );
    let init = receive(&mut out);
    assert_eq!(init["id"], 1);
    // Incremental sync (2): an edit sends only the changed range.
    assert_eq!(
        init["result"]["capabilities"]["textDocumentSync"]["change"],
        2
    );
    assert_eq!(
        init["result"]["capabilities"]["documentFormattingProvider"],
        true
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    );
    let path = common::testdata("lsp/main.yaml")
        .canonicalize()
        .unwrap_or_else(|e| panic!("fixture: {e}"));
    let uri = format!("file://{}", path.display());
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "yaml", "version": 7, "text": common::read(&path)}}}),
    );
    let published = receive(&mut out);
    assert_eq!(published["method"], "textDocument/publishDiagnostics");
    assert_eq!(published["params"]["version"], 7);
    let codes: Vec<&str> = published["params"]["diagnostics"]
        .as_array()
        .map(|a| a.iter().filter_map(|d| d["code"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(codes, ["PW0251", "PW0253"]);
    // An unknown request is an error answer, not a crash.
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/nothing", "params": {}}),
    );
    let err = receive(&mut out);
    assert_eq!(err["id"], 2);
    assert_eq!(err["error"]["code"], -32601);
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}),
    );
    assert_eq!(receive(&mut out)["id"], 3);
    send(&mut stdin, &json!({"jsonrpc": "2.0", "method": "exit"}));
    drop(stdin);
    let status = wait(&mut child, Duration::from_secs(20));
    assert!(status.success(), "{status:?}");
}

fn wait(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap_or_else(|e| panic!("wait: {e}")) {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the process did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Neovim (headless, its built-in client) opens testdata/lsp/main.yaml with `pipewright lsp` as
/// its server and reports what it received, then edits it (incremental changes). Slow: runs with `PIPEWRIGHT_SLOW_TESTS=1`.
#[test]
fn neovim_receives_diagnostics_a_hover_and_a_definition() {
    if common::skip_slow_test() {
        return;
    }
    if !common::runs("nvim", "--version") {
        assert!(
            std::env::var_os("CI").is_none(),
            "nvim is missing under CI: .ci/run installs it (apt-get install neovim)"
        );
        eprintln!("nvim is not installed (apt-get install neovim); skipped");
        return;
    }
    let dir = common::tempdir();
    // A copy, so Neovim's files (none expected with -n) never land in the repository.
    for f in ["main.yaml", "lib.yaml"] {
        common::copy_into(&common::testdata("lsp").join(f), dir.path());
    }
    let main = dir.path().join("main.yaml");
    let out = dir.path().join("out.json");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/lsp/nvim_e2e.lua");
    let mut child = Command::new("nvim")
        .args(["--headless", "--clean", "-n", "-i", "NONE", "-c"])
        .arg(format!("luafile {}", script.display()))
        .env("PIPEWRIGHT", env!("CARGO_BIN_EXE_pipewright"))
        .env("LSP_FILE", &main)
        .env("LSP_OUT", &out)
        .env("HOME", dir.path())
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("nvim runs: {e}"));
    let status = wait(&mut child, Duration::from_secs(90));
    let report = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(status.success(), "nvim failed ({status:?}): {report}");
    let got: Value = serde_json::from_str(&report).unwrap_or_else(|e| panic!("{e}: {report}"));
    let diags = got["diagnostics"].as_array().cloned().unwrap_or_default();
    let mut seen: Vec<(i64, i64, String, String)> = diags
        .iter()
        .map(|d| {
            (
                d["lnum"].as_i64().unwrap_or(-1),
                d["col"].as_i64().unwrap_or(-1),
                d["code"].as_str().unwrap_or("").to_string(),
                d["message"]
                    .as_str()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                6,
                21,
                "PW0251".to_string(),
                "no pipeline named `sumarize` (unknown call target)".to_string()
            ),
            (
                7,
                44,
                "PW0253".to_string(),
                "`ctx.late` is read before any step writes it (read here)".to_string()
            ),
        ],
        "{report}"
    );
    let hover = got["hover"]["contents"]["value"].as_str().unwrap_or("");
    assert!(
        hover.starts_with("step kind `call`: Runs another pipeline"),
        "{report}"
    );
    let def = &got["definition"][0];
    assert!(
        def["uri"]
            .as_str()
            .is_some_and(|u| u.ends_with("/lib.yaml")),
        "{report}"
    );
    assert_eq!(
        def["range"]["start"],
        json!({"line": 1, "character": 10}),
        "{report}"
    );
    // After the edits (incremental changes): only the early read is left, at the same byte
    // column (Neovim's columns are bytes: the new text before it is 17 bytes, as was the old).
    let edited = &got["edited"][0];
    assert_eq!(edited["lnum"], 7, "{report}");
    assert_eq!(edited["col"], 44, "{report}");
    assert!(
        edited["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("`ctx.late` is read before any step writes it")),
        "{report}"
    );
}

// ---- framing and exit codes (issue 22, item 13) ---------------------------------------------

/// How a server fed raw bytes ended: exit code, stderr, peak resident set (KiB), and whether it
/// ended by itself within the limit (else it was killed).
struct Ended {
    code: Option<i32>,
    stderr: String,
    peak_kib: i64,
    by_itself: bool,
}

/// Starts `pipewright lsp` (with `env`), writes `bytes` to its stdin, keeps stdin open (a
/// server waiting for more must not be let off by an end of input), and waits up to `limit`
/// for it to exit, reading its peak memory from the kernel.
fn feed(bytes: &[u8], env: &[(&str, &str)], limit: Duration) -> Ended {
    let mut cmd = common::bin();
    cmd.arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("the pipewright binary runs: {e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
    // A server that stops reading makes this fail with a broken pipe; that is fine.
    let _ = stdin.write_all(bytes).and_then(|()| stdin.flush());
    let mut err = child.stderr.take().unwrap_or_else(|| panic!("stderr"));
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let pid = child.id() as libc::pid_t;
    let deadline = Instant::now() + limit;
    let mut status = 0;
    // SAFETY: zeroed `rusage` is a valid value of a plain C struct of integers.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut by_itself = true;
    loop {
        // SAFETY: `pid` is our own child, not yet waited for (`Child` is never waited on);
        // both pointers are to live locals.
        let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if got == pid {
            break;
        }
        assert_eq!(got, 0, "wait4: {}", std::io::Error::last_os_error());
        if Instant::now() > deadline && by_itself {
            by_itself = false;
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stdin);
    std::mem::forget(child);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Ended {
        code,
        stderr: reader.join().unwrap_or_default(),
        // Linux reports `ru_maxrss` in KiB.
        peak_kib: usage.ru_maxrss,
        by_itself,
    }
}

fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

const INIT: &str =
    r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}"#;

fn assert_clean_framing_error(e: &Ended, what: &str) {
    assert!(
        e.by_itself,
        "{what}: the server did not exit by itself; {}",
        e.stderr
    );
    assert_eq!(e.code, Some(1), "{what}: {}", e.stderr);
    assert!(!e.stderr.contains("panicked"), "{what}: {}", e.stderr);
    assert!(e.stderr.contains("framing error"), "{what}: {}", e.stderr);
    // A debug build of the server is a few tens of MiB; gigabytes would show.
    assert!(e.peak_kib < 256 * 1024, "{what}: peak {} KiB", e.peak_kib);
}

#[test]
fn a_huge_content_length_is_a_framing_error_not_an_allocation() {
    for (len, what) in [
        ("3000000000", "3 GB"),
        ("18446744073709551615", "u64::MAX"),
        ("99999999999999999999999", "past u64"),
    ] {
        let e = feed(
            format!("Content-Length: {len}\r\n\r\n{{\"jsonrpc\":").as_bytes(),
            &[],
            Duration::from_secs(20),
        );
        assert_clean_framing_error(&e, what);
        if what != "past u64" {
            assert!(
                e.stderr.contains("over the limit of 64 MiB"),
                "{what}: {}",
                e.stderr
            );
        }
    }
}

#[test]
fn malformed_headers_are_framing_errors() {
    let long = format!("X-{}: y\r\n", "a".repeat(10_000));
    let cases: [(&[u8], &str); 5] = [
        (long.as_bytes(), "a header line too long"),
        (b"Content-Length: -5\r\n\r\n", "a negative length"),
        (b"Content-Length: 12abc\r\n\r\n", "not a number"),
        (b"Content-Type: x\r\n\r\n{}", "no Content-Length"),
        (b"garbage without a colon\r\n\r\n", "not a header"),
    ];
    for (bytes, what) in cases {
        let e = feed(bytes, &[], Duration::from_secs(20));
        assert_clean_framing_error(&e, what);
    }
}

#[test]
fn the_message_limit_is_configurable() {
    let body = format!(
        r#"{{"jsonrpc": "2.0", "method": "x", "params": "{}"}}"#,
        "a".repeat(2 << 20)
    );
    let e = feed(
        &frame(&body),
        &[("PIPEWRIGHT_LSP_MAX_MESSAGE_MIB", "1")],
        Duration::from_secs(20),
    );
    assert_clean_framing_error(&e, "2 MiB over a 1 MiB limit");
    assert!(e.stderr.contains("over the limit of 1 MiB"), "{}", e.stderr);
    let e = feed(
        b"",
        &[("PIPEWRIGHT_LSP_MAX_MESSAGE_MIB", "lots")],
        Duration::from_secs(20),
    );
    assert_eq!(e.code, Some(2), "{}", e.stderr);
    assert!(
        e.stderr.contains("PIPEWRIGHT_LSP_MAX_MESSAGE_MIB"),
        "{}",
        e.stderr
    );
}

#[test]
fn exit_without_shutdown_exits_1_and_with_it_0() {
    let initialized = r#"{"jsonrpc": "2.0", "method": "initialized", "params": {}}"#;
    let exit = r#"{"jsonrpc": "2.0", "method": "exit"}"#;
    let shutdown = r#"{"jsonrpc": "2.0", "id": 2, "method": "shutdown"}"#;
    let mut bytes = [frame(INIT), frame(initialized), frame(exit)].concat();
    let e = feed(&bytes, &[], Duration::from_secs(20));
    assert!(e.by_itself, "{}", e.stderr);
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    assert!(e.stderr.contains("before `shutdown`"), "{}", e.stderr);
    bytes = [
        frame(INIT),
        frame(initialized),
        frame(shutdown),
        frame(exit),
    ]
    .concat();
    let e = feed(&bytes, &[], Duration::from_secs(20));
    assert!(e.by_itself, "{}", e.stderr);
    assert_eq!(e.code, Some(0), "{}", e.stderr);
}

#[test]
fn a_body_that_is_not_json_rpc_is_skipped_and_the_session_goes_on() {
    let mut child = spawn();
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
    let mut out = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("stdout")));
    let mut err = child.stderr.take().unwrap_or_else(|| panic!("stderr"));
    stdin
        .write_all(&[frame("{oops"), frame("[1, 2]"), frame(INIT)].concat())
        .unwrap_or_else(|e| panic!("write: {e}"));
    stdin.flush().unwrap_or_else(|e| panic!("flush: {e}"));
    assert_eq!(receive(&mut out)["id"], 1);
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
    );
    assert_eq!(receive(&mut out)["id"], 2);
    send(&mut stdin, &json!({"jsonrpc": "2.0", "method": "exit"}));
    drop(stdin);
    let status = wait(&mut child, Duration::from_secs(20));
    let mut log = String::new();
    let _ = err.read_to_string(&mut log);
    assert!(status.success(), "{status:?}: {log}");
    assert_eq!(log.matches("skipped a message").count(), 2, "{log}");
}

#[test]
fn input_ending_inside_a_message_is_a_framing_error() {
    let mut child = spawn();
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
    let mut err = child.stderr.take().unwrap_or_else(|| panic!("stderr"));
    let _ = stdin.write_all(b"Content-Length: 100\r\n\r\n{\"jsonrpc\"");
    drop(stdin);
    let status = wait(&mut child, Duration::from_secs(20));
    let mut log = String::new();
    let _ = err.read_to_string(&mut log);
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(log.contains("ended inside a message"), "{log}");
}
