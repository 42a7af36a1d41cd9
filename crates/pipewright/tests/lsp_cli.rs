//! `pipewright lsp` as an editor starts it: JSON-RPC over the child's standard input and output,
//! and Neovim's own LSP client end to end.

mod common;

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
    assert_eq!(
        init["result"]["capabilities"]["textDocumentSync"]["change"],
        1
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
/// its server and reports what it received.
#[test]
fn neovim_receives_diagnostics_a_hover_and_a_definition() {
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
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lsp/nvim_e2e.lua");
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
}
