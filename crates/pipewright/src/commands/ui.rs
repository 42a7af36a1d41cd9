//! `pipewright ui`: serves the project's runs to a browser (crate pipewright-ui, docs/ui.md).

use crate::cli::UiArgs;
use crate::exit::ExitStatus;

pub(crate) fn run(args: &UiArgs) -> ExitStatus {
    match super::engine::chosen(&args.engine, None) {
        Ok(None) => {}
        Ok(Some(_restate)) => {
            errln!("error: `pipewright ui` serves the local run store only; the Restate engine's runs are not served yet (docs/ui.md)");
            return ExitStatus::COULD_NOT_START;
        }
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    }
    let opts = match options(args) {
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

fn options(args: &UiArgs) -> Result<pipewright_ui::Options, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
    let store = super::runs::store_path(&cwd, &cwd)?;
    Ok(pipewright_ui::Options {
        listen: args.listen,
        token: args.token.clone().filter(|t| !t.is_empty()),
        runs_dir: super::runs::runs_dir(&store),
        store,
        project_root: super::runs::project_root(&cwd, &cwd),
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
