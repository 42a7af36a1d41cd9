//! The openai backend's API key through the real binary: a server that echoes the
//! `Authorization` header in its error body must not get the key into the report, the
//! diagnostics, the store or the events; shell steps and project tools do not see the key's
//! variable unless the project says so.

use crate::common::*;
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Output, Stdio};

const KEY_ENV: &str = "PW_TEST_SECRET_KEY";
const KEY: &str = "sk-e2e-secret-0123456789abcdefXYZ";

/// Answers `n` requests with `status`, quoting the request's Authorization header in a JSON
/// error body, on a local port; returns the URL.
fn echo_server(status: &'static str, n: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("local_addr: {e}"));
    std::thread::spawn(move || {
        for _ in 0..n {
            let Ok((mut sock, _)) = listener.accept() else {
                return;
            };
            let request = read_http_request(&mut sock);
            let auth = request
                .lines()
                .find(|l| l.to_ascii_lowercase().starts_with("authorization:"))
                .unwrap_or("none")
                .to_string();
            let body =
                serde_json::json!({"error": {"message": format!("rejected {auth}")}}).to_string();
            let _ = write!(
                sock,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/v1/chat/completions")
}

fn pipewright(dir: &Path, args: &[&str]) -> Output {
    bin()
        .current_dir(dir)
        .args(args)
        .env(KEY_ENV, KEY)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("the pipewright binary runs: {e}"))
}

/// A project whose first step is a shell step recording whether it saw the key's variable, then
/// (for `tools`) a project tool doing the same, then an agent step the server rejects.
fn project(url: &str, extra_config: &str) -> tempfile::TempDir {
    let d = tempdir();
    let config = format!(
        "[backend.openai]\nurl = \"{url}\"\napi_key_env = \"{KEY_ENV}\"\nmax_retries = 1\n\n[tools.probe]\ncommand = [\"sh\", \"-c\", \"cat >/dev/null; if [ -n \\\"${KEY_ENV}\\\" ]; then touch tool_saw_key; fi; echo '{{}}'\"]\n{extra_config}"
    );
    std::fs::write(d.path().join("pipewright.toml"), config)
        .unwrap_or_else(|e| panic!("write config: {e}"));
    let pipeline = format!(
        "pipeline: p\nsteps:\n  - shell: {{command: [\"sh\", \"-c\", \"if [ -n \\\"${KEY_ENV}\\\" ]; then touch shell_saw_key; fi; echo \\\"[${KEY_ENV}]\\\"\"], output: seen}}\n  - tool: {{name: probe}}\n  - agent: {{prompt: \"hello\"}}\n"
    );
    std::fs::write(d.path().join("p.yaml"), pipeline).unwrap_or_else(|e| panic!("write: {e}"));
    d
}

fn run_id(o: &Output) -> String {
    let v: serde_json::Value = serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("`--format json` does not parse: {e}\n{}", text(o)));
    v["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no run_id: {v}"))
        .to_string()
}

#[test]
fn an_echoed_api_key_is_printed_and_recorded_nowhere() {
    for status in ["401 Unauthorized", "500 Internal Server Error"] {
        // A 401 is not retried; a 500 is tried twice (max_retries = 1). Both runs use it.
        let url = echo_server(status, 4);
        let d = project(&url, "");
        let json = pipewright(
            d.path(),
            &["run", "p.yaml", "--backend", "openai", "--format", "json"],
        );
        assert_eq!(json.status.code(), Some(1), "{status}: {}", text(&json));
        assert!(
            stdout(&json).contains("rejected Authorization: Bearer [REDACTED]"),
            "{status}: the server's error reaches the report, redacted: {}",
            text(&json)
        );
        let id = run_id(&json);
        let human = pipewright(d.path(), &["run", "p.yaml", "--backend", "openai"]);
        assert_eq!(human.status.code(), Some(1), "{status}: {}", text(&human));
        assert!(stderr(&human).contains("[REDACTED]"), "{}", text(&human));
        let show = pipewright(d.path(), &["runs", "show", &id]);
        let events = pipewright(d.path(), &["runs", "events", &id]);
        assert!(stdout(&events).contains("[REDACTED]"), "{}", text(&events));
        for (what, o) in [
            ("run --format json", &json),
            ("run", &human),
            ("runs show", &show),
            ("runs events", &events),
        ] {
            assert!(
                !text(o).contains(KEY),
                "{status}: the key is in `{what}`: {}",
                text(o)
            );
            assert!(
                !text(o).contains("sk-e2e"),
                "{status}: part of the key is in `{what}`"
            );
        }
        // Without pass_secrets the steps did not see the variable at all.
        assert!(
            serde_json::from_str::<serde_json::Value>(&stdout(&json))
                .is_ok_and(|v| v["stores"]["seen"]["text"] == "[]\n"),
            "{}",
            stdout(&json)
        );
        assert!(!d.path().join("shell_saw_key").exists(), "{status}");
        assert!(!d.path().join("tool_saw_key").exists(), "{status}");
    }
}

#[test]
fn pass_secrets_gives_the_variable_to_shell_steps_and_tools() {
    // [run] pass_secrets: both see it.
    let first_url = echo_server("401 Unauthorized", 1);
    let d = project(&first_url, "\n[run]\npass_secrets = true\n");
    let o = pipewright(
        d.path(),
        &["run", "p.yaml", "--backend", "openai", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(d.path().join("shell_saw_key").exists(), "{}", text(&o));
    assert!(d.path().join("tool_saw_key").exists(), "{}", text(&o));
    // What the step printed is still redacted in the report, and in the human summary of the
    // stores when the run stopped.
    assert!(!stdout(&o).contains(KEY), "{}", stdout(&o));
    assert!(stdout(&o).contains("[[REDACTED]]"), "{}", stdout(&o));
    let url = echo_server("401 Unauthorized", 1);
    std::fs::write(
        d.path().join("pipewright.toml"),
        std::fs::read_to_string(d.path().join("pipewright.toml"))
            .unwrap_or_else(|e| panic!("{e}"))
            .replace(&first_url, &url),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let human = pipewright(d.path(), &["run", "p.yaml", "--backend", "openai"]);
    assert_eq!(human.status.code(), Some(1), "{}", text(&human));
    assert!(stderr(&human).contains("seen = "), "{}", text(&human));
    assert!(!text(&human).contains(KEY), "{}", text(&human));

    // [tools.NAME] pass_secrets: that tool only.
    let url = echo_server("401 Unauthorized", 1);
    let d = project(&url, "");
    let config = d.path().join("pipewright.toml");
    let text_of = std::fs::read_to_string(&config).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&config, format!("{text_of}pass_secrets = true\n"))
        .unwrap_or_else(|e| panic!("{e}"));
    let o = pipewright(
        d.path(),
        &["run", "p.yaml", "--backend", "openai", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(!d.path().join("shell_saw_key").exists(), "{}", text(&o));
    assert!(d.path().join("tool_saw_key").exists(), "{}", text(&o));
}
