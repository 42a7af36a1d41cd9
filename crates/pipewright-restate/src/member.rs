//! Fan-out members as invocations (issue 24): `PipewrightItem`, a service every worker serves,
//! runs one fan-out member (an item or branch, with its retries) of a run whose pass runs on
//! some worker, and [`RemoteMembers`], what that pass sends its members through. Several
//! workers behind one URL so share one run's items.
//!
//! A pass submits each member through the ingress, not through its workflow's context: its
//! members run concurrently and end in any order, which a journal replay could not follow
//! (see [`crate::workflow`]). The submission's idempotency key is the run id, the pass's epoch
//! and the member's key, so the same pass re-attaches to a member it sent already, and a later
//! pass (a new epoch) sends it anew. The member records into the run's state under the pass's
//! epoch, without claiming the run: once the pass is superseded its members' writes are
//! refused as its own are, and a member stops as soon as it sees its pass is gone.

use crate::client::Client;
use crate::store::{Engine, RestateStore};
use crate::workflow::RunSubmission;
use pipewright_runtime::backend::BoxFuture;
use pipewright_runtime::members::{MemberCall, MemberReport, Members};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// The service name, as the ingress addresses it.
pub const SERVICE: &str = "PipewrightItem";

/// What a pass sends for one member.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemberSubmission {
    pub run_id: String,
    /// The epoch of the pass that sent it: the member's writes carry it.
    pub epoch: u64,
    /// The pass's `run` arguments (the file, the backend, the budgets…).
    pub submission: RunSubmission,
    pub call: MemberCall,
}

/// A member for the worker's pipewright to run.
pub struct MemberPass {
    pub member: MemberSubmission,
    /// The run's store on the engine, for this member alone.
    pub store: Arc<RestateStore>,
}

/// Runs a member: what the run's own pass would have done with it, in this worker.
pub trait MemberExecutor: Send + Sync {
    fn execute(&self, pass: MemberPass) -> BoxFuture<'static, MemberReport>;
}

/// The service.
pub struct PipewrightItem {
    pub engine: Engine,
    pub executor: Arc<dyn MemberExecutor>,
}

#[restate_sdk::service(invocation_retry_policy(initial_interval = "100ms", max_interval = "2s"))]
impl PipewrightItem {
    /// Runs one member. It journals nothing: a retry (its worker died) runs it again, and its
    /// steps that landed are replayed from the run's state.
    #[handler]
    async fn run(
        &self,
        _ctx: Context<'_>,
        member: Json<MemberSubmission>,
    ) -> HandlerResult<Json<MemberReport>> {
        let store = RestateStore::new(self.engine.clone(), true)
            .map_err(|e| HandlerError::from(e.to_string()))?;
        let pass = MemberPass {
            member: member.into_inner(),
            store: Arc::new(store),
        };
        Ok(Json(self.executor.execute(pass).await))
    }
}

/// Sends a pass's members to the engine, for any worker to run.
pub struct RemoteMembers {
    pub engine: Engine,
    pub run_id: String,
    pub submission: RunSubmission,
    /// The pass's store: it holds the epoch the members write under.
    pub store: Arc<RestateStore>,
}

/// How long a member is sent again, or attached to again, while the engine cannot answer.
const RETRY_FOR: Duration = Duration::from_secs(30);

impl Members for RemoteMembers {
    fn run(&self, call: MemberCall) -> BoxFuture<'static, MemberReport> {
        let epoch = self.store.held_epoch(&self.run_id);
        let (engine, run_id, submission) = (
            self.engine.clone(),
            self.run_id.clone(),
            self.submission.clone(),
        );
        Box::pin(async move {
            let Some(epoch) = epoch else {
                return MemberReport::broken(format!(
                    "run {run_id} sends a member without owning the run"
                ));
            };
            let key = format!("{run_id}/{epoch}/{}", call.key);
            let member = MemberSubmission {
                run_id,
                epoch,
                submission,
                call,
            };
            match send_and_attach(&engine, &key, &member).await {
                Ok(r) => r,
                Err(e) => MemberReport::broken(e),
            }
        })
    }
}

async fn send_and_attach(
    engine: &Engine,
    key: &str,
    member: &MemberSubmission,
) -> Result<MemberReport, String> {
    let client = Client::new().map_err(|e| e.to_string())?;
    let body = serde_json::to_value(member).map_err(|e| e.to_string())?;
    // Since when the engine has not answered (the retries' window).
    let mut failing: Option<std::time::Instant> = None;
    let mut pause = Duration::from_millis(50);
    loop {
        // Sent again under the same key, a lost answer or a broken wait costs nothing: the
        // engine has the one invocation, and attaching waits for it again.
        let answer = match client
            .send_once(&engine.ingress, SERVICE, "run", &body, key)
            .await
        {
            Ok(sent) => {
                failing = None;
                client.attach(&engine.ingress, sent.invocation_id()).await
            }
            Err(e) => Err(e),
        };
        match answer {
            Ok(v) => {
                return serde_json::from_value(v)
                    .map_err(|e| format!("a member's report this pipewright does not read: {e}"))
            }
            Err(e)
                if crate::store::transient(&e)
                    && failing
                        .get_or_insert_with(std::time::Instant::now)
                        .elapsed()
                        < RETRY_FOR =>
            {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}
