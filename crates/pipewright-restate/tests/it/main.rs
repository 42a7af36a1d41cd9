//! The Restate engine against a real restate-server (the pinned one, from
//! `npm ci --prefix tools/restate`) on loopback, with real workers: a run, a resubmission, an
//! admin query, kill -9 of the worker and of the server in the middle of a run.
//!
//! Engine tests: they run with `PIPEWRIGHT_RESTATE_TESTS=1` inside a network namespace (as
//! .ci/run runs them: `pipewright_restate::testing`), one at a time
//! (each starts a server; two cores are shared), each under deadlines, and each stops what it
//! started when it ends, passed or not.

mod proof;

use pipewright_restate::client::{Client, Submission};
use pipewright_restate::server::RestateServer;
use pipewright_restate::{endpoint, processes};
use proof::{ProofInput, ProofOutput};
use serde_json::json;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The engine suites run inside a network namespace with only loopback (see
/// `pipewright_restate::testing`).
fn skip_slow_test() -> bool {
    pipewright_restate::testing::skip_engine_test()
}

/// One server at a time: each takes a few hundred MB and both cores while it starts. (Each
/// test has its own runtime; tokio's mutex works across them and is not poisoned by a panic.)
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Setup {
    // Fields drop in order: the server dies before its directory is removed.
    server: RestateServer,
    client: Client,
    dir: tempfile::TempDir,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

async fn setup() -> Setup {
    let turn = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let server = RestateServer::start(&dir.path().join("server"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let client = Client::new().unwrap_or_else(|e| panic!("{e}"));
    Setup {
        server,
        client,
        dir,
        _turn: turn,
    }
}

impl Setup {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    async fn register(&self, worker_uri: &str) {
        let d = within("registering the worker", 30, async {
            self.client
                .register(&self.server.admin_url(), worker_uri)
                .await
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(d.id.starts_with("dp_"), "{d:?}");
        assert!(d.services.iter().any(|s| s == "Proof"), "{d:?}");
    }

    async fn send(&self, key: &str, input: &ProofInput) -> Submission {
        let body = serde_json::to_value(input).unwrap_or_else(|e| panic!("{e}"));
        within("submitting the run", 30, async {
            self.client
                .send(&self.server.ingress_url(), "Proof", key, &body)
                .await
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    }

    async fn attach(&self, invocation: &str) -> ProofOutput {
        let v = within("waiting for the run's result", 60, async {
            self.client
                .attach(&self.server.ingress_url(), invocation)
                .await
        })
        .await
        .unwrap_or_else(|e| panic!("{e}\nserver log:\n{}", self.server.log_tail()));
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    /// An input whose step `block_at` waits for the gate file.
    fn input(&self, block_at: Option<u32>) -> ProofInput {
        ProofInput {
            log: self.path("steps.log"),
            block_at,
            gate: block_at.map(|_| self.path("gate")),
            pids: block_at.map(|_| self.path("pids")),
        }
    }

    /// Waits until the blocking step wrote its line and its shell's pid; returns the pid.
    async fn blocked_step_pid(&self) -> i32 {
        let pids = self.path("pids");
        wait_until("the step to block", 30, || {
            std::fs::read_to_string(&pids).is_ok_and(|t| t.ends_with('\n'))
        })
        .await;
        let text = std::fs::read_to_string(&pids).unwrap_or_else(|e| panic!("{e}"));
        let last = text.lines().last().unwrap_or_default();
        last.trim()
            .parse()
            .unwrap_or_else(|e| panic!("pid {last:?}: {e}"))
    }

    fn open_gate(&self) {
        std::fs::write(self.path("gate"), "").unwrap_or_else(|e| panic!("{e}"));
    }

    fn steps(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("steps.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

async fn within<T>(what: &str, secs: u64, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {secs}s"))
}

async fn wait_until(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "waited {secs}s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn alive(pid: i32) -> bool {
    // A zombie has no /proc/PID/cmdline content and is dead for our purpose.
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty())
}

fn count(steps: &[String], name: &str) -> usize {
    steps.iter().filter(|s| *s == name).count()
}

fn expected(key: &str) -> ProofOutput {
    ProofOutput {
        key: key.to_string(),
        steps: vec!["s1".into(), "s2".into(), "s3".into()],
    }
}

/// A worker serving the proof endpoint in this test's runtime.
async fn in_process_worker() -> endpoint::Serving {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    endpoint::serve(proof::endpoint(), listener).unwrap_or_else(|e| panic!("{e}"))
}

/// The variable that makes [`worker_process`] serve: `ADDR GROUPS_DIR`.
const WORKER_ENV: &str = "PIPEWRIGHT_RESTATE_TEST_WORKER";

/// Not a test: the worker process the kill -9 test starts (this test binary, running only this
/// function). Without the variable it returns at once.
#[test]
fn worker_process() {
    let Some(spec) = std::env::var(WORKER_ENV).ok() else {
        return;
    };
    let (addr, groups) = spec
        .split_once(' ')
        .unwrap_or_else(|| panic!("{WORKER_ENV}={spec:?}: want `ADDR GROUPS_DIR`"));
    let addr: SocketAddr = addr.parse().unwrap_or_else(|e| panic!("{addr}: {e}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    rt.block_on(async {
        let killed = processes::adopt(Path::new(groups));
        eprintln!("worker: killed {killed} processes a dead worker left");
        let _serving = endpoint::bind_and_serve(proof::endpoint(), addr)
            .await
            .unwrap_or_else(|e| panic!("{addr}: {e}"));
        eprintln!("worker: serving on {addr}");
        std::future::pending::<()>().await;
    });
}

/// A worker in a process of its own (in its own process group), to be killed with kill -9.
struct WorkerProcess {
    child: Option<Child>,
}

impl WorkerProcess {
    async fn start(addr: SocketAddr, dir: &Path) -> WorkerProcess {
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("worker.log"))
            .unwrap_or_else(|e| panic!("{e}"));
        let log2 = log.try_clone().unwrap_or_else(|e| panic!("{e}"));
        let mut cmd = Command::new(exe);
        cmd.args([
            "worker_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            WORKER_ENV,
            format!("{addr} {}", dir.join("groups").display()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2))
        .process_group(0);
        // SAFETY: prctl and getppid are async-signal-safe; nothing else runs between fork and
        // exec. The worker dies with the test thread that started it, should the test die
        // before its Drop runs.
        unsafe {
            let parent = std::process::id();
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() as u32 != parent {
                    libc::_exit(137);
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap_or_else(|e| panic!("worker: {e}"));
        let mut w = WorkerProcess { child: Some(child) };
        let start = Instant::now();
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            if let Some(Ok(Some(status))) = w.child.as_mut().map(Child::try_wait) {
                panic!(
                    "the worker exited ({status}): {}",
                    std::fs::read_to_string(dir.join("worker.log")).unwrap_or_default()
                );
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the worker did not listen on {addr} within 30s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        w
    }

    /// kill -9 of the worker's process group.
    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(pid) = i32::try_from(child.id()) {
                // SAFETY: kill(2) on the group this test created; no memory preconditions.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
            }
            let _ = child.wait();
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

#[tokio::test]
async fn a_run_completes_with_each_step_once() {
    if skip_slow_test() {
        return;
    }
    let s = setup().await;
    let worker = in_process_worker().await;
    s.register(&worker.uri()).await;
    let sub = s.send("once", &s.input(None)).await;
    let Submission::Accepted { invocation_id } = &sub else {
        panic!("a new key is accepted: {sub:?}");
    };
    assert!(invocation_id.starts_with("inv_"), "{invocation_id}");
    assert_eq!(s.attach(invocation_id).await, expected("once"));
    assert_eq!(s.steps(), ["s1", "s2", "s3"]);
    worker.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn resubmitting_a_key_does_not_start_a_second_run() {
    if skip_slow_test() {
        return;
    }
    let s = setup().await;
    let worker = in_process_worker().await;
    s.register(&worker.uri()).await;
    let first = s.send("again", &s.input(Some(2))).await;
    assert!(matches!(first, Submission::Accepted { .. }), "{first:?}");
    s.blocked_step_pid().await;
    let ingress = s.server.ingress_url();
    let id = first.invocation_id();
    let output = s.client.output(&ingress, id).await;
    assert_eq!(output.unwrap_or_else(|e| panic!("{e}")), None, "it runs");
    // The state s1 set reaches the server with the journal, as the step after it runs.
    let start = Instant::now();
    loop {
        let last = s
            .client
            .call(&ingress, "Proof", "again", "last", None)
            .await;
        match last.unwrap_or_else(|e| panic!("{e}")) {
            v if v == json!("s1") => break,
            v if v.is_null() && start.elapsed() < Duration::from_secs(10) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            v => panic!("the last step while s2 runs: {v}"),
        }
    }
    // While the first run is in flight…
    let second = s.send("again", &s.input(Some(2))).await;
    assert_eq!(
        second,
        Submission::PreviouslyAccepted {
            invocation_id: first.invocation_id().to_string()
        }
    );
    s.open_gate();
    assert_eq!(s.attach(first.invocation_id()).await, expected("again"));
    // …and once it is done.
    let third = s.send("again", &s.input(None)).await;
    assert_eq!(
        third,
        Submission::PreviouslyAccepted {
            invocation_id: first.invocation_id().to_string()
        }
    );
    assert_eq!(s.attach(third.invocation_id()).await, expected("again"));
    let output = s.client.output(&ingress, id).await;
    let output = output.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output, serde_json::to_value(expected("again")).ok());
    let last = s
        .client
        .call(&ingress, "Proof", "again", "last", None)
        .await;
    assert_eq!(last.unwrap_or_else(|e| panic!("{e}")), json!("s3"));
    assert_eq!(s.steps(), ["s1", "s2", "s3"]);
    worker.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn the_admin_query_sees_the_invocation() {
    if skip_slow_test() {
        return;
    }
    let s = setup().await;
    let worker = in_process_worker().await;
    s.register(&worker.uri()).await;
    let sub = s.send("queried", &s.input(None)).await;
    s.attach(sub.invocation_id()).await;
    let rows = within("the admin query", 30, async {
        s.client
            .query(
                &s.server.admin_url(),
                "SELECT id, status, target_service_key FROM sys_invocation",
            )
            .await
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let row = rows
        .iter()
        .find(|r| r.get("id") == Some(&json!(sub.invocation_id())))
        .unwrap_or_else(|| panic!("{} not in {rows:?}", sub.invocation_id()));
    assert_eq!(row.get("status"), Some(&json!("completed")), "{row:?}");
    assert_eq!(row.get("target_service_key"), Some(&json!("queried")));
    // A query the server refuses says why, with the URL.
    let err = s
        .client
        .query(&s.server.admin_url(), "SELECT nope FROM sys_invocation")
        .await
        .err()
        .unwrap_or_else(|| panic!("a bad column is refused"));
    let msg = err.to_string();
    assert!(msg.contains("/query answered 500"), "{msg}");
    assert!(msg.contains("No field named nope"), "{msg}");
    worker.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_worker_killed_mid_run_finishes_it_after_a_restart() {
    if skip_slow_test() {
        return;
    }
    let s = setup().await;
    let addr: SocketAddr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        l.local_addr().unwrap_or_else(|e| panic!("{e}"))
    };
    let mut worker = WorkerProcess::start(addr, s.dir.path()).await;
    s.register(&format!("http://{addr}")).await;
    let sub = s.send("killed-worker", &s.input(Some(2))).await;
    let shell = s.blocked_step_pid().await;
    assert!(alive(shell));
    worker.kill9();
    // The step's shell is not left running (its own group, SIGKILL when the worker died).
    wait_until("the killed worker's step shell to die", 5, || !alive(shell)).await;
    s.open_gate();
    let _worker = WorkerProcess::start(addr, s.dir.path()).await;
    assert_eq!(
        s.attach(sub.invocation_id()).await,
        expected("killed-worker")
    );
    let steps = s.steps();
    eprintln!("side effects: {steps:?}");
    assert_eq!(count(&steps, "s1"), 1, "{steps:?}");
    assert_eq!(count(&steps, "s3"), 1, "{steps:?}");
    // The step in flight at the kill ran again; nothing else did.
    assert!((1..=2).contains(&count(&steps, "s2")), "{steps:?}");
}

#[tokio::test]
async fn a_server_killed_mid_run_finishes_it_after_a_restart() {
    if skip_slow_test() {
        return;
    }
    let mut s = setup().await;
    let worker = in_process_worker().await;
    s.register(&worker.uri()).await;
    let sub = s.send("killed-server", &s.input(Some(2))).await;
    let shell = s.blocked_step_pid().await;
    s.server.kill();
    // The invocation's stream broke with the server: its handler is dropped, and with it the
    // step in flight (its process group killed), before Restate runs the step again.
    wait_until("the step's shell to die with its stream", 10, || {
        !alive(shell)
    })
    .await;
    s.open_gate();
    within("restarting the server", 60, s.server.restart())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.attach(sub.invocation_id()).await,
        expected("killed-server")
    );
    let steps = s.steps();
    eprintln!("side effects: {steps:?}");
    assert_eq!(count(&steps, "s1"), 1, "{steps:?}");
    assert_eq!(count(&steps, "s3"), 1, "{steps:?}");
    assert!((1..=2).contains(&count(&steps, "s2")), "{steps:?}");
    worker.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_three_node_cluster_runs_a_workflow() {
    if skip_slow_test() {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let nodes = pipewright_restate::server::cluster_configs(&dir.path().join("cluster"), 3)
        .unwrap_or_else(|e| panic!("{e}"));
    let binary = pipewright_restate::server::find_binary().unwrap_or_else(|e| panic!("{e}"));
    let mut servers: Vec<RestateServer> = nodes
        .into_iter()
        .map(|c| RestateServer::spawn(binary.clone(), c).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    for s in &mut servers {
        s.wait_healthy(Duration::from_secs(60))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let client = Client::new().unwrap_or_else(|e| panic!("{e}"));
    let worker = in_process_worker().await;
    // Healthy is not yet provisioned: partitions get leaders a moment later.
    let start = Instant::now();
    loop {
        match client
            .register(&servers[0].admin_url(), &worker.uri())
            .await
        {
            Ok(_) => break,
            Err(e) if start.elapsed() < Duration::from_secs(60) => {
                eprintln!("registering: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let input = ProofInput {
        log: dir.path().join("steps.log"),
        block_at: None,
        gate: None,
        pids: None,
    };
    let body = serde_json::to_value(&input).unwrap_or_else(|e| panic!("{e}"));
    // Submitted through one node, waited for through another. Another node's ingress answers
    // 404 (no such service) for a while after the registration (8-10 s here, with the cluster
    // just formed).
    let start = Instant::now();
    let sub = loop {
        let sent = client
            .send(&servers[1].ingress_url(), "Proof", "clustered", &body)
            .await;
        match sent {
            Err(e) if e.status() == Some(404) && start.elapsed() < Duration::from_secs(30) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => break other.unwrap_or_else(|e| panic!("{e}")),
        }
    };
    eprintln!("node 2 knew the deployment after {:?}", start.elapsed());
    let out = within("attaching through node 3", 60, async {
        client
            .attach(&servers[2].ingress_url(), sub.invocation_id())
            .await
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        serde_json::from_value::<ProofOutput>(out).ok(),
        Some(expected("clustered"))
    );
    worker.shutdown(Duration::from_secs(5)).await;
}
