//! `pipewright cancel RUN_ID`: what Ctrl-C does in the process running the run, from anywhere
//! (docs/run.md, "Cancelling a run").

use crate::cli::CancelArgs;
use crate::exit::ExitStatus;

pub(crate) fn run(args: &CancelArgs) -> ExitStatus {
    let engine = match super::engine::chosen(&args.engine, None) {
        Ok(e) => e,
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    match engine {
        Some(restate) => super::engine::cancel(&args.id, restate),
        None => match cancel_local(&args.id) {
            Ok(line) => {
                outln!("{line}");
                ExitStatus::OK
            }
            Err(e) => {
                errln!("error: {e}");
                ExitStatus::FAILED
            }
        },
    }
}

/// The local engine's cancel of a run of the project's store.
fn cancel_local(id: &str) -> Result<String, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
    let path = super::runs::store_path(&cwd, &cwd)?;
    let store = super::runs::open_existing(&path, &format!("no run {id}"))?;
    pipewright_runtime::stop::cancel_local(&store, id).map_err(|e| e.to_string())
}
