//! `GET /api/runs` of `pipewright ui` on a store of 10,000 runs (issue 26: the runs page loads
//! in ≤ 300 ms with 10,000 recorded runs). Real runs of a pipeline (ok), a pipeline that fails
//! and a recipe paused at its gate are recorded, then copied in SQL (new ids, their landings,
//! events and usage) up to `PW_BENCH_UI_RUNS` (default 10,000). The release CLI serves them;
//! the bench times the whole request (server and client on this machine):
//!
//! - cold: the first request, which lowers each run's file once;
//! - after a change: each request after a write to the store (the list is recomputed: three
//!   queries and the rows);
//! - unchanged: requests while nothing changed (the list computed for the last change).
//!
//! `cargo bench -p pipewright --bench ui_runs`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn pipewright(dir: &Path, args: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_pipewright"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("pipewright: {e}"));
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Copies the recorded runs until the store holds `n`.
fn fill(db: &Path, n: usize) {
    let c = rusqlite::Connection::open(db).unwrap_or_else(|e| panic!("{e}"));
    let seqs: Vec<i64> = {
        let mut s = c
            .prepare("SELECT seq FROM runs")
            .unwrap_or_else(|e| panic!("{e}"));
        s.query_map([], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{e}"))
            .map(|r| r.unwrap_or_else(|e| panic!("{e}")))
            .collect()
    };
    let have = seqs.len();
    c.execute_batch("BEGIN").unwrap_or_else(|e| panic!("{e}"));
    for i in 0..n.saturating_sub(have) {
        let from = seqs[i % have];
        let id = format!("{:08x}-0000-7000-8000-{:012x}", i, i);
        c.execute(
            "INSERT INTO runs (id, status, file, workflow, source_hash, created_ms, updated_ms, spawns, output, stores, error, cancelled_at)
             SELECT ?2, status, file, workflow, source_hash, created_ms - ?3, updated_ms - ?3, spawns, output, stores, error, cancelled_at FROM runs WHERE seq = ?1",
            rusqlite::params![from, id, (i as i64 + 1) * 1000],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let to = c.last_insert_rowid();
        for sql in [
            "INSERT INTO inputs (run, value) SELECT ?2, value FROM inputs WHERE run = ?1",
            "INSERT INTO landings (run, key, step_hash, value, dropped) SELECT ?2, key, step_hash, value, dropped FROM landings WHERE run = ?1",
            "INSERT INTO events (run, lines) SELECT ?2, lines FROM events WHERE run = ?1",
            "INSERT INTO usage (run, key, value) SELECT ?2, key, value FROM usage WHERE run = ?1",
        ] {
            c.execute(sql, [from, to]).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    c.execute_batch("COMMIT").unwrap_or_else(|e| panic!("{e}"));
}

/// The CPU time (user + system) process `pid` has used so far, from /proc (Linux): the
/// figure that does not depend on how busy the machine is.
fn cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) end with `)`.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|h| *h > 0)?;
    Some(Duration::from_millis(ticks * 1000 / hz))
}

fn client() -> reqwest::Client {
    use tokio_rustls::rustls;
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
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let n: usize = std::env::var("PW_BENCH_UI_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    for f in ["fan_gate.yaml", "divide.yaml"] {
        std::fs::copy(testdata.join("run").join(f), d.path().join(f))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::copy(
        testdata.join("recipe/run/staged.yaml"),
        d.path().join("staged.yaml"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(d.path().join("gate"), "").unwrap_or_else(|e| panic!("{e}"));
    for f in ["fan_gate.yaml", "divide.yaml", "staged.yaml"] {
        pipewright(d.path(), &["run", f]);
    }
    let db = d.path().join(".pipewright/runs.db");
    fill(&db, n);

    let mut ui = Command::new(env!("CARGO_BIN_EXE_pipewright"))
        .current_dir(d.path())
        .args(["ui", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut line = String::new();
    BufReader::new(ui.stdout.take().unwrap_or_else(|| panic!("stdout")))
        .read_line(&mut line)
        .unwrap_or_else(|e| panic!("{e}"));
    let url = format!(
        "{}api/runs",
        line.trim().trim_start_matches("pipewright ui: ")
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let c = client();
    let get = || async {
        let t0 = Instant::now();
        let body = c
            .get(&url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .bytes()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        (t0.elapsed(), body.len())
    };
    rt.block_on(async {
        let (cold, bytes) = get().await;
        println!("GET /api/runs, {n} runs ({bytes} bytes): cold {cold:.1?}");
        let w = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
        let mut changed = Vec::new();
        let cpu0 = cpu(ui.id());
        for i in 0..10 {
            w.execute(
                "UPDATE runs SET updated_ms = updated_ms + ?1 WHERE seq = 1",
                [i],
            )
            .unwrap_or_else(|e| panic!("{e}"));
            // The change notification reaches the server first.
            tokio::time::sleep(Duration::from_millis(100)).await;
            changed.push(get().await.0);
        }
        let cpu1 = cpu(ui.id());
        println!(
            "GET /api/runs, {n} runs: after a change median {:.1?} (max {:.1?}) over 10",
            median(changed.clone()),
            changed.iter().max().copied().unwrap_or_default()
        );
        if let (Some(a), Some(b)) = (cpu0, cpu1) {
            println!(
                "GET /api/runs, {n} runs: server CPU per request after a change {:.1?} (10 ms clock ticks)",
                b.saturating_sub(a) / 10
            );
        }
        let same: Vec<Duration> = {
            let mut v = Vec::new();
            for _ in 0..10 {
                v.push(get().await.0);
            }
            v
        };
        println!(
            "GET /api/runs, {n} runs: unchanged median {:.1?} over 10",
            median(same)
        );
    });
    let _ = ui.kill();
    let _ = ui.wait();
}
