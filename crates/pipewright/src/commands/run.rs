//! `pipewright run`.

use crate::cli::{RunArgs, RunFormat};
use crate::exit::ExitStatus;
use pipewright_dialect::{Dialect, RunRequest, RunTarget, Runtime};
use pipewright_runtime::store::Store;
use pipewright_runtime::{Caps, ProjectConfig, RunOptions};
use pipewright_syntax::SourceMap;
use std::path::PathBuf;
use std::sync::Arc;

fn open_store(path: &std::path::Path) -> Result<Arc<dyn Store>, String> {
    super::runs::open_store(path).map(|s| Arc::new(s) as Arc<dyn Store>)
}

pub(crate) fn run(args: &RunArgs) -> ExitStatus {
    if !args.dry_run {
        match super::engine::chosen(&args.engine, args.file.as_deref()) {
            Ok(Some(engine)) => return super::engine::run(args, engine),
            Ok(None) => {}
            Err(e) => {
                errln!("error: {e}");
                return ExitStatus::COULD_NOT_START;
            }
        }
    } else if args.detach {
        errln!("error: --detach is for a run on an engine, not a dry run");
        return ExitStatus::COULD_NOT_START;
    }
    // One thread per core: a run's steps, fan-outs and agents run side by side.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            errln!("error: cannot start the runtime: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    runtime.block_on(run_async(args, RunEnv::default()))
}

/// Where a run executes, beside what its arguments say.
#[derive(Default)]
pub(crate) struct RunEnv {
    /// The engine's store for the run; `None`: the project's run store.
    pub(crate) store: Option<Arc<dyn Store>>,
    /// The new run's id, when its engine chose it.
    pub(crate) run_id: Option<String>,
    /// Nobody watches this process's terminal (a worker runs it for a durable engine): no
    /// Ctrl-C handler, no progress display, and a gate never asks on the terminal.
    pub(crate) unattended: bool,
    /// Cancels the run from outside (a worker that stops).
    pub(crate) cancel: Option<pipewright_runtime::CancelToken>,
    /// Where the run's fan-out members run; `None`: in this process.
    pub(crate) members: Option<Arc<dyn pipewright_runtime::members::Members>>,
    /// Run only this fan-out member of the (resumed) run, and hand back what it came to.
    pub(crate) member: Option<MemberJob>,
}

/// A fan-out member a worker runs for a run whose pass runs elsewhere.
pub(crate) struct MemberJob {
    pub(crate) member: pipewright_dialect::Member,
    pub(crate) done: std::sync::mpsc::Sender<pipewright_runtime::members::MemberReport>,
}

pub(crate) async fn run_async(args: &RunArgs, env: RunEnv) -> ExitStatus {
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            errln!("error: no working directory: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    // A resumed run takes its file from the run store; its pipeline and input are checked
    // against the record by the interpreter.
    let file = match (&args.resume, &args.file) {
        // A member is sent its run's file: the run need not be read twice.
        (Some(_), Some(file)) if env.member.is_some() => file.clone(),
        (Some(id), file) => {
            if args.input.is_some() || args.input_file.is_some() || !args.vars.is_empty() {
                errln!(
                    "error: run {id} keeps the input it started with; --input cannot be given with --resume"
                );
                return ExitStatus::COULD_NOT_START;
            }
            let found = match &env.store {
                Some(store) => store.load_run(id).map_err(String::from),
                None => super::runs::store_path(&cwd, &cwd).and_then(|p| {
                    Ok(super::runs::open_existing(&p, &format!("no run {id}"))?.load_run(id)?)
                }),
            };
            match found {
                Ok(rec) => file.clone().unwrap_or_else(|| PathBuf::from(&rec.file)),
                Err(e) => {
                    errln!("error: {e}");
                    return ExitStatus::COULD_NOT_START;
                }
            }
        }
        (None, Some(file)) => file.clone(),
        (None, None) => {
            errln!("error: give a workflow file (or --resume RUN_ID)");
            return ExitStatus::COULD_NOT_START;
        }
    };
    let mut workflow = args.pipeline.clone();
    // `file.meow.toml#name` names a workflow of the file (MEOW's own syntax).
    let file = match file.to_str().and_then(|f| f.rsplit_once('#')) {
        Some((f, name)) if !file.exists() && !name.is_empty() && workflow.is_none() => {
            workflow = Some(name.to_string());
            PathBuf::from(f)
        }
        _ => file,
    };
    if args
        .identity
        .as_deref()
        .is_some_and(|i| i.trim().is_empty())
    {
        errln!("error: --identity must not be empty");
        return ExitStatus::COULD_NOT_START;
    }
    let input = match input(args) {
        Ok(Some(v)) => v,
        Ok(None) => serde_json::Value::Null,
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    if !(input.is_object() || input.is_null()) {
        errln!(
            "error: the input must be a JSON object of named stores, e.g. '{{\"name\": \"Ada\"}}'"
        );
        return ExitStatus::COULD_NOT_START;
    }
    let mut sources = SourceMap::new();
    let (dialect, lowered) =
        match super::load::lowered(&file, pipewright_dialect::Verb::Run, &mut sources) {
            Ok(l) => l,
            // A file that does not check could not start: nothing ran, nothing was recorded.
            Err(_) => return ExitStatus::COULD_NOT_START,
        };
    let program = lowered.program;
    let ast = lowered.ast;
    if let Some(name) = &workflow {
        if program.find(name).is_none() {
            let names: Vec<&str> = program.workflows.iter().map(|w| w.name.as_str()).collect();
            errln!(
                "error: no {} named `{name}` in `{}`",
                dialect.workflow_noun(),
                crate::read::display_name(&file)
            );
            errln!("help: the file declares: {}", names.join(", "));
            return ExitStatus::COULD_NOT_START;
        }
    }
    let Some(rt) = dialect.runtime() else {
        errln!(
            "error: {}",
            crate::dialect::unsupported_verb(dialect, pipewright_dialect::Verb::Run)
        );
        return ExitStatus::COULD_NOT_START;
    };
    // A dry run uses no backend: only the flags are refused there.
    if let Err(e) = not_for_this_dialect(args, dialect, rt, !args.dry_run) {
        errln!("error: {e}");
        return ExitStatus::COULD_NOT_START;
    }
    let target = RunTarget {
        program: &program,
        sources: &sources,
        workflow: workflow.as_deref(),
        input: &input,
        source_path: Some(&file),
        ast: ast.as_ref(),
    };
    if args.dry_run {
        return super::dry_run::run(args, dialect, rt, target);
    }
    // A run that lacks an input fails before it opens the store (docs/run.md).
    if args.resume.is_none() {
        if let Err(e) = rt.prerun(target) {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    }
    // A new run's store is the project's of its file; a resumed run's, the working
    // directory's project's (where `runs` and `approve` look).
    let store_path = match &args.resume {
        Some(_) => super::runs::store_path(&cwd, &cwd),
        None => super::runs::store_path(&file, &cwd),
    };
    let store_path = match store_path {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    let project_dir = ProjectConfig::find(&file)
        .and_then(|p| p.parent().map(PathBuf::from))
        .unwrap_or_else(|| cwd.clone());
    let cfg = match ProjectConfig::load(&project_dir) {
        Ok(c) => c,
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    // Before anything runs: what a killed pipewright left of its steps must not run beside
    // them again (a resumed step, or a new run's).
    let groups = super::runs::runs_dir(&store_path).join("groups");
    pipewright_runtime::tools::process::kill_orphans(&groups);
    pipewright_runtime::tools::process::record_groups_in(groups);
    let mut o = RunOptions::new(cwd.clone());
    o.workflow = workflow;
    o.input = input;
    o.tools.project = pipewright_runtime::config::project_tools(&cfg);
    o.config = Arc::new(cfg.clone());
    o.channel = true;
    // Called `meow`, this executable acts as `pipewright meow` (see `main`).
    o.self_exe = std::env::current_exe().ok();
    o.tools.withhold_env = pipewright_runtime::config::withheld_env(&cfg);
    o.caps = Caps {
        max_fan_out_depth: cfg.max_fan_out_depth,
        max_spawns: cfg.max_spawns,
        max_call_depth: cfg.max_call_depth,
        eval: pipewright_runtime::EvalLimits {
            max_steps: cfg.max_eval_steps,
            max_bytes: cfg.max_eval_bytes,
        },
    };
    o.runs_dir = Some(super::runs::runs_dir(&store_path));
    o.budgets = pipewright_runtime::usage::Budgets {
        max_cost_usd: args.max_cost.or(cfg.max_cost_usd),
        max_tokens: args.max_tokens.or(cfg.max_tokens),
        max_agent_calls: args.max_agent_calls.or(cfg.max_agent_calls),
    };
    o.force = args.force;
    o.file_label = crate::read::display_name(&file);
    o.source_path = Some(file.clone());
    // A gate asks on the terminal when there is one to ask on.
    o.interactive = !env.unattended
        && args.format == RunFormat::Human
        && std::io::IsTerminal::is_terminal(&std::io::stdin())
        && std::io::IsTerminal::is_terminal(&std::io::stderr());
    if let Some(id) = args.identity.clone().or(cfg.identity.clone()) {
        o.identity = id;
    }
    o.resume = args.resume.clone();
    o.run_id = env.run_id.clone();
    o.members = env.members.clone();
    match env.cancel.clone() {
        Some(c) => o.cancel = c,
        // A worker's signals stop the worker, not the run it serves (the engine retries it).
        None if env.unattended => {}
        None => o.cancel.cancel_on_ctrl_c(),
    }
    if !env.unattended && args.format == RunFormat::Human && !rt.live_lines() {
        if let Some(p) = pipewright_runtime::progress::Progress::for_terminal() {
            o.sinks.push(Arc::new(p));
        }
    }
    let request = RunRequest {
        opts: o,
        backend: Some((args.backend.clone(), args.script.clone())),
        // Opened only when the runtime is ready to record: a run that cannot start leaves no
        // store behind.
        open_store: Some(match env.store.clone() {
            Some(store) => Box::new(move || Ok(store)),
            None => Box::new(move || open_store(&store_path)),
        }),
        flags: args.dialect_flags.clone(),
        human: args.format == RunFormat::Human,
        ast,
    };
    if let Some(job) = env.member {
        let report = rt
            .run_member(Arc::new(program), &sources, request, job.member)
            .await;
        let _ = job.done.send(report);
        return ExitStatus::OK;
    }
    let report = match rt.run(Arc::new(program), &sources, request).await {
        Ok(r) => r,
        Err(refusal) => {
            errln!("error: {}", refusal.message);
            let json = refusal
                .report
                .as_ref()
                .map(|r| serde_json::to_string_pretty(r).unwrap_or_default());
            if env.unattended {
                crate::output::keep_report(crate::output::Rendered { json, human: None });
            } else if let (RunFormat::Json, Some(json)) = (args.format, json) {
                outln!("{json}");
            }
            return ExitStatus::COULD_NOT_START;
        }
    };
    // A store failure beside a step's own failure (which stays the diagnostic) is still said.
    if let Some(e) = report.unreported_store_error() {
        errln!("error: the run could not be recorded: {e}");
    }
    let json = || serde_json::to_string_pretty(&report.to_json(&sources)).unwrap_or_default();
    if env.unattended {
        // For a client that follows the run from elsewhere, in the form it asks for then.
        let h = report.human(&sources, false);
        crate::output::keep_report(crate::output::Rendered {
            json: Some(json()),
            human: Some((h.stdout, h.stderr)),
        });
        return ExitStatus::of_run(report.exit_code());
    }
    match args.format {
        RunFormat::Json => outln!("{}", json()),
        RunFormat::Human => {
            let h = report.human(&sources, crate::output::use_color_stderr());
            err!("{}", h.stderr);
            out!("{}", h.stdout);
        }
    }
    ExitStatus::of_run(report.exit_code())
}

/// A flag or backend another dialect declares for its own runs, given for this file.
fn not_for_this_dialect(
    args: &RunArgs,
    dialect: &dyn Dialect,
    rt: &dyn Runtime,
    backend_too: bool,
) -> Result<(), String> {
    for other in pipewright_registry::DIALECTS {
        let Some(theirs) = other.runtime().filter(|_| other.name() != dialect.name()) else {
            continue;
        };
        if let Some(flag) = theirs
            .flags()
            .iter()
            .find(|f| args.dialect_flags.text(f.long).is_some())
            .filter(|f| !rt.flags().iter().any(|mine| mine.long == f.long))
        {
            return Err(format!("--{} is for {}s only", flag.long, other.noun()));
        }
        if let Some(family) = theirs
            .backends()
            .filter(|_| backend_too)
            .filter(|f| f.backends.iter().any(|b| b.name == args.backend))
        {
            let mine = rt
                .backends()
                .is_some_and(|f| f.backends.iter().any(|b| b.name == args.backend));
            if !mine {
                return Err(format!(
                    "{} run {}s only; for a {} use --backend command",
                    family.what,
                    other.noun(),
                    dialect.noun()
                ));
            }
        }
    }
    Ok(())
}

pub(crate) fn input(args: &RunArgs) -> Result<Option<serde_json::Value>, String> {
    let text = match (&args.input, &args.input_file) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(f)) => Some(crate::read::text(f)?),
        (None, None) => None,
    };
    let mut value = match text {
        Some(t) => Some(
            serde_json::from_str(&t).map_err(|e| format!("the input is not valid JSON: {e}"))?,
        ),
        None => None,
    };
    for kv in &args.vars {
        let Some((k, v)) = kv.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            return Err(format!("--var takes KEY=VALUE, got `{kv}`"));
        };
        let obj = value.get_or_insert_with(|| serde_json::json!({}));
        let Some(map) = obj.as_object_mut() else {
            return Err("--var needs the input to be a JSON object".into());
        };
        map.insert(k.to_string(), serde_json::Value::String(v.to_string()));
    }
    Ok(value)
}
