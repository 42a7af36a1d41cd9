//! `PipewrightRun`, the workflow a run is on the engine, keyed by run id. Its `run` handler
//! executes the run in passes, each a local run of the worker's pipewright (`RunExecutor`)
//! recording into [`crate::store::RestateStore`]: the first pass starts the run, every later
//! one resumes it from what landed. A pass that stops at an approval gate makes the run wait on
//! a durable promise (`decision-N`) that `pipewright approve|deny` resolves from any host;
//! then the next pass goes on from the decision.
//!
//! Replays stay deterministic: the only commands the handler journals are those promises, in
//! order. On a retry (its worker died) it first awaits again every promise it awaited before
//! (their number is kept with the run's state, outside the journal, so a replay knows it
//! before it issues any), then runs a pass, which resumes from the landings.

use crate::run_state::PassReport;
use crate::store::{Engine, RestateStore};
use pipewright_runtime::backend::BoxFuture;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The service name, as the ingress addresses it.
pub const SERVICE: &str = "PipewrightRun";

/// The exit status of a run that stopped at an approval gate (as `pipewright run` exits).
pub const PAUSED: i32 = 3;

/// The exit status of a run a budget stopped: it waits, as at a gate, for a resume that raises
/// the budget (`run --resume ID --max-…`).
pub const STOPPED: i32 = 4;

/// The exit status of a run `pipewright cancel` stopped (as Ctrl-C exits a local run): it
/// waits, as at a gate, for `run --resume`.
pub const CANCELLED: i32 = 130;

/// The `run` flags a resume may give a stopped run anew: its budgets.
pub const BUDGET_FLAGS: [&str; 3] = ["--max-cost", "--max-tokens", "--max-agent-calls"];

/// What a client submits: the `run` arguments as the worker should read them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSubmission {
    /// `pipewright run`'s arguments after `run`, with paths relative to the project root
    /// (workers run in a checkout of the project) and the input given inline.
    pub args: Vec<String>,
}

/// One pass of a run, for the worker's pipewright to execute.
pub struct Pass {
    pub run_id: String,
    pub submission: RunSubmission,
    /// The run exists on the engine: resume it (its input is the recorded one).
    pub resume: bool,
    pub store: Arc<RestateStore>,
}

/// Executes a pass: what `pipewright run` would do and print, with `pass.store` as its store.
pub trait RunExecutor: Send + Sync {
    fn execute(&self, pass: Pass) -> BoxFuture<'static, PassReport>;
}

/// The workflow. `engine` is where its runs' state is (this worker's own engine).
pub struct PipewrightRun {
    pub engine: Engine,
    pub executor: Arc<dyn RunExecutor>,
}

/// What a wake-up carries: nothing for a decision (it is in the run's record), or the budget
/// flags a stopped run goes on with.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Woken {
    #[serde(default)]
    pub budgets: Vec<String>,
}

impl Woken {
    /// `args` with the budget flags this wake-up gives in place of theirs.
    fn apply(&self, args: &mut Vec<String>) {
        if self.budgets.is_empty() {
            return;
        }
        let mut kept = Vec::with_capacity(args.len());
        let mut it = std::mem::take(args).into_iter();
        while let Some(a) = it.next() {
            if BUDGET_FLAGS.contains(&a.as_str()) {
                it.next();
            } else if !BUDGET_FLAGS.iter().any(|f| a.starts_with(&format!("{f}="))) {
                kept.push(a);
            }
        }
        kept.extend(self.budgets.iter().cloned());
        *args = kept;
    }
}

fn promise_name(n: u64) -> String {
    format!("decision-{n}")
}

fn engine_error(e: impl std::fmt::Display) -> HandlerError {
    // Retried: the engine's own state was unreachable, which a retry outlives.
    HandlerError::from(e.to_string())
}

#[restate_sdk::workflow(invocation_retry_policy(initial_interval = "100ms", max_interval = "2s"))]
impl PipewrightRun {
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        submission: Json<RunSubmission>,
    ) -> HandlerResult<Json<PassReport>> {
        let run_id = ctx.key().to_string();
        let submission = submission.into_inner();
        let store = Arc::new(RestateStore::new(self.engine.clone(), true).map_err(engine_error)?);
        let known = {
            let (store, id) = (store.clone(), run_id.clone());
            blocking(move || match store.loaded(&id) {
                Ok(l) => Ok(Some(l.pauses)),
                Err(pipewright_runtime::store::StoreError::NoRun { .. }) => Ok(None),
                Err(e) => Err(e),
            })
            .await?
            .map_err(engine_error)?
        };
        // The waits of earlier attempts, in the order they were journaled.
        let mut submission = submission;
        for n in 1..=known.unwrap_or(0) {
            let woken = ctx.promise::<Json<Woken>>(&promise_name(n)).await?;
            woken.into_inner().apply(&mut submission.args);
        }
        let mut exists = known.is_some();
        loop {
            let pass = Pass {
                run_id: run_id.clone(),
                submission: submission.clone(),
                resume: exists,
                store: store.clone(),
            };
            let report = self.executor.execute(pass).await;
            exists = true;
            if ![PAUSED, STOPPED, CANCELLED].contains(&report.exit) {
                return Ok(Json(report));
            }
            let n = {
                let (store, id, r) = (store.clone(), run_id.clone(), report.clone());
                blocking(move || store.pause(&id, &r))
                    .await?
                    .map_err(engine_error)?
            };
            let woken = ctx.promise::<Json<Woken>>(&promise_name(n)).await?;
            woken.into_inner().apply(&mut submission.args);
        }
    }

    /// Wakes a run waiting at its `n`th gate, once its decision is recorded.
    #[handler]
    async fn wake(
        &self,
        ctx: SharedWorkflowContext<'_>,
        wake: Json<(u64, Woken)>,
    ) -> HandlerResult<()> {
        let (n, woken) = wake.into_inner();
        ctx.resolve_promise::<Json<Woken>>(&promise_name(n), Json(woken));
        Ok(())
    }
}

/// Runs a synchronous store call off the handler's task.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, HandlerError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| HandlerError::from(format!("a store call stopped: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resume's budgets replace the run's, whichever way they were written.
    #[test]
    fn a_wake_up_replaces_the_budget_flags() {
        let mut args: Vec<String> = [
            "p.yaml",
            "--max-agent-calls",
            "2",
            "--max-cost=1",
            "--format",
            "json",
        ]
        .map(String::from)
        .to_vec();
        Woken {
            budgets: vec!["--max-agent-calls".into(), "5".into()],
        }
        .apply(&mut args);
        assert_eq!(
            args,
            ["p.yaml", "--format", "json", "--max-agent-calls", "5"]
        );
        let before = args.clone();
        Woken::default().apply(&mut args);
        assert_eq!(args, before);
    }
}
