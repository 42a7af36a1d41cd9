//! The Restate engine's cost per step next to the local engine's (docs/engines.md): the same
//! pipelines through `pipewright run` (release build), locally and on a one-node restate-server
//! with one `pipewright worker`:
//!
//! - 10,000 transform steps (pure: their landings are written in batches);
//! - 200 shell steps (`true`: each landing is written before the next step starts).
//!
//! The figure is (run time − a one-step run's time) / steps, median of `PW_BENCH_RUNS` runs
//! (default 5). It starts a restate-server, which calls api.github.com as it starts: run it in
//! a network namespace, `unshare -rn sh -c 'ip link set lo up && cargo bench -p pipewright
//! --bench engine'` (it refuses to start otherwise).

use pipewright_restate::server::RestateServer;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn pipeline(steps: usize, step: &str) -> String {
    let mut p = String::from("pipeline: p\nsteps:\n");
    for _ in 0..steps {
        p.push_str(step);
    }
    p
}

fn run(dir: &Path, file: &str, engine: &[&str]) -> Duration {
    let t0 = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_pipewright"))
        .current_dir(dir)
        .args(["run", file, "--format", "json"])
        .args(engine)
        .output()
        .unwrap_or_else(|e| panic!("pipewright: {e}"));
    let took = t0.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    // `cargo test --benches` runs this with --bench absent: do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    assert!(
        pipewright_restate::testing::network_isolated(),
        "run this bench in a network namespace (see its doc comment): restate-server calls api.github.com as it starts"
    );
    let runs: usize = std::env::var("PW_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(project.join("pipewright.toml"), "").unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let server = rt
        .block_on(RestateServer::start(&dir.path().join("server")))
        .unwrap_or_else(|e| panic!("{e}"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"));
    let _worker = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_pipewright"))
            .current_dir(&project)
            .args(["worker", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--register", &server.admin_url()])
            .args(["--ingress", &server.ingress_url()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("pipewright worker: {e}")),
    );
    std::thread::sleep(Duration::from_secs(2));
    let ingress = server.ingress_url();
    let restate = ["--engine", "restate", "--ingress", ingress.as_str()];
    let cases = [
        ("transform", 10000, "  - transform: {value: \"1\"}\n"),
        ("shell", 200, "  - shell: {command: \"true\"}\n"),
    ];
    println!("| steps | local per step (whole run; a one-step run) | Restate per step (same) |");
    println!("|---|---:|---:|");
    for (name, n, step) in cases {
        std::fs::write(project.join("one.yaml"), pipeline(1, step))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(project.join("many.yaml"), pipeline(n, step))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut cells = Vec::new();
        for engine in [&["--engine", "local"][..], &restate[..]] {
            let one = median(
                (0..runs)
                    .map(|_| run(&project, "one.yaml", engine))
                    .collect(),
            );
            let many = median(
                (0..runs)
                    .map(|_| run(&project, "many.yaml", engine))
                    .collect(),
            );
            let per = many.saturating_sub(one).as_secs_f64() * 1000.0 / n as f64;
            cells.push(format!(
                "{per:.3} ms ({:.0} ms; one step {:.0} ms)",
                many.as_secs_f64() * 1000.0,
                one.as_secs_f64() * 1000.0
            ));
        }
        println!("| {n} {name} | {} | {} |", cells[0], cells[1]);
    }
}
