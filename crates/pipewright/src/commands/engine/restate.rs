//! The commands on the Restate engine. A run there is the workflow `PipewrightRun` keyed by its
//! run id, which a worker executes in passes of this pipewright's own `run` (recording into the
//! engine through `RestateStore`), so every dialect runs there as it runs here.

use super::Restate;
use crate::cli::{EngineArgs, RunArgs, RunFormat, RunsArgs, WorkerArgs};
use crate::commands::run::{run_async, RunEnv};
use crate::exit::ExitStatus;
use pipewright_dialect::{FlagValue, RecordedRun};
use pipewright_restate::member::{MemberExecutor, MemberPass, PipewrightItem, RemoteMembers};
use pipewright_restate::run_state::{Act, Answer, Ask, PassReport, PipewrightRunState};
use pipewright_restate::store::{Engine, RestateStore};
use pipewright_restate::workflow::{Pass, PipewrightRun, RunExecutor, RunSubmission};
use pipewright_restate::{Client, Submission};
use pipewright_runtime::approval::Decision;
use pipewright_runtime::backend::BoxFuture;
use pipewright_runtime::members::MemberReport;
use pipewright_runtime::store::{Event, EventSink as _, Store, StoreError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub(super) fn engine(r: &Restate) -> Engine {
    Engine {
        ingress: r.ingress.clone(),
        admin: r.admin.clone(),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ExitStatus> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            errln!("error: cannot start the runtime: {e}");
            ExitStatus::COULD_NOT_START
        })
}

/// How often a client asks the engine whether the run has ended or waits at a gate.
const POLL: Duration = Duration::from_millis(200);
/// How often it reads the run's events for the progress display (each read returns them all).
const EVENTS_EVERY: Duration = Duration::from_secs(1);

// ---- pipewright worker ----

/// `pipewright worker`: serves the engine's runs from this project directory until Ctrl-C.
pub(crate) fn worker(args: &WorkerArgs) -> ExitStatus {
    // A worker serves the Restate engine whatever the project's default engine is.
    let serves = EngineArgs {
        engine: Some(crate::cli::EngineKind::Restate),
        ..args.engine.clone()
    };
    let restate = match super::chosen(&serves, None) {
        Ok(Some(r)) => r,
        Ok(None) => {
            errln!("error: a worker serves the Restate engine, and none was chosen");
            return ExitStatus::COULD_NOT_START;
        }
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    // Before any thread starts: the runs' agents inherit it.
    std::env::set_var(RUN_INGRESS, &restate.ingress);
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    rt.block_on(serve(args, restate))
}

async fn serve(args: &WorkerArgs, restate: Restate) -> ExitStatus {
    // What a killed worker left running of its steps must not run beside their retry. The
    // ledger is the project's, as a local run's (each pass of a run records there too).
    if let Ok(cwd) = std::env::current_dir() {
        if let Ok(store) = crate::commands::runs::store_path(&cwd, &cwd) {
            pipewright_restate::processes::adopt(
                &crate::commands::runs::runs_dir(&store).join("groups"),
            );
        }
    }
    let endpoint = pipewright_restate::restate_sdk::endpoint::Endpoint::builder()
        .bind(PipewrightRunState)
        .bind(PipewrightRun {
            engine: engine(&restate),
            executor: Arc::new(Executor),
        })
        .bind(PipewrightItem {
            engine: engine(&restate),
            executor: Arc::new(MemberRunner),
        })
        .build();
    let serving = match pipewright_restate::endpoint::bind_and_serve(endpoint, args.listen).await {
        Ok(s) => s,
        Err(e) => {
            errln!("error: cannot listen on {}: {e}", args.listen);
            return ExitStatus::COULD_NOT_START;
        }
    };
    errln!(
        "pipewright worker: serving {} for the engine at {}",
        serving.uri(),
        restate.ingress
    );
    if let Some(admin) = &args.register {
        let uri = args.advertise.clone().unwrap_or_else(|| serving.uri());
        let registered = match Client::new() {
            Ok(c) => c.register(admin, &uri).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match registered {
            Ok(d) => errln!("registered {uri} with {admin} as {}", d.id),
            Err(e) => {
                errln!("error: cannot register {uri} with {admin}: {e}");
                return ExitStatus::COULD_NOT_START;
            }
        }
    }
    stopped().await;
    errln!(
        "pipewright worker: stopping (runs in progress go on elsewhere or when a worker is back)"
    );
    serving.shutdown(Duration::from_secs(5)).await;
    // A step still running would run again where the engine retries it.
    pipewright_restate::processes::kill_all();
    ExitStatus::OK
}

/// Waits for Ctrl-C or SIGTERM (what a service manager stops a worker with).
async fn stopped() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(t) => t,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// Executes a pass of a run: `pipewright run` on its own thread and runtime, as the CLI runs
/// it, with the engine's store and everything it prints kept for the engine.
struct Executor;

impl RunExecutor for Executor {
    fn execute(&self, pass: Pass) -> BoxFuture<'static, PassReport> {
        Box::pin(async move {
            let (store, run_id) = (pass.store.clone(), pass.run_id.clone());
            // The engine drops this future when it gives the invocation up (a server node that
            // led it died): the pass stops then, as on Ctrl-C, rather than run beside the retry.
            let cancel = pipewright_runtime::CancelToken::new();
            let token = cancel.clone();
            let _stop_with_the_invocation = CancelOnDrop(cancel.clone());
            let (tx, mut rx) = tokio::sync::oneshot::channel();
            let spawned = std::thread::Builder::new()
                .name("pipewright-run".into())
                .spawn(move || {
                    let _ = tx.send(execute(pass, cancel));
                });
            if let Err(e) = spawned {
                return failed_pass(format!("cannot start the run's thread: {e}"));
            }
            // While the pass runs, what is asked through the engine is done here, where the run
            // is: a decision where it listens (a MEOW approval step's orchestrator socket), a
            // cancel on its token.
            loop {
                tokio::select! {
                    done = &mut rx => {
                        return done.unwrap_or_else(|_| failed_pass("the run's thread stopped".into()));
                    }
                    () = tokio::time::sleep(RELAY_EVERY) => {
                        let (store, run_id, token) = (store.clone(), run_id.clone(), token.clone());
                        let _ = tokio::task::spawn_blocking(move || relay(&store, &run_id, &token)).await;
                    }
                }
            }
        })
    }
}

/// How often a worker looks for decisions asked for the run it runs.
const RELAY_EVERY: Duration = Duration::from_millis(250);

/// Does what was asked for a run this worker runs, as `pipewright approve|deny|cancel` here
/// would, and answers the asker through the engine.
fn relay(store: &Arc<RestateStore>, run_id: &str, cancel: &pipewright_runtime::CancelToken) {
    let Ok(asks) = store.take_asks(run_id) else {
        return;
    };
    for ask in asks {
        let answer = match &ask.act {
            Act::Agent { command, request } => {
                // An agent's request may wait for hours (`await-approval`): it must not hold up
                // the decisions and cancels asked after it.
                let (store, id, command, request) = (
                    store.clone(),
                    run_id.to_string(),
                    command.clone(),
                    request.clone(),
                );
                let spawned = std::thread::Builder::new()
                    .name("pipewright-agent-relay".into())
                    .spawn(move || {
                        let answer = answer_relayed(&id, &command, &request);
                        let _ = store.answer(&id, &ask.id, &answer);
                    });
                if let Err(e) = spawned {
                    errln!("error: cannot relay an agent's request to run {run_id}: {e}");
                }
                continue;
            }
            Act::Decide { step, decision } => {
                match decide_here(store, run_id, step.as_deref(), decision) {
                    Ok(line) => Answer::Decided(line),
                    Err((code, message)) => Answer::Refused(code, message),
                }
            }
            Act::Waiting => waiting_here(store, run_id),
            Act::Cancel => {
                cancel.cancel();
                Answer::Decided(format!(
                    "cancelling run {run_id}: its steps in flight stop, as on Ctrl-C; `pipewright run --resume {run_id} --engine restate` continues it"
                ))
            }
        };
        let _ = store.answer(run_id, &ask.id, &answer);
    }
}

/// `Runtime::decide` for a run on the engine, from this host (where a live run listens).
fn decide_here(
    store: &RestateStore,
    run_id: &str,
    step: Option<&str>,
    d: &Decision,
) -> Result<String, (u8, String)> {
    let loaded = store.loaded(run_id).map_err(|e| (1, e.to_string()))?;
    let record = loaded.meta.record(loaded.landings);
    let run_dir = run_dir_here(run_id);
    let run = RecordedRun {
        run_id,
        store,
        record: &record,
        run_dir: &run_dir,
    };
    crate::commands::runs::decide_recorded(&run, step, d)
}

/// What a run this worker runs waits for inside it, as `[{step_key, kind, prompt}]`. Only a
/// run with a run directory here can (a MEOW run's orchestrator socket): the others' records
/// are not read for it.
fn waiting_here(store: &RestateStore, run_id: &str) -> Answer {
    let run_dir = run_dir_here(run_id);
    if !run_dir.is_dir() {
        return Answer::Replied(serde_json::json!([]));
    }
    let loaded = match store.loaded(run_id) {
        Ok(l) => l,
        Err(e) => return Answer::Refused(1, e.to_string()),
    };
    let record = loaded.meta.record(loaded.landings);
    let run = RecordedRun {
        run_id,
        store,
        record: &record,
        run_dir: &run_dir,
    };
    let waits: Vec<serde_json::Value> = pipewright_registry::waiting(&run)
        .into_iter()
        .map(|w| serde_json::json!({"step_key": w.step_key, "kind": w.kind, "prompt": w.prompt}))
        .collect();
    Answer::Replied(serde_json::Value::Array(waits))
}

/// What a run on the engine waits for inside it, asked of the worker running it (the web
/// view's question; a run no worker runs waits for nothing inside).
pub(crate) fn waiting_on_worker(
    store: &RestateStore,
    run_id: &str,
) -> Result<Vec<pipewright_dialect::Waiting>, String> {
    match ask_within(store, run_id, Act::Waiting, WAITING_WITHIN) {
        Ok(Answer::Replied(serde_json::Value::Array(waits))) => Ok(waits
            .iter()
            .map(|w| pipewright_dialect::Waiting {
                step_key: w["step_key"].as_str().unwrap_or_default().to_string(),
                kind: if w["kind"] == "gate" {
                    "gate"
                } else {
                    "approval"
                },
                prompt: w["prompt"].as_str().unwrap_or_default().to_string(),
                continues: "live",
            })
            .collect()),
        Ok(Answer::Refused(_, m)) | Err((_, m)) => Err(m),
        Ok(other) => Err(format!("run {run_id}'s worker answered {other:?}")),
    }
}

/// How long the web view waits for a worker to say what its run waits for.
const WAITING_WITHIN: Duration = Duration::from_secs(10);

/// Where a run this worker runs keeps its directory (a MEOW run's orchestrator socket): the
/// project's runs directory, as for a local run.
fn run_dir_here(run_id: &str) -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| crate::commands::runs::store_path(&cwd, &cwd).ok())
        .map(|p| crate::commands::runs::runs_dir(&p).join(run_id))
        .unwrap_or_default()
}

/// Answers a dialect command's request to a run this worker runs, as the command itself
/// would on this host.
fn answer_relayed(run_id: &str, command: &str, request: &serde_json::Value) -> Answer {
    let Some(cmd) = crate::cli::dialect_commands().find(|c| c.command().get_name() == command)
    else {
        return Answer::Refused(2, format!("this worker has no `{command}` command"));
    };
    match cmd.answer_relayed(&run_dir_here(run_id), request) {
        Ok(reply) => Answer::Replied(reply),
        Err(e) => Answer::Refused(2, format!("run {run_id}, on its worker: {e}")),
    }
}

fn failed_pass(message: String) -> PassReport {
    PassReport {
        exit: i32::from(ExitStatus::COULD_NOT_START.code()),
        stdout: String::new(),
        stderr: format!("error: {message}\n"),
        json: None,
        human: None,
    }
}

/// Cancels a pass when the future that waits for it is dropped.
struct CancelOnDrop(pipewright_runtime::CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

fn execute(pass: Pass, cancel: pipewright_runtime::CancelToken) -> PassReport {
    let mut args = match crate::cli::parse_run(&pass.submission.args) {
        Ok(a) => a,
        Err(e) => {
            return failed_pass(format!(
                "the engine sent `run` arguments this worker does not read: {e}"
            ))
        }
    };
    if pass.resume {
        // The run keeps the input it started with.
        args.resume = Some(pass.run_id.clone());
        args.input = None;
        args.input_file = None;
        args.vars.clear();
    }
    args.engine = EngineArgs::default();
    args.detach = false;
    // The run's fan-out members run on whichever workers the engine gives them to.
    let members = RemoteMembers {
        engine: pass.store.engine().clone(),
        run_id: pass.run_id.clone(),
        submission: pass.submission.clone(),
        store: pass.store.clone(),
    };
    let env = RunEnv {
        store: Some(pass.store),
        run_id: Some(pass.run_id),
        unattended: true,
        cancel: Some(cancel),
        members: Some(Arc::new(members)),
        member: None,
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return failed_pass(format!("cannot start the runtime: {e}")),
    };
    let (status, captured) = rt.block_on(crate::output::capture(run_async(&args, env)));
    let report = captured.report.unwrap_or_default();
    PassReport {
        exit: i32::from(status.code()),
        stdout: captured.stdout,
        stderr: captured.stderr,
        json: report.json,
        human: report.human,
    }
}

/// Runs a fan-out member of a run whose pass runs on some worker (maybe this one): the pass's
/// `run` on its own thread and runtime, as a pass runs, told to run only the member, under the
/// pass's epoch.
struct MemberRunner;

impl MemberExecutor for MemberRunner {
    fn execute(&self, pass: MemberPass) -> BoxFuture<'static, MemberReport> {
        Box::pin(async move {
            let (store, run_id, epoch) = (
                pass.store.clone(),
                pass.member.run_id.clone(),
                pass.member.epoch,
            );
            // Dropped with the invocation (the engine gave it up): the member stops, as a pass.
            let cancel = pipewright_runtime::CancelToken::new();
            let token = cancel.clone();
            let _stop_with_the_invocation = CancelOnDrop(cancel.clone());
            let (tx, mut rx) = tokio::sync::oneshot::channel();
            let spawned = std::thread::Builder::new()
                .name("pipewright-member".into())
                .spawn(move || {
                    let _ = tx.send(execute_member(pass, cancel));
                });
            if let Err(e) = spawned {
                return MemberReport::broken(format!("cannot start the member's thread: {e}"));
            }
            // The member lives as long as the pass that sent it: once that pass lets the run
            // go (it ended, was cancelled, or a newer pass superseded it), it stops as its
            // pass's own steps did.
            loop {
                tokio::select! {
                    done = &mut rx => {
                        return done.unwrap_or_else(|_| MemberReport::broken("the member's thread stopped"));
                    }
                    () = tokio::time::sleep(RELAY_EVERY) => {
                        let (store, run_id) = (store.clone(), run_id.clone());
                        let owner = tokio::task::spawn_blocking(move || store.owner(&run_id)).await;
                        if let Ok(Ok(o)) = owner {
                            if !o.owned || o.epoch != epoch {
                                token.cancel();
                            }
                        }
                    }
                }
            }
        })
    }
}

fn execute_member(pass: MemberPass, cancel: pipewright_runtime::CancelToken) -> MemberReport {
    let MemberPass { member, store } = pass;
    let mut args = match crate::cli::parse_run(&member.submission.args) {
        Ok(a) => a,
        Err(e) => {
            return MemberReport::broken(format!(
                "the engine sent `run` arguments this worker does not read: {e}"
            ))
        }
    };
    // The member's input is its frame; the run's, recorded, is not read.
    args.resume = Some(member.run_id.clone());
    args.input = None;
    args.input_file = None;
    args.vars.clear();
    args.engine = EngineArgs::default();
    args.detach = false;
    let lock = store.join(&member.run_id, member.epoch);
    let (done, report) = std::sync::mpsc::channel();
    let env = RunEnv {
        store: Some(store),
        run_id: Some(member.run_id.clone()),
        unattended: true,
        cancel: Some(cancel),
        members: None,
        member: Some(crate::commands::run::MemberJob {
            member: pipewright_dialect::Member {
                run_id: member.run_id,
                call: member.call,
                lock,
            },
            done,
        }),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return MemberReport::broken(format!("cannot start the runtime: {e}")),
    };
    let (_, captured) = rt.block_on(crate::output::capture(run_async(&args, env)));
    report.try_recv().unwrap_or_else(|_| {
        MemberReport::broken(format!(
            "the member did not start: {}",
            captured.stderr.trim()
        ))
    })
}

/// The engine's runs as a client (`run`, `approve`, `cancel`, `runs`) sees them; a failure to
/// reach it is said, and exits 2.
fn client_store(restate: &Restate) -> Result<RestateStore, ExitStatus> {
    RestateStore::new(engine(restate), false).map_err(|e| {
        errln!("error: {e}");
        ExitStatus::COULD_NOT_START
    })
}

/// The engine's store and run `id` as it stands there (`approve`, `cancel`); a run it cannot
/// read is said, and exits 1.
fn client_run(
    restate: &Restate,
    id: &str,
) -> Result<(RestateStore, pipewright_restate::run_state::Loaded), ExitStatus> {
    let store = client_store(restate)?;
    let loaded = store.loaded(id).map_err(|e| {
        errln!("error: {e}");
        ExitStatus::FAILED
    })?;
    Ok((store, loaded))
}

// ---- pipewright run --engine restate ----

/// `run` on the engine: checks the file here, submits it, then follows the run until it ends
/// or waits at a gate (or returns at once with `--detach`). `--resume ID` follows a run the
/// engine has (it resumes runs by itself).
pub(crate) fn run(args: &RunArgs, restate: Restate) -> ExitStatus {
    let store = match client_store(&restate) {
        Ok(s) => s,
        Err(code) => return code,
    };
    // Set when this command woke a stopped run: what it waited at before is not news.
    let mut woke = false;
    let run_id = match &args.resume {
        Some(id) => {
            if args.input.is_some() || args.input_file.is_some() || !args.vars.is_empty() {
                errln!("error: run {id} keeps the input it started with; --input cannot be given with --resume");
                return ExitStatus::COULD_NOT_START;
            }
            // The engine knows the run once it is submitted, before a worker has recorded it.
            if let Err(e) = store.report(id) {
                errln!("error: {e}");
                return ExitStatus::COULD_NOT_START;
            }
            // A run a budget stopped waits for one it can go on with; a cancelled run waits
            // for this resume.
            let budgets = budget_args(args);
            let waiting = store.loaded(id).ok().filter(|l| {
                !l.owner.owned
                    && l.pauses > 0
                    && (l.meta.status == "cancelled"
                        || (l.meta.status == "stopped" && !budgets.is_empty()))
            });
            if let Some(l) = waiting {
                if let Err(e) = store.wake(id, l.pauses, budgets) {
                    errln!("error: run {id} could not be continued: {e}");
                    return ExitStatus::FAILED;
                }
                woke = true;
            }
            id.clone()
        }
        None => match submit(args, &restate) {
            Ok(id) => id,
            Err(code) => return code,
        },
    };
    if args.detach {
        outln!("{run_id}");
        return ExitStatus::OK;
    }
    follow(&store, &run_id, args.format, !woke)
}

/// Checks the file, then submits the run; its id.
fn submit(args: &RunArgs, restate: &Restate) -> Result<String, ExitStatus> {
    let cwd = std::env::current_dir().map_err(|e| {
        errln!("error: no working directory: {e}");
        ExitStatus::COULD_NOT_START
    })?;
    let Some(file) = &args.file else {
        errln!("error: give a workflow file (or --resume RUN_ID)");
        return Err(ExitStatus::COULD_NOT_START);
    };
    // Every mistake is found here, before the engine has anything.
    let mut sources = pipewright_syntax::SourceMap::new();
    if crate::commands::load::lowered(file, pipewright_dialect::Verb::Run, &mut sources).is_err() {
        return Err(ExitStatus::COULD_NOT_START);
    }
    let submission = submission(args, file, &cwd).map_err(|e| {
        errln!("error: {e}");
        ExitStatus::COULD_NOT_START
    })?;
    let run_id = pipewright_runtime::store::new_run_id();
    let body = serde_json::to_value(&submission).unwrap_or_default();
    let sent = runtime()?.block_on(async {
        let client = Client::new().map_err(|e| e.to_string())?;
        client
            .send(
                &restate.ingress,
                pipewright_restate::workflow::SERVICE,
                &run_id,
                &body,
            )
            .await
            .map_err(|e| e.to_string())
    });
    match sent {
        Ok(Submission::Accepted { .. }) => {
            if args.format == RunFormat::Human && !args.detach {
                errln!("run {run_id} on the Restate engine at {}", restate.ingress);
            }
            Ok(run_id)
        }
        Ok(Submission::PreviouslyAccepted { .. }) => {
            errln!("error: the engine already has a run {run_id}");
            Err(ExitStatus::COULD_NOT_START)
        }
        Err(e) => {
            errln!("error: cannot submit the run to the Restate engine: {e}");
            Err(ExitStatus::COULD_NOT_START)
        }
    }
}

/// The `run` arguments a worker reads: paths relative to the project root (workers run in a
/// checkout of the project), the input inline (a worker cannot read the submitter's files).
fn submission(args: &RunArgs, file: &Path, cwd: &Path) -> Result<RunSubmission, String> {
    let root = crate::commands::runs::project_root(file, cwd);
    let rel = |p: &Path| -> Result<String, String> {
        let abs = std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let root = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        let r = abs.strip_prefix(&root).map_err(|_| {
            format!(
                "{} is outside the project at {}: workers run in a checkout of the project, so what a run reads must be inside it",
                p.display(),
                root.display()
            )
        })?;
        r.to_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{} is not UTF-8", r.display()))
    };
    let mut argv = vec![rel(file)?];
    let mut push = |k: &str, v: String| {
        argv.push(k.to_string());
        argv.push(v);
    };
    push(
        "--format",
        match args.format {
            RunFormat::Json => "json",
            RunFormat::Human => "human",
        }
        .into(),
    );
    push("--backend", args.backend.clone());
    if let Some(s) = &args.script {
        push("--script", rel(s)?);
    }
    if let Some(p) = &args.pipeline {
        push("--pipeline", p.clone());
    }
    if let Some(input) = crate::commands::run::input(args)? {
        push("--input", input.to_string());
    }
    if let Some(i) = &args.identity {
        push("--identity", i.clone());
    }
    argv.extend(budget_args(args));
    let kinds: Vec<(&str, FlagValue)> = crate::cli::runtimes()
        .flat_map(|r| r.flags())
        .map(|f| (f.long, f.value))
        .collect();
    for (long, value) in args.dialect_flags.iter() {
        match kinds.iter().find(|(l, _)| *l == long).map(|(_, k)| *k) {
            Some(FlagValue::Switch) => argv.push(format!("--{long}")),
            Some(FlagValue::Path { .. }) => {
                let p = rel(&PathBuf::from(value))?;
                argv.push(format!("--{long}"));
                argv.push(p);
            }
            _ => {
                argv.push(format!("--{long}"));
                argv.push(value.to_string());
            }
        }
    }
    Ok(RunSubmission { args: argv })
}

/// The budget flags given, as `run` arguments.
fn budget_args(args: &RunArgs) -> Vec<String> {
    let mut out = Vec::new();
    let flags = pipewright_restate::workflow::BUDGET_FLAGS;
    if let Some(c) = args.max_cost {
        out.extend([flags[0].to_string(), c.to_string()]);
    }
    if let Some(n) = args.max_tokens {
        out.extend([flags[1].to_string(), n.to_string()]);
    }
    if let Some(n) = args.max_agent_calls {
        out.extend([flags[2].to_string(), n.to_string()]);
    }
    out
}

/// Waits for the run to end, or to wait at a gate, and prints what the worker's pass printed.
fn follow(
    store: &RestateStore,
    run_id: &str,
    format: RunFormat,
    waiting_is_news: bool,
) -> ExitStatus {
    let paused_before = store.loaded(run_id).map(|l| l.pauses).unwrap_or(0);
    let mut first = waiting_is_news;
    // On a terminal, the steps' progress as a local run draws it, from the run's events.
    let progress = match format {
        RunFormat::Human => pipewright_runtime::progress::Progress::for_terminal(),
        RunFormat::Json => None,
    };
    let mut shown = 0;
    let mut show_events = || {
        if let Some(p) = &progress {
            if let Ok(lines) = store.events(run_id) {
                for e in lines.iter().skip(shown).filter_map(|l| Event::from_line(l)) {
                    p.event(&e);
                }
                shown = shown.max(lines.len());
            }
        }
    };
    let mut last_events = std::time::Instant::now() - EVENTS_EVERY;
    let mut pause = Duration::from_millis(10);
    loop {
        if last_events.elapsed() >= EVENTS_EVERY {
            last_events = std::time::Instant::now();
            show_events();
        }
        match store.report(run_id) {
            Ok(Some(report)) => {
                // The steps that ended since the last look, before the report.
                show_events();
                return print(&report, format);
            }
            Ok(None) => {}
            // Not submitted yet as far as the ingress knows (it has the send): ask again.
            Err(StoreError::NoRun { .. }) => {}
            Err(e) => {
                errln!("error: {e}");
                return ExitStatus::FAILED;
            }
        }
        if let Ok(l) = store.loaded(run_id) {
            let waits = matches!(l.meta.status.as_str(), "paused" | "stopped" | "cancelled")
                && !l.owner.owned;
            // A run already waiting when we came (a re-attach) says so at once; otherwise only
            // a wait that began since.
            if waits && (l.pauses > paused_before || (first && l.pauses > 0)) {
                if let Some(pass) = &l.pass {
                    show_events();
                    return print(pass, format);
                }
            }
        }
        first = false;
        // Soon at first (a short run ends in milliseconds), then every POLL.
        std::thread::sleep(pause);
        pause = (pause * 2).min(POLL);
    }
}

/// Prints a pass as `pipewright run` prints a run here, in `format`.
fn print(report: &PassReport, format: RunFormat) -> ExitStatus {
    err!("{}", report.stderr);
    out!("{}", report.stdout);
    match (format, &report.json, &report.human) {
        (RunFormat::Json, Some(json), _) => outln!("{json}"),
        (RunFormat::Human, _, Some((stdout, stderr))) => {
            err!("{stderr}");
            out!("{stdout}");
        }
        _ => {}
    }
    ExitStatus::of_run(report.exit)
}

// ---- approve | deny --engine restate ----

/// Decides the gate a run on the engine waits at (the same refusals as a local run's), then
/// wakes the run, which goes on by itself.
pub(crate) fn decide(id: &str, step: Option<&str>, d: &Decision, restate: Restate) -> ExitStatus {
    let (store, loaded) = match client_run(&restate, id) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match decide_loaded(&store, &loaded, id, step, d) {
        Ok(line) => {
            outln!("{line}");
            ExitStatus::OK
        }
        Err((code, message)) => {
            errln!("error: {message}");
            ExitStatus::of_dialect(code)
        }
    }
}

/// `approve|deny` of run `id` as `loaded` from the engine: a run a worker runs is decided
/// there; any other is decided here, then woken. The line `approve|deny` prints; refusals as
/// `decide_recorded` gives them.
pub(super) fn decide_loaded(
    store: &RestateStore,
    loaded: &pipewright_restate::run_state::Loaded,
    id: &str,
    step: Option<&str>,
    d: &Decision,
) -> Result<String, (u8, String)> {
    if loaded.owner.owned {
        // The run is running on a worker: what waits there is decided there.
        return ask_worker(store, id, step, d);
    }
    let line = decide_here(store, id, step, d)?;
    store.wake(id, loaded.pauses, Vec::new()).map_err(|e| {
        (
            1,
            format!("the decision is recorded, but the run could not be woken: {e}"),
        )
    })?;
    Ok(goes_on_by_itself(&line, id))
}

/// A gate's decision line as the engine has it: the local one tells the reader to resume the
/// run, which the engine does by itself.
fn goes_on_by_itself(line: &str, id: &str) -> String {
    let by_itself = format!(
        "the Restate engine continues it by itself (`pipewright run --resume {id} --engine restate` follows it)"
    );
    match line.strip_suffix(&format!("continue with `pipewright run --resume {id}`")) {
        Some(decided) => format!("{decided}{by_itself}"),
        None => format!("{line}; {by_itself}"),
    }
}

/// How long `approve` waits for the worker running the run to answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// Asks the worker running the run to decide, and waits for its answer.
fn ask_worker(
    store: &RestateStore,
    run_id: &str,
    step: Option<&str>,
    d: &Decision,
) -> Result<String, (u8, String)> {
    ask(
        store,
        run_id,
        Act::Decide {
            step: step.map(str::to_string),
            decision: d.clone(),
        },
    )
}

/// Asks the worker running the run to act, and waits for its answer.
fn ask(store: &RestateStore, run_id: &str, act: Act) -> Result<String, (u8, String)> {
    match ask_within(store, run_id, act, ANSWER_WITHIN)? {
        Answer::Decided(line) => Ok(line),
        Answer::Refused(code, message) => Err((code, message)),
        Answer::Replied(_) => Err((
            1,
            format!("run {run_id}'s worker answered a decision with an agent's reply"),
        )),
    }
}

/// Asks the worker running the run to act, and waits up to `within` for its answer.
fn ask_within(
    store: &RestateStore,
    run_id: &str,
    act: Act,
    within: Duration,
) -> Result<Answer, (u8, String)> {
    let ask = Ask {
        id: pipewright_runtime::store::new_run_id(),
        act,
    };
    store.ask(run_id, &ask).map_err(|e| (1, e.to_string()))?;
    let deadline = std::time::Instant::now() + within;
    while std::time::Instant::now() < deadline {
        match store.answer_of(run_id, &ask.id) {
            Ok(Some(answer)) => {
                // Kept otherwise for as long as the run: a failure here costs only that.
                let _ = store.forget_answer(run_id, &ask.id);
                return Ok(answer);
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => return Err((1, e.to_string())),
        }
    }
    Err((
        1,
        format!("run {run_id} is running on a worker that did not answer within {} s; it may have stopped (the engine retries it): try again", within.as_secs()),
    ))
}

// ---- a MEOW agent's requests through the engine ----

/// `pipewright meow …` where the run's orchestrator socket is not (the agent runs on another
/// host than the run's worker): the request goes through the engine to the worker, which
/// puts it to the socket and sends the answer back. `None`: no engine is known here.
pub(crate) fn agent_request(
    command: &str,
    run_id: &str,
    request: &serde_json::Value,
    within: Duration,
) -> Option<Result<serde_json::Value, String>> {
    let restate = match std::env::var(RUN_INGRESS) {
        Ok(ingress) if !ingress.is_empty() => Restate {
            ingress,
            admin: String::new(),
        },
        _ => super::chosen(&EngineArgs::default(), None).ok().flatten()?,
    };
    let store = match RestateStore::new(engine(&restate), false) {
        Ok(s) => s,
        Err(e) => return Some(Err(e.to_string())),
    };
    // Only a worker running the run would answer: anything else would wait out `within`.
    match store.owner(run_id) {
        Ok(o) if o.owned => {}
        Ok(_) => {
            return Some(Err(format!(
                "run {run_id} is not running on the engine at {} (nothing there listens for it)",
                restate.ingress
            )))
        }
        Err(e) => return Some(Err(e.to_string())),
    }
    let act = Act::Agent {
        command: command.to_string(),
        request: request.clone(),
    };
    Some(match ask_within(&store, run_id, act, within) {
        Ok(Answer::Replied(reply)) => Ok(reply),
        Ok(Answer::Refused(_, message)) | Err((_, message)) => Err(message),
        Ok(Answer::Decided(line)) => Err(format!(
            "run {run_id}'s worker answered an agent's request with a decision: {line}"
        )),
    })
}

/// Set by `pipewright worker` for everything its runs start: the ingress through which an
/// agent on another host reaches its run (`pipewright meow` reads it).
pub(crate) const RUN_INGRESS: &str = "PIPEWRIGHT_RUN_INGRESS";

// ---- cancel --engine restate ----

/// `pipewright cancel RUN_ID` on the engine: the worker running the run cancels it as Ctrl-C
/// cancels a local run (its steps in flight stop and are not landed); the run then waits on
/// the engine, `cancelled`, until `run --resume` continues it.
pub(crate) fn cancel(id: &str, restate: Restate) -> ExitStatus {
    let (store, loaded) = match client_run(&restate, id) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match cancel_loaded(&store, &loaded, id) {
        Ok(line) => {
            outln!("{line}");
            ExitStatus::OK
        }
        Err(CancelRefused::NotRunning(e)) => {
            errln!("error: {e}");
            ExitStatus::FAILED
        }
        Err(CancelRefused::Worker(code, message)) => {
            errln!("error: {message}");
            ExitStatus::of_dialect(code)
        }
    }
}

/// Why a cancel on the engine did not happen.
pub(super) enum CancelRefused {
    /// No worker runs the run (in the local engine's words).
    NotRunning(pipewright_runtime::stop::CancelError),
    /// The worker running it refused or could not be asked.
    Worker(u8, String),
}

/// `cancel` of run `id` as `loaded` from the engine: asks the worker running it; the line
/// `cancel` prints.
pub(super) fn cancel_loaded(
    store: &RestateStore,
    loaded: &pipewright_restate::run_state::Loaded,
    id: &str,
) -> Result<String, CancelRefused> {
    if !loaded.owner.owned {
        return Err(CancelRefused::NotRunning(
            pipewright_runtime::stop::CancelError::NotRunning {
                run_id: id.to_string(),
                status: loaded.meta.status.clone(),
            },
        ));
    }
    ask(store, id, Act::Cancel).map_err(|(code, message)| CancelRefused::Worker(code, message))
}

// ---- runs --engine restate ----

/// `runs [show|events|rm]` on the engine's runs.
pub(crate) fn runs(args: &RunsArgs, restate: Restate) -> ExitStatus {
    match client_store(&restate) {
        Ok(store) => crate::commands::runs::act(&store as &dyn Store, args),
        Err(code) => code,
    }
}

#[cfg(test)]
mod tests {
    use super::goes_on_by_itself;

    #[test]
    fn a_decided_gate_on_the_engine_is_not_resumed_by_hand() {
        let local =
            "approved stage 'plan' of run ab-1; continue with `pipewright run --resume ab-1`";
        assert_eq!(
            goes_on_by_itself(local, "ab-1"),
            "approved stage 'plan' of run ab-1; the Restate engine continues it by itself (`pipewright run --resume ab-1 --engine restate` follows it)"
        );
        assert_eq!(
            goes_on_by_itself("denied x", "ab-1"),
            "denied x; the Restate engine continues it by itself (`pipewright run --resume ab-1 --engine restate` follows it)"
        );
    }
}
