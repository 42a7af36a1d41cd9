use crate::exit::ExitStatus;
pub(crate) mod cancel;
pub(crate) mod check;
pub(crate) mod dry_run;
pub(crate) mod engine;
pub(crate) mod eval;
pub(crate) mod explain;
pub(crate) mod fmt;
pub(crate) mod graph;
pub(crate) mod load;
pub(crate) mod lsp;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod schema;
pub(crate) mod ui;
pub(crate) mod worst_case;

/// A dialect's own command (MEOW's `meow`), with what it needs of the project.
pub(crate) fn dialect_command(
    command: &dyn pipewright_dialect::DialectCommand,
    matches: &clap::ArgMatches,
) -> ExitStatus {
    let project_runs = || {
        let cwd = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
        let store = runs::store_path(&cwd, &cwd)?;
        Ok(pipewright_dialect::ProjectRuns {
            runs_dir: runs::runs_dir(&store),
            store,
        })
    };
    let cx = pipewright_dialect::CommandContext {
        project_runs: &project_runs,
        out: &|a| crate::output::write(false, a),
        err: &|a| crate::output::write(true, a),
        engine_request: &engine::agent_request,
    };
    ExitStatus::of_dialect(command.run(matches, &cx))
}
