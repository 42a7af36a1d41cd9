//! `PipewrightRunState`, a Virtual Object keyed by run id: a run's record in Restate state, in
//! the key-value shape of `pipewright_runtime::run_kv` (the same semantics as the SQLite
//! store, held equal by that module's tests). Its exclusive handlers change a run one batch at
//! a time (Restate runs one at a time per key, and commits each one's state changes whole), its
//! shared handlers read it while the run goes on.
//!
//! Who may write is decided by an epoch, Restate's equivalent of the local store's lock file:
//! `claim` hands out the next one, and a `record` under an older epoch is refused. The worker
//! running the run claims with `force` (Restate runs a workflow's `run` once at a time, so a
//! newer attempt supersedes a dead one); anyone else (`approve`) is refused while the run is
//! owned.

use pipewright_runtime::run_kv::{self, KvOp, RunMeta, META};
use pipewright_runtime::store::{NewRun, Write};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The service name, as the ingress addresses it.
pub const SERVICE: &str = "PipewrightRunState";

/// The HTTP statuses the handlers' terminal errors carry, for the client to tell them apart.
pub const NO_RUN: u16 = 404;
pub const BUSY: u16 = 409;
pub const SUPERSEDED: u16 = 412;

pub(crate) const OWNER: &str = "owner";
const PAUSES: &str = "pauses";
const PASS: &str = "pass";

/// Who owns the run now.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Owner {
    pub epoch: u64,
    pub owned: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claim {
    /// Take the run even from a live owner (the run's own worker: a retry of its attempt).
    pub force: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub epoch: u64,
    pub writes: Vec<Write>,
}

/// What one pass of a run printed, and how it ended (kept while the run waits at a gate, so a
/// client attached to it can print what a local run prints when it pauses).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassReport {
    pub exit: i32,
    /// What the pass printed before its report (errors).
    pub stdout: String,
    pub stderr: String,
    /// The report as `--format json` prints it.
    #[serde(default)]
    pub json: Option<String>,
    /// The report for a person: (stdout, stderr).
    #[serde(default)]
    pub human: Option<(String, String)>,
}

/// What a client asks of a run that is running, relayed to the worker running it, which acts
/// where the run is and answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ask {
    /// Names the answer.
    pub id: String,
    pub act: Act,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Act {
    /// A decision for what the run waits at inside (a MEOW approval step).
    Decide {
        step: Option<String>,
        decision: pipewright_runtime::approval::Decision,
    },
    /// `pipewright cancel`: what Ctrl-C does where the run runs.
    Cancel,
    /// What the run waits for inside it now (a MEOW approval step, on its orchestrator): the
    /// web view asks, as the local one asks the run's socket.
    Waiting,
    /// A dialect command's request to the run (a MEOW agent's `meow done|event|…` from a host
    /// without the run's orchestrator socket), for the worker to answer where the run is.
    Agent {
        /// The command (`meow`), which answers it on the worker.
        command: String,
        request: serde_json::Value,
    },
}

/// What deciding answered: the line `approve` prints, or its exit code and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Answer {
    Decided(String),
    Refused(u8, String),
    /// The orchestrator's answer to an agent's request, as its socket gave it.
    Replied(serde_json::Value),
}

const ASKS: &str = "asks";

fn answer_key(id: &str) -> String {
    format!("answer:{id}")
}

/// A run as `load` answers: its record, and how the engine stands with it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Loaded {
    pub meta: RunMeta,
    pub landings: Vec<(String, run_kv::KeptLanding)>,
    pub owner: Owner,
    /// How many times the run has waited at a gate (each wait is the promise `decision-N`).
    pub pauses: u64,
    /// The report of the pass that paused last.
    pub pass: Option<PassReport>,
}

pub struct PipewrightRunState;

fn terminal(code: u16, message: String) -> HandlerError {
    TerminalError::new_with_code(code, message).into()
}

fn no_run(run_id: &str) -> HandlerError {
    terminal(NO_RUN, format!("no run {run_id} in the engine"))
}

/// Typed JSON state (one macro for both kinds of context: their `get`s are the same call).
macro_rules! read {
    ($ctx:expr, $t:ty, $key:expr) => {
        $ctx.get::<Json<$t>>($key).await?.map(Json::into_inner)
    };
}

async fn loaded(ctx: &SharedObjectContext<'_>, under: Option<&str>) -> HandlerResult<Loaded> {
    let run_id = ctx.key().to_string();
    let meta = read!(ctx, RunMeta, META).ok_or_else(|| no_run(&run_id))?;
    let mut landings = Vec::new();
    for k in ctx.get_keys().await? {
        let Some(key) = run_kv::landing_of(&k) else {
            continue;
        };
        if under.is_some_and(|u| !pipewright_runtime::store::is_at_or_under(key, u)) {
            continue;
        }
        if let Some(kept) = read!(ctx, run_kv::KeptLanding, &k) {
            landings.push((key.to_string(), kept));
        }
    }
    Ok(Loaded {
        meta,
        landings,
        owner: read!(ctx, Owner, OWNER).unwrap_or_default(),
        pauses: read!(ctx, u64, PAUSES).unwrap_or(0),
        pass: read!(ctx, PassReport, PASS),
    })
}

#[restate_sdk::object]
impl PipewrightRunState {
    /// Records a new run; `false` when the run exists already (a retried attempt's create).
    #[handler]
    async fn create(&self, ctx: ObjectContext<'_>, run: Json<NewRun>) -> HandlerResult<bool> {
        if read!(ctx, RunMeta, META).is_some() {
            return Ok(false);
        }
        let run = run.into_inner();
        let meta = RunMeta::new(&run, pipewright_runtime::store::now_ms());
        ctx.set(META, Json(meta));
        Ok(true)
    }

    /// Takes ownership of the run: the epoch its writes must carry.
    #[handler]
    async fn claim(&self, ctx: ObjectContext<'_>, claim: Json<Claim>) -> HandlerResult<u64> {
        // A new run is owned before it is created, as the local store locks before it
        // creates.
        let run_id = ctx.key().to_string();
        let owner = read!(ctx, Owner, OWNER).unwrap_or_default();
        if owner.owned && !claim.into_inner().force {
            return Err(terminal(
                BUSY,
                format!("run {run_id} is in progress on a worker; a run has one owner at a time, so wait for it to stop (or stop it) and try again"),
            ));
        }
        let next = Owner {
            epoch: owner.epoch + 1,
            owned: true,
        };
        ctx.set(OWNER, Json(next));
        Ok(next.epoch)
    }

    /// Gives ownership up, if `epoch` still holds it.
    #[handler]
    async fn release(&self, ctx: ObjectContext<'_>, epoch: u64) -> HandlerResult<()> {
        let owner = read!(ctx, Owner, OWNER).unwrap_or_default();
        if owner.epoch == epoch {
            ctx.set(
                OWNER,
                Json(Owner {
                    epoch,
                    owned: false,
                }),
            );
        }
        Ok(())
    }

    /// Applies one batch of writes, all of them or none.
    #[handler]
    async fn record(&self, ctx: ObjectContext<'_>, record: Json<Record>) -> HandlerResult<()> {
        let run_id = ctx.key().to_string();
        let Record { epoch, writes } = record.into_inner();
        let mut meta = read!(ctx, RunMeta, META).ok_or_else(|| no_run(&run_id))?;
        let owner = read!(ctx, Owner, OWNER).unwrap_or_default();
        if owner.epoch != epoch {
            return Err(terminal(
                SUPERSEDED,
                format!("run {run_id} was taken over by another attempt (epoch {} after {epoch}); this one stops", owner.epoch),
            ));
        }
        let mut landings: BTreeSet<String> = ctx
            .get_keys()
            .await?
            .iter()
            .filter_map(|k| run_kv::landing_of(k).map(str::to_string))
            .collect();
        for op in meta.apply(&writes, &mut landings, pipewright_runtime::store::now_ms()) {
            match op {
                KvOp::Set(k, v) => ctx.set(&k, Json(v)),
                KvOp::Clear(k) => ctx.clear(&k),
            }
        }
        Ok(())
    }

    /// Counts one more wait at a gate and keeps the report of the pass that paused; returns
    /// the wait's number (the promise `decision-N` the run then waits on).
    #[handler]
    async fn pause(&self, ctx: ObjectContext<'_>, pass: Json<PassReport>) -> HandlerResult<u64> {
        let n = read!(ctx, u64, PAUSES).unwrap_or(0) + 1;
        ctx.set(PAUSES, Json(n));
        ctx.set(PASS, pass);
        Ok(n)
    }

    /// Deletes the run; refused while it is owned (unless `force`).
    #[handler]
    async fn remove(&self, ctx: ObjectContext<'_>, claim: Json<Claim>) -> HandlerResult<()> {
        let run_id = ctx.key().to_string();
        read!(ctx, RunMeta, META).ok_or_else(|| no_run(&run_id))?;
        let owner = read!(ctx, Owner, OWNER).unwrap_or_default();
        if owner.owned && !claim.into_inner().force {
            return Err(terminal(
                BUSY,
                format!("run {run_id} is in progress on a worker; it cannot be removed now"),
            ));
        }
        ctx.clear_all();
        Ok(())
    }

    /// Queues a decision for the worker running the run.
    #[handler]
    async fn ask(&self, ctx: ObjectContext<'_>, ask: Json<Ask>) -> HandlerResult<()> {
        let mut asks = read!(ctx, Vec<Ask>, ASKS).unwrap_or_default();
        asks.push(ask.into_inner());
        ctx.set(ASKS, Json(asks));
        Ok(())
    }

    /// The decisions asked for since the last call, for the worker running the run to relay.
    #[handler]
    async fn take_asks(&self, ctx: ObjectContext<'_>) -> HandlerResult<Json<Vec<Ask>>> {
        let asks = read!(ctx, Vec<Ask>, ASKS).unwrap_or_default();
        if !asks.is_empty() {
            ctx.clear(ASKS);
        }
        Ok(Json(asks))
    }

    /// What deciding an asked decision answered.
    #[handler]
    async fn answer(
        &self,
        ctx: ObjectContext<'_>,
        answer: Json<(String, Answer)>,
    ) -> HandlerResult<()> {
        let (id, answer) = answer.into_inner();
        ctx.set(&answer_key(&id), Json(answer));
        Ok(())
    }

    /// Forgets an answer its asker has read (the web view asks every second while it shows
    /// a live run: the run's state must not keep every answer).
    #[handler]
    async fn forget_answer(&self, ctx: ObjectContext<'_>, id: String) -> HandlerResult<()> {
        ctx.clear(&answer_key(&id));
        Ok(())
    }

    /// The answer to an asked decision, once the worker gave it.
    #[handler]
    async fn answer_of(
        &self,
        ctx: SharedObjectContext<'_>,
        id: String,
    ) -> HandlerResult<Json<Option<Answer>>> {
        Ok(Json(read!(ctx, Answer, &answer_key(&id))))
    }

    /// The run as `--resume` loads it, with how the engine stands with it.
    #[handler]
    async fn load(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Loaded>> {
        loaded(&ctx, None).await.map(Json)
    }

    /// [`load`](Self::load) with only the landings at `key` and under it (what a fan-out
    /// member replays), so a member does not fetch every item's.
    #[handler]
    async fn load_under(
        &self,
        ctx: SharedObjectContext<'_>,
        key: String,
    ) -> HandlerResult<Json<Loaded>> {
        loaded(&ctx, Some(&key)).await.map(Json)
    }

    /// Who owns the run now (what a fan-out member run on another worker watches: it stops
    /// when the owner it joined lets the run go or is superseded).
    #[handler]
    async fn owner(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Owner>> {
        Ok(Json(read!(ctx, Owner, OWNER).unwrap_or_default()))
    }

    /// The run's events as JSON lines, in order.
    #[handler]
    async fn events(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Vec<String>>> {
        let run_id = ctx.key().to_string();
        let meta = read!(ctx, RunMeta, META).ok_or_else(|| no_run(&run_id))?;
        let mut batches = Vec::new();
        for k in ctx.get_keys().await? {
            if run_kv::is_events_key(&k) {
                if let Some(b) = read!(ctx, String, &k) {
                    batches.push((k, b));
                }
            }
        }
        batches.sort();
        let batches: Vec<String> = batches.into_iter().map(|(_, b)| b).collect();
        Ok(Json(meta.events(&batches)))
    }
}
