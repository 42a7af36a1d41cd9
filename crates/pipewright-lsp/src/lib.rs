//! The pipewright language server (`pipewright lsp`), on rust-analyzer's `lsp-server` loop.
//!
//! One thread owns the open documents and answers requests; a check thread runs the same
//! analysis as `pipewright check` (dialect registry, suppressions, `pipewright.toml`) over the
//! open documents of a directory and sends the diagnostics back, stamped with the versions it
//! saw. An edit cancels the checks in flight for its directory, and a result whose versions are
//! no longer current is dropped, so an older result never replaces a newer one.

pub mod analysis;
pub mod convert;
mod features;
mod server;
pub mod text;
pub mod transport;
mod worker;

use lsp_server::Connection;
use pipewright_syntax::CodeInfo;

/// What the server needs from the program that embeds it.
pub struct Config {
    /// Every diagnostic code with its explanation (hover over a diagnostic, unknown codes in
    /// suppressions).
    pub codes: Vec<CodeInfo>,
}

/// Serves one client over standard input and output until it sends `exit`, reading no message
/// of more than `max_message` bytes (`transport`). `Err` when the session did not end with
/// `shutdown` then `exit` (the LSP's exit code 1), or the input could not be split into
/// messages.
pub fn run_stdio(config: Config, max_message: usize) -> Result<(), String> {
    let (connection, io_threads) = transport::stdio(max_message)?;
    let served = serve(connection, config);
    // A framing error is why the connection closed: it, not the close, is the reason.
    io_threads.finish().and(served)
}

/// Serves one client on `connection`: the initialize handshake, then requests until shutdown.
pub fn serve(connection: Connection, config: Config) -> Result<(), String> {
    let caps = serde_json::to_value(server::capabilities()).map_err(|e| e.to_string())?;
    connection
        .initialize(caps)
        .map_err(|e| format!("initialize failed: {e}"))?;
    server::Server::new(connection, config).run()
}
