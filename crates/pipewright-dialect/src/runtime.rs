//! How a dialect's workflows run. Each dialect crate implements [`Runtime`] over its own
//! checked AST or the IR, with its own semantics, on the shared run core (`pipewright-runtime`:
//! the session that locks, resumes and records a run, backends, tools, the store). A dialect
//! declares the `run` flags and backends only its runs take; the CLI offers them on `run` and
//! refuses them on other dialects' files.

use crate::CheckedAst;
use pipewright_ir::Program;
use pipewright_runtime::approval::Decision;
use pipewright_runtime::backend::{AgentBackend, BoxFuture};
use pipewright_runtime::members::{MemberCall, MemberReport};
use pipewright_runtime::plan::Plan;
use pipewright_runtime::report::{Refusal, Report};
use pipewright_runtime::store::{RunLock, RunRecord, Store};
use pipewright_runtime::RunOptions;
use pipewright_syntax::SourceMap;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What `run` asks of the file's workflow: `workflow` is the one chosen with `--pipeline` or
/// `file#name` (the file's first otherwise), `input` the JSON object of `--input`/`--var`.
#[derive(Clone, Copy)]
pub struct RunTarget<'a> {
    pub program: &'a Program,
    pub sources: &'a SourceMap,
    pub workflow: Option<&'a str>,
    pub input: &'a Value,
    pub source_path: Option<&'a Path>,
    /// The file's checked AST, when its dialect's `lower` gives one (`Lowered::ast`).
    pub ast: Option<&'a CheckedAst>,
}

/// A `run` flag only one dialect's runs take.
pub struct RunFlag {
    /// Without the dashes: `max-visits`.
    pub long: &'static str,
    pub value: FlagValue,
    /// `--help`'s text.
    pub help: &'static str,
}

/// What a [`RunFlag`] takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum FlagValue {
    /// Nothing: given or not.
    Switch,
    /// Any text, shown as `value_name` in `--help`.
    Text { value_name: &'static str },
    /// A whole number of at least `min`.
    Count { min: u64 },
    /// A directory or file path.
    Path { value_name: &'static str },
}

/// The values of a dialect's flags as given (a switch given is `"true"`).
#[derive(Debug, Clone, Default)]
pub struct FlagValues(BTreeMap<&'static str, String>);

impl FlagValues {
    /// The flags given, by name, with their values (a switch's is `"true"`).
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.0.iter().map(|(k, v)| (*k, v.as_str()))
    }
    pub fn set(&mut self, long: &'static str, value: String) {
        self.0.insert(long, value);
    }
    pub fn text(&self, long: &str) -> Option<&str> {
        self.0.get(long).map(String::as_str)
    }
    pub fn switch(&self, long: &str) -> bool {
        self.0.contains_key(long)
    }
    /// A [`FlagValue::Count`] (the CLI has checked that it parses).
    pub fn count(&self, long: &str) -> Option<u64> {
        self.text(long).and_then(|t| t.parse().ok())
    }
}

/// Backends only one dialect's runs can use, beside the shared ones (mock, script, command,
/// openai).
pub struct BackendFamily {
    /// What they are called in the refusal on other dialects' files ("the coding-agent CLI
    /// backends").
    pub what: &'static str,
    pub backends: &'static [RunBackend],
}

pub struct RunBackend {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub help: &'static str,
}

/// Opens the run store when the runtime is ready to record: a run refused before that leaves
/// no store behind.
pub type OpenStore = Box<dyn FnOnce() -> Result<Arc<dyn Store>, String> + Send>;

/// A run as the CLI asks for it.
pub struct RunRequest {
    /// Everything but the backend and the store.
    pub opts: RunOptions,
    /// `--backend NAME` (with `--script FILE`): the runtime builds its backend from it. `None`:
    /// run with `opts.backend` as given.
    pub backend: Option<(String, Option<PathBuf>)>,
    pub open_store: Option<OpenStore>,
    /// The values of the dialect's own flags.
    pub flags: FlagValues,
    /// The report is for a person: a runtime may print live lines on stderr.
    pub human: bool,
    /// The file's checked AST, when its dialect's `lower` gives one (`Lowered::ast`).
    pub ast: Option<CheckedAst>,
}

impl RunRequest {
    /// The options of a run on one of the shared backends: the one `--backend` names (or
    /// `special`'s, when it has one for that name), then the store.
    pub fn into_options(
        mut self,
        special: impl FnOnce(&str, &RunOptions) -> Option<Arc<dyn AgentBackend>>,
    ) -> Result<RunOptions, Refusal> {
        if let Some((name, script)) = &self.backend {
            self.opts.backend = match special(name, &self.opts) {
                Some(b) => b,
                None => pipewright_runtime::backend::from_config(
                    name,
                    &self.opts.config,
                    &self.opts.tools.workdir,
                    script.as_deref(),
                )
                .map_err(|e| Refusal::from(String::from(e)))?,
            };
        }
        self.open_store()?;
        // Every agent call of the run is admitted against its budgets and charged.
        let meter = Arc::new(
            pipewright_runtime::usage::Meter::new(self.opts.budgets, self.opts.cancel.clone())
                .with_prices(self.opts.config.prices.clone()),
        );
        if let Some(warning) = meter.unenforceable(self.opts.backend.as_ref()) {
            // Once, before anything runs: a budget the run cannot keep is worth knowing of.
            eprintln!("{warning}");
        }
        self.opts.backend = Arc::new(pipewright_runtime::usage::Metered::new(
            self.opts.backend.clone(),
            meter.clone(),
        ));
        self.opts.meter = meter;
        Ok(self.opts)
    }

    /// Opens the store (once) into `opts.store`.
    pub fn open_store(&mut self) -> Result<(), Refusal> {
        if let Some(open) = self.open_store.take() {
            self.opts.store = Some(open().map_err(Refusal::from)?);
        }
        Ok(())
    }
}

/// A recorded run, as `approve`/`deny` find it.
pub struct RecordedRun<'a> {
    pub run_id: &'a str,
    pub store: &'a dyn Store,
    pub record: &'a RunRecord,
    /// `<runs_dir>/<run-id>/`: where a live run keeps what its steps talk to it through.
    pub run_dir: &'a Path,
}

/// What a decision came to: the line to print (exit 0), or the refusal and its exit code.
pub type Decided = Result<String, (u8, String)>;

/// An approval a run waits for now: what `approve|deny` would decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The key of the step that waits (a recipe's gate, a MEOW approval step).
    pub step_key: String,
    /// `gate` (a paused run's, decided in the store) or `approval` (a live run's).
    pub kind: &'static str,
    pub prompt: String,
    /// `resume`: the run continues with `run --resume` once decided; `live`: the process
    /// running it goes on by itself.
    pub continues: &'static str,
}

pub trait Runtime: Sync {
    /// The `run` flags only this dialect's runs take.
    fn flags(&self) -> &'static [RunFlag] {
        &[]
    }
    /// The backends only this dialect's runs can use.
    fn backends(&self) -> Option<&'static BackendFamily> {
        None
    }
    /// Whether the runtime prints its own live lines while a person watches (then the CLI adds
    /// no progress display of its own).
    fn live_lines(&self) -> bool {
        false
    }
    /// Refuses, before the run store opens, a run certain to fail for want of an input, or
    /// given an input its workflow does not declare (docs/run.md: one message shape for every
    /// dialect, from `pipewright_runtime::prerun`).
    fn prerun(&self, _target: RunTarget<'_>) -> Result<(), String> {
        Ok(())
    }
    /// What `run --dry-run` prints: the run's plan, built without executing anything.
    fn plan(&self, target: RunTarget<'_>) -> Result<Plan, String>;
    /// Decides the approval a run of this dialect waits for (`pipewright approve|deny RUN_ID
    /// [--step STEP]`); `None` when the run is not one this dialect can find waiting.
    fn decide(
        &self,
        _run: &RecordedRun<'_>,
        _step: Option<&str>,
        _decision: &Decision,
    ) -> Option<Decided> {
        None
    }
    /// The approvals a run of this dialect waits for now; `None` when the run is not one this
    /// dialect can find waiting (the same runs [`Runtime::decide`] answers).
    fn waiting(&self, _run: &RecordedRun<'_>) -> Option<Vec<Waiting>> {
        None
    }
    /// Runs one workflow of a lowered (and checked) file. `Err` is a run that could not start
    /// (unknown workflow, bad input, a backend or store that cannot be opened, a resume the
    /// store refuses), reported before anything runs; everything after is in the report.
    fn run<'a>(
        &'a self,
        program: Arc<Program>,
        sources: &'a SourceMap,
        request: RunRequest,
    ) -> BoxFuture<'a, Result<Box<dyn Report>, Refusal>>;
    /// Runs one fan-out member of a run apart from it (another worker of an engine took it):
    /// what the run's own process sent through [`pipewright_runtime::members::Members`],
    /// recorded into the run's store under `member.lock` (the run's owner, joined). A runtime
    /// that never sends its members away keeps this default.
    fn run_member<'a>(
        &'a self,
        _program: Arc<Program>,
        _sources: &'a SourceMap,
        _request: RunRequest,
        member: Member,
    ) -> BoxFuture<'a, MemberReport> {
        Box::pin(async move {
            MemberReport::broken(format!(
                "this dialect runs fan-out member {} in its run's own process",
                member.call.key
            ))
        })
    }
}

/// A fan-out member to run apart from its run.
pub struct Member {
    pub run_id: String,
    pub call: MemberCall,
    /// Joins the run's owner (see `pipewright_runtime::session::Begun::joined`).
    pub lock: Box<dyn RunLock>,
}
