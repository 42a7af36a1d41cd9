//! `pipewright lsp`: the language server (crates/pipewright-lsp) on standard input and output.

pub fn run() -> u8 {
    let config = pipewright_lsp::Config {
        codes: crate::output::all_codes(),
    };
    let max_message = match pipewright_lsp::transport::max_message_from_env() {
        Ok(m) => m,
        Err(e) => {
            errln!("error: {e}");
            return 2;
        }
    };
    match pipewright_lsp::run_stdio(config, max_message) {
        Ok(()) => 0,
        Err(e) => {
            errln!("error: language server: {e}");
            1
        }
    }
}
