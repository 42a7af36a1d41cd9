//! The run store of a run on the engine: pipewright's `Store` trait over the
//! `PipewrightRunState` object ([`crate::run_state`]) through the ingress, so every dialect's
//! runtime records, resumes and is approved on Restate exactly as on SQLite. Landings are
//! written to the engine's replicated log, outside the run's own journal: a retried run resumes
//! from them as a local `run --resume` does.
//!
//! The `Store` trait is synchronous (the local store is SQLite): each call is handed to an
//! I/O thread of this store's own and waited for, so it may be made from a runtime's task or
//! from the recorder's writer thread alike.

use crate::client::{Client, ClientError};
use crate::run_state::{self, Claim, Loaded, PassReport, Record};
use pipewright_runtime::store::{
    self, NewRun, RunLock, RunRecord, RunSummary, Store, StoreError, Write,
};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// Where the engine is.
#[derive(Debug, Clone)]
pub struct Engine {
    /// The ingress, e.g. `http://127.0.0.1:8080`.
    pub ingress: String,
    /// The admin API, e.g. `http://127.0.0.1:9070` (for listing runs).
    pub admin: String,
}

/// A run as [`RestateStore::list_stored`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRun {
    pub run_id: String,
    /// Its `RunMeta`, as JSON text (or its digest).
    pub meta: String,
    /// Its `Owner`, as JSON text or its digest (none before its first claim).
    pub owner: Option<String>,
}

/// The store. `worker`: this process runs the run (its claims take the run from an attempt
/// that died); otherwise (`approve`, `runs`) a run another process owns is refused.
pub struct RestateStore {
    engine: Engine,
    worker: bool,
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    /// The runtime the I/O runs on (shut down, never dropped, with the store).
    io: Mutex<Option<tokio::runtime::Runtime>>,
    handle: tokio::runtime::Handle,
    /// The epoch this process holds each run it owns under.
    epochs: Mutex<HashMap<String, u64>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A runtime must not be dropped (which waits for its threads) inside another's task.
        if let Some(rt) = lock(&self.io).take() {
            rt.shutdown_background();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Inner {
    /// Runs `fut` on the I/O runtime and waits for it. A call whose task died (the runtime
    /// shutting down, a panic in the HTTP stack) answers an error, not a panic here.
    fn block<T: Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T, ClientError>> + Send + 'static,
    ) -> Result<T, ClientError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().unwrap_or_else(|_| {
            Err(ClientError::Setup(
                "the engine client stopped while a call waited on it".into(),
            ))
        })
    }
}

struct RestateLock {
    inner: Arc<Inner>,
    ingress: String,
    run_id: String,
    epoch: u64,
}

impl RunLock for RestateLock {}

/// A joined owner ([`RestateStore::join`]).
struct Joined {
    inner: Arc<Inner>,
    run_id: String,
}

impl RunLock for Joined {}

impl Drop for Joined {
    fn drop(&mut self) {
        lock(&self.inner.epochs).remove(&self.run_id);
    }
}

impl Drop for RestateLock {
    fn drop(&mut self) {
        lock(&self.inner.epochs).remove(&self.run_id);
        let (client, ingress, run_id, epoch) = (
            self.inner.client.clone(),
            self.ingress.clone(),
            self.run_id.clone(),
            self.epoch,
        );
        // Best effort: an owner that cannot release is superseded by the next forced claim.
        let _ = self.inner.block(async move {
            call(
                &client,
                &ingress,
                &run_id,
                "release",
                Some(&Json::from(epoch)),
            )
            .await
        });
    }
}

async fn call(
    client: &Client,
    ingress: &str,
    run_id: &str,
    handler: &str,
    input: Option<&Json>,
) -> Result<Json, ClientError> {
    client
        .call(ingress, run_state::SERVICE, run_id, handler, input)
        .await
}

impl RestateStore {
    pub fn new(engine: Engine, worker: bool) -> Result<RestateStore, StoreError> {
        let client = Client::new().map_err(|e| StoreError::Unusable(e.to_string()))?;
        let io = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("pipewright-restate-io")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Unusable(format!("cannot start the engine client: {e}")))?;
        let handle = io.handle().clone();
        Ok(RestateStore {
            engine,
            worker,
            inner: Arc::new(Inner {
                client,
                io: Mutex::new(Some(io)),
                handle,
                epochs: Mutex::new(HashMap::new()),
            }),
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Calls a handler of the run's state object and waits for it; the engine's refusals come
    /// back as the store's (no run, busy, superseded).
    ///
    /// A call the engine could not answer (unreachable, or a node failing over) is sent again,
    /// under the same idempotency key, for up to [`RETRY_FOR`]: it takes effect once.
    fn call(&self, run_id: &str, handler: &str, input: Option<Json>) -> Result<Json, StoreError> {
        store::check_run_id(run_id)?;
        let (client, ingress, id, h) = (
            self.inner.client.clone(),
            self.engine.ingress.clone(),
            run_id.to_string(),
            handler.to_string(),
        );
        let once = store::new_run_id();
        let answer = self.inner.block(async move {
            let started = std::time::Instant::now();
            let mut pause = std::time::Duration::from_millis(50);
            loop {
                let r = client
                    .call_once(
                        &ingress,
                        run_state::SERVICE,
                        &id,
                        &h,
                        input.as_ref(),
                        Some(&once),
                    )
                    .await;
                match r {
                    Err(e) if transient(&e) && started.elapsed() < RETRY_FOR => {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(std::time::Duration::from_secs(1));
                    }
                    other => return other,
                }
            }
        });
        answer.map_err(|e| self.refusal(run_id, e))
    }

    fn refusal(&self, run_id: &str, e: ClientError) -> StoreError {
        match (e.status(), &e) {
            (Some(run_state::NO_RUN), _) => StoreError::NoRun {
                run_id: run_id.to_string(),
                store: self.describe(),
                hint: " (`pipewright runs --engine restate` lists the runs)",
            },
            (Some(run_state::BUSY), _) => StoreError::Busy {
                run_id: run_id.to_string(),
                by: " (on a worker of the engine)".into(),
            },
            (_, ClientError::Status { body, .. }) => {
                StoreError::Unusable(format!("{}: {body}", self.describe()))
            }
            _ => StoreError::Unusable(format!("{}: {e}", self.describe())),
        }
    }

    /// The run, with how the engine stands with it.
    pub fn loaded(&self, run_id: &str) -> Result<Loaded, StoreError> {
        let v = self.call(run_id, "load", None)?;
        serde_json::from_value(v).map_err(|e| {
            StoreError::Unusable(format!(
                "{}: run {run_id} came back in a shape this pipewright does not read: {e}",
                self.describe()
            ))
        })
    }

    /// Counts one more wait at a gate (keeping the report of the pass that paused); the
    /// wait's number.
    pub fn pause(&self, run_id: &str, pass: &PassReport) -> Result<u64, StoreError> {
        let v = self.call(run_id, "pause", Some(to_json(pass)))?;
        v.as_u64().ok_or_else(|| {
            StoreError::Unusable(format!("{}: `pause` answered {v}", self.describe()))
        })
    }

    /// Wakes the run waiting at its `n`th gate (once its decision is recorded), or stopped by
    /// a budget (with the budget flags it goes on with).
    pub fn wake(&self, run_id: &str, n: u64, budgets: Vec<String>) -> Result<(), StoreError> {
        let body =
            serde_json::to_value((n, crate::workflow::Woken { budgets })).unwrap_or(Json::Null);
        store::check_run_id(run_id)?;
        let (client, ingress, id) = (
            self.inner.client.clone(),
            self.engine.ingress.clone(),
            run_id.to_string(),
        );
        self.inner
            .block(async move {
                client
                    .call(&ingress, crate::workflow::SERVICE, &id, "wake", Some(&body))
                    .await
            })
            .map(|_| ())
            .map_err(|e| self.refusal(run_id, e))
    }

    /// The run's final report once its `run` has ended; `None` while it goes (or waits).
    pub fn report(&self, run_id: &str) -> Result<Option<PassReport>, StoreError> {
        store::check_run_id(run_id)?;
        let (client, ingress, id) = (
            self.inner.client.clone(),
            self.engine.ingress.clone(),
            run_id.to_string(),
        );
        let out = self.inner.block(async move {
            let inv = client
                .lookup_workflow(&ingress, crate::workflow::SERVICE, &id)
                .await?;
            client.output(&ingress, &inv).await
        });
        match out.map_err(|e| self.refusal(run_id, e))? {
            None => Ok(None),
            Some(v) => serde_json::from_value(v).map(Some).map_err(|e| {
                StoreError::Unusable(format!(
                    "{}: the report of run {run_id} came back in a shape this pipewright does not read: {e}",
                    self.describe()
                ))
            }),
        }
    }

    /// Queues a decision for the worker running the run.
    pub fn ask(&self, run_id: &str, ask: &run_state::Ask) -> Result<(), StoreError> {
        self.call(run_id, "ask", Some(to_json(ask)))?;
        Ok(())
    }

    /// The decisions asked for the run since the last call (for its worker to relay).
    pub fn take_asks(&self, run_id: &str) -> Result<Vec<run_state::Ask>, StoreError> {
        let v = self.call(run_id, "take_asks", None)?;
        serde_json::from_value(v).map_err(|e| {
            StoreError::Unusable(format!(
                "{}: the asks of run {run_id}: {e}",
                self.describe()
            ))
        })
    }

    /// Records what deciding an asked decision answered.
    pub fn answer(
        &self,
        run_id: &str,
        id: &str,
        answer: &run_state::Answer,
    ) -> Result<(), StoreError> {
        self.call(run_id, "answer", Some(to_json(&(id, answer))))?;
        Ok(())
    }

    /// Forgets the answer to an asked decision, once read.
    pub fn forget_answer(&self, run_id: &str, id: &str) -> Result<(), StoreError> {
        self.call(run_id, "forget_answer", Some(Json::from(id)))?;
        Ok(())
    }

    /// The answer to an asked decision, once its worker gave it.
    pub fn answer_of(
        &self,
        run_id: &str,
        id: &str,
    ) -> Result<Option<run_state::Answer>, StoreError> {
        let v = self.call(run_id, "answer_of", Some(Json::from(id)))?;
        serde_json::from_value(v).map_err(|e| {
            StoreError::Unusable(format!(
                "{}: an answer of run {run_id}: {e}",
                self.describe()
            ))
        })
    }

    /// Joins the owner of run `run_id` that holds `epoch` (a fan-out member run on this
    /// worker for a run owned elsewhere): writes carry that epoch, so they are refused once
    /// the owner is superseded, and dropping the lock releases nothing (the run is the
    /// owner's).
    pub fn join(&self, run_id: &str, epoch: u64) -> Box<dyn RunLock> {
        lock(&self.inner.epochs).insert(run_id.to_string(), epoch);
        Box::new(Joined {
            inner: self.inner.clone(),
            run_id: run_id.to_string(),
        })
    }

    /// The epoch this store holds run `run_id` under, once it owns (or joined) it.
    pub fn held_epoch(&self, run_id: &str) -> Option<u64> {
        lock(&self.inner.epochs).get(run_id).copied()
    }

    /// Who owns the run now.
    pub fn owner(&self, run_id: &str) -> Result<run_state::Owner, StoreError> {
        let v = self.call(run_id, "owner", None)?;
        serde_json::from_value(v).map_err(|e| {
            StoreError::Unusable(format!(
                "{}: the owner of run {run_id}: {e}",
                self.describe()
            ))
        })
    }

    /// Every run's meta and owner as the engine stores them (JSON text), in one query of the
    /// admin API: what changes whenever the run does (a batch rewrites its meta; a claim or a
    /// release, its owner). `digests`: each value's MD5 instead of its text, which tells a
    /// change for a fraction of the bytes (a meta holds the run's input and output).
    pub fn list_stored(&self, digests: bool) -> Result<Vec<StoredRun>, StoreError> {
        let (client, admin) = (self.inner.client.clone(), self.engine.admin.clone());
        let value = if digests {
            "md5(value_utf8)"
        } else {
            "value_utf8"
        };
        let sql = format!(
            "SELECT service_key, key, {value} AS value FROM state WHERE service_name = '{}' AND key IN ('{}', '{}')",
            run_state::SERVICE,
            pipewright_runtime::run_kv::META,
            run_state::OWNER,
        );
        let rows = self
            .inner
            .block(async move { client.query(&admin, &sql).await })
            // The list is the admin API's, not the ingress's that `describe` names.
            .map_err(|e| {
                StoreError::Unusable(format!(
                    "the engine's admin API at {}: {e}",
                    self.engine.admin
                ))
            })?;
        let mut runs: std::collections::BTreeMap<String, (Option<String>, Option<String>)> =
            std::collections::BTreeMap::new();
        for r in &rows {
            let text = |k: &str| r.get(k).and_then(Json::as_str);
            let (Some(id), Some(key), Some(value)) =
                (text("service_key"), text("key"), text("value"))
            else {
                continue;
            };
            let entry = runs.entry(id.to_string()).or_default();
            if key == run_state::OWNER {
                entry.1 = Some(value.to_string());
            } else {
                entry.0 = Some(value.to_string());
            }
        }
        Ok(runs
            .into_iter()
            .filter_map(|(run_id, (meta, owner))| {
                Some(StoredRun {
                    run_id,
                    meta: meta?,
                    owner,
                })
            })
            .collect())
    }

    fn epoch(&self, run_id: &str) -> Result<u64, StoreError> {
        lock(&self.inner.epochs)
            .get(run_id)
            .copied()
            .ok_or_else(|| {
                StoreError::Unusable(format!(
                    "{}: run {run_id} is written without being owned",
                    self.describe()
                ))
            })
    }
}

/// How long a call is sent again while the engine cannot answer it.
const RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(30);

/// An answer that says nothing about the call itself: the engine was unreachable or failing
/// over (a 5xx, or no answer at all), not a refusal of a handler.
pub(crate) fn transient(e: &ClientError) -> bool {
    match e {
        ClientError::Transport { .. } => true,
        // The handlers' own refusals are 4xx (run_state::{NO_RUN, BUSY, SUPERSEDED}).
        ClientError::Status { status, .. } => *status >= 500,
        _ => false,
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Json {
    // Plain data with string keys: serialising it cannot fail.
    serde_json::to_value(v).unwrap_or(Json::Null)
}

impl Store for RestateStore {
    fn describe(&self) -> String {
        format!("at {} (Restate)", self.engine.ingress)
    }

    fn lock_run(&self, run_id: &str) -> Result<Box<dyn RunLock>, StoreError> {
        let claim = Claim { force: self.worker };
        let v = self.call(run_id, "claim", Some(to_json(&claim)))?;
        let epoch = v.as_u64().ok_or_else(|| {
            StoreError::Unusable(format!("{}: `claim` answered {v}", self.describe()))
        })?;
        lock(&self.inner.epochs).insert(run_id.to_string(), epoch);
        Ok(Box::new(RestateLock {
            inner: self.inner.clone(),
            ingress: self.engine.ingress.clone(),
            run_id: run_id.to_string(),
            epoch,
        }))
    }

    fn is_owned(&self, run_id: &str) -> bool {
        self.loaded(run_id).is_ok_and(|l| l.owner.owned)
    }

    fn create_run(&self, run: &NewRun) -> Result<(), StoreError> {
        self.call(&run.run_id, "create", Some(to_json(run)))?;
        Ok(())
    }

    fn load_run(&self, run_id: &str) -> Result<RunRecord, StoreError> {
        let l = self.loaded(run_id)?;
        Ok(l.meta.record(l.landings))
    }

    fn load_run_under(&self, run_id: &str, key: &str) -> Result<RunRecord, StoreError> {
        let v = self.call(run_id, "load_under", Some(Json::from(key)))?;
        let l: Loaded = serde_json::from_value(v).map_err(|e| {
            StoreError::Unusable(format!(
                "{}: run {run_id} came back in a shape this pipewright does not read: {e}",
                self.describe()
            ))
        })?;
        Ok(l.meta.record(l.landings))
    }

    fn record(&self, run_id: &str, writes: &[Write]) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        let record = Record {
            epoch: self.epoch(run_id)?,
            writes: writes.to_vec(),
        };
        self.call(run_id, "record", Some(to_json(&record)))?;
        Ok(())
    }

    fn list_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let mut runs: Vec<RunSummary> = self
            .list_stored(false)?
            .iter()
            .filter_map(|r| {
                serde_json::from_str::<pipewright_runtime::run_kv::RunMeta>(&r.meta).ok()
            })
            .map(|m| m.summary())
            .collect();
        runs.sort_by(|a, b| (b.created_ms, &b.run_id).cmp(&(a.created_ms, &a.run_id)));
        Ok(runs)
    }

    fn state(&self, run_id: &str) -> Result<Json, StoreError> {
        let l = self.loaded(run_id)?;
        Ok(l.meta.state(l.landings))
    }

    fn events(&self, run_id: &str) -> Result<Vec<String>, StoreError> {
        let v = self.call(run_id, "events", None)?;
        serde_json::from_value(v).map_err(|e| {
            StoreError::Unusable(format!(
                "{}: the events of run {run_id} came back in a shape this pipewright does not read: {e}",
                self.describe()
            ))
        })
    }

    fn remove(&self, run_id: &str) -> Result<(), StoreError> {
        let claim = Claim { force: false };
        self.call(run_id, "remove", Some(to_json(&claim)))?;
        Ok(())
    }
}
