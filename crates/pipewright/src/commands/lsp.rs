//! `pipewright lsp`: the language server (crates/pipewright-lsp) on standard input and output.

pub fn run() -> u8 {
    let config = pipewright_lsp::Config {
        codes: crate::output::all_codes(),
    };
    match pipewright_lsp::run_stdio(config) {
        Ok(()) => 0,
        Err(e) => {
            errln!("error: language server: {e}");
            1
        }
    }
}
