//! Where a fan-out's members run (issue 24). A member is one item or branch of a fan-out, with
//! its retries. Locally a runtime runs its members in-process; a run on a durable engine may
//! be given [`Members`], which runs each elsewhere (on the Restate engine, as an invocation any
//! worker may take) and hands back what it came to. Only the runtime knows what a member needs
//! to run (the step, the frame it sees): it sends that as [`MemberCall::body`], opaque here, and
//! reads it back on the other side.

use crate::backend::BoxFuture;
use crate::failure::{Failure, RunError};
use crate::session::{Begun, RunOptions, RunSession, RunStart};
use crate::store::{self, RunLock, StoreError};
use crate::usage::{Exhausted, Meter, Usage};
use pipewright_syntax::{FileId, SourceMap, Span};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// One member to run: its recovery key (`1.for_each.7`) and what its runtime needs to run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberCall {
    pub key: String,
    pub body: Json,
}

/// Runs a run's fan-out members somewhere else than in the run's own process.
pub trait Members: Send + Sync {
    fn run(&self, call: MemberCall) -> BoxFuture<'static, MemberReport>;
}

/// What a member came to, and what its agent calls cost (recorded already where it ran: the
/// run's meter only counts them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberReport {
    pub result: MemberResult,
    #[serde(default)]
    pub usage: Vec<(String, Usage)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MemberResult {
    /// Its value; `None`: dropped in an earlier attempt under `on_error: continue`.
    Done(Option<Json>),
    Failed(SentError),
    Cancelled {
        key: String,
    },
    /// A budget stopped it before an agent call.
    Stopped {
        budget: String,
        limit: String,
        spent: Usage,
    },
    /// It could not be run at all (its file, its engine); the words say why.
    Broken(String),
}

impl MemberReport {
    pub fn broken(message: impl Into<String>) -> MemberReport {
        MemberReport {
            result: MemberResult::Broken(message.into()),
            usage: Vec::new(),
        }
    }
}

impl MemberResult {
    /// What a member run here came to, for the run that asked for it.
    pub fn of(
        r: Result<Option<pipewright_r1::Value>, Failure>,
        stopped: Option<Exhausted>,
    ) -> Self {
        match (r, stopped) {
            (Err(Failure::Cancelled { .. }), Some(e)) => MemberResult::Stopped {
                budget: e.budget.to_string(),
                limit: e.limit,
                spent: e.spent,
            },
            (Ok(v), _) => MemberResult::Done(v.map(|v| v.to_json())),
            (Err(Failure::Step(e)), _) => MemberResult::Failed(SentError::from(&*e)),
            (Err(Failure::Cancelled { key }), None) => MemberResult::Cancelled { key },
        }
    }
}

/// The budget a member's [`MemberResult::Stopped`] names, as the run's meter keeps it.
pub fn exhausted(budget: &str, limit: String, spent: Usage) -> Exhausted {
    Exhausted {
        budget: intern(budget),
        limit,
        spent,
    }
}

/// A [`RunError`] as it travels. Spans stay valid across processes: both sides load the same
/// files in the same order (a member checks the run's source hash before it runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentError {
    pub code: String,
    pub key: String,
    pub step_kind: String,
    pub message: String,
    pub span: SentSpan,
    pub detail_span: Option<SentSpan>,
    pub value: Option<Json>,
    pub reads: Vec<(String, Json)>,
    pub context: Vec<(SentSpan, String)>,
    pub raw: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentSpan(pub u32, pub u32, pub u32);

impl From<Span> for SentSpan {
    fn from(s: Span) -> SentSpan {
        SentSpan(s.file.0, s.start, s.end)
    }
}

impl From<SentSpan> for Span {
    fn from(s: SentSpan) -> Span {
        Span {
            file: FileId(s.0),
            start: s.1,
            end: s.2,
        }
    }
}

impl From<&RunError> for SentError {
    fn from(e: &RunError) -> SentError {
        SentError {
            code: e.code.to_string(),
            key: e.key.clone(),
            step_kind: e.step_kind.to_string(),
            message: e.message.clone(),
            span: e.span.into(),
            detail_span: e.detail_span.map(Into::into),
            value: e.value.as_ref().map(pipewright_r1::Value::to_json),
            reads: e
                .reads
                .iter()
                .map(|(p, v)| (p.clone(), v.to_json()))
                .collect(),
            context: e
                .context
                .iter()
                .map(|(s, t)| ((*s).into(), t.clone()))
                .collect(),
            raw: e.raw.clone(),
        }
    }
}

impl From<SentError> for RunError {
    fn from(e: SentError) -> RunError {
        let value = |v: &Json| pipewright_r1::Value::from_json(v);
        RunError {
            code: intern(&e.code),
            key: e.key,
            step_kind: intern(&e.step_kind),
            message: e.message,
            span: e.span.into(),
            detail_span: e.detail_span.map(Into::into),
            value: e.value.as_ref().map(value),
            reads: e.reads.iter().map(|(p, v)| (p.clone(), value(v))).collect(),
            context: e.context.into_iter().map(|(s, t)| (s.into(), t)).collect(),
            raw: e.raw,
        }
    }
}

/// A code, step kind or budget name that came over the wire, as the `&'static str` the run's
/// types hold. They are few (the codes and kinds pipewright has), so each is kept once.
fn intern(s: &str) -> &'static str {
    static SEEN: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let seen = seen.get_or_insert_with(HashSet::new);
    if let Some(known) = seen.get(s) {
        return known;
    }
    let kept: &'static str = Box::leak(s.to_string().into_boxed_str());
    seen.insert(kept);
    kept
}

/// A member opened where it runs: its session, joined to the run's owner, and the options it
/// runs with. What every runtime's member does before it runs is [`join`]; after, [`report`].
pub struct Joined {
    pub session: RunSession,
    /// The run's options, without [`Members`]: a fan-out inside a member runs in its worker.
    pub opts: RunOptions,
    /// `opts`' meter, kept for [`report`] once the runtime has taken `opts`.
    pub meter: Arc<Meter>,
}

/// Joins member `key` of run `run_id` under `lock`, the run's owner: the run's landings under
/// the member are replayed, and the files loaded here must be the run's (`what` names them in
/// the refusal). `workflow` is recorded with the session's start, as a run of the runtime's.
/// `Err`: why the member cannot run ([`MemberReport::broken`]).
pub fn join(
    mut opts: RunOptions,
    sources: &SourceMap,
    run_id: &str,
    key: &str,
    lock: Box<dyn RunLock>,
    what: &str,
    workflow: String,
) -> Result<Joined, String> {
    let source_hash = store::source_hash(sources.files().map(|f| &*f.text));
    let begun =
        Begun::joined(&opts, run_id, key, lock, what, &source_hash).map_err(|e| e.to_string())?;
    let start = RunStart {
        file: opts.file_label.clone(),
        workflow,
        source_hash,
    };
    let meter = opts.meter.clone();
    let session = begun.open(opts.store.as_ref(), start, Vec::new(), &meter)?;
    opts.members = None;
    Ok(Joined {
        session,
        opts,
        meter,
    })
}

/// Member `key`'s report once it has run: what it came to, unless a write of its failed (what
/// its session's [`RunSession::close`] answered), which fails a member that otherwise
/// succeeded, in the words of `store_failure`; and what its agent calls cost, over all its
/// attempts ([`Meter::spent_under`]).
pub fn report(
    key: &str,
    meter: &Meter,
    result: MemberResult,
    failed_write: Option<StoreError>,
    store_failure: impl FnOnce(String) -> RunError,
) -> MemberReport {
    let result = match (failed_write, result) {
        (Some(e), MemberResult::Done(_)) => {
            MemberResult::Failed(SentError::from(&store_failure(e.to_string())))
        }
        (_, r) => r,
    };
    MemberReport {
        result,
        usage: meter.spent_under(key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step's failure comes back from where its member ran as it left.
    #[test]
    fn a_failure_travels_whole() {
        let span = Span {
            file: FileId(2),
            start: 5,
            end: 9,
        };
        let e = RunError::new(crate::codes::TOOL, "1.for_each.3", "shell", span, "exit 2")
            .with_raw("boom")
            .with_reads(vec![("item".into(), pipewright_r1::Value::Int(3))])
            .at(span.sub(1..2));
        let sent = serde_json::to_string(&MemberResult::of(Err(e.clone().into()), None))
            .unwrap_or_else(|err| panic!("{err}"));
        let back: MemberResult = serde_json::from_str(&sent).unwrap_or_else(|err| panic!("{err}"));
        let MemberResult::Failed(back) = back else {
            panic!("{sent}")
        };
        let back = RunError::from(back);
        assert_eq!(back.code, e.code);
        assert_eq!(back.step_kind, "shell");
        assert_eq!(back.span, e.span);
        assert_eq!(back.detail_span, e.detail_span);
        assert_eq!(back.reads, e.reads);
        assert_eq!(back.raw_text(), "boom");
        assert_eq!(Failure::from(back).message(), Failure::from(e).message());
    }
}
