//! The dialect interface. Every workflow language pipewright knows is one [`Dialect`]: it says
//! whether a file is written in it, checks a set of its files, formats one, and lowers one into
//! the IR for `graph` and `run`. The CLI's verbs iterate [`DIALECTS`] and never name a dialect.
//!
//! Adding a dialect: its own crate (loader, checks, codes), one glue module here that binds that
//! crate to the trait, and one line in [`DIALECTS`]. The glue lives here rather than in the
//! dialect crates because the formatter (which holds every dialect's layout rules) depends on
//! them; implementing the trait in a dialect crate would make the dependency circular.

mod meow;
pub mod near_miss;
mod pipeline;
pub mod project;
mod recipe;
pub mod source;
mod state_machine;
pub mod suppress;

pub use near_miss::NearMiss;
pub use source::Source;

use pipewright_project::ProjectConfig;
use pipewright_syntax::{Diagnostic, FileId, SourceMap};
use std::path::Path;

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
}

/// A file lowered for `graph` and `run`.
pub struct Lowered {
    pub program: pipewright_ir::Program,
    /// The dialect's own DOT, when its reference tool defines one that users compare against
    /// (recipes: `recipe_to_dot`); otherwise the IR's DOT export is used.
    pub dot: Option<String>,
}

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

/// Every dialect, in detection order: the first whose [`Dialect::detect`] accepts a file owns
/// it.
pub static DIALECTS: &[&dyn Dialect] = &[
    &pipeline::Pipeline,
    &recipe::Recipe,
    &state_machine::StateMachine,
    &meow::Meow,
];

pub fn by_name(name: &str) -> Option<&'static dyn Dialect> {
    DIALECTS.iter().copied().find(|d| d.name() == name)
}

pub fn names() -> Vec<&'static str> {
    DIALECTS.iter().map(|d| d.name()).collect()
}

/// The dialect a file is written in, if any.
pub fn detect(src: &Source) -> Option<&'static dyn Dialect> {
    DIALECTS.iter().copied().find(|d| d.detect(src))
}

/// The first dialect the file nearly matches.
pub fn near_miss(src: &Source, file: FileId) -> Option<NearMiss> {
    DIALECTS.iter().find_map(|d| d.near_miss(src, file))
}

/// The error for a file no dialect recognises, with every dialect's shape as a note.
pub fn unrecognised(file: FileId, text: &str) -> Diagnostic {
    let first = text
        .lines()
        .position(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let start: usize = text
        .lines()
        .take(first.unwrap_or(0))
        .map(|l| l.len() + 1)
        .sum();
    let len = first.and_then(|i| text.lines().nth(i)).map_or(0, str::len);
    let mut d = Diagnostic::error(
        "PW0002",
        pipewright_syntax::Span::new(file, start..start + len),
        "this file is not a workflow pipewright recognises",
    )
    .with_label("unrecognised top level");
    for dialect in DIALECTS {
        d = d.with_note(dialect.shape());
    }
    d.with_help("pass `--dialect` to check it as a particular dialect")
}
