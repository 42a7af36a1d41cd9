//! `pipewright ui`: serves the project's runs to a browser (crate pipewright-ui, docs/ui.md).

use crate::cli::UiArgs;
use crate::exit::ExitStatus;
use std::sync::Arc;

pub(crate) fn run(args: &UiArgs) -> ExitStatus {
    let engine = match super::engine::chosen(&args.engine, None)
        .and_then(|chosen| chosen.map(super::engine::ui_engine).transpose())
    {
        Ok(e) => e,
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    let opts = match options(args, engine) {
        Ok(o) => o,
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
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
    let generated = args.token.is_none();
    runtime.block_on(async move {
        let listen = opts.listen;
        let server = match pipewright_ui::Server::bind(opts).await {
            Ok(s) => s,
            Err(e) => {
                errln!("error: cannot listen on {listen}: {e}");
                return ExitStatus::COULD_NOT_START;
            }
        };
        let url = server.url();
        outln!("pipewright ui: {url}");
        if let Some(engine) = server.engine() {
            say_whether_it_answers(engine).await;
        }
        // A generated token is for the person who reads it from this terminal, not a browser
        // opened on whatever machine this is.
        if args.open && !(generated && server.token().is_some()) {
            open_browser(&url);
        }
        match server.run(stopped()).await {
            Ok(()) => ExitStatus::OK,
            Err(e) => {
                errln!("error: {e}");
                ExitStatus::FAILED
            }
        }
    })
}

/// Says on stderr which engine is served, or that it cannot be reached yet (the server serves
/// anyway: the page says so too, until the engine answers).
async fn say_whether_it_answers(engine: Arc<dyn pipewright_ui::Engine>) {
    let at = engine.describe();
    match tokio::task::spawn_blocking(move || engine.list()).await {
        Ok(Ok(runs)) => errln!("serving the {} runs of {at}", runs.len()),
        Ok(Err(e)) => errln!("warning: cannot reach {at}: {e}; the page says so until it answers"),
        Err(e) => errln!("warning: cannot ask {at}: {e}"),
    }
}

fn options(
    args: &UiArgs,
    engine: Option<Arc<dyn pipewright_ui::Engine>>,
) -> Result<pipewright_ui::Options, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
    let store = super::runs::store_path(&cwd, &cwd)?;
    Ok(pipewright_ui::Options {
        listen: args.listen,
        token: args.token.clone().filter(|t| !t.is_empty()),
        runs_dir: super::runs::runs_dir(&store),
        store,
        project_root: super::runs::project_root(&cwd, &cwd),
        engine,
    })
}

/// Completes on the first SIGINT or SIGTERM.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Asks the desktop to open `url`; a machine without one just does not (the URL is printed).
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}
