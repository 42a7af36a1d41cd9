//! The typed AST of a pipeline document set. Every node keeps its source span; expressions and
//! prompt templates are already parsed.

use pipewright_syntax::{FileId, Span};
use pipewright_yaml::{Node, ScalarStyle};

/// A name written in the source (a pipeline, schema, store, tool, branch…).
#[derive(Debug, Clone, PartialEq)]
pub struct Name {
    pub text: Box<str>,
    pub span: Span,
}

/// An R1 expression as written in a YAML scalar.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// The scalar's value (the expression source).
    pub src: Box<str>,
    /// The scalar node in the file; byte ranges inside `src` map back through
    /// [`Expr::span_of`].
    pub span: Span,
    pub style: ScalarStyle,
    pub ast: pipewright_r1::Expr,
}

/// An agent prompt template.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub src: String,
    pub span: Span,
    pub style: ScalarStyle,
    pub template: pipewright_r1::template::Template,
}

/// The set of files a check or run works on: every pipeline and schema, addressable by name.
#[derive(Debug, Clone, Default)]
pub struct Program {
    pub files: Vec<PipelineFile>,
}

#[derive(Debug, Clone)]
pub struct PipelineFile {
    pub file: FileId,
    /// The name a dotted call target (`ns.name`) uses for this file: its file stem.
    pub namespace: Option<String>,
    pub schemas: Vec<Schema>,
    pub pipelines: Vec<Pipeline>,
}

impl PipelineFile {
    /// A file that declares nothing.
    pub fn empty(file: FileId) -> PipelineFile {
        PipelineFile {
            file,
            namespace: None,
            schemas: Vec::new(),
            pipelines: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    pub name: Name,
    pub fields: Vec<Field>,
    /// The whole `schema:` document.
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: Name,
    pub ty: FieldType,
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FieldType {
    pub kind: FieldKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Bool,
    String,
    Number {
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Enum(Vec<serde_json::Value>),
    List(Box<FieldType>),
    Object(Vec<Field>),
    Ref(Name),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    pub name: Name,
    pub description: Option<String>,
    pub steps: Vec<Step>,
    /// The whole `pipeline:` document.
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub kind: StepKind,
    /// The whole step mapping (`- transform: {…}` without the dash).
    pub span: Span,
    /// The step-kind key (`transform`), where most step-level diagnostics point.
    pub kind_span: Span,
    pub output: Option<Name>,
}

/// The kinds larger than a transform are boxed: every step is as large as its largest inline
/// kind, and a large pipeline keeps hundreds of thousands of steps until its check ends.
#[derive(Debug, Clone, PartialEq)]
pub enum StepKind {
    Transform {
        value: Expr,
    },
    Tool(Box<ToolStep>),
    /// Sugar for a `tool` step named `shell` with one argument `command`.
    Shell(Box<ShellStep>),
    Agent(Box<AgentStep>),
    Call(CallTarget),
    Match(Box<MatchStep>),
    Fold(Box<FoldStep>),
    ForEach(Box<ForEachStep>),
    Parallel {
        on_error: OnError,
        branches: Vec<Branch>,
        collect: Box<Step>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolStep {
    pub name: Name,
    pub args: Vec<Arg>,
    pub schema: Option<Name>,
    pub on_error: Option<OnError>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ShellStep {
    pub command: ArgValue,
    pub schema: Option<Name>,
    pub on_error: Option<OnError>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentStep {
    pub prompt: Prompt,
    pub identity: Option<Name>,
    pub capabilities: Option<Vec<Name>>,
    pub schema: Option<Name>,
    pub model: Option<Name>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MatchStep {
    pub on: Expr,
    pub cases: Vec<MatchCase>,
    pub default: Option<CallTarget>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FoldStep {
    pub source: ListSource,
    pub init: Expr,
    pub body: Box<Step>,
    pub max_items: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForEachStep {
    pub source: ListSource,
    pub max_parallel: Option<u64>,
    pub on_error: OnError,
    pub body: Box<Step>,
    pub collect: Box<Step>,
}

impl StepKind {
    pub fn name(&self) -> &'static str {
        match self {
            StepKind::Transform { .. } => "transform",
            StepKind::Tool { .. } => "tool",
            StepKind::Shell { .. } => "shell",
            StepKind::Agent { .. } => "agent",
            StepKind::Call(_) => "call",
            StepKind::Match { .. } => "match",
            StepKind::Fold { .. } => "fold",
            StepKind::ForEach { .. } => "for_each",
            StepKind::Parallel { .. } => "parallel",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    pub name: Name,
    pub value: ArgValue,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    /// Passed to the tool exactly as written.
    Literal(Node),
    /// `!expr …`, evaluated just before dispatch.
    Expr(Expr),
}

#[derive(Debug, Clone, PartialEq)]
pub struct CallTarget {
    pub pipeline: Name,
    /// What the callee's stores are built from, in order. The list form `pass: [a]` is
    /// normalised to `a: ctx.a`.
    pub pass: Vec<Pass>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    pub name: Name,
    pub value: Expr,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MatchCase {
    pub label: Name,
    /// False when YAML typed the label as a non-string (`true:`, `1:`): the reference compares
    /// it with a string and it can never be selected.
    pub label_is_string: bool,
    pub target: CallTarget,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ListSource {
    Over(Expr),
    Items(Node),
    /// Neither given: the step's incoming pipe.
    Pipe,
}

/// The error policy is the IR's own: the interpreter reads it as written.
pub use pipewright_ir::{OnError, OnErrorKind};

#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    pub name: Name,
    pub step: Step,
}

impl Expr {
    /// The file span of a byte range inside the expression source.
    pub fn span_of(&self, source: &str, rel: std::ops::Range<usize>) -> Span {
        pipewright_yaml::map_scalar_range(source, self.span, self.style, &self.src, rel)
    }
}

impl Prompt {
    pub fn span_of(&self, source: &str, rel: std::ops::Range<usize>) -> Span {
        pipewright_yaml::map_scalar_range(source, self.span, self.style, &self.src, rel)
    }
}

impl Step {
    /// The steps nested directly in this one, in the order of [`Step::children`], without
    /// building a list: the checks walk every step of a pipeline this way.
    pub fn each_child<'s>(&'s self, mut f: impl FnMut(&'s Step)) {
        match &self.kind {
            StepKind::Fold(fold) => f(&fold.body),
            StepKind::ForEach(each) => {
                f(&each.body);
                f(&each.collect);
            }
            StepKind::Parallel {
                branches, collect, ..
            } => {
                for b in branches {
                    f(&b.step);
                }
                f(collect);
            }
            _ => {}
        }
    }

    /// The steps nested directly in this one, with the role each plays.
    pub fn children(&self) -> Vec<(&'static str, &Step)> {
        match &self.kind {
            StepKind::Fold(fold) => vec![("do", &fold.body)],
            StepKind::ForEach(each) => vec![("do", &each.body), ("collect", &each.collect)],
            StepKind::Parallel {
                branches, collect, ..
            } => {
                let mut v: Vec<(&'static str, &Step)> =
                    branches.iter().map(|b| ("branch", &b.step)).collect();
                v.push(("collect", collect));
                v
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large pipeline keeps every step until its check ends, so these sizes are most of its
    /// memory (docs/architecture.md, "Memory of a large check"): a change that grows a step
    /// (an unboxed large kind, a wider field) should be a deliberate one.
    #[test]
    fn step_sizes_stay_small() {
        use std::mem::size_of;
        assert!(size_of::<Step>() <= 136, "Step: {}", size_of::<Step>());
        assert!(
            size_of::<StepKind>() <= 80,
            "StepKind: {}",
            size_of::<StepKind>()
        );
        assert!(size_of::<Expr>() <= 80, "Expr: {}", size_of::<Expr>());
        assert!(size_of::<Name>() <= 32, "Name: {}", size_of::<Name>());
    }
}
