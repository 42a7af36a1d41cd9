//! `pipewright run`.

use crate::cli::{Backend, RunArgs, RunFormat};
use pipewright_run::{Caps, ProjectConfig, RunOptions};
use pipewright_syntax::{render, SourceMap};
use std::path::PathBuf;
use std::sync::Arc;

pub fn run(args: &RunArgs) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            errln!("error: cannot start the runtime: {e}");
            return 2;
        }
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
    let store_root = cwd.join(".pipewright/runs");
    // A resumed run takes its file, pipeline and input from the run store.
    let mut stored_hash = None;
    let (file, workflow, stored_input) = match (&args.resume, &args.file) {
        (Some(id), file) => match pipewright_run::store::load_run(&store_root, id) {
            Ok(rec) => {
                stored_hash = Some(rec.source_hash);
                (
                    file.clone().unwrap_or_else(|| PathBuf::from(&rec.file)),
                    args.pipeline.clone().or(Some(rec.workflow)),
                    Some(rec.input),
                )
            }
            Err(e) => {
                errln!("error: {e}");
                return 2;
            }
        },
        (None, Some(file)) => (file.clone(), args.pipeline.clone(), None),
        (None, None) => {
            errln!("error: give a pipeline file (or --resume RUN_ID)");
            return 2;
        }
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
        Ok(None) => stored_input.unwrap_or(serde_json::Value::Null),
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
    let ast = match super::load::checked_pipeline(&file, &mut sources) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if let (Some(old), Some(id)) = (stored_hash.filter(|h| !h.is_empty()), &args.resume) {
        let now = pipewright_run::store::source_hash(sources.files().map(|f| &*f.text));
        if old != now {
            errln!(
                "warning: the pipeline files changed since run {id} started; its landed steps are replayed as recorded, the rest runs from the current files"
            );
        }
    }
    let program = pipewright_ir::lower::pipeline(&ast);
    if let Some(name) = &workflow {
        if program.find(name).is_none() {
            let names: Vec<&str> = program.workflows.iter().map(|w| w.name.as_str()).collect();
            errln!(
                "error: no pipeline named `{name}` in `{}`",
                crate::read::display_name(&file)
            );
            errln!("help: the file declares: {}", names.join(", "));
            return 2;
        }
    }
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
    let backend_name = match args.backend {
        Backend::Mock => "mock",
        Backend::Script => "script",
        Backend::Command => "command",
        Backend::Openai => "openai",
    };
    let mut o = RunOptions::new(cwd.clone());
    o.workflow = workflow;
    o.input = input;
    o.backend = match pipewright_run::backend::from_config(
        backend_name,
        &cfg,
        &cwd,
        args.script.as_deref(),
    ) {
        Ok(b) => b,
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    o.tools.project = pipewright_run::config::project_tools(&cfg);
    o.caps = Caps {
        max_fan_out_depth: cfg.max_fan_out_depth,
        max_spawns: cfg.max_spawns,
    };
    o.store_root = Some(store_root);
    o.file_label = crate::read::display_name(&file);
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
                pipewright_run::RunStatus::Ok => outln!(
                    "{}",
                    serde_json::to_string_pretty(&outcome.output.to_json()).unwrap_or_default()
                ),
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
            }
        }
    }
    u8::try_from(outcome.exit_code()).unwrap_or(1)
}

/// For a failed or cancelled run (human format, on stderr): the named stores as they were
/// when it stopped, with a one-line preview of each, and where the full state is.
fn stopped_summary(outcome: &pipewright_run::RunOutcome) -> String {
    let mut out = String::new();
    let stores = outcome.stores.to_json();
    match stores.as_object().filter(|m| !m.is_empty()) {
        None => out.push_str("stores when it stopped: none\n"),
        Some(m) => {
            out.push_str("stores when it stopped:\n");
            for (name, v) in m {
                out.push_str(&format!("  {name} = {}\n", preview(v, 100)));
            }
        }
    }
    if outcome.run_dir.is_some() {
        // The store root is always `.pipewright/runs` under the working directory.
        out.push_str(&format!(
            "full state: .pipewright/runs/{}/state.json\n",
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
        (Some(t), _) => t.clone(),
        (None, Some(f)) => {
            std::fs::read_to_string(f).map_err(|e| format!("cannot read `{}`: {e}", f.display()))?
        }
        (None, None) => return Ok(None),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("the input is not valid JSON: {e}"))
}
