//! `pipewright ui`'s HTTP API (docs/ui.md) over a real server on 127.0.0.1, with a run store
//! filled by real `pipewright run`s.

use crate::common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A `pipewright ui` process; killed (SIGTERM) when dropped.
pub(crate) struct Ui {
    child: Child,
    /// `http://127.0.0.1:PORT` (no slash, no token).
    pub(crate) base: String,
    /// The first stdout line, whole.
    first_line: String,
}

impl Ui {
    pub(crate) fn start(dir: &Path, extra: &[&str]) -> Ui {
        let mut args = vec!["ui", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut child = bin()
            .current_dir(dir)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("pipewright ui: {e}"));
        let out = child.stdout.take().unwrap_or_else(|| panic!("stdout"));
        let mut line = String::new();
        BufReader::new(out)
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("the first line: {e}"));
        let url = line
            .trim()
            .strip_prefix("pipewright ui: ")
            .unwrap_or_else(|| panic!("first line names the URL: {line:?}"))
            .to_string();
        let base = url
            .split_once("/?")
            .map_or(url.trim_end_matches('/'), |(b, _)| b)
            .trim_end_matches('/')
            .to_string();
        Ui {
            child,
            base,
            first_line: line.trim().to_string(),
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn origin(&self) -> String {
        self.base.clone()
    }

    /// Stops it as Ctrl-C would and checks that it exits by itself, cleanly.
    pub(crate) fn stop(mut self) {
        let pid = self.child.id().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert_eq!(status.code(), Some(0), "pipewright ui exits 0 on SIGINT");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "pipewright ui did not stop on SIGINT"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn client() -> reqwest::Client {
    use tokio_rustls::rustls;
    // Plain HTTP only; reqwest is built without a TLS provider of its own.
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap_or_else(|e| panic!("{e}"))
    .with_root_certificates(rustls::RootCertStore::empty())
    .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) async fn get(ui: &Ui, path: &str) -> (u16, Value) {
    let r = client()
        .get(ui.url(path))
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

pub(crate) async fn post(ui: &Ui, path: &str, body: Value) -> (u16, Value) {
    let r = client()
        .post(ui.url(path))
        .header("Origin", ui.origin())
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {path}: {e}"));
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A project with the pipeline and recipe fixtures (`go` lets `cancel_wait.yaml` finish).
fn project() -> tempfile::TempDir {
    let d = tempdir();
    for f in ["fan_gate.yaml", "divide.yaml", "cancel_wait.yaml"] {
        copy_into(&testdata("run").join(f), d.path());
    }
    copy_into(
        &testdata("recipe").join("run").join("staged.yaml"),
        d.path(),
    );
    std::fs::write(d.path().join("gate"), "").unwrap_or_else(|e| panic!("{e}"));
    d
}

/// Runs `pipewright run ARGS --format json` and returns its run id.
fn run(dir: &Path, args: &[&str], code: i32) -> String {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let o = run_in(dir, &all);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}"));
    v["run_id"].as_str().unwrap_or_default().to_string()
}

pub(crate) fn statuses(v: &Value) -> Vec<(String, String)> {
    v["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["run_id"].as_str().unwrap_or_default().to_string(),
                r["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_runs_list_filters_and_a_run_shows_its_graph_and_node_states() {
    let d = project();
    let ok = run(d.path(), &["fan_gate.yaml"], 0);
    let failed = run(d.path(), &["divide.yaml"], 1);
    let paused = run(d.path(), &["staged.yaml"], 3);
    let ui = Ui::start(d.path(), &[]);
    assert_eq!(ui.first_line, format!("pipewright ui: {}/", ui.base));
    rt().block_on(async {
        let (code, all) = get(&ui, "/api/runs").await;
        assert_eq!(code, 200, "{all}");
        // Newest first.
        assert_eq!(
            statuses(&all),
            vec![
                (paused.clone(), "paused".into()),
                (failed.clone(), "failed".into()),
                (ok.clone(), "ok".into())
            ]
        );
        let row = &all["runs"][2];
        assert_eq!(row["dialect"], "pipeline");
        assert_eq!(row["file"], "fan_gate.yaml");
        assert_eq!(row["steps_total"], 3);
        assert_eq!(row["steps_done"], 3);
        assert_eq!(row["waiting"], false);
        assert!(row["duration_ms"].as_i64().unwrap_or(-1) >= 0, "{row}");
        let row = &all["runs"][1];
        assert_eq!(row["steps_total"], 2);
        assert_eq!(row["steps_done"], 1, "{row}");
        let row = &all["runs"][0];
        assert_eq!(row["dialect"], "recipe");
        assert_eq!(row["waiting"], true);
        assert_eq!(row["steps_total"], 3);
        assert_eq!(row["steps_done"], 1, "the gate waits: {row}");

        let (_, f) = get(&ui, "/api/runs?status=failed").await;
        assert_eq!(statuses(&f), vec![(failed.clone(), "failed".into())]);
        let (_, w) = get(&ui, "/api/runs?status=waiting").await;
        assert_eq!(statuses(&w), vec![(paused.clone(), "paused".into())]);
        let (_, r) = get(&ui, "/api/runs?status=running").await;
        assert_eq!(statuses(&r), vec![]);
        let (code, bad) = get(&ui, "/api/runs?status=nope").await;
        assert_eq!(code, 400, "{bad}");

        let (code, v) = get(&ui, &format!("/api/runs/{ok}")).await;
        assert_eq!(code, 200, "{v}");
        assert_eq!(v["run"]["run_id"], ok.as_str());
        assert_eq!(v["graph"]["format"], "pipewright-graph");
        assert_eq!(v["graph"]["workflows"][0]["body"]["nodes"][1]["step_key"], "1");
        assert_eq!(v["nodes"]["1"]["state"], "done", "{v}");
        assert_eq!(v["nodes"]["1"]["fanout"], json!({"done": 6, "total": 6}));
        assert_eq!(v["nodes"]["1.for_each.collect"]["state"], "done");
        assert_eq!(v["nodes"]["2"]["output"], "a\nb\nc\nd\ne\nf\n");
        assert_eq!(v["nodes"]["0"]["attempts"], 1);
        assert_eq!(v["pending"], Value::Null);
        assert!(v["events_seq"].as_u64().unwrap_or(0) >= 18, "{v}");

        let (_, v) = get(&ui, &format!("/api/runs/{failed}")).await;
        assert_eq!(v["nodes"]["0"]["state"], "done", "{v}");
        assert_eq!(v["nodes"]["1"]["state"], "failed", "{v}");
        assert!(
            v["nodes"]["1"]["error"].as_str().unwrap_or("").contains("zero"),
            "{v}"
        );

        let (_, v) = get(&ui, &format!("/api/runs/{paused}")).await;
        assert_eq!(
            v["pending"],
            json!({"step_key": "1", "kind": "gate", "prompt": "Approve plan-for-src\n?", "continues": "resume"})
        );
        assert_eq!(v["nodes"]["1"]["state"], "waiting");
        assert_eq!(v["nodes"]["0.0"]["state"], "done");
        assert_eq!(
            v["nodes"]["0.0"]["prompt"], "echo plan-for-src",
            "a bash step's command, rendered: {v}"
        );
        assert_eq!(v["nodes"]["2.0"]["state"], "pending");

        let (code, v) = get(&ui, "/api/runs/0123-abcd").await;
        assert_eq!(code, 404, "{v}");
        assert!(v["error"].is_string());
        let (code, _) = get(&ui, "/api/nothing").await;
        assert_eq!(code, 404);
        // Any other path is the web app's (client-side routing).
        let r = client()
            .get(ui.url(&format!("/runs/{ok}")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 200);
        assert!(r.text().await.unwrap_or_default().contains("<html"));
    });
    ui.stop();
}

/// Reads a server-sent event stream until `done` says the events so far suffice.
pub(crate) async fn read_sse(
    resp: reqwest::Response,
    limit: Duration,
    mut done: impl FnMut(&[(String, Option<String>, Value)]) -> bool,
) -> Vec<(String, Option<String>, Value)> {
    let mut resp = resp;
    let mut buf = String::new();
    let mut events: Vec<(String, Option<String>, Value)> = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if done(&events) {
            return events;
        }
        let chunk = tokio::time::timeout_at(deadline, resp.chunk())
            .await
            .unwrap_or_else(|_| panic!("the stream did not deliver in time: {events:?}"))
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("the stream ended: {events:?}"));
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf[..end].to_string();
            buf.drain(..end + 2);
            let (mut name, mut id, mut data) = (String::from("message"), None, String::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    name = v.trim().to_string();
                } else if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().to_string());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            if !data.is_empty() {
                events.push((name, id, serde_json::from_str(&data).unwrap_or(Value::Null)));
            }
        }
    }
}

fn node_state(events: &[(String, Option<String>, Value)], key: &str) -> Option<String> {
    events
        .iter()
        .rev()
        .find(|(n, _, v)| n == "node" && v["step_key"] == key)
        .and_then(|(_, _, v)| v["state"].as_str().map(str::to_string))
}

#[test]
fn event_streams_follow_a_live_run_and_cancel_stops_it() {
    let d = project();
    let ui = Ui::start(d.path(), &[]);
    let child = spawn_run(d.path(), &["cancel_wait.yaml"]);
    wait_for(Duration::from_secs(30), "the waiting step", || {
        d.path().join("started").exists().then_some(())
    });
    let runs = run_in(d.path(), &["runs", "--format", "json"]);
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap_or_else(|e| panic!("{e}"));
    let id = runs[0]["run_id"].as_str().unwrap_or_default().to_string();
    rt().block_on(async {
        // The list stream says at once that it runs.
        let r = client()
            .get(ui.url("/api/runs/stream"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 200);
        let got = read_sse(r, Duration::from_secs(20), |ev| {
            ev.iter()
                .any(|(n, _, v)| n == "runs" && v["runs"][0]["in_progress"] == true)
        })
        .await;
        assert_eq!(got[0].2["runs"][0]["status"], "running", "{got:?}");

        let r = client()
            .get(ui.url(&format!("/api/runs/{id}/events")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let first = read_sse(r, Duration::from_secs(20), |ev| {
            node_state(ev, "1").as_deref() == Some("running")
        })
        .await;
        assert_eq!(
            node_state(&first, "0").as_deref(),
            Some("done"),
            "{first:?}"
        );
        let logs: Vec<&Option<String>> = first
            .iter()
            .filter(|(n, _, _)| n == "log")
            .map(|(_, id, _)| id)
            .collect();
        assert_eq!(logs.first(), Some(&&Some("1".to_string())), "{first:?}");
        let seen = logs.len();

        // Reconnecting after event N gets only what came after it.
        let r = client()
            .get(ui.url(&format!("/api/runs/{id}/events")))
            .header("Last-Event-ID", "2")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let again = read_sse(r, Duration::from_secs(20), |ev| {
            ev.iter().any(|(n, _, _)| n == "run")
                && ev.iter().filter(|(n, _, _)| n == "log").count() + 2 >= seen
        })
        .await;
        let first_log = again
            .iter()
            .find(|(n, _, _)| n == "log")
            .map(|(_, id, _)| id.clone());
        assert_eq!(first_log, Some(Some("3".to_string())), "{again:?}");

        // Cancel, as Ctrl-C; the open stream sees the node and the run end.
        let r = client()
            .get(ui.url(&format!("/api/runs/{id}/events")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (code, v) = post(&ui, &format!("/api/runs/{id}/cancel"), json!({})).await;
        assert_eq!(code, 202, "{v}");
        assert!(
            v["message"]
                .as_str()
                .unwrap_or("")
                .contains("cancelling run"),
            "{v}"
        );
        let live = read_sse(r, Duration::from_secs(30), |ev| {
            ev.iter()
                .any(|(n, _, v)| n == "run" && v["run"]["status"] == "cancelled")
        })
        .await;
        assert_eq!(
            node_state(&live, "1").as_deref(),
            Some("cancelled"),
            "{live:?}"
        );
        let (code, v) = post(&ui, &format!("/api/runs/{id}/cancel"), json!({})).await;
        assert_eq!(code, 409, "{v}");
        assert!(
            v["error"].as_str().unwrap_or("").contains("is not running"),
            "{v}"
        );
    });
    let out = finish(child);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));

    // Resumed, the run finishes; a stream opened now shows every node done.
    std::fs::write(d.path().join("go"), "").unwrap_or_else(|e| panic!("{e}"));
    run(d.path(), &["--resume", &id], 0);
    rt().block_on(async {
        let (_, v) = get(&ui, &format!("/api/runs/{id}")).await;
        assert_eq!(v["run"]["status"], "ok", "{v}");
        for k in ["0", "1", "2"] {
            assert_eq!(v["nodes"][k]["state"], "done", "{k}: {v}");
        }
        assert_eq!(v["nodes"]["1"]["attempts"], 2, "{v}");
    });
    ui.stop();
}

#[test]
fn approve_then_resume_finishes_and_deny_fails_with_the_reason() {
    let d = project();
    let approved = run(d.path(), &["staged.yaml"], 3);
    let denied = run(d.path(), &["staged.yaml"], 3);
    let ui = Ui::start(d.path(), &[]);
    rt().block_on(async {
        let (code, v) = post(
            &ui,
            &format!("/api/runs/{approved}/approve"),
            json!({"message": "go ahead"}),
        )
        .await;
        assert_eq!(code, 200, "{v}");
        assert_eq!(v["decided"], "approved");
        assert_eq!(v["continues"], "resume");
        assert_eq!(
            v["message"],
            format!("approved stage 'plan' of run {approved}; continue with `pipewright run --resume {approved}`")
        );
        // The same refusal as the CLI's, word for word.
        let (code, v) = post(&ui, &format!("/api/runs/{approved}/approve"), json!({})).await;
        assert_eq!(code, 409, "{v}");
        let cli = run_in(d.path(), &["approve", &approved]);
        assert_eq!(
            v["error"].as_str().map(str::to_string),
            Some(stderr(&cli).trim().trim_start_matches("error: ").to_string())
        );
        let (code, v) = post(
            &ui,
            &format!("/api/runs/{denied}/deny"),
            json!({"reason": "not this week"}),
        )
        .await;
        assert_eq!(code, 200, "{v}");
        assert_eq!(v["decided"], "denied");
    });
    let o = run_in(
        d.path(),
        &["run", "--resume", &approved, "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r["stores"]["built"], "built-with-go ahead\n", "{r}");
    let o = run_in(d.path(), &["run", "--resume", &denied, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("not this week"), "{}", text(&o));
    rt().block_on(async {
        let (_, v) = get(&ui, &format!("/api/runs/{denied}")).await;
        assert_eq!(v["run"]["status"], "failed");
        assert_eq!(v["nodes"]["1"]["state"], "failed", "{v}");
        let (_, v) = get(&ui, &format!("/api/runs/{approved}")).await;
        assert_eq!(v["run"]["status"], "ok");
        assert_eq!(v["nodes"]["1"]["state"], "done", "{v}");
        assert_eq!(v["nodes"]["2"]["state"], "done", "{v}");
    });
    ui.stop();
}

#[test]
fn two_approvals_at_once_give_one_decision() {
    let d = project();
    let id = run(d.path(), &["staged.yaml"], 3);
    let ui = Ui::start(d.path(), &[]);
    rt().block_on(async {
        let path = format!("/api/runs/{id}/approve");
        let (a, b) = tokio::join!(
            post(&ui, &path, json!({"message": "one"})),
            post(&ui, &path, json!({"message": "two"}))
        );
        let mut codes = [a.0, b.0];
        codes.sort_unstable();
        assert_eq!(codes, [200, 409], "{a:?} {b:?}");
        let refused = if a.0 == 409 { a.1 } else { b.1 };
        assert!(
            refused["error"]
                .as_str()
                .unwrap_or("")
                .contains("waits for no approval"),
            "{refused}"
        );
    });
}

#[test]
fn requests_need_the_host_the_origin_and_the_token_in_force() {
    let d = project();
    let id = run(d.path(), &["staged.yaml"], 3);
    let ui = Ui::start(d.path(), &["--token", "s3cret"]);
    assert_eq!(
        ui.first_line,
        format!("pipewright ui: {}/?token=s3cret", ui.base)
    );
    rt().block_on(async {
        let c = client();
        // No token, a wrong one: 401, assets included.
        for (path, auth) in [
            ("/api/runs", None),
            ("/", None),
            ("/api/runs", Some("Bearer nope")),
        ] {
            let mut req = c.get(ui.url(path));
            if let Some(a) = auth {
                req = req.header("Authorization", a);
            }
            let r = req.send().await.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(r.status().as_u16(), 401, "{path} {auth:?}");
            let v: Value =
                serde_json::from_str(&r.text().await.unwrap_or_default()).unwrap_or(Value::Null);
            assert!(v["error"].is_string(), "{v}");
        }
        let r = c
            .get(ui.url("/api/runs"))
            .header("Authorization", "Bearer s3cret")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 200);
        // The printed URL sets the cookie and drops the token from the address.
        let r = c
            .get(ui.url("/runs/x?token=s3cret"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 303);
        assert_eq!(
            r.headers().get("location").and_then(|l| l.to_str().ok()),
            Some("/runs/x")
        );
        let cookie = r
            .headers()
            .get("set-cookie")
            .and_then(|c| c.to_str().ok())
            .unwrap_or_default()
            .to_string();
        assert!(cookie.starts_with("pw_token=s3cret;"), "{cookie}");
        assert!(
            cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
            "{cookie}"
        );
        let r = c
            .get(ui.url("/api/runs"))
            .header("Cookie", "pw_token=s3cret")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 200);

        // DNS rebinding: a page of another name reaching this port.
        let r = c
            .get(ui.url("/api/runs"))
            .header("Host", "evil.example:80")
            .header("Authorization", "Bearer s3cret")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 421);

        let approve = ui.url(&format!("/api/runs/{id}/approve"));
        // Cross-origin, even with the cookie a browser would send along.
        let r = c
            .post(&approve)
            .header("Origin", "http://evil.example")
            .header("Cookie", "pw_token=s3cret")
            .header("Content-Type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 403);
        let v: Value =
            serde_json::from_str(&r.text().await.unwrap_or_default()).unwrap_or_default();
        assert_eq!(v, json!({"error": "cross-origin request refused"}));
        // No Origin and only a cookie: not a script's request either.
        let r = c
            .post(&approve)
            .header("Cookie", "pw_token=s3cret")
            .header("Content-Type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 403);
        // Not JSON; too long.
        let r = c
            .post(&approve)
            .header("Authorization", "Bearer s3cret")
            .header("Content-Type", "text/plain")
            .body("{}")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 415);
        let big = json!({"message": "x".repeat(70 * 1024)}).to_string();
        let r = c
            .post(&approve)
            .header("Authorization", "Bearer s3cret")
            .header("Content-Type", "application/json")
            .body(big)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 413);
        // The refused body was not read, so that connection is closed: a new client.
        let c = client();
        // A script with the token, and a same-origin page with the cookie, may act.
        let r = c
            .post(&approve)
            .header("Origin", ui.origin())
            .header("Cookie", "pw_token=s3cret")
            .header("Content-Type", "application/json")
            .body("{\"message\": \"ok\"}")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 200);
        let r = c
            .post(&approve)
            .header("Authorization", "Bearer s3cret")
            .header("Content-Type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 409, "already decided");
    });
    ui.stop();
}

#[test]
fn a_loopback_server_without_a_token_still_refuses_cross_origin_posts() {
    let d = project();
    let id = run(d.path(), &["staged.yaml"], 3);
    let ui = Ui::start(d.path(), &[]);
    rt().block_on(async {
        let r = client()
            .post(ui.url(&format!("/api/runs/{id}/approve")))
            .header("Origin", "http://localhost:1")
            .header("Content-Type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), 403);
        let (code, _) = get(&ui, &format!("/api/runs/{id}")).await;
        assert_eq!(code, 200);
    });
}

#[test]
fn ui_refuses_an_address_it_cannot_listen_on() {
    let d = tempdir();
    let o = run_in(d.path(), &["ui", "--listen", "203.0.113.1:0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("cannot listen on 203.0.113.1:0"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_steps_detail_has_its_rendered_prompt_or_command_and_input_but_no_secret() {
    const KEY_ENV: &str = "PW_TEST_UI_SECRET";
    const KEY: &str = "sk-ui-secret-0123456789abcdefXYZ";
    let d = tempdir();
    // The variable the openai backend would read: registered as a secret whatever the backend.
    std::fs::write(
        d.path().join("pipewright.toml"),
        format!("[backend.openai]\nurl = \"http://127.0.0.1:9/v1\"\napi_key_env = \"{KEY_ENV}\"\n"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        d.path().join("given.yaml"),
        "pipeline: given\nsteps:\n  - transform: {value: \"ctx.topic\"}\n  - agent: {prompt: \"Summarise {pipe} (key {ctx.key})\"}\n  - shell: {command: \"echo topic | wc -c\"}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let input = json!({"topic": "pipes", "key": KEY}).to_string();
    let o = bin()
        .current_dir(d.path())
        .args([
            "run",
            "given.yaml",
            "--backend",
            "mock",
            "--input",
            &input,
            "--format",
            "json",
        ])
        .env(KEY_ENV, KEY)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let id = serde_json::from_slice::<Value>(&o.stdout).unwrap_or_else(|e| panic!("{e}"))["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ui = Ui::start(d.path(), &[]);
    rt().block_on(async {
        let (code, v) = get(&ui, &format!("/api/runs/{id}")).await;
        assert_eq!(code, 200, "{v}");
        let nodes = &v["nodes"];
        assert_eq!(
            nodes["1"]["prompt"], "Summarise pipes (key [REDACTED])",
            "{v}"
        );
        assert_eq!(nodes["1"]["input"], "pipes", "the agent's pipe: {v}");
        assert_eq!(nodes["2"]["prompt"], "echo topic | wc -c", "{v}");
        assert_eq!(nodes["2"]["input"], "mock reply for step 1 of given", "{v}");
        assert_eq!(
            nodes["0"]["prompt"],
            Value::Null,
            "a transform renders nothing"
        );
    });
    // `runs events` prints it on the step's start, and the secret is nowhere in the store.
    let events = run_in(d.path(), &["runs", "events", &id]);
    let started: Vec<Value> = stdout(&events)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "step_started")
        .collect();
    assert_eq!(started[2]["command"], "echo topic | wc -c", "{started:?}");
    assert_eq!(started[1]["input"], "pipes", "{started:?}");
    let db = rusqlite::Connection::open(d.path().join(".pipewright/runs.db"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stmt = db
        .prepare("SELECT lines FROM events")
        .unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{e}"))
        .map(|r| r.unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let all = lines.concat();
    assert!(
        !all.contains(KEY),
        "the secret reached the store's events: {all}"
    );
    assert!(all.contains("(key [REDACTED])"), "{all}");
}

/// The `step_started` events `runs events` prints for the last run of `dir`.
fn started_events(dir: &Path) -> Vec<Value> {
    let runs = run_in(dir, &["runs", "--format", "json"]);
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap_or_else(|e| panic!("{e}"));
    let id = runs[0]["run_id"].as_str().unwrap_or_default().to_string();
    stdout(&run_in(dir, &["runs", "events", &id]))
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "step_started")
        .collect()
}

#[test]
fn meow_and_state_machine_steps_record_their_command_or_prompt() {
    let d = tempdir();
    std::fs::write(
        d.path().join("w.meow.toml"),
        "[main]\n[main.variables]\nwho = { default = \"Ada\" }\n\n[[main.steps]]\nid = \"hello\"\nexecutor = \"shell\"\ncommand = \"echo hello {{who}}\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["run", "w.meow.toml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let started = started_events(d.path());
    assert_eq!(started.len(), 1, "{started:?}");
    assert_eq!(started[0]["key"], "hello");
    let command = started[0]["command"].as_str().unwrap_or_default();
    assert!(
        command.starts_with("echo hello ") && command.contains("Ada"),
        "the command as substituted: {started:?}"
    );

    let d = tempdir();
    // The recipe with the files it includes, in a project of its own (its store).
    copy_tree(&testdata("statemachine").join("ok"), d.path());
    std::fs::write(d.path().join("pipewright.toml"), "").unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(
        d.path(),
        &["run", "implement-and-review-all.json", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let started = started_events(d.path());
    assert!(!started.is_empty());
    for e in &started {
        assert!(
            e["prompt"].as_str().is_some_and(|p| !p.is_empty()),
            "each turn's prompt: {e}"
        );
    }
}

#[test]
fn a_recipe_loops_steps_have_their_rendered_prompt_or_command_in_the_detail() {
    let d = tempdir();
    std::fs::write(
        d.path().join("loops.yaml"),
        r#"name: loops
description: loops whose steps record what they were given
version: "1.0.0"
context:
  xs: ["a", "b"]
steps:
  - id: each
    foreach: "{{xs}}"
    as: x
    steps:
      - id: say
        agent: "foundation:zen-architect"
        prompt: "Describe {{x}}"
        output: said
      - id: echo
        type: bash
        command: "echo {{x}}-done"
        output: echoed
    collect: rounds
  - id: par
    type: bash
    foreach: "{{xs}}"
    parallel: 2
    command: "echo par-{{item}}"
    collect: pars
"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(
        d.path(),
        &["run", "loops.yaml", "--backend", "mock", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let started = started_events(d.path());
    let of = |key: &str| {
        started
            .iter()
            .find(|e| e["key"] == key)
            .unwrap_or_else(|| panic!("no start of {key}: {started:#?}"))
    };
    assert_eq!(of("0.1.0")["prompt"], "Describe b", "{started:#?}");
    assert_eq!(of("0.1.1")["command"], "echo b-done", "{started:#?}");
    assert_eq!(of("1.0")["command"], "echo par-a", "{started:#?}");
    let id = stdout(&run_in(d.path(), &["runs", "--format", "json"]));
    let id = serde_json::from_str::<Value>(&id).unwrap_or_else(|e| panic!("{e}"))[0]["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ui = Ui::start(d.path(), &[]);
    rt().block_on(async {
        let (code, v) = get(&ui, &format!("/api/runs/{id}")).await;
        assert_eq!(code, 200, "{v}");
        let nodes = &v["nodes"];
        // The loop records nothing given of its own: it shows its latest item's start.
        assert_eq!(nodes["0"]["prompt"], "echo b-done", "{v}");
        assert_eq!(
            nodes["0"]["given_by"],
            json!({"key": "0.1.1", "step_kind": "command"}),
            "{v}"
        );
        assert_eq!(nodes["0"]["fanout"], json!({"done": 2, "total": 2}), "{v}");
        assert_eq!(nodes["1"]["fanout"], json!({"done": 2, "total": 2}), "{v}");
        let par = nodes["1"]["prompt"].as_str().unwrap_or_default();
        assert!(par.starts_with("echo par-"), "{v}");
    });
}

#[test]
fn the_web_apps_files_are_served_whole_with_their_type_caching_and_tag() {
    let d = tempdir();
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pipewright-ui/web/dist");
    let index = std::fs::read(dist.join("index.html")).unwrap_or_else(|e| panic!("{e}"));
    let mut assets: Vec<(String, &str)> = std::fs::read_dir(dist.join("assets"))
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let mime = match name.rsplit('.').next()? {
                "js" => "text/javascript",
                "css" => "text/css",
                _ => return None,
            };
            Some((format!("assets/{name}"), mime))
        })
        .collect();
    assets.sort();
    assert!(assets.len() >= 3, "{assets:?}");
    let ui = Ui::start(d.path(), &[]);
    rt().block_on(async {
        let fetch = |path: String, tag: Option<String>| {
            let mut req = client().get(ui.url(&format!("/{path}")));
            if let Some(t) = tag {
                req = req.header("If-None-Match", t);
            }
            async move {
                req.send()
                    .await
                    .unwrap_or_else(|e| panic!("GET {path}: {e}"))
            }
        };
        let header = |r: &reqwest::Response, name: &str| {
            r.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        let mut files: Vec<(String, &str, Vec<u8>, &str)> = assets
            .iter()
            .map(|(path, mime)| {
                let bytes = std::fs::read(dist.join(path)).unwrap_or_else(|e| panic!("{e}"));
                (
                    path.clone(),
                    *mime,
                    bytes,
                    "public, max-age=31536000, immutable",
                )
            })
            .collect();
        files.push(("index.html".into(), "text/html", index.clone(), "no-cache"));
        // A page of the app is index.html (client-side routing).
        files.push(("runs/0abc".into(), "text/html", index.clone(), "no-cache"));
        for (path, mime, bytes, cache) in files {
            let r = fetch(path.clone(), None).await;
            assert_eq!(r.status().as_u16(), 200, "{path}");
            assert!(
                header(&r, "content-type").starts_with(mime),
                "{path}: {r:?}"
            );
            assert_eq!(header(&r, "cache-control"), cache, "{path}");
            let tag = header(&r, "etag");
            assert!(tag.starts_with('"') && tag.len() == 34, "{path}: {tag}");
            let body = r.bytes().await.unwrap_or_else(|e| panic!("{e}"));
            assert!(
                body.as_ref() == bytes.as_slice(),
                "{path}: the built file, whole"
            );
            let again = fetch(path.clone(), Some(tag.clone())).await;
            assert_eq!(again.status().as_u16(), 304, "{path}");
            assert_eq!(header(&again, "etag"), tag, "{path}");
            let other = fetch(path.clone(), Some("\"0\"".into())).await;
            assert_eq!(other.status().as_u16(), 200, "{path}");
        }
    });
}
