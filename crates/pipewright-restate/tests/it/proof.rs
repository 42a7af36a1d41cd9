//! The workflows the engine's tests and bench run on a real server: `Proof` (three journaled
//! steps, each a shell that appends its name to a file, so side effects are countable) and
//! `Steps` (N trivial journaled steps, for the per-step overhead).

use pipewright_runtime::tools::process;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ProofInput {
    /// Each step appends its name (`s1`…) to this file.
    pub(crate) log: PathBuf,
    /// The step (1-3) that, once its line is written, writes its shell's pid to `pids` and
    /// waits until `gate` exists: a step in flight to kill something under.
    #[serde(default)]
    pub(crate) block_at: Option<u32>,
    #[serde(default)]
    pub(crate) gate: Option<PathBuf>,
    #[serde(default)]
    pub(crate) pids: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ProofOutput {
    pub(crate) key: String,
    pub(crate) steps: Vec<String>,
}

pub(crate) struct Proof;

// Retries come quickly and stay frequent: a test kills a worker or the server for about a
// second, and the run must go on soon after it is back.
#[restate_sdk::workflow(invocation_retry_policy(
    initial_interval = "50ms",
    max_interval = "500ms"
))]
impl Proof {
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        input: Json<ProofInput>,
    ) -> HandlerResult<Json<ProofOutput>> {
        let input = input.into_inner();
        let mut steps = Vec::new();
        for n in 1..=3u32 {
            let name = format!("s{n}");
            let step = step(input.clone(), n, name.clone());
            let out: String = ctx.run(|| step).name(name).await?;
            ctx.set("last", out.clone());
            steps.push(out);
        }
        Ok(Json(ProofOutput {
            key: ctx.key().to_string(),
            steps,
        }))
    }

    /// The last step that landed, from the run's state (a shared handler: it answers while
    /// the run goes on).
    #[handler]
    async fn last(&self, ctx: SharedWorkflowContext<'_>) -> HandlerResult<Option<String>> {
        Ok(ctx.get::<String>("last").await?)
    }
}

/// One step's side effect: a shell, in its own process group (pipewright-runtime's), as a
/// pipewright step is.
async fn step(input: ProofInput, n: u32, name: String) -> HandlerResult<String> {
    let blocks = input.block_at == Some(n);
    let mut env = vec![
        ("LOG".to_string(), input.log.display().to_string()),
        ("STEP".to_string(), name.clone()),
    ];
    if blocks {
        if let (Some(gate), Some(pids)) = (&input.gate, &input.pids) {
            env.push(("GATE".into(), gate.display().to_string()));
            env.push(("PIDS".into(), pids.display().to_string()));
        }
    }
    let argv = [
        "sh".to_string(),
        "-c".to_string(),
        r#"echo "$STEP" >> "$LOG"
if [ -n "$GATE" ]; then
  echo $$ >> "$PIDS"
  while [ ! -e "$GATE" ]; do sleep 0.05; done
fi"#
        .to_string(),
    ];
    let cwd = std::env::temp_dir();
    let out = process::run(process::Spec {
        argv: &argv,
        stdin: None,
        cwd: &cwd,
        timeout: Duration::from_secs(120),
        env: &env,
        env_remove: &[],
    })
    .await
    .map_err(|e| HandlerError::from(format!("{name}: {e}")))?;
    if out.code != Some(0) {
        return Err(HandlerError::from(format!(
            "{name}: {}",
            out.failure_text()
        )));
    }
    Ok(name)
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct StepsInput {
    pub(crate) n: u64,
    /// How long each step takes (a timer, no process), in milliseconds.
    #[serde(default)]
    pub(crate) step_ms: u64,
}

pub(crate) struct Steps;

#[restate_sdk::workflow]
impl Steps {
    /// `n` journaled steps that do nothing (but wait `step_ms`) and return their number; the
    /// result is their sum.
    #[handler]
    async fn run(&self, ctx: WorkflowContext<'_>, input: Json<StepsInput>) -> HandlerResult<u64> {
        let StepsInput { n, step_ms } = input.into_inner();
        let mut sum = 0u64;
        for i in 0..n {
            let v: u64 = ctx
                .run(move || async move {
                    if step_ms > 0 {
                        tokio::time::sleep(Duration::from_millis(step_ms)).await;
                    }
                    Ok(i)
                })
                .await?;
            sum += v;
        }
        Ok(sum)
    }
}

/// The endpoint a test's worker serves.
pub(crate) fn endpoint() -> Endpoint {
    Endpoint::builder().bind(Proof).bind(Steps).build()
}
