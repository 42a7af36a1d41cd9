//! The dialect interface, and nothing that names a dialect. Every workflow language pipewright
//! knows is one [`Dialect`], implemented in that language's own crate: it says whether a file is
//! written in it, checks a set of its files, formats one, and lowers one into the IR for `graph`
//! and `run`, and answers an editor ([`editor`]). The CLI and the language server iterate the
//! registry (`pipewright-registry`, one file listing the dialect crates) and never name a
//! dialect.

pub mod command;
pub mod editor;
pub mod eval;
pub mod near_miss;
pub mod project;
pub mod runtime;
pub mod source;
pub mod suppress;

pub use command::{CommandContext, DialectCommand, ProjectRuns};
pub use editor::EditorFeatures;
pub use eval::{EvalInput, EvalLanguage};
pub use near_miss::NearMiss;
pub use runtime::{
    BackendFamily, Decided, FlagValue, FlagValues, Member, OpenStore, RecordedRun, RunBackend,
    RunFlag, RunRequest, RunTarget, Runtime, Waiting,
};
pub use source::Source;

use pipewright_project::ProjectConfig;
use pipewright_syntax::{CodeInfo, Diagnostic, FileId, SourceMap};
use std::any::Any;
use std::path::Path;
use std::sync::Arc;

/// What a user asks of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Check,
    Fmt,
    Graph,
    Run,
}

impl Verb {
    pub fn name(self) -> &'static str {
        match self {
            Verb::Check => "check",
            Verb::Fmt => "fmt",
            Verb::Graph => "graph",
            Verb::Run => "run",
        }
    }
}

/// What a check or a lowering needs from the project and the command line.
#[derive(Default)]
pub struct Context {
    pub project: ProjectConfig,
    /// Pipelines: the definitions are agent-generated (`--inline`).
    pub inline: bool,
    /// Pipelines: the invoking identity for `--inline`.
    pub invoker: Option<String>,
    /// The program is lowered to be drawn (`graph`), never run: a dialect may leave out what
    /// only running needs (parsed expression trees, [`pipewright_ir::Parsed::NotKept`]).
    pub drawn_only: bool,
}

/// A file lowered for `graph` and `run`.
pub struct Lowered {
    pub program: pipewright_ir::Program,
    /// The dialect's own DOT, when its reference tool defines one that users compare against
    /// (recipes: `recipe_to_dot`); otherwise the IR's DOT export is used.
    pub dot: Option<String>,
    /// What the dialect's runtime runs, when it runs more than the IR: the checked AST `lower`
    /// built, handed to the runtime as it is (`RunTarget::ast`, `RunRequest::ast`) so that a
    /// run does not parse the file again.
    pub ast: Option<CheckedAst>,
}

/// A dialect's checked AST with its type erased: the dialect's runtime downcasts it to its own
/// type (`Arc::downcast`); nothing else looks inside.
pub type CheckedAst = Arc<dyn Any + Send + Sync>;

pub trait Dialect: Sync {
    /// The name `--dialect` takes and messages use ("state-machine").
    fn name(&self) -> &'static str;
    /// What one file of the dialect is called ("state-machine recipe").
    fn noun(&self) -> &'static str;
    /// What one workflow in a file is called, for `--pipeline NAME` errors ("pipeline").
    fn workflow_noun(&self) -> &'static str {
        "workflow"
    }
    /// One sentence on the top-level shape, for the note on an unrecognised file.
    fn shape(&self) -> &'static str;
    /// Whether the file is written in this dialect.
    fn detect(&self, src: &Source) -> bool;
    /// A file one misspelled top-level key away from this dialect's shape.
    fn near_miss(&self, _src: &Source, _file: FileId) -> Option<NearMiss> {
        None
    }
    fn supports(&self, verb: Verb) -> bool;
    /// Every diagnostic code the dialect's checks emit, with titles and explanations.
    fn codes(&self) -> &'static [CodeInfo];
    /// The JSON Schema of the dialect's files (`pipewright schema DIALECT`, editors).
    fn json_schema(&self) -> serde_json::Value;
    /// How the dialect's workflows run; `None` until it can. Only asked when [`Verb::Run`] is
    /// supported.
    fn runtime(&self) -> Option<&dyn Runtime> {
        None
    }
    /// A command of the dialect's own under `pipewright` (MEOW's `meow …`).
    fn command(&self) -> Option<&dyn DialectCommand> {
        None
    }
    /// The condition and template languages of its files, for `pipewright eval --lang NAME`.
    fn eval_languages(&self) -> &'static [EvalLanguage] {
        &[]
    }
    /// What the dialect answers an editor (hover, completion, navigation); `None` when it
    /// answers nothing beyond diagnostics and formatting.
    fn editor(&self) -> Option<&dyn EditorFeatures> {
        None
    }
    /// A checker for the files of one `check` run. Only asked when [`Verb::Check`] is
    /// supported.
    fn checker(&self, _ctx: &Context) -> Box<dyn Checker> {
        Box::new(Unsupported)
    }
    /// The canonical text of one file. Only asked when [`Verb::Fmt`] is supported.
    fn format(
        &self,
        file: FileId,
        _text: &str,
        _options: pipewright_fmt::Options,
    ) -> Result<String, Vec<Diagnostic>> {
        Err(vec![pipewright_syntax::Diagnostic::error(
            "PW0900",
            pipewright_syntax::Span::new(file, 0..0),
            format!("fmt does not support {} files yet", self.name()),
        )])
    }
    /// Loads, checks and lowers one file. `Err` holds the diagnostics when the file has
    /// errors (warnings alone do not stop it). Only asked when [`Verb::Graph`] or
    /// [`Verb::Run`] is supported.
    fn lower(
        &self,
        _path: &Path,
        file: FileId,
        _text: &str,
        _sources: &mut SourceMap,
        _ctx: &Context,
    ) -> Result<Lowered, Vec<Diagnostic>> {
        Err(vec![pipewright_syntax::Diagnostic::error(
            "PW0007",
            pipewright_syntax::Span::new(file, 0..0),
            format!("{} files cannot be lowered by this version", self.name()),
        )])
    }
}

/// What a dialect's checker keeps of one check of an open document for the next one (its
/// parse), per document; only that dialect knows what it holds.
pub type Kept = std::sync::Arc<std::sync::Mutex<Option<Box<dyn std::any::Any + Send>>>>;

/// The files of one dialect in one `check` run: added one by one, checked together (pipelines
/// resolve calls across files).
pub trait Checker {
    fn add(
        &mut self,
        path: &Path,
        file: FileId,
        text: &str,
        sources: &mut SourceMap,
        diags: &mut Vec<Diagnostic>,
    );
    /// A document open in the language server: as [`Checker::add`], reusing what `kept` holds
    /// from the check of an earlier text of it, and leaving there what the next check may reuse.
    fn add_open(
        &mut self,
        path: &Path,
        file: FileId,
        text: &str,
        sources: &mut SourceMap,
        diags: &mut Vec<Diagnostic>,
        _kept: &Kept,
    ) {
        self.add(path, file, text, sources, diags);
    }
    /// A file from an include directory: what it defines is visible to the checked files; its
    /// own problems are not this check's.
    fn include(&mut self, _path: &Path, _file: FileId, _text: &str) {}
    /// Every diagnostic of the whole set.
    fn finish(self: Box<Self>, sources: &SourceMap) -> Vec<Diagnostic>;
}

struct Unsupported;

impl Checker for Unsupported {
    fn add(&mut self, _: &Path, _: FileId, _: &str, _: &mut SourceMap, _: &mut Vec<Diagnostic>) {}
    fn finish(self: Box<Self>, _: &SourceMap) -> Vec<Diagnostic> {
        Vec::new()
    }
}
