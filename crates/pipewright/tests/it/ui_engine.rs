//! `pipewright ui --engine restate` (docs/ui.md, "On the Restate engine") against a real
//! restate-server and worker (engine_restate.rs's harness): the HTTP API shows the engine's
//! runs with the local store's shapes, a gate approved from it finishes its run on the engine
//! (exactly one of two approvals at once wins), a running run is cancelled from it, and an
//! engine it cannot reach is an error the page can show, not a hang.
//!
//! Engine tests: `PIPEWRIGHT_SLOW_TESTS=1` (or `PIPEWRIGHT_RESTATE_TESTS=1`), in a network
//! namespace with only loopback (`pipewright_restate::testing`).

use crate::common::*;
use crate::engine_restate::{wait_for, Engine, MEOW_APPROVAL};
use crate::ui_api::{client, get, post, read_sse, rt, statuses, Ui};
use pipewright_restate::testing::skip_engine_test;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn ui_on(e: &Engine) -> Ui {
    Ui::start(
        &e.project,
        &[
            "--engine",
            "restate",
            "--ingress",
            &e.server.ingress_url(),
            "--admin",
            &e.server.admin_url(),
        ],
    )
}

/// Polls `GET path` (at the page's pace: once a second at most) until `ok` holds of it.
async fn until(ui: &Ui, path: &str, what: &str, secs: u64, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (code, v) = get(ui, path).await;
        if code == 200 && ok(&v) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: never so; last {code} {v}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn status_of(v: &Value, id: &str) -> String {
    statuses(v)
        .into_iter()
        .find(|(r, _)| r == id)
        .map(|(_, s)| s)
        .unwrap_or_default()
}

fn run_id(o: &std::process::Output) -> String {
    serde_json::from_slice::<Value>(&o.stdout)
        .ok()
        .and_then(|v| v["run_id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("a JSON report with a run id: {}", text(o)))
}

#[test]
fn the_web_view_serves_the_engines_runs_and_decides_and_cancels_there() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    let pipeline = e.copy(&testdata("run/fan_gate.yaml"));
    let recipe = e.copy(&testdata("recipe/run/staged.yaml"));
    e.copy(&testdata("run/cancel_wait.yaml"));
    e.write("gate", "");
    let done = e.pw(&["run", &pipeline, "--format", "json"]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    let ok = run_id(&done);
    let paused = e.pw(&["run", &recipe, "--format", "json"]);
    assert_eq!(paused.status.code(), Some(3), "{}", text(&paused));
    let gated = run_id(&paused);

    let ui = ui_on(&e);
    rt().block_on(async {
        // The list, as for a local store: newest first, with the engine named.
        let all = until(&ui, "/api/runs", "both runs listed", 30, |v| {
            statuses(v).len() == 2
        })
        .await;
        assert_eq!(
            statuses(&all),
            vec![(gated.clone(), "paused".into()), (ok.clone(), "ok".into())]
        );
        assert!(
            all["engine"]["at"]
                .as_str()
                .is_some_and(|a| a.contains(&e.server.ingress_url())),
            "{all}"
        );
        assert_eq!(all["engine"]["error"], Value::Null, "{all}");
        let row = &all["runs"][1];
        assert_eq!(row["dialect"], "pipeline", "{row}");
        assert_eq!(row["steps_done"], row["steps_total"], "{row}");
        let row = &all["runs"][0];
        assert_eq!(row["dialect"], "recipe", "{row}");
        assert_eq!(row["waiting"], true, "{row}");
        assert_eq!(row["in_progress"], false, "{row}");
        assert_eq!(row["steps_done"], 1, "the gate waits: {row}");
        let (_, w) = get(&ui, "/api/runs?status=waiting").await;
        assert_eq!(statuses(&w), vec![(gated.clone(), "paused".into())]);

        // A run's detail: its graph's nodes coloured from the engine's events and landings.
        let (code, d) = get(&ui, &format!("/api/runs/{ok}")).await;
        assert_eq!(code, 200, "{d}");
        let nodes = d["nodes"].as_object().cloned().unwrap_or_default();
        assert!(!nodes.is_empty(), "{d}");
        assert!(nodes.values().all(|n| n["state"] == "done"), "{d}");
        assert!(d["events_seq"].as_u64().unwrap_or(0) > 0, "{d}");
        let (_, d) = get(&ui, &format!("/api/runs/{gated}")).await;
        assert_eq!(
            d["pending"],
            json!({"step_key": "1", "kind": "gate", "prompt": "Approve plan-for-src\n?", "continues": "engine"})
        );
        assert_eq!(d["nodes"]["1"]["state"], "waiting", "{d}");
        assert_eq!(d["nodes"]["0.0"]["state"], "done", "{d}");
        assert_eq!(d["nodes"]["2.0"]["state"], "pending", "{d}");

        // Two approvals at once: exactly one decides, the other gets the CLI's refusal.
        let path = format!("/api/runs/{gated}/approve");
        let ((c1, b1), (c2, b2)) = tokio::join!(
            post(&ui, &path, json!({"message": "go"})),
            post(&ui, &path, json!({"message": "other"}))
        );
        let mut codes = [c1, c2];
        codes.sort_unstable();
        assert_eq!(codes, [200, 409], "{b1} {b2}");
        let (won, lost) = if c1 == 200 { (b1, b2) } else { (b2, b1) };
        assert_eq!(won["decided"], "approved", "{won}");
        assert_eq!(won["continues"], "engine", "{won}");
        assert!(
            won["message"]
                .as_str()
                .is_some_and(|m| m.contains("the Restate engine continues it by itself")),
            "{won}"
        );
        assert!(lost["error"].as_str().is_some_and(|m| !m.is_empty()), "{lost}");
        // The engine goes on by itself: the run ends, with the winner's message.
        until(&ui, "/api/runs", "the approved run to finish", 60, |v| {
            status_of(v, &gated) == "ok"
        })
        .await;
        let shown = e.pw(&["runs", "show", &gated]);
        let winner = if c1 == 200 { "go" } else { "other" };
        assert!(
            stdout(&shown).contains(&format!("built-with-{winner}")),
            "{}",
            text(&shown)
        );
        let (code, again) = post(&ui, &path, json!({})).await;
        assert_eq!(code, 409, "decided already: {again}");

        // Cancel: a running run, from the page, stops as on Ctrl-C.
        let detached = e.pw(&["run", "cancel_wait.yaml", "--detach"]);
        assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
        let running = stdout(&detached).trim().to_string();
        wait_for("the waiting step to start", 60, || {
            e.project.join("started").exists()
        });
        until(&ui, "/api/runs", "the run in progress", 30, |v| {
            v["runs"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["run_id"] == running.as_str() && r["in_progress"] == true)
        })
        .await;
        let (code, c) = post(&ui, &format!("/api/runs/{running}/cancel"), json!({})).await;
        assert_eq!(code, 202, "{c}");
        assert!(
            c["message"]
                .as_str()
                .is_some_and(|m| m.contains(&format!("cancelling run {running}"))),
            "{c}"
        );
        until(&ui, "/api/runs", "the run cancelled", 60, |v| {
            status_of(v, &running) == "cancelled"
        })
        .await;
        let (code, c) = post(&ui, &format!("/api/runs/{running}/cancel"), json!({})).await;
        assert_eq!(code, 409, "nothing runs it now: {c}");
        let (code, _) = post(&ui, "/api/runs/0123-abcd/cancel", json!({})).await;
        assert_eq!(code, 404);
    });

    // The engine goes away: the page says so and keeps the runs it last read; acting is a
    // 502 with the reason, at once. Once it is back, so is the page.
    e.server.kill();
    rt().block_on(async {
        let v = until(&ui, "/api/runs", "the engine's error", 30, |v| {
            v["engine"]["error"].is_string()
        })
        .await;
        assert_eq!(statuses(&v).len(), 3, "{v}");
        assert!(v["engine"]["refreshed_ms"].is_i64(), "{v}");
        let (code, d) = get(&ui, &format!("/api/runs/{ok}")).await;
        assert_eq!(code, 200, "{d}");
        assert!(d["engine"]["error"].is_string(), "{d}");
        // A run's stream says it too (its page shows it above the run).
        let r = client()
            .get(ui.url(&format!("/api/runs/{ok}/events")))
            .send()
            .await
            .unwrap_or_else(|err| panic!("{err}"));
        let events = read_sse(r, Duration::from_secs(20), |ev| {
            ev.iter().any(|(name, _, _)| name == "run")
        })
        .await;
        let run = events
            .iter()
            .find(|(name, _, _)| name == "run")
            .map(|(_, _, v)| v.clone())
            .unwrap_or_default();
        assert_eq!(run["engine"]["error"], v["engine"]["error"], "{run}");
        let started = Instant::now();
        let (code, r) = post(&ui, &format!("/api/runs/{gated}/deny"), json!({})).await;
        assert_eq!(code, 502, "{r}");
        assert_eq!(r["error"], v["engine"]["error"], "{r}");
        assert!(started.elapsed() < Duration::from_secs(5), "at once");
    });
    e.restart_server();
    rt().block_on(async {
        until(&ui, "/api/runs", "the engine back", 60, |v| {
            v["engine"]["error"].is_null() && statuses(v).len() == 3
        })
        .await;
    });
    ui.stop();
}

/// In headless Chromium (crates/pipewright-ui/web/e2e/engine.mjs): the runs page lists the
/// engine's runs and names the engine; the gated run's page says that the engine goes on by
/// itself, and Approve there finishes the run on the engine, followed live.
#[test]
fn the_web_view_on_the_engine_works_in_chromium() {
    if skip_slow_test() || skip_engine_test() {
        return;
    }
    let web = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../pipewright-ui/web");
    assert!(
        web.join("node_modules").is_dir(),
        "the web app's packages are not installed: npm ci --prefix {}",
        web.display()
    );
    let e = Engine::start();
    let pipeline = e.copy(&testdata("run/fan_gate.yaml"));
    let recipe = e.copy(&testdata("recipe/run/staged.yaml"));
    e.write("gate", "");
    let ok = run_id(&e.pw(&["run", &pipeline, "--format", "json"]));
    let gated = run_id(&e.pw(&["run", &recipe, "--format", "json"]));
    let ui = ui_on(&e);
    let o = std::process::Command::new("node")
        .arg("e2e/engine.mjs")
        .current_dir(&web)
        .env("UI_URL", format!("{}/", ui.base))
        .env("OK_RUN", &ok)
        .env("GATED_RUN", &gated)
        .output()
        .unwrap_or_else(|err| panic!("node (Node.js) runs the browser check: {err}"));
    assert!(o.status.success(), "e2e/engine.mjs: {}", text(&o));
    let shown = e.pw(&["runs", "show", &gated]);
    assert!(
        stdout(&shown).contains("built-with-from-chromium"),
        "{}",
        text(&shown)
    );
    ui.stop();
}

#[test]
fn an_engine_the_web_view_cannot_reach_is_an_error_it_shows() {
    if skip_engine_test() {
        return;
    }
    // Nothing listens there (a network namespace with only loopback).
    let nowhere = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| format!("http://{a}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempdir();
    let ui = Ui::start(
        dir.path(),
        &[
            "--engine",
            "restate",
            "--ingress",
            &nowhere,
            "--admin",
            &nowhere,
        ],
    );
    rt().block_on(async {
        let v = until(&ui, "/api/runs", "the engine's error", 15, |v| {
            v["engine"]["error"].is_string()
        })
        .await;
        assert_eq!(statuses(&v), vec![]);
        let message = v["engine"]["error"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("cannot reach the Restate engine at") && message.contains(&nowhere),
            "{message}"
        );
        // The mirror holds no run: there is nothing to decide.
        let (code, d) = post(&ui, "/api/runs/0123-abcd/approve", json!({})).await;
        assert_eq!(code, 404, "{d}");
    });
    ui.stop();
}

/// A MEOW approval step waiting inside a run on a worker (its orchestrator socket is on the
/// worker's host) shows on the page as a local one does: the run is marked waiting, its detail
/// names the step, and Approve from the page decides it there; the run then finishes.
#[test]
fn a_meow_approval_inside_a_run_on_a_worker_shows_and_is_approved_from_the_page() {
    if skip_engine_test() {
        return;
    }
    let e = Engine::start();
    e.write("gate.meow.toml", MEOW_APPROVAL);
    let id = e.detach_meow("gate.meow.toml");
    let ui = ui_on(&e);
    rt().block_on(async {
        let all = until(&ui, "/api/runs", "the run marked waiting", 60, |v| {
            v["runs"][0]["waiting"] == true
        })
        .await;
        assert_eq!(all["runs"][0]["run_id"], id.as_str(), "{all}");
        assert_eq!(all["runs"][0]["in_progress"], true, "{all}");
        let d = until(
            &ui,
            &format!("/api/runs/{id}"),
            "its pending approval",
            30,
            |d| !d["pending"].is_null(),
        )
        .await;
        assert_eq!(d["pending"]["step_key"], "release", "{d}");
        assert_eq!(d["pending"]["kind"], "approval", "{d}");
        assert_eq!(d["pending"]["continues"], "engine", "{d}");
        let (code, r) = post(
            &ui,
            &format!("/api/runs/{id}/approve"),
            json!({"message": "ship"}),
        )
        .await;
        assert_eq!(code, 200, "{r}");
        until(&ui, "/api/runs", "the run finished", 60, |v| {
            status_of(v, &id) == "ok"
        })
        .await;
    });
    let followed = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    let report: Value = serde_json::from_slice(&followed.stdout).unwrap_or_default();
    assert_eq!(
        report["steps"]["release.shipped"],
        "done",
        "{}",
        text(&followed)
    );
}
