//! `pipewright check` for MEOW templates (`.meow.toml`): a loader that keeps the span of every
//! key and value, the module/step/needs rules, template references, variables and agents, and
//! the lowering into the IR for `graph`.

pub mod ast;
mod check;
pub mod codes;
pub mod dialect;
mod editor;
pub mod executor;
pub mod lower;
pub mod refs;
pub mod run;
pub mod schema;
mod shell_quotes;
mod steps;
mod toml_string;
pub mod tree;
mod vars;

pub use codes::CODES;
pub use executor::Executor;
pub use steps::on_error_template;

use pipewright_syntax::{Diagnostic, FileId, SourceMap, Span};
use std::path::Path;

/// Checks one file, registered in `sources` under its path.
pub fn check_file(sources: &mut SourceMap, path: &Path, text: &str) -> Vec<Diagnostic> {
    let file = sources.add(path.display().to_string(), text);
    check_source(file, path, text)
}

/// Checks one file already in the source map as `file`.
pub fn check_source(file: FileId, path: &Path, text: &str) -> Vec<Diagnostic> {
    Session::default().check(file, path, text)
}

/// The files of one `check` run: the templates they reference are read once.
#[derive(Default)]
pub struct Session {
    lib: refs::Library,
}

impl Session {
    pub fn check(&mut self, file: FileId, path: &Path, text: &str) -> Vec<Diagnostic> {
        self.check_and_load(file, path, text).0
    }

    /// The diagnostics of a file, and its module when it loads.
    fn check_and_load(
        &mut self,
        file: FileId,
        path: &Path,
        text: &str,
    ) -> (Vec<Diagnostic>, Option<ast::Module>) {
        let mut diags = Vec::new();
        let module = load(file, text, &mut diags);
        if let Some(module) = &module {
            let mut cx = check::Ctx {
                path,
                text,
                module,
                lib: &mut self.lib,
                diags: &mut diags,
            };
            check::module(&mut cx);
        }
        pipewright_syntax::diagnostic::sort(&mut diags);
        diags.dedup();
        (diags, module)
    }
}

fn load(file: FileId, text: &str, diags: &mut Vec<Diagnostic>) -> Option<ast::Module> {
    let root = match tree::parse(file, text) {
        Ok(r) => r,
        Err(e) => {
            diags.push(
                Diagnostic::error("PW0001", e.span, format!("invalid TOML: {}", e.message))
                    .with_label("here"),
            );
            return None;
        }
    };
    ast::build(&root, Span::new(file, 0..0), diags)
}

/// Checks one file and lowers it for `graph`; `Err` holds the diagnostics when it has errors.
pub fn lower_file(
    file: FileId,
    path: &Path,
    text: &str,
) -> Result<pipewright_ir::Program, Vec<Diagnostic>> {
    check_and_lower(file, path, text).map(|(program, _)| program)
}

/// Checks one file and lowers it, keeping the checked module, which `run` executes. `Err`
/// holds the diagnostics when it has errors.
pub fn check_and_lower(
    file: FileId,
    path: &Path,
    text: &str,
) -> Result<(pipewright_ir::Program, ast::Module), Vec<Diagnostic>> {
    let (diags, module) = Session::default().check_and_load(file, path, text);
    match module {
        Some(module) if !diags.iter().any(Diagnostic::is_error) => {
            Ok((lower::program(&module, file), module))
        }
        // A module that does not load has said why with an error.
        _ => Err(diags),
    }
}
