//! `pipewright run`.

use crate::cli::{Backend, RunArgs, RunFormat};
use pipewright_run::store::Store;
use pipewright_run::{Caps, ProjectConfig, RunOptions};
use pipewright_syntax::{render, SourceMap};
use std::path::PathBuf;
use std::sync::Arc;

fn open_store(path: &std::path::Path) -> Result<Arc<dyn Store>, String> {
    super::runs::open_store(path).map(|s| Arc::new(s) as Arc<dyn Store>)
}

pub fn run(args: &RunArgs) -> u8 {
    let runtime = match super::tokio_runtime(true) {
        Ok(r) => r,
        Err(code) => return code,
    };
    runtime.block_on(run_async(args))
}

async fn run_async(args: &RunArgs) -> u8 {
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            errln!("error: no working directory: {e}");
            return 2;
        }
    };
    // A resumed run takes its file from the run store; its pipeline and input are checked
    // against the record by the interpreter.
    let file = match (&args.resume, &args.file) {
        (Some(id), file) => {
            if args.input.is_some() || args.input_file.is_some() || !args.vars.is_empty() {
                errln!(
                    "error: run {id} keeps the input it started with; --input cannot be given with --resume"
                );
                return 2;
            }
            let found = super::runs::store_path(&cwd, &cwd).and_then(|p| {
                super::runs::open_existing(&p, &format!("no run {id}"))?.load_run(id)
            });
            match found {
                Ok(rec) => file.clone().unwrap_or_else(|| PathBuf::from(&rec.file)),
                Err(e) => {
                    errln!("error: {e}");
                    return 2;
                }
            }
        }
        (None, Some(file)) => file.clone(),
        (None, None) => {
            errln!("error: give a workflow file (or --resume RUN_ID)");
            return 2;
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
        return 2;
    }
    let input = match input(args) {
        Ok(Some(v)) => v,
        Ok(None) => serde_json::Value::Null,
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    if !(input.is_object() || input.is_null()) {
        errln!(
            "error: the input must be a JSON object of named stores, e.g. '{{\"name\": \"Ada\"}}'"
        );
        return 2;
    }
    let mut sources = SourceMap::new();
    let (dialect, lowered) =
        match super::load::lowered(&file, pipewright_dialect::Verb::Run, &mut sources) {
            Ok(l) => l,
            // A file that does not check could not start: nothing ran, nothing was recorded.
            Err(_) => return 2,
        };
    let program = lowered.program;
    if let Some(name) = &workflow {
        if program.find(name).is_none() {
            let names: Vec<&str> = program.workflows.iter().map(|w| w.name.as_str()).collect();
            errln!(
                "error: no {} named `{name}` in `{}`",
                dialect.workflow_noun(),
                crate::read::display_name(&file)
            );
            errln!("help: the file declares: {}", names.join(", "));
            return 2;
        }
    }
    if args.dry_run {
        return super::dry_run::run(args, &file, &program, &sources, workflow.as_deref(), &input);
    }
    // A run that lacks an input fails before it opens the store (docs/run.md).
    if args.resume.is_none() {
        let w = workflow.as_deref();
        if let Err(e) = pipewright_run::prerun::check(&program, &sources, w, &input, Some(&file)) {
            errln!("error: {e}");
            return 2;
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
            return 2;
        }
    };
    let project_dir = ProjectConfig::find(&file)
        .and_then(|p| p.parent().map(PathBuf::from))
        .unwrap_or_else(|| cwd.clone());
    let cfg = match ProjectConfig::load(&project_dir) {
        Ok(c) => c,
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    // Before anything runs: what a killed pipewright left of its steps must not run beside
    // them again (a resumed step, or a new run's).
    let groups = super::runs::runs_dir(&store_path).join("groups");
    pipewright_run::tools::process::kill_orphans(&groups);
    pipewright_run::tools::process::record_groups_in(groups);
    if dialect.name() == "state-machine" {
        return super::run_statemachine::run(
            args,
            &file,
            program,
            &sources,
            &cwd,
            &cfg,
            &store_path,
        )
        .await;
    }
    if let Some(flag) = args.state_machine.given() {
        errln!("error: {flag} is for state-machine recipes only");
        return 2;
    }
    let backend_name = match args.backend {
        Backend::Mock => "mock",
        Backend::Script => "script",
        Backend::Command => "command",
        Backend::Openai => "openai",
        Backend::Claude | Backend::Opencode | Backend::Cursor | Backend::Copilot => {
            errln!("error: the coding-agent CLI backends run state-machine recipes only; for a {} use --backend command", dialect.noun());
            return 2;
        }
    };
    let mut o = RunOptions::new(cwd.clone());
    o.workflow = workflow;
    o.input = input;
    // MEOW agents under `--backend command` run in tmux through adapters: `[backend.command]`
    // is not needed there.
    let tmux = backend_name == "command" && cfg.command.is_none() && dialect.name() == "meow";
    let backend = if tmux {
        Ok(pipewright_run::backend::tmux_agents(&cwd))
    } else {
        pipewright_run::backend::from_config(backend_name, &cfg, &cwd, args.script.as_deref())
    };
    o.backend = match backend {
        Ok(b) => b,
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    o.tools.project = pipewright_run::config::project_tools(&cfg);
    o.config = Arc::new(cfg.clone());
    o.channel = true;
    // Called `meow`, this executable acts as `pipewright meow` (see `main`).
    o.self_exe = std::env::current_exe().ok();
    o.tools.withhold_env = pipewright_run::config::withheld_env(&cfg);
    o.caps = Caps {
        max_fan_out_depth: cfg.max_fan_out_depth,
        max_spawns: cfg.max_spawns,
        max_call_depth: cfg.max_call_depth,
        eval: pipewright_run::EvalLimits {
            max_steps: cfg.max_eval_steps,
            max_bytes: cfg.max_eval_bytes,
        },
    };
    // Opened only now: a run that cannot start leaves no store behind.
    o.runs_dir = Some(super::runs::runs_dir(&store_path));
    o.store = match open_store(&store_path) {
        Ok(s) => Some(s),
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    o.force = args.force;
    o.file_label = crate::read::display_name(&file);
    o.source_path = Some(file.clone());
    // A gate asks on the terminal when there is one to ask on.
    o.interactive = args.format == RunFormat::Human
        && std::io::IsTerminal::is_terminal(&std::io::stdin())
        && std::io::IsTerminal::is_terminal(&std::io::stderr());
    if let Some(id) = args.identity.clone().or(cfg.identity.clone()) {
        o.identity = id;
    }
    o.resume = args.resume.clone();
    o.cancel.cancel_on_ctrl_c();
    if args.format == RunFormat::Human {
        if let Some(p) = pipewright_run::progress::Progress::for_terminal() {
            o.sinks.push(Arc::new(p));
        }
    }
    let outcome = match pipewright_run::run(Arc::new(program), &sources, o).await {
        Ok(o) => o,
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    // A store failure beside a step's own failure (which stays the diagnostic) is still said.
    if let Some(e) = outcome.unreported_store_error() {
        errln!("error: the run could not be recorded: {e}");
    }
    match args.format {
        RunFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&outcome.to_json(&sources)).unwrap_or_default()
        ),
        RunFormat::Human => {
            if let Some(d) = outcome.diagnostic() {
                err!(
                    "{}",
                    render::human(&[d], &sources, crate::output::use_color_stderr())
                );
            }
            match outcome.status {
                pipewright_run::RunStatus::Ok => {
                    // Redacted like the JSON report (pipewright_run::secrets).
                    let mut output = outcome.output.to_json();
                    pipewright_run::secrets::redact_json(&mut output);
                    outln!(
                        "{}",
                        serde_json::to_string_pretty(&output).unwrap_or_default()
                    )
                }
                pipewright_run::RunStatus::Cancelled => {
                    errln!(
                        "run {} cancelled; continue it with `pipewright run --resume {}`",
                        outcome.run_id,
                        outcome.run_id
                    );
                    err!("{}", stopped_summary(&outcome));
                }
                pipewright_run::RunStatus::Failed => {
                    errln!("run {} failed", outcome.run_id);
                    err!("{}", stopped_summary(&outcome));
                }
                pipewright_run::RunStatus::Paused => {
                    let p = outcome.pending.clone().unwrap_or_default();
                    let id = &outcome.run_id;
                    errln!(
                        "run {id} paused: stage '{}' needs approval",
                        p["stage"].as_str().unwrap_or("")
                    );
                    errln!("{}", p["prompt"].as_str().unwrap_or(""));
                    errln!("approve: pipewright approve {id} [--message TEXT]");
                    errln!("deny:    pipewright deny {id} [--reason TEXT]");
                    errln!("then:    pipewright run --resume {id}");
                }
            }
        }
    }
    u8::try_from(outcome.exit_code()).unwrap_or(1)
}

/// For a failed or cancelled run (human format, on stderr): the named stores as they were
/// when it stopped, with a one-line preview of each, and where the full state is.
fn stopped_summary(outcome: &pipewright_run::RunOutcome) -> String {
    let mut out = String::new();
    let mut stores = outcome.stores.to_json();
    // Before the previews cut them: a cut could leave part of a secret.
    pipewright_run::secrets::redact_json(&mut stores);
    match stores.as_object().filter(|m| !m.is_empty()) {
        None => out.push_str("stores when it stopped: none\n"),
        Some(m) => {
            out.push_str("stores when it stopped:\n");
            for (name, v) in m {
                out.push_str(&format!("  {name} = {}\n", preview(v, 100)));
            }
        }
    }
    if outcome.store.is_some() {
        out.push_str(&format!(
            "full state: pipewright runs show {}\n",
            outcome.run_id
        ));
    }
    out
}

/// Compact JSON cut to `max` characters.
fn preview(v: &serde_json::Value, max: usize) -> String {
    let text = v.to_string();
    if text.chars().count() <= max {
        text
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}…")
    }
}

fn input(args: &RunArgs) -> Result<Option<serde_json::Value>, String> {
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
