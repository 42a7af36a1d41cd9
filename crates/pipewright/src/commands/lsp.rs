//! `pipewright lsp`: the language server (crates/pipewright-lsp) on standard input and output.

use crate::exit::ExitStatus;
pub(crate) fn run() -> ExitStatus {
    let config = pipewright_lsp::Config {
        codes: crate::output::all_codes(),
    };
    let max_message = match pipewright_lsp::transport::max_message_from_env() {
        Ok(m) => m,
        Err(e) => {
            errln!("error: {e}");
            return ExitStatus::COULD_NOT_START;
        }
    };
    match pipewright_lsp::run_stdio(config, max_message) {
        Ok(()) => ExitStatus::OK,
        Err(e) => {
            errln!("error: language server: {e}");
            ExitStatus::FAILED
        }
    }
}
