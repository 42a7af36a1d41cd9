//! `pipewright run --engine restate` against a real restate-server (the pinned one, from
//! `npm ci --prefix tools/restate`) and real `pipewright worker` processes, each in its own
//! process group: every dialect gives the report a local run gives; a worker or the server
//! killed with kill -9 in the middle of a run is restarted and the run finishes, each side
//! effect once but the one in flight; a run parked at a gate survives a restart of both and is
//! approved from another directory; a run id is never run twice.
//!
//! Engine tests: `PIPEWRIGHT_RESTATE_TESTS=1`, inside a network namespace with only loopback
//! (`pipewright_restate::testing`; .ci/run runs them so). One server at a time.

use crate::common::*;
use pipewright_restate::client::{Client, Submission};
use pipewright_restate::server::RestateServer;
use pipewright_restate::testing::skip_engine_test;
use serde_json::Value;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A server, a project directory, and the workers serving it.
pub(crate) struct Engine {
    // Drop order: workers, then the server, then the directories.
    workers: Vec<Worker>,
    pub(crate) server: RestateServer,
    rt: tokio::runtime::Runtime,
    pub(crate) project: PathBuf,
    /// Set for the workers started after, and for `pw` and `local`.
    pub(crate) env: Vec<(String, String)>,
    dir: tempfile::TempDir,
    _turn: std::sync::MutexGuard<'static, ()>,
}

struct Worker {
    child: Child,
    port: u16,
}

impl Drop for Worker {
    fn drop(&mut self) {
        kill_group(&self.child);
        let _ = self.child.wait();
    }
}

fn kill_group(child: &Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a process group id we created; no memory is involved.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("a free port: {e}"))
}

impl Engine {
    pub(crate) fn start() -> Engine {
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let dir = tempdir();
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).unwrap_or_else(|e| panic!("{e}"));
        // The project root: runs, groups and relative paths are the worker's and the client's.
        std::fs::write(project.join("pipewright.toml"), "").unwrap_or_else(|e| panic!("{e}"));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let server = rt
            .block_on(RestateServer::start(&dir.path().join("server")))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut e = Engine {
            workers: Vec::new(),
            server,
            rt,
            project,
            env: Vec::new(),
            dir,
            _turn: turn,
        };
        let port = free_port();
        e.worker(port, true);
        e
    }

    /// Starts a worker on `port` in its own process group (registering it when asked), and
    /// waits until it listens.
    fn worker(&mut self, port: u16, register: bool) {
        let mut c = bin();
        c.current_dir(&self.project)
            .args(["worker", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--ingress", &self.server.ingress_url()])
            .args(["--admin", &self.server.admin_url()])
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.dir.path().join(format!("worker-{port}.log")))
                    .unwrap_or_else(|e| panic!("{e}")),
            ))
            .process_group(0);
        if register {
            c.args(["--register", &self.server.admin_url()]);
        }
        let child = c
            .spawn()
            .unwrap_or_else(|e| panic!("pipewright worker: {e}"));
        let deadline = Instant::now() + Duration::from_secs(30);
        let log = self.dir.path().join(format!("worker-{port}.log"));
        let want = if register { "registered" } else { "serving" };
        while !std::fs::read_to_string(&log).is_ok_and(|t| t.matches(want).count() >= 1) {
            assert!(Instant::now() < deadline, "the worker never said `{want}`");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.workers.push(Worker { child, port });
    }

    /// `pipewright ARGS` in `dir` on this engine.
    fn pw_in(&self, dir: &Path, args: &[&str]) -> Output {
        let mut c = bin();
        c.current_dir(dir)
            .args(args)
            .envs(self.env.iter().cloned())
            .env("PIPEWRIGHT_ENGINE", "restate")
            .env("PIPEWRIGHT_RESTATE_INGRESS", self.server.ingress_url())
            .env("PIPEWRIGHT_RESTATE_ADMIN", self.server.admin_url());
        output_within(c, 120)
    }

    pub(crate) fn pw(&self, args: &[&str]) -> Output {
        self.pw_in(&self.project, args)
    }

    /// Starts the MEOW template `name` on the engine, detached, with `pw` set to this
    /// pipewright; its run id.
    pub(crate) fn detach_meow(&self, name: &str) -> String {
        let pw = format!("pw={}", env!("CARGO_BIN_EXE_pipewright"));
        let detached = self.pw(&["run", name, "--var", &pw, "--detach", "--format", "json"]);
        assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
        String::from_utf8_lossy(&detached.stdout).trim().to_string()
    }

    /// `pipewright ARGS` in `dir` until it succeeds (what it decides is not waiting yet, and
    /// it says so), for up to a minute.
    fn until_ok(&self, dir: &Path, args: &[&str]) -> Output {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let o = self.pw_in(dir, args);
            if o.status.code() == Some(0) {
                return o;
            }
            assert!(
                Instant::now() < deadline,
                "`pipewright {}` never succeeded: {}",
                args.join(" "),
                text(&o)
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// `pipewright ARGS` here, on the local engine (for the report to compare with).
    pub(crate) fn local(&self, args: &[&str]) -> Output {
        let mut c = bin();
        c.current_dir(&self.project)
            .args(args)
            .envs(self.env.iter().cloned())
            .env("PIPEWRIGHT_ENGINE", "local");
        output_within(c, 120)
    }

    pub(crate) fn copy(&self, from: &Path) -> String {
        copy_into(from, &self.project)
    }

    pub(crate) fn write(&self, name: &str, text: &str) {
        std::fs::write(self.project.join(name), text).unwrap_or_else(|e| panic!("{e}"));
    }

    pub(crate) fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.project.join(name)).unwrap_or_default()
    }

    /// The process ids of the workers, in the order they started.
    pub(crate) fn worker_pids(&self) -> Vec<u32> {
        self.workers.iter().map(|w| w.child.id()).collect()
    }

    /// Kills (kill -9, its process group) the worker running a pass of a run now
    /// (`the_pass`), or another one; the process id of a worker left.
    pub(crate) fn kill_a_worker(&mut self, the_pass: bool) -> u32 {
        let pass =
            running_a_pass(&self.workers).unwrap_or_else(|| panic!("a worker runs the pass"));
        let victim = if the_pass {
            pass
        } else {
            usize::from(pass == 0)
        };
        drop(self.workers.remove(victim));
        self.workers[0].child.id()
    }

    /// Replaces the registered worker with two behind one HTTP/2 balancer on loopback
    /// ([`crate::balancer::per_request`]), the balancer's URL registered as the deployment.
    pub(crate) fn two_workers_behind_a_balancer(&mut self) {
        self.workers.clear();
        let (a, b) = (free_port(), free_port());
        self.worker(a, false);
        self.worker(b, false);
        let listener = self
            .rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap_or_else(|err| panic!("{err}"));
        let url = format!(
            "http://{}",
            listener.local_addr().unwrap_or_else(|err| panic!("{err}"))
        );
        self.rt
            .spawn(crate::balancer::per_request(listener, vec![a, b]));
        self.rt.block_on(async {
            Client::new()
                .unwrap_or_else(|err| panic!("{err}"))
                .register(&self.server.admin_url(), &url)
                .await
                .unwrap_or_else(|err| panic!("{err}"))
        });
    }

    pub(crate) fn restart_server(&mut self) {
        self.server.kill();
        self.rt
            .block_on(self.server.restart())
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

fn output_within(mut c: Command, secs: u64) -> Output {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap_or_else(|e| panic!("pipewright: {e}"));
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(o) => o.unwrap_or_else(|e| panic!("{e}")),
        Err(_) => {
            if let Ok(pid) = i32::try_from(id) {
                // SAFETY: kill(2) on the child we started.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            panic!("pipewright did not finish within {secs} s")
        }
    }
}

/// Blanks how long a report's agent calls took, which differs from run to run.
pub(crate) fn without_wall_times(v: &mut Value) {
    if v["usage"].is_object() {
        v["usage"]["wall_ms"] = Value::Null;
        if let Some(steps) = v["usage"]["steps"].as_object_mut() {
            for s in steps.values_mut() {
                s["wall_ms"] = Value::Null;
            }
        }
    }
}

pub(crate) fn report(o: &Output) -> Value {
    let mut v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("the report is JSON ({e}): {}", text(o)));
    v["run_id"] = Value::String("[run-id]".into());
    v
}

/// A pipeline, a recipe, a state machine and a MEOW template give, on the engine, the report
/// they give locally.
#[test]
fn every_dialect_reports_on_the_engine_what_it_reports_locally() {
    if skip_engine_test() {
        return;
    }
    let e = Engine::start();
    e.write(
        "hello.yaml",
        "pipeline: hello\nsteps:\n  - shell: {command: \"echo hello >> hello.log; echo hi\", output: greeting}\n  - transform: {value: \"ctx.greeting.text\"}\n",
    );
    let meow = e.copy(&testdata("meow/run/foreach.meow.toml"));
    let recipe = e.copy(&testdata("recipe/run/flat.yaml"));
    copy_tree(&testdata("statemachine/ok"), &e.project);
    let script = e.copy(&testdata("statemachine/run/implement-and-review-all.yaml"));
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "hello.yaml", "--format", "json"],
        vec!["run", &recipe, "--format", "json"],
        vec![
            "run",
            "implement-and-review-all.json",
            "--backend",
            "script",
            "--script",
            &script,
            "--format",
            "json",
        ],
        vec!["run", &meow, "--format", "json"],
    ];
    // What a run appends to, gone before each run: both start from the same files.
    let fresh = || {
        for entry in std::fs::read_dir(&e.project).unwrap_or_else(|err| panic!("{err}")) {
            let p = entry.unwrap_or_else(|err| panic!("{err}")).path();
            if p.extension().is_some_and(|x| x == "log") {
                std::fs::remove_file(&p).unwrap_or_else(|err| panic!("{err}"));
            }
        }
    };
    for args in &cases {
        fresh();
        let on_engine = e.pw(args);
        fresh();
        let local = e.local(args);
        assert_eq!(
            on_engine.status.code(),
            local.status.code(),
            "{args:?}: engine {} / local {}",
            text(&on_engine),
            text(&local)
        );
        let (mut a, mut b) = (report(&on_engine), report(&local));
        // The state machine's session ids, and a recipe's `session.id` (its run id), are new in
        // every run.
        for v in [&mut a, &mut b] {
            without_wall_times(v);
            if v["stores"]["session"].is_object() {
                v["stores"]["session"]["id"] = Value::Null;
                v["stores"]["session"]["started"] = Value::Null;
            }
            if let Some(t) = v["trace"].as_array_mut() {
                for s in t {
                    s["session"] = Value::Null;
                }
            }
            if let Some(list) = v["stores"]["sessions"].as_array_mut() {
                for s in list {
                    s["id"] = Value::Null;
                }
            }
        }
        assert_eq!(a, b, "{args:?}");
    }
    // The engine's runs are listed, each once, from the engine.
    let runs = e.pw(&["runs", "--format", "json"]);
    let listed: Value = serde_json::from_slice(&runs.stdout)
        .unwrap_or_else(|err| panic!("runs --format json ({err}): {}", text(&runs)));
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(cases.len()),
        "{listed}"
    );
}

/// Three shell steps that append to `steps.log`; the second waits for `gate` (at most ~20 s,
/// so nothing outlives the test) after writing its shell's pid.
const BLOCKING: &str = r#"pipeline: blocking
steps:
  - shell: {command: "echo s1 >> steps.log"}
  - shell: {command: "echo s2 >> steps.log; echo $$ >> pids; i=0; while [ ! -f gate ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done"}
  - shell: {command: "echo s3 >> steps.log; echo done"}
"#;

pub(crate) fn wait_for(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether process `pid` still runs: a zombie (killed, its exit status not yet collected by
/// its parent's reaper thread) runs no more.
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(Path::new("/proc").join(pid.trim()).join("stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// kill -9 of the worker's process group while a step runs: its shell dies with it, and a
/// restarted worker finishes the run; only the step in flight ran twice.
#[test]
fn a_worker_killed_mid_run_is_restarted_and_the_run_finishes() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.write("blocking.yaml", BLOCKING);
    let detached = e.pw(&["run", "blocking.yaml", "--detach", "--format", "json"]);
    assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
    let id = String::from_utf8_lossy(&detached.stdout).trim().to_string();
    wait_for("s2 to start", 60, || e.read("pids").lines().count() >= 1);
    let first = e.read("pids");
    let worker = e.workers.pop().unwrap_or_else(|| panic!("a worker"));
    let port = worker.port;
    drop(worker);
    wait_for("s2's shell to die with its worker", 10, || !alive(&first));
    e.worker(port, false);
    wait_for("s2 to start again", 60, || {
        e.read("pids").lines().count() >= 2
    });
    e.write("gate", "");
    let followed = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    assert_eq!(report(&followed)["output"]["text"], "done\n");
    assert_eq!(e.read("steps.log"), "s1\ns2\ns2\ns3\n");
}

/// kill -9 of the server while a step runs, then a restart on its data directory: the run
/// finishes, each landed step once.
#[test]
fn a_server_killed_mid_run_is_restarted_and_the_run_finishes() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.write("blocking.yaml", BLOCKING);
    let detached = e.pw(&["run", "blocking.yaml", "--detach", "--format", "json"]);
    assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
    let id = String::from_utf8_lossy(&detached.stdout).trim().to_string();
    wait_for("s2 to start", 60, || e.read("pids").lines().count() >= 1);
    e.restart_server();
    wait_for("s2 to start again", 60, || {
        e.read("pids").lines().count() >= 2
    });
    e.write("gate", "");
    let followed = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    let log = e.read("steps.log");
    assert!(
        log.starts_with("s1\ns2\n") && log.ends_with("s3\n"),
        "{log}"
    );
    assert_eq!(log.matches("s1").count(), 1, "{log}");
    assert_eq!(log.matches("s3").count(), 1, "{log}");
}

/// A recipe parked at its gate survives a restart of both the worker and the server; `approve`
/// from another directory wakes it, and it finishes as a local run does.
#[test]
fn a_run_parked_at_a_gate_survives_restarts_and_is_approved_from_elsewhere() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    let staged = e.copy(&testdata("recipe/run/staged.yaml"));
    let paused = e.pw(&["run", &staged]);
    assert_eq!(paused.status.code(), Some(3), "{}", text(&paused));
    assert!(
        text(&paused).contains("needs approval"),
        "{}",
        text(&paused)
    );
    let listed = e.pw(&["runs", "--format", "json"]);
    let runs: Value = serde_json::from_slice(&listed.stdout)
        .unwrap_or_else(|err| panic!("runs --format json ({err}): {}", text(&listed)));
    let id = runs[0]["run_id"].as_str().unwrap_or_default().to_string();
    assert_eq!(runs[0]["status"], "paused", "{runs}");
    let worker = e.workers.pop().unwrap_or_else(|| panic!("a worker"));
    let port = worker.port;
    drop(worker);
    e.restart_server();
    e.worker(port, false);
    let elsewhere = tempdir();
    let approved = e.pw_in(elsewhere.path(), &["approve", &id, "--message", "go"]);
    assert_eq!(approved.status.code(), Some(0), "{}", text(&approved));
    // The engine goes on by itself: nobody is told to resume it.
    assert!(
        stdout(&approved).contains("the Restate engine continues it by itself"),
        "{}",
        text(&approved)
    );
    assert!(
        !stdout(&approved).contains("continue with"),
        "{}",
        text(&approved)
    );
    // Deciding twice: the gate is decided already.
    let again = e.pw_in(elsewhere.path(), &["deny", &id]);
    assert_ne!(again.status.code(), Some(0), "{}", text(&again));
    let followed = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    assert_eq!(report(&followed)["output"], "built-with-go\n");
}

/// A run id is submitted once: the same key again starts nothing.
#[test]
fn resubmitting_a_run_id_does_not_start_a_second_run() {
    if skip_engine_test() {
        return;
    }
    let e = Engine::start();
    e.write(
        "once.yaml",
        "pipeline: once\nsteps:\n  - shell: {command: \"echo ran >> once.log; echo ok\"}\n",
    );
    let done = e.pw(&["run", "once.yaml", "--detach", "--format", "json"]);
    let id = String::from_utf8_lossy(&done.stdout).trim().to_string();
    let followed = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    let body = serde_json::json!({"args": ["once.yaml"]});
    let again = e.rt.block_on(async {
        let c = Client::new().unwrap_or_else(|err| panic!("{err}"));
        c.send(
            &e.server.ingress_url(),
            pipewright_restate::workflow::SERVICE,
            &id,
            &body,
        )
        .await
        .unwrap_or_else(|err| panic!("{err}"))
    });
    assert!(
        matches!(again, Submission::PreviouslyAccepted { .. }),
        "{again:?}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(e.read("once.log"), "ran\n");
}

/// The worker whose process runs a pass of a run now (its pass thread is `pipewright-run`).
fn running_a_pass(workers: &[Worker]) -> Option<usize> {
    workers.iter().position(|w| {
        std::fs::read_dir(format!("/proc/{}/task", w.child.id()))
            .into_iter()
            .flatten()
            .flatten()
            .any(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.trim() == "pipewright-run")
            })
    })
}

/// Each of `e`'s workers ran some of the `what` (iterations, steps) that log `ITEM PID` lines
/// to items.log.
pub(crate) fn every_worker_ran_some(e: &Engine, what: &str) {
    let seen = item_pids(&e.read("items.log"));
    for w in &e.workers {
        assert!(
            seen.contains(&w.child.id()),
            "worker {} ran {what}: {seen:?}",
            w.child.id()
        );
    }
}

/// Each item's pid in items.log (`N PID` lines): the worker it ran in.
pub(crate) fn item_pids(log: &str) -> std::collections::BTreeSet<u32> {
    log.lines()
        .filter_map(|l| l.split(' ').nth(1)?.parse().ok())
        .collect()
}

/// Two workers behind one URL share the items of one 100-item fan-out: both run some of them.
/// Then the worker running the run's pass is killed (its process group, kill -9) in the middle,
/// and the other one, reached through the same URL, takes the pass over and finishes: every
/// item is done, and only items in flight at the kill ran again.
#[test]
fn two_workers_behind_one_url_share_a_fan_out_and_finish_it_when_one_dies() {
    if skip_engine_test() {
        return;
    }
    share_a_fan_out_and_kill(true);
}

/// The same, killing the worker that does not run the pass: the engine gives the items it ran
/// to the other worker, under the same pass, and the run finishes.
#[test]
fn two_workers_behind_one_url_finish_a_fan_out_when_an_items_worker_dies() {
    if skip_engine_test() {
        return;
    }
    share_a_fan_out_and_kill(false);
}

/// Two workers behind one balancer run a 100-item fan-out; once both have run items, the one
/// running the pass (`the_pass`) or the other is killed, and the survivor finishes the run.
fn share_a_fan_out_and_kill(the_pass: bool) {
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    let items: Vec<String> = (0..100).map(|n| format!("'{n}'")).collect();
    // $PPID is the process that started the item's shell: the worker the item ran in.
    e.write(
        "fan.yaml",
        &(format!(
            "pipeline: fan\nsteps:\n  - transform: {{value: \"[{}]\", output: xs}}\n",
            items.join(", ")
        ) + r#"  - for_each:
      over: ctx.xs
      max_parallel: 4
      on_error: abort
      do:
        shell:
          command: !expr >-
            ['sh', '-c', 'echo "$1 $PPID" >> items.log; sleep 0.1', 'item', item]
      collect: {transform: {value: "count(pipe)"}}
"#),
    );
    let check = e.local(&["check", "fan.yaml"]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    let detached = e.pw(&["run", "fan.yaml", "--detach", "--format", "json"]);
    assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
    let id = String::from_utf8_lossy(&detached.stdout).trim().to_string();
    let pids: Vec<u32> = e.workers.iter().map(|w| w.child.id()).collect();
    wait_for("both workers to run items", 60, || {
        let seen = item_pids(&e.read("items.log"));
        pids.iter().all(|p| seen.contains(p))
    });
    let before = e.read("items.log").lines().count();
    assert!(
        before < 90,
        "the kill comes in the middle of the run ({before} items)"
    );
    let pass = running_a_pass(&e.workers).unwrap_or_else(|| panic!("a worker runs the pass"));
    drop(e.workers.remove(if the_pass { pass } else { 1 - pass }));
    let followed = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    assert_eq!(report(&followed)["output"], 100);
    let log = e.read("items.log");
    let mut seen = std::collections::BTreeMap::<u32, u32>::new();
    for l in log.lines() {
        if let Some(n) = l.split(' ').next().and_then(|n| n.parse().ok()) {
            *seen.entry(n).or_default() += 1;
        }
    }
    assert_eq!(seen.len(), 100, "every item ran: {log}");
    let twice = seen.values().filter(|&&c| c > 1).count();
    assert!(
        twice <= 4,
        "only items in flight ran again ({twice}): {log}"
    );
    let other = e.workers[0].child.id();
    let after: Vec<&str> = log.lines().skip(before).collect();
    assert!(
        after.iter().any(|l| l.ends_with(&format!(" {other}"))),
        "the other worker finished the run: {log}"
    );
}

/// A pipeline's fan-outs, their members run as invocations of the engine: values, drops under
/// `continue`, a failed branch, agent calls and their usage come to the report a local run
/// gives, and the members' steps are in the run's events.
#[test]
fn a_fan_out_on_the_engine_reports_what_it_reports_locally() {
    if skip_engine_test() {
        return;
    }
    let e = Engine::start();
    e.write(
        "fan.yaml",
        r#"pipeline: fan
steps:
  - transform: {value: "[1, 2, 0, 4]", output: xs}
  - for_each:
      over: ctx.xs
      max_parallel: 2
      on_error: continue
      do: {call: {pipeline: one, pass: {n: item}}}
      collect: {transform: {value: "pipe"}}
      output: qs
  - parallel:
      on_error: continue
      branches:
        ok: {shell: {command: "echo branch"}}
        bad: {transform: {value: "1 / 0"}}
      collect: {transform: {value: "pipe"}}
---
pipeline: one
steps:
  - agent: {prompt: "item {ctx.n}", output: said}
  - transform: {value: "100 / ctx.n"}
"#,
    );
    let args = ["run", "fan.yaml", "--format", "json"];
    let (on_engine, local) = (e.pw(&args), e.local(&args));
    assert_eq!(on_engine.status.code(), Some(0), "{}", text(&on_engine));
    let (mut a, mut b) = (report(&on_engine), report(&local));
    for v in [&mut a, &mut b] {
        without_wall_times(v);
    }
    assert_eq!(a, b);
    assert_eq!(a["usage"]["agent_calls"], 4, "{a}");
    let listed = e.pw(&["runs", "--format", "json"]);
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap_or_default();
    let id = runs[0]["run_id"].as_str().unwrap_or_default().to_string();
    let events = e.pw(&["runs", "events", &id]);
    let events = stdout(&events);
    for key in [
        "1.for_each.3.call.0",
        "1.for_each.3.call.1",
        "2.parallel.ok",
    ] {
        assert!(
            events
                .lines()
                .any(|l| l.contains("step_completed") && l.contains(&format!("\"{key}\""))),
            "{key} completed: {events}"
        );
    }
}

/// `pipewright cancel` during a fan-out on the engine: the members in flight stop (their
/// shells die, nothing of theirs lands), the run is `cancelled`, and `run --resume` finishes it,
/// running again only the items that were in flight.
#[test]
fn a_fan_out_on_the_engine_is_cancelled_and_resumed() {
    if skip_engine_test() {
        return;
    }
    let e = Engine::start();
    e.write(
        "wait.yaml",
        r#"pipeline: wait
steps:
  - transform: {value: "['1', '2', '3', '4', '5', '6']", output: xs}
  - for_each:
      over: ctx.xs
      max_parallel: 2
      on_error: abort
      do:
        shell:
          command: !expr >-
            ['sh', '-c', 'echo "$1 $$" >> items.log; if [ "$1" -gt 2 ]; then i=0; while [ ! -f go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; fi; echo "$1"', 'item', item]
      collect: {transform: {value: "count(pipe)"}}
"#,
    );
    let detached = e.pw(&["run", "wait.yaml", "--detach"]);
    assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
    let id = stdout(&detached).trim().to_string();
    wait_for("two items to wait", 60, || {
        e.read("items.log").lines().count() >= 4
    });
    let waiting: Vec<String> = e
        .read("items.log")
        .lines()
        .filter_map(|l| l.split(' ').nth(1).map(str::to_string))
        .skip(2)
        .collect();
    let cancelled = e.pw(&["cancel", &id]);
    assert_eq!(cancelled.status.code(), Some(0), "{}", text(&cancelled));
    wait_for("the run to be recorded cancelled", 60, || {
        let o = e.pw(&["runs", "--format", "json"]);
        serde_json::from_slice::<Value>(&o.stdout)
            .ok()
            .is_some_and(|v| v[0]["status"] == "cancelled")
    });
    wait_for("the waiting items' shells to stop", 10, || {
        waiting.iter().all(|p| !alive(p))
    });
    e.write("go", "");
    let done = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    assert_eq!(report(&done)["output"], 6);
    let log = e.read("items.log");
    let runs = |n: &str| {
        log.lines()
            .filter(|l| l.split(' ').next() == Some(n))
            .count()
    };
    // Items 1 and 2 landed before the cancel; 3 and 4 were in flight; 5 and 6 had not started.
    assert_eq!(
        ["1", "2", "3", "4", "5", "6"].map(runs),
        [1, 1, 2, 2, 1, 1],
        "{log}"
    );
}

/// A recipe's parallel foreach on the engine: two workers behind one URL share its
/// iterations, and the report (the results in order, a failing iteration's message) is the
/// one a local run gives.
#[test]
fn a_recipes_parallel_foreach_is_shared_by_two_workers() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    let items: Vec<String> = (0..24).map(|n| format!("\"{n}\"")).collect();
    e.write(
        "par.yaml",
        &format!(
            "name: par\ndescription: shared\nversion: \"1.0.0\"\ncontext:\n  items: [{}]\nsteps:\n  - id: each\n    type: bash\n    foreach: \"{{{{items}}}}\"\n    parallel: 4\n    command: \"echo $PPID >> pids; sleep 0.2; echo got-{{{{item}}}}\"\n    collect: got\n",
            items.join(", ")
        ),
    );
    let failing = e.copy(&testdata("recipe/run/parallel-fail.yaml"));
    let args = ["run", "par.yaml", "--format", "json"];
    let on_engine = e.pw(&args);
    assert_eq!(on_engine.status.code(), Some(0), "{}", text(&on_engine));
    let pids: std::collections::BTreeSet<u32> = e
        .read("pids")
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    for w in &e.workers {
        assert!(
            pids.contains(&w.child.id()),
            "worker {} ran iterations: {pids:?}",
            w.child.id()
        );
    }
    // A recipe's `session` is its run's: its id and start differ from run to run.
    let settled = |o: &Output| {
        let mut v = report(o);
        if v["stores"]["session"].is_object() {
            v["stores"]["session"]["id"] = Value::Null;
            v["stores"]["session"]["started"] = Value::Null;
        }
        without_wall_times(&mut v);
        v
    };
    let local = e.local(&args);
    assert_eq!(settled(&on_engine), settled(&local));
    // A failing iteration, and agent steps counted against the recipe's budget up front.
    let budget = e.copy(&testdata("recipe/run/parallel-budget.yaml"));
    for file in [&failing, &budget] {
        let args = ["run", file, "--format", "json"];
        let (on_engine, local) = (e.pw(&args), e.local(&args));
        assert_eq!(
            on_engine.status.code(),
            local.status.code(),
            "{}",
            text(&on_engine)
        );
        assert_eq!(settled(&on_engine), settled(&local), "{file}");
    }
}

/// A MEOW foreach whose iterations (two shell steps each, given a step's output through the
/// foreach's variables) run as members: `items` items, `max_concurrent` 4; `fail`: the
/// `on_error` of the step that fails for item 7.
fn meow_foreach(items: usize, fail: &str) -> String {
    let items: Vec<String> = (0..items).map(|n| n.to_string()).collect();
    format!(
        r#"[main]
[[main.steps]]
id = "setup"
executor = "shell"
command = "echo pre"
[main.steps.outputs]
tag = {{ source = "stdout" }}

[[main.steps]]
id = "each"
executor = "foreach"
needs = ["setup"]
items = "[{}]"
item_var = "n"
index_var = "i"
template = ".work"
max_concurrent = 4
variables = {{ tag = "{{{{setup.outputs.tag}}}}" }}

[[main.steps]]
id = "after"
executor = "shell"
needs = ["each.*.b"]
command = "echo after"
[main.steps.outputs]
said = {{ source = "stdout" }}

[work]
[work.variables]
tag = {{ required = true }}

[[work.steps]]
id = "a"
executor = "shell"
command = "echo {{{{n}}}} $PPID >> items.log; sleep 0.1; echo {{{{tag}}}}-{{{{n}}}}"
[work.steps.outputs]
got = {{ source = "stdout" }}

[[work.steps]]
id = "b"
executor = "shell"
needs = ["a"]
{fail}
command = "test {{{{n}}}} != 7 || {{ echo seven >&2; exit 3; }}; echo {{{{a.outputs.got}}}}-{{{{i}}}}"
[work.steps.outputs]
said = {{ source = "stdout" }}
"#,
        items.join(", ")
    )
}

/// A MEOW template's foreach on the engine: two workers behind one URL share its iterations
/// (each run as a member), and the report (statuses, outputs, a failed step under
/// `on_error = "continue"`, and a run failed by an iteration) is the one a local run gives.
#[test]
fn a_meow_foreach_is_shared_by_two_workers_and_reports_what_it_reports_locally() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    e.write(
        "each.meow.toml",
        &meow_foreach(24, "on_error = \"continue\""),
    );
    e.write("fails.meow.toml", &meow_foreach(10, ""));
    let args = ["run", "each.meow.toml", "--format", "json"];
    let on_engine = e.pw(&args);
    assert_eq!(on_engine.status.code(), Some(0), "{}", text(&on_engine));
    every_worker_ran_some(&e, "iterations");
    assert_eq!(e.read("items.log").lines().count(), 24);
    let local = e.local(&args);
    let (a, b) = (report(&on_engine), report(&local));
    assert_eq!(a, b);
    assert_eq!(a["steps"]["each.7.b"], "done", "{a}");
    assert_eq!(a["stores"]["each.3.b"]["said"], "pre-3-3", "{a}");
    assert_eq!(a["steps"]["after"], "done", "{a}");
    // The members' steps are in the run's events.
    let listed = e.pw(&["runs", "--format", "json"]);
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap_or_default();
    let id = runs
        .as_array()
        .and_then(|r| {
            r.iter()
                .find(|r| r["status"] == "ok" && r["run_id"] != b["run_id"])
        })
        .and_then(|r| r["run_id"].as_str())
        .unwrap_or_default()
        .to_string();
    let events = stdout(&e.pw(&["runs", "events", &id]));
    assert!(
        events
            .lines()
            .any(|l| l.contains("step_completed") && l.contains("\"each.23.b\"")),
        "{events}"
    );
    let args = ["run", "fails.meow.toml", "--format", "json"];
    let (on_engine, local) = (e.pw(&args), e.local(&args));
    assert_eq!(on_engine.status.code(), Some(1), "{}", text(&on_engine));
    assert_eq!(on_engine.status.code(), local.status.code());
    let (a, b) = (report(&on_engine), report(&local));
    assert_eq!(a, b);
    assert_eq!(a["steps"]["each.7.b"], "failed", "{a}");
    assert_eq!(a["steps"]["after"], "skipped", "{a}");
}

/// `pipewright cancel` during a MEOW foreach whose iterations run as members: the members in
/// flight stop (their shells die, nothing of theirs lands), the run is `cancelled`, and
/// `run --resume` finishes it, running again only the iterations that were in flight.
#[test]
fn a_meow_foreach_on_the_engine_is_cancelled_and_resumed() {
    if skip_engine_test() {
        return;
    }
    let e = Engine::start();
    e.write(
        "wait.meow.toml",
        r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[1, 2, 3, 4, 5, 6]"
item_var = "n"
template = ".one"
max_concurrent = 2

[one]
[[one.steps]]
id = "s"
executor = "shell"
command = "echo {{n}} $$ >> items.log; if [ {{n}} -gt 2 ]; then i=0; while [ ! -f go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; fi; echo {{n}}"
"#,
    );
    let detached = e.pw(&["run", "wait.meow.toml", "--detach"]);
    assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
    let id = stdout(&detached).trim().to_string();
    wait_for("two iterations to wait", 60, || {
        e.read("items.log").lines().count() >= 4
    });
    let waiting: Vec<String> = e
        .read("items.log")
        .lines()
        .filter_map(|l| l.split(' ').nth(1).map(str::to_string))
        .skip(2)
        .collect();
    let cancelled = e.pw(&["cancel", &id]);
    assert_eq!(cancelled.status.code(), Some(0), "{}", text(&cancelled));
    wait_for("the run to be recorded cancelled", 60, || {
        let o = e.pw(&["runs", "--format", "json"]);
        serde_json::from_slice::<Value>(&o.stdout)
            .ok()
            .is_some_and(|v| v[0]["status"] == "cancelled")
    });
    wait_for("the waiting iterations' shells to stop", 10, || {
        waiting.iter().all(|p| !alive(p))
    });
    e.write("go", "");
    let done = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    assert_eq!(report(&done)["steps"]["each.5.s"], "done");
    let log = e.read("items.log");
    let runs = |n: &str| {
        log.lines()
            .filter(|l| l.split(' ').next() == Some(n))
            .count()
    };
    // 1 and 2 landed before the cancel; 3 and 4 were in flight; 5 and 6 had not started.
    assert_eq!(
        ["1", "2", "3", "4", "5", "6"].map(runs),
        [1, 1, 2, 2, 1, 1],
        "{log}"
    );
}

/// Top-level shell steps that run side by side: `n` of them after `setup`, each reading its
/// output, then one that waits for them all.
fn meow_side_by_side(n: usize) -> String {
    let mut t = String::from(
        "[main]\n[[main.steps]]\nid = \"setup\"\nexecutor = \"shell\"\ncommand = \"echo pre\"\n[main.steps.outputs]\ntag = { source = \"stdout\" }\n",
    );
    for k in 0..n {
        t += &format!(
            "\n[[main.steps]]\nid = \"p{k}\"\nexecutor = \"shell\"\nneeds = [\"setup\"]\ncommand = \"echo {k} $PPID >> items.log; sleep 0.2; echo {{{{setup.outputs.tag}}}}-{k}\"\n[main.steps.outputs]\ngot = {{ source = \"stdout\" }}\n"
        );
    }
    let all: Vec<String> = (0..n).map(|k| format!("\"p{k}\"")).collect();
    t += &format!(
        "\n[[main.steps]]\nid = \"last\"\nexecutor = \"shell\"\nneeds = [{}]\ncommand = \"echo {{{{p3.outputs.got}}}}\"\n[main.steps.outputs]\nsaid = {{ source = \"stdout\" }}\n",
        all.join(", ")
    );
    t
}

/// A MEOW foreach whose iterations spawn an agent of their own, ask it, log which process ran
/// them and kill it (`items` items), then a foreach whose iterations all ask one agent the run
/// spawned (`shared` items), and a last step that asks that agent too.
fn meow_agents(items: usize, shared: usize) -> String {
    let list = |n: usize| (0..n).map(|k| k.to_string()).collect::<Vec<_>>().join(", ");
    format!(
        r#"[main]
[[main.steps]]
id = "lead"
executor = "spawn"
agent = "lead"
workdir = "leads"

[[main.steps]]
id = "each"
executor = "foreach"
needs = ["lead"]
items = "[{}]"
item_var = "n"
template = ".own"

[[main.steps]]
id = "again"
executor = "foreach"
needs = ["lead"]
items = "[{}]"
item_var = "n"
template = ".shared"

[[main.steps]]
id = "review"
executor = "agent"
agent = "lead"
needs = ["each.*.down", "again.*.ask"]
prompt = "Review it all"
[main.steps.outputs]
verdict = {{ required = true, type = "string" }}

[own]
[[own.steps]]
id = "up"
executor = "spawn"
agent = "w{{{{n}}}}"

[[own.steps]]
id = "ask"
executor = "agent"
agent = "w{{{{n}}}}"
needs = ["up"]
prompt = "Item {{{{n}}}}"
[own.steps.outputs]
answer = {{ required = true, type = "string" }}

[[own.steps]]
id = "log"
executor = "shell"
needs = ["ask"]
command = "echo {{{{n}}}} $PPID >> items.log; sleep 0.1; echo '{{{{ask.outputs.answer}}}}'"
[own.steps.outputs]
said = {{ source = "stdout" }}

[[own.steps]]
id = "down"
executor = "kill"
agent = "w{{{{n}}}}"
needs = ["log"]

[shared]
[[shared.steps]]
id = "ask"
executor = "agent"
agent = "lead"
prompt = "Shared item {{{{n}}}}"
[shared.steps.outputs]
answer = {{ required = true, type = "string" }}
"#,
        list(items),
        list(shared)
    )
}

/// Offline, a MEOW foreach's iterations with agent, spawn and kill steps run as members with
/// the agents they name: two workers behind one URL share them. Iterations that all name one
/// agent of the run take it one at a time (the rest run in the pass, waiting for it), and the
/// report is the one a local run gives.
#[test]
fn a_meow_foreach_with_agents_is_shared_by_two_workers() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    e.write("agents.meow.toml", &meow_agents(16, 4));
    std::fs::create_dir_all(e.project.join("leads")).unwrap_or_else(|err| panic!("{err}"));
    let args = ["run", "agents.meow.toml", "--format", "json"];
    let on_engine = e.pw(&args);
    assert_eq!(on_engine.status.code(), Some(0), "{}", text(&on_engine));
    every_worker_ran_some(&e, "iterations");
    assert_eq!(e.read("items.log").lines().count(), 16);
    let local = e.local(&args);
    assert_eq!(local.status.code(), Some(0), "{}", text(&local));
    let (mut a, mut b) = (report(&on_engine), report(&local));
    for v in [&mut a, &mut b] {
        without_wall_times(v);
    }
    assert_eq!(a, b);
    // The calls made in members count in the run's usage.
    assert_eq!(a["usage"]["agent_calls"], 21, "{a}");
    assert_eq!(a["steps"]["each.15.down"], "done", "{a}");
    assert_eq!(a["steps"]["again.3.ask"], "done", "{a}");
    assert_eq!(a["steps"]["review"], "done", "{a}");
}

/// A MEOW foreach written in another file of the project than the run's (the run's file
/// given by a bare name, as users do) has its iterations shared by two workers, and the report
/// is a local run's.
#[test]
fn a_meow_foreach_of_another_file_is_shared_by_two_workers() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    std::fs::create_dir_all(e.project.join("lib")).unwrap_or_else(|err| panic!("{err}"));
    e.write(
        "lib/steps.meow.toml",
        "[outer]\n[[outer.steps]]\nid = \"each\"\nexecutor = \"foreach\"\nitems = \"[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\"\nitem_var = \"n\"\ntemplate = \".work\"\n\n[work]\n[[work.steps]]\nid = \"a\"\nexecutor = \"shell\"\ncommand = \"echo {{n}} $PPID >> items.log; sleep 0.1; echo {{n}}\"\n[work.steps.outputs]\nsaid = { source = \"stdout\" }\n",
    );
    e.write(
        "main.meow.toml",
        "[main]\n[[main.steps]]\nid = \"outer\"\nexecutor = \"foreach\"\nitems = \"[1]\"\nitem_var = \"x\"\ntemplate = \"./lib/steps.meow.toml#outer\"\n",
    );
    let args = ["run", "main.meow.toml", "--format", "json"];
    let on_engine = e.pw(&args);
    assert_eq!(on_engine.status.code(), Some(0), "{}", text(&on_engine));
    every_worker_ran_some(&e, "iterations");
    let local = e.local(&args);
    let (a, b) = (report(&on_engine), report(&local));
    assert_eq!(a, b);
    assert_eq!(a["stores"]["outer.0.each.11.a"]["said"], "11", "{a}");
}

/// A MEOW template's steps that run side by side on the engine each run as a member: two
/// workers behind one URL share them, and the report is the one a local run gives.
#[test]
fn meow_steps_side_by_side_are_shared_by_two_workers() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    e.write("side.meow.toml", &meow_side_by_side(12));
    let args = ["run", "side.meow.toml", "--format", "json"];
    let on_engine = e.pw(&args);
    assert_eq!(on_engine.status.code(), Some(0), "{}", text(&on_engine));
    every_worker_ran_some(&e, "steps");
    let local = e.local(&args);
    let (a, b) = (report(&on_engine), report(&local));
    assert_eq!(a, b);
    assert_eq!(a["output"]["said"], "pre-3", "{a}");
}

/// A MEOW foreach whose iterations hold an expand, a branch and a step that recovers with an
/// `on_error` template: each iteration runs whole on whichever worker takes it, two workers
/// behind one URL share them, and the report, with the steps the expansions and recoveries
/// inserted, is a local run's.
#[test]
fn meow_iterations_with_expansions_are_shared_by_two_workers() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    let items: Vec<String> = (0..12).map(|n| n.to_string()).collect();
    e.write(
        "expands.meow.toml",
        &format!(
            r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[{}]"
item_var = "n"
template = ".work"

[work]
[work.variables]
n = {{ required = true }}

[[work.steps]]
id = "x"
executor = "expand"
template = ".inner"
variables = {{ v = "{{{{n}}}}" }}

[[work.steps]]
id = "r"
executor = "shell"
command = "test $(( {{{{n}}}} % 4 )) != 1"
on_error = ".mend"

[mend]
[mend.variables]
n = {{ required = true }}

[[mend.steps]]
id = "m"
executor = "shell"
command = "echo m{{{{n}}}} $PPID >> items.log; echo mended"

[[work.steps]]
id = "br"
executor = "branch"
needs = ["x.s"]
condition = "test $(( {{{{n}}}} % 3 )) = 0"
[work.steps.on_true]
inline = [{{ id = "third", executor = "shell", command = "echo third" }}]
[work.steps.on_false]
template = ".inner"
variables = {{ v = "rest" }}

[inner]
[inner.variables]
v = {{ required = true }}

[[inner.steps]]
id = "s"
executor = "shell"
command = "echo {{{{v}}}} $PPID >> items.log; sleep 0.1; echo got-{{{{v}}}}"
[inner.steps.outputs]
said = {{ source = "stdout" }}
"#,
            items.join(", ")
        ),
    );
    let args = ["run", "expands.meow.toml", "--format", "json"];
    let on_engine = e.pw(&args);
    assert_eq!(on_engine.status.code(), Some(0), "{}", text(&on_engine));
    every_worker_ran_some(&e, "iterations");
    // Each recovery ran once.
    let mended = e.read("items.log");
    let mended: Vec<&str> = mended.lines().filter(|l| l.starts_with('m')).collect();
    assert_eq!(mended.len(), 3, "{mended:?}");
    let local = e.local(&args);
    let (a, b) = (report(&on_engine), report(&local));
    assert_eq!(a, b);
    assert_eq!(a["stores"]["each.7.x.s"]["said"], "got-7", "{a}");
    assert_eq!(a["steps"]["each.9.br.third"], "done", "{a}");
    assert_eq!(a["stores"]["each.8.br.s"]["said"], "got-rest", "{a}");
    assert_eq!(a["steps"]["each.5.r"], "recovered", "{a}");
    assert_eq!(a["steps"]["each.5.r.on_error.m"], "done", "{a}");
    assert_eq!(a["steps"]["each.4.r"], "done", "{a}");
}

/// A MEOW foreach whose iterations pick a protocol in a first step and then expand a track
/// that spawns an agent, expands the picked protocol (which asks it and logs) and kills it:
/// each iteration's first step runs in the pass, then the rest of it goes to whichever worker
/// takes it; two workers share them, every step runs once, and the report, usage included,
/// is a local run's.
#[test]
fn meow_iterations_that_pick_their_protocol_are_shared_by_two_workers() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    e.write(
        "tracks.meow.toml",
        r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[0, 1, 2, 3, 4, 5, 6, 7]"
item_var = "n"
template = ".wrapper"

[wrapper]
[wrapper.variables]
n = { required = true }

[[wrapper.steps]]
id = "resolve"
executor = "shell"
command = "echo r{{n}} >> picked.log; if test $(( {{n}} % 3 )) = 0; then echo review; else echo build; fi"
[wrapper.steps.outputs]
protocol = { source = "stdout" }

[[wrapper.steps]]
id = "track"
executor = "expand"
needs = ["resolve"]
template = ".track"
variables = { who = "t{{n}}", protocol = "{{resolve.outputs.protocol}}", n = "{{n}}" }

[track]
[track.variables]
who = { required = true }
protocol = { required = true }
n = { required = true }

[[track.steps]]
id = "up"
executor = "spawn"
agent = "{{who}}"

[[track.steps]]
id = "work"
executor = "expand"
needs = ["up"]
template = ".{{protocol}}"
variables = { agent = "{{who}}", n = "{{n}}" }

[[track.steps]]
id = "down"
executor = "kill"
agent = "{{who}}"
needs = ["work.log"]

[build]
[build.variables]
agent = { required = true }
n = { required = true }

[[build.steps]]
id = "ask"
executor = "agent"
agent = "{{agent}}"
prompt = "Build {{n}}"

[[build.steps]]
id = "log"
executor = "shell"
needs = ["ask"]
command = "echo {{n}} $PPID >> items.log; sleep 0.1"

[review]
[review.variables]
agent = { required = true }
n = { required = true }

[[review.steps]]
id = "ask"
executor = "agent"
agent = "{{agent}}"
prompt = "Review {{n}}"

[[review.steps]]
id = "log"
executor = "shell"
needs = ["ask"]
command = "echo {{n}} $PPID >> items.log; sleep 0.1"
"#,
    );
    let args = ["run", "tracks.meow.toml", "--format", "json"];
    let on_engine = e.pw(&args);
    assert_eq!(on_engine.status.code(), Some(0), "{}", text(&on_engine));
    every_worker_ran_some(&e, "iterations");
    assert_eq!(e.read("items.log").lines().count(), 8);
    assert_eq!(e.read("picked.log").lines().count(), 8);
    let local = e.local(&args);
    assert_eq!(local.status.code(), Some(0), "{}", text(&local));
    let (mut a, mut b) = (report(&on_engine), report(&local));
    for v in [&mut a, &mut b] {
        without_wall_times(v);
    }
    assert_eq!(a, b);
    assert_eq!(a["usage"]["agent_calls"], 8, "{a}");
    assert_eq!(a["steps"]["each.3.track.work.ask"], "done", "{a}");
}

/// In an iteration run on a worker, `meow step-status` tells what the iteration's own steps
/// came to there (a step the run has not heard of yet is not `pending`), and what the run's
/// other steps came to in the run.
#[test]
fn meow_step_status_in_a_sent_iteration_sees_its_own_steps_and_the_runs() {
    if skip_engine_test() {
        return;
    }
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    e.write(
        "status.meow.toml",
        r#"[main]
[main.variables]
pw = { required = true }

[[main.steps]]
id = "first"
executor = "shell"
command = "echo first"

[[main.steps]]
id = "each"
executor = "foreach"
needs = ["first"]
items = "[0, 1, 2, 3]"
item_var = "n"
template = ".work"
variables = { pw = "{{pw}}" }

[work]
[work.variables]
pw = { required = true }

[[work.steps]]
id = "a"
executor = "shell"
command = "echo {{n}} $PPID >> items.log"

[[work.steps]]
id = "b"
executor = "shell"
needs = ["a"]
command = "echo $({{pw}} meow step-status a) $({{pw}} meow step-status first)"
[work.steps.outputs]
seen = { source = "stdout" }
"#,
    );
    let pw = format!("pw={}", env!("CARGO_BIN_EXE_pipewright"));
    let args = ["run", "status.meow.toml", "--var", &pw, "--format", "json"];
    let on_engine = e.pw(&args);
    assert_eq!(on_engine.status.code(), Some(0), "{}", text(&on_engine));
    every_worker_ran_some(&e, "iterations");
    let a = report(&on_engine);
    for n in 0..4 {
        assert_eq!(
            a["stores"][format!("each.{n}.b")]["seen"],
            "done done",
            "{a}"
        );
    }
    assert_eq!(a, report(&e.local(&args)));
}

/// Two workers behind one URL share a 100-iteration MEOW foreach; once both have run
/// iterations, the one running the pass is killed with kill -9, and the survivor finishes
/// the run: every iteration ran, and only those in flight at the kill ran again.
#[test]
fn two_workers_finish_a_meow_foreach_when_the_pass_dies() {
    if skip_engine_test() {
        return;
    }
    share_a_meow_foreach_and_kill(true);
}

/// The same, killing the worker that does not run the pass: the engine gives its members to
/// the other worker, under the same pass.
#[test]
fn two_workers_finish_a_meow_foreach_when_an_iterations_worker_dies() {
    if skip_engine_test() {
        return;
    }
    share_a_meow_foreach_and_kill(false);
}

fn share_a_meow_foreach_and_kill(the_pass: bool) {
    let mut e = Engine::start();
    e.two_workers_behind_a_balancer();
    let items: Vec<String> = (0..100).map(|n| n.to_string()).collect();
    e.write(
        "fan.meow.toml",
        &format!(
            r#"[main]
[[main.steps]]
id = "each"
executor = "foreach"
items = "[{}]"
item_var = "n"
template = ".one"
max_concurrent = 4

[one]
[[one.steps]]
id = "s"
executor = "shell"
command = "echo {{{{n}}}} $PPID >> items.log; sleep 0.1"
"#,
            items.join(", ")
        ),
    );
    let detached = e.pw(&["run", "fan.meow.toml", "--detach", "--format", "json"]);
    assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
    let id = String::from_utf8_lossy(&detached.stdout).trim().to_string();
    let pids: Vec<u32> = e.workers.iter().map(|w| w.child.id()).collect();
    wait_for("both workers to run iterations", 60, || {
        let seen = item_pids(&e.read("items.log"));
        pids.iter().all(|p| seen.contains(p))
    });
    let before = e.read("items.log").lines().count();
    assert!(
        before < 90,
        "the kill comes in the middle of the run ({before} iterations)"
    );
    let pass = running_a_pass(&e.workers).unwrap_or_else(|| panic!("a worker runs the pass"));
    drop(e.workers.remove(if the_pass { pass } else { 1 - pass }));
    let followed = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    let r = report(&followed);
    for n in 0..100 {
        assert_eq!(r["steps"][format!("each.{n}.s")], "done", "{r}");
    }
    let log = e.read("items.log");
    let mut seen = std::collections::BTreeMap::<u32, u32>::new();
    for l in log.lines() {
        if let Some(n) = l.split(' ').next().and_then(|n| n.parse().ok()) {
            *seen.entry(n).or_default() += 1;
        }
    }
    assert_eq!(seen.len(), 100, "every iteration ran: {log}");
    let twice = seen.values().filter(|&&c| c > 1).count();
    assert!(
        twice <= 4,
        "only iterations in flight ran again ({twice}): {log}"
    );
    let other = e.workers[0].child.id();
    let after: Vec<&str> = log.lines().skip(before).collect();
    assert!(
        after.iter().any(|l| l.ends_with(&format!(" {other}"))),
        "the other worker finished the run: {log}"
    );
}

/// On a terminal, following a run on the engine draws its steps as a local run does, from the
/// events the run recorded there.
#[test]
fn a_followed_run_shows_its_steps_on_a_terminal() {
    if skip_engine_test() {
        return;
    }
    let e = Engine::start();
    e.write(
        "slow.yaml",
        "pipeline: slow\nsteps:\n  - shell: {command: \"sleep 1.5; echo one\"}\n  - shell: {command: \"echo two\"}\n",
    );
    let line = format!("{} run slow.yaml", env!("CARGO_BIN_EXE_pipewright"));
    let mut c = Command::new("script");
    c.args(["-qec", &line, "/dev/null"])
        .current_dir(&e.project)
        .env("NO_COLOR", "1")
        .env("PIPEWRIGHT_ENGINE", "restate")
        .env("PIPEWRIGHT_RESTATE_INGRESS", e.server.ingress_url())
        .env("PIPEWRIGHT_RESTATE_ADMIN", e.server.admin_url());
    let o = output_within(c, 120);
    let shown = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(shown.contains("✓ step 0 shell"), "{shown}");
    assert!(shown.contains("two"), "{shown}");
}

/// A MEOW template whose step `release` waits for an approval (`pw`: the pipewright to call),
/// then runs `release.shipped` when approved, `release.held` when not.
pub(crate) const MEOW_APPROVAL: &str = r#"[main]
[main.variables]
pw = { default = "pipewright" }

[[main.steps]]
id = "release"
executor = "branch"
condition = "{{pw}} meow await-approval release --timeout 90s"
[main.steps.on_true]
inline = [{ id = "shipped", executor = "shell", command = "echo shipped" }]
[main.steps.on_false]
inline = [{ id = "held", executor = "shell", command = "echo held" }]
"#;

/// A MEOW approval step waits inside a run on a worker; `approve` from another directory is
/// relayed there through the engine, and the run goes on.
#[test]
fn a_meow_approval_on_a_worker_is_decided_from_elsewhere() {
    if skip_engine_test() {
        return;
    }
    let e = Engine::start();
    e.write("gate.meow.toml", MEOW_APPROVAL);
    let id = e.detach_meow("gate.meow.toml");
    let elsewhere = tempdir();
    let approved = e.until_ok(elsewhere.path(), &["approve", &id, "--step", "release"]);
    assert!(text(&approved).contains("release"), "{}", text(&approved));
    let followed = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    assert_eq!(
        report(&followed)["steps"]["release.shipped"],
        "done",
        "{}",
        text(&followed)
    );
}

/// A MEOW run's agents on another host than its worker (simulated: the orchestrator socket
/// their environment names does not exist where they run) reach the run through the engine:
/// a step's status, an event (acknowledged), a wait for an approval that is given meanwhile,
/// and a human's `meow approve RUN_ID GATE` from a directory that is no project.
#[test]
fn meow_requests_from_another_host_reach_the_run_through_the_engine() {
    if skip_engine_test() {
        return;
    }
    let e = Engine::start();
    e.write(
        "remote.meow.toml",
        r#"[main]
[main.variables]
pw = { default = "pipewright" }
away = { default = "MEOW_ORCH_SOCK=/nonexistent/orch.sock" }

[[main.steps]]
id = "first"
executor = "shell"
command = "echo one"

[[main.steps]]
id = "elsewhere"
executor = "shell"
needs = ["first"]
command = "test \"$({{away}} {{pw}} meow step-status first)\" = done && {{away}} {{pw}} meow event relayed via=engine"

[[main.steps]]
id = "release"
executor = "branch"
needs = ["elsewhere"]
condition = "{{away}} {{pw}} meow await-approval release --timeout 60s"
[main.steps.on_true]
inline = [{ id = "shipped", executor = "shell", command = "echo shipped" }]
[main.steps.on_false]
inline = [{ id = "held", executor = "shell", command = "echo held" }]
"#,
    );
    let id = e.detach_meow("remote.meow.toml");
    let elsewhere = tempdir();
    e.until_ok(elsewhere.path(), &["meow", "approve", &id, "release"]);
    let followed = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    let r = report(&followed);
    assert_eq!(r["steps"]["elsewhere"], "done", "{}", text(&followed));
    assert_eq!(r["steps"]["release.shipped"], "done", "{}", text(&followed));
    // Once the run has ended nothing listens for it: said at once, not after a wait.
    let late = e.pw_in(elsewhere.path(), &["meow", "approve", &id, "release"]);
    assert_eq!(late.status.code(), Some(2), "{}", text(&late));
    assert!(
        text(&late).contains("is not running on the engine"),
        "{}",
        text(&late)
    );
}

/// A run on a 3-node cluster goes on while each node in turn (the one leading the run's
/// partition among them) is killed with kill -9 and brought back: the worker reaches the
/// cluster through a balancer over the three ingresses, as a deployment would.
#[test]
fn a_cluster_run_survives_losing_each_node_in_turn() {
    if skip_engine_test() {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempdir();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(project.join("pipewright.toml"), "").unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let nodes = pipewright_restate::server::cluster_configs(&dir.path().join("cluster"), 3)
        .unwrap_or_else(|e| panic!("{e}"));
    let binary = pipewright_restate::server::find_binary().unwrap_or_else(|e| panic!("{e}"));
    let mut servers: Vec<RestateServer> = nodes
        .into_iter()
        .map(|c| RestateServer::spawn(binary.clone(), c).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    for s in &mut servers {
        rt.block_on(s.wait_healthy(Duration::from_secs(60)))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let ingress_ports: Vec<u16> = servers
        .iter()
        .filter_map(|s| s.ingress_url().rsplit(':').next()?.parse().ok())
        .collect();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap_or_else(|e| panic!("{e}"));
    let ingress = format!(
        "http://{}",
        listener.local_addr().unwrap_or_else(|e| panic!("{e}"))
    );
    rt.spawn(crate::balancer::per_connection(listener, ingress_ports));
    let admin = servers[0].admin_url();
    let port = free_port();
    let log = dir.path().join("worker.log");
    let worker = Worker {
        child: bin()
            .current_dir(&project)
            .args(["worker", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--ingress", &ingress, "--admin", &admin])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(&log).unwrap_or_else(|e| panic!("{e}")),
            ))
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("{e}")),
        port,
    };
    wait_for("the worker to listen", 30, || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("serving"))
    });
    // Healthy is not yet provisioned; and every node's ingress learns of the deployment a
    // while after it is registered.
    let client = Client::new().unwrap_or_else(|e| panic!("{e}"));
    let uri = format!("http://127.0.0.1:{port}");
    wait_for("the deployment to register", 60, || {
        rt.block_on(client.register(&admin, &uri)).is_ok()
    });
    for s in &servers {
        wait_for("every node to know the deployment", 60, || {
            let probe = rt.block_on(client.call(
                &s.ingress_url(),
                pipewright_restate::run_state::SERVICE,
                "00000000-0000-7000-8000-000000000000",
                "load",
                None,
            ));
            // A run that does not exist is the object's own answer: the service is known.
            matches!(&probe, Err(e) if e.to_string().contains("no run"))
        });
    }
    let steps: String = (1..=16)
        .map(|n| format!("  - shell: {{command: \"sleep 0.7; echo s{n} >> steps.log\"}}\n"))
        .collect();
    std::fs::write(
        project.join("long.yaml"),
        format!("pipeline: long\nsteps:\n{steps}"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let pw = |args: &[&str]| {
        let mut c = bin();
        c.current_dir(&project)
            .args(args)
            .args(["--engine", "restate", "--ingress", &ingress]);
        output_within(c, 180)
    };
    let detached = pw(&["run", "long.yaml", "--detach", "--format", "json"]);
    assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
    let id = String::from_utf8_lossy(&detached.stdout).trim().to_string();
    let logged = || {
        std::fs::read_to_string(project.join("steps.log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    for server in &mut servers {
        let before = logged();
        wait_for("a step to land", 60, || logged() > before);
        server.kill();
        let during = logged();
        wait_for("a step to land without the node", 60, || logged() > during);
        rt.block_on(server.restart())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let followed = pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(followed.status.code(), Some(0), "{}", text(&followed));
    let log = std::fs::read_to_string(project.join("steps.log")).unwrap_or_default();
    for n in 1..=16 {
        assert!(log.contains(&format!("s{n}\n")), "s{n}: {log}");
    }
    // A node's death, and its return (leadership may move back), can each interrupt the step
    // in flight: at most two per node.
    assert!(
        log.lines().count() <= 16 + 6,
        "only steps in flight ran again: {log}"
    );
    drop(worker);
}

/// A run a budget stopped on the engine waits there; `run --resume ID` with a higher budget
/// gives it one, and it finishes with the totals of an uninterrupted run.
#[test]
fn a_run_stopped_by_a_budget_on_the_engine_resumes_with_a_higher_one() {
    if skip_engine_test() {
        return;
    }
    let e = Engine::start();
    e.write(
        "three.yaml",
        "pipeline: three\nsteps:\n  - agent: {prompt: \"first question\", output: a}\n  - agent: {prompt: \"second question\", output: b}\n  - agent: {prompt: \"third\", output: c}\n",
    );
    let stopped = e.pw(&[
        "run",
        "three.yaml",
        "--format",
        "json",
        "--max-agent-calls",
        "2",
    ]);
    assert_eq!(stopped.status.code(), Some(4), "{}", text(&stopped));
    let v = report(&stopped);
    assert_eq!(v["status"], "stopped", "{v}");
    assert_eq!(v["usage"]["agent_calls"], 2, "{v}");
    let listed = e.pw(&["runs", "--format", "json"]);
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap_or_default();
    let id = runs[0]["run_id"].as_str().unwrap_or_default().to_string();
    // Re-attached without a new budget, it still waits: said at once.
    let again = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(again.status.code(), Some(4), "{}", text(&again));
    let done = e.pw(&[
        "run",
        "--resume",
        &id,
        "--format",
        "json",
        "--max-agent-calls",
        "5",
    ]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    let v = report(&done);
    assert_eq!(v["usage"]["agent_calls"], 3, "{v}");
    assert_eq!(v["usage"]["input_tokens"], 10, "{v}");
}

/// `pipewright cancel` stops a run on the engine as Ctrl-C stops a local one: the step in
/// flight stops and is not landed, the run is `cancelled` and waits on the engine, and
/// `run --resume` continues it on the engine without running the landed step again.
#[test]
fn a_run_on_the_engine_is_cancelled_and_resumed() {
    if skip_engine_test() {
        return;
    }
    let e = Engine::start();
    e.copy(&testdata("run/cancel_wait.yaml"));
    let detached = e.pw(&["run", "cancel_wait.yaml", "--detach"]);
    assert_eq!(detached.status.code(), Some(0), "{}", text(&detached));
    let id = stdout(&detached).trim().to_string();
    wait_for("the waiting step to start", 60, || {
        e.project.join("started").exists()
    });
    let cancelled = e.pw(&["cancel", &id]);
    assert_eq!(cancelled.status.code(), Some(0), "{}", text(&cancelled));
    assert!(
        stdout(&cancelled).contains(&format!("cancelling run {id}")),
        "{}",
        text(&cancelled)
    );
    wait_for("the run to be recorded cancelled", 60, || {
        let o = e.pw(&["runs", "--format", "json"]);
        serde_json::from_slice::<Value>(&o.stdout)
            .ok()
            .is_some_and(|v| v[0]["status"] == "cancelled")
    });
    // Nothing runs it now: a second cancel is refused in the local engine's words.
    let again = e.pw(&["cancel", &id]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(
        stderr(&again).contains("is not running (cancelled): there is nothing to cancel"),
        "{}",
        text(&again)
    );
    e.write("go", "");
    let done = e.pw(&["run", "--resume", &id, "--format", "json"]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    let v = report(&done);
    assert_eq!(v["status"], "ok", "{v}");
    // The first step landed before the cancel and ran once; the cancelled one ran again.
    assert_eq!(e.read("log"), "first\nsecond\nsecond\n");
}
