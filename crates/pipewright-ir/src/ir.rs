//! The IR vocabulary. Every dialect lowers into these types; only the pipeline dialect does so
//! today, the other node kinds are here so state machines (cycles through `Outcome` edges) and
//! MEOW (`Needs` edges, `Expand` nodes that add workflows at run time) need no new shapes.

use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;
use pipewright_r1::Value;
use pipewright_syntax::{FileId, Span};

pub use crate::expr::{Expr, Lang, Parsed};
pub use crate::schema::Schema;

/// Bumped whenever a change to these types changes what an exporter or the run store writes.
pub const IR_VERSION: u32 = 1;

pub type Graph = StableDiGraph<Node, Edge>;

/// Index of a workflow in [`Program::workflows`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkflowId(pub usize);

/// A lowered document set. Calls between workflows are [`CallRef`]s resolved to a
/// [`WorkflowId`] when the target is a static name found in the set.
#[derive(Debug, Clone, Default)]
pub struct Program {
    pub workflows: Vec<Workflow>,
    /// One schema set per source file; a workflow names its set by index.
    pub schema_sets: Vec<SchemaSet>,
}

#[derive(Debug, Clone)]
pub struct SchemaSet {
    pub file: FileId,
    pub schemas: Vec<Schema>,
}

impl SchemaSet {
    /// The last declaration wins, as in the reference runtime's registry.
    pub fn get(&self, name: &str) -> Option<&Schema> {
        self.schemas.iter().rev().find(|s| s.name == name)
    }
}

#[derive(Debug, Clone)]
pub struct Workflow {
    pub name: String,
    /// The name of the dialect it was written in (`Dialect::name`), for exports and messages.
    pub dialect: &'static str,
    pub file: FileId,
    pub description: Option<String>,
    /// The workflow's own version, where the dialect has one (a recipe's `version`).
    pub version: Option<String>,
    /// Declared inputs with their defaults (none in the pipeline dialect: its input is the
    /// initial store map).
    pub params: Vec<Param>,
    pub limits: Limits,
    pub body: Region,
    pub span: Span,
    pub schema_set: usize,
    /// How the dialect's runtime keys these steps in run events and landings.
    pub step_keys: StepKeys,
}

/// How a runtime names a workflow's steps in its run events and landings: what `step_key`
/// says on each node of the graph JSON, so a view of a run finds each event's node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StepKeys {
    /// The runtime's keys are not the graph's steps (none is given).
    #[default]
    Unknown,
    /// By position: a top-level step is its index (`2`). Nested regions that run once
    /// continue their node's key: a `stage`'s steps `K.j`; a `collect` `K.KIND.collect` and a
    /// `branch NAME` `K.parallel.NAME` (one step: that key itself, several: `.j` under it).
    /// A `do` region runs once per item: its items are keys under the node's
    /// (`2.for_each.0`), so its own nodes have none.
    Positional,
    /// By the step's own name ([`Node::id`]); what a step expands into or iterates over is
    /// keyed under it (`impl.first`, `each.0.run`).
    Named,
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub default: serde_json::Value,
    /// The caller must give a value (there is no default).
    pub required: bool,
}

/// Bounds a workflow sets on its own run (recipes' `recursion` and `rate_limiting`).
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// Nesting of sub-workflows.
    pub max_depth: Option<u64>,
    /// Agent turns in the whole run.
    pub max_total_steps: Option<u64>,
    /// Agent turns at once.
    pub max_concurrent_agents: Option<u64>,
    /// Milliseconds between the end of one agent turn and the start of the next.
    pub min_agent_delay_ms: Option<u64>,
    /// Slowing down after a rate-limit answer (429); `None`: no adaptive backoff.
    pub backoff: Option<Backoff>,
    /// The agent turns one agent step may take (a state machine's step: its prompt and one
    /// reminder); `None`: one.
    pub turns_per_agent_step: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    /// The delay after the first rate-limit answer.
    pub initial_ms: u64,
    pub max_ms: u64,
    /// Each further rate-limit answer multiplies the delay by this.
    pub multiplier: f64,
    /// Consecutive successes that end the backoff.
    pub reset_after: u64,
}

/// A sub-graph: a workflow body, or the body of a fold/for_each/parallel. Bodies are nested
/// rather than flattened so the isolation rules (a per-item copy of the stores) stay explicit.
#[derive(Debug, Clone, Default)]
pub struct Region {
    /// Boxed: a region sits inline in the node that owns it (a `for_each` has two), and a
    /// graph's header is 72 bytes, which every node of every kind would otherwise carry.
    pub graph: Box<Graph>,
    pub entry: Option<NodeIndex>,
}

impl Region {
    /// The nodes reached from `entry` along `Next` edges, in order. Stops at a node already
    /// seen, so a cyclic region (a state machine) never loops here.
    pub fn sequence(&self) -> Vec<NodeIndex> {
        let mut out = Vec::new();
        let mut cur = self.entry;
        while let Some(n) = cur {
            if out.contains(&n) {
                break;
            }
            out.push(n);
            cur = self.next(n);
        }
        out
    }

    /// The `Next` successor of a node.
    pub fn next(&self, n: NodeIndex) -> Option<NodeIndex> {
        self.graph
            .edges(n)
            .find(|e| matches!(e.weight(), Edge::Next))
            .map(|e| e.target())
    }

    pub fn node(&self, n: NodeIndex) -> Option<&Node> {
        self.graph.node_weight(n)
    }

    /// Nodes in a stable order: by `index`, then by graph index.
    pub fn nodes(&self) -> Vec<NodeIndex> {
        let mut v: Vec<NodeIndex> = self.graph.node_indices().collect();
        v.sort_by_key(|n| (self.graph[*n].index, n.index()));
        v
    }
}

/// One step.
#[derive(Debug, Clone)]
pub struct Node {
    /// Position in its region's sequence; runtime recovery keys are built from it.
    pub index: usize,
    /// The step's own name where the dialect has one (a recipe step `id`).
    pub id: Option<String>,
    pub kind: NodeKind,
    /// The whole step, where runtime failures point.
    pub span: Span,
    /// The step-kind key.
    pub kind_span: Span,
    /// The named store the result is written to.
    pub output: Option<String>,
    /// Run only when this holds; a skipped node writes nothing (recipes). Boxed, as is
    /// `recovery`: most nodes have neither, and every node is as large as its inline fields
    /// (a 10 MiB pipeline lowers to ~90,000 nodes).
    pub condition: Option<Box<Expr>>,
    /// The workflow run when this node fails (a MEOW `on_error` naming a template).
    pub recovery: Option<Box<CallRef>>,
    /// The dialect's own word for this kind of step where it differs from [`NodeKind::name`]
    /// (a recipe's `agent` step is an `ask`, its `bash` step a `command`): graphs label the
    /// step with it, so the IR's vocabulary stays dialect-neutral and users still read theirs.
    pub kind_word: Option<&'static str>,
}

/// Why a node refers to another workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallRole<'a> {
    /// It runs it (`call`, `expand`, `foreach`).
    Call,
    /// A `match` runs it on this case label (`default` for its default).
    Case(&'a str),
    /// It runs it when it fails.
    OnError,
}

impl CallRole<'_> {
    pub fn name(&self) -> &'static str {
        match self {
            CallRole::Call => "call",
            CallRole::Case(_) => "case",
            CallRole::OnError => "on_error",
        }
    }

    /// An edge label: `call`, `case LABEL`, `on_error`.
    pub fn label(&self) -> String {
        match self {
            CallRole::Case(l) => format!("case {l}"),
            other => other.name().to_string(),
        }
    }
}

#[derive(Debug, Clone)]
pub enum Edge {
    /// Sequence: the pipe flows from source to target.
    Next,
    /// A declared dependency (MEOW `needs`).
    Needs,
    /// A state-machine transition taken on this outcome label.
    Outcome(String),
    /// A branch taken when a condition's value equals this label.
    Case(String),
    /// Taken when the source fails.
    OnError,
}

impl Edge {
    pub fn label(&self) -> Option<&str> {
        match self {
            Edge::Outcome(l) | Edge::Case(l) => Some(l),
            _ => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Edge::Next => "next",
            Edge::Needs => "needs",
            Edge::Outcome(_) => "outcome",
            Edge::Case(_) => "case",
            Edge::OnError => "on_error",
        }
    }
}

#[derive(Debug, Clone)]
pub enum ArgValue {
    Literal(Value),
    Expr(Expr),
}

#[derive(Debug, Clone)]
pub struct Arg {
    pub name: String,
    pub value: ArgValue,
}

/// A `call` (or a `match` case): a static target name and the stores handed to the callee.
#[derive(Debug, Clone)]
pub struct CallRef {
    pub target: String,
    /// `None` when no workflow in the set has that name: running it fails the step.
    pub resolved: Option<WorkflowId>,
    pub pass: Vec<(String, Expr)>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub label: String,
    /// False for a YAML label typed as a non-string: it never matches.
    pub selectable: bool,
    pub target: CallRef,
}

#[derive(Debug, Clone)]
pub enum ListSource {
    Over(Expr),
    /// A literal list (any literal; a non-list fails at run time).
    Items(Value),
    /// The incoming pipe.
    Pipe,
}

impl ListSource {
    /// How a graph label says where the items come from.
    fn summary(&self) -> String {
        match self {
            ListSource::Over(e) => format!("over {}", e.src),
            ListSource::Items(v) => format!("items {}", v.to_json_string()),
            ListSource::Pipe => "over pipe".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct BranchRegion {
    pub name: String,
    pub region: Region,
}

#[derive(Debug, Clone)]
pub struct Shell {
    pub command: ArgValue,
    pub schema: Option<String>,
    pub on_error: Option<OnError>,
}

#[derive(Debug, Clone)]
pub struct Agent {
    /// An [`Lang::R1Template`], [`Lang::RecipeTemplate`] or [`Lang::Text`].
    pub prompt: Expr,
    pub identity: Option<String>,
    pub capabilities: Option<Vec<String>>,
    pub schema: Option<String>,
    pub model: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Match {
    pub on: Expr,
    pub cases: Vec<Case>,
    pub default: Option<CallRef>,
}

#[derive(Debug, Clone)]
pub struct Fold {
    pub source: ListSource,
    pub init: Expr,
    pub body: Region,
    pub max_items: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct ForEach {
    pub source: ListSource,
    pub max_parallel: Option<u64>,
    pub on_error: OnError,
    pub body: Region,
    pub collect: Region,
}

/// An approval gate: the run pauses until approved or denied.
#[derive(Debug, Clone)]
pub struct Gate {
    /// The stage it closes.
    pub stage: String,
    /// What the approver is asked (a template); `None` for the default question.
    pub prompt: Option<Expr>,
    /// Seconds after which `default` applies (0: never).
    pub timeout_secs: u64,
    pub default_approve: bool,
}

/// What a step does. Kinds larger than a few words are boxed: every node is as large as its
/// largest kind, and a node's storage is allocated while the AST it is lowered from still
/// lives (`graph` of a 10 MiB pipeline, docs/performance.md; `node_sizes_stay_small`).
#[derive(Debug, Clone)]
pub enum NodeKind {
    Transform {
        value: Expr,
    },
    Tool {
        name: String,
        args: Vec<Arg>,
        schema: Option<String>,
        on_error: Option<OnError>,
    },
    Shell(Box<Shell>),
    Agent(Box<Agent>),
    Call(CallRef),
    Match(Box<Match>),
    Fold(Box<Fold>),
    ForEach(Box<ForEach>),
    Parallel {
        on_error: OnError,
        branches: Vec<BranchRegion>,
        collect: Region,
    },
    /// An approval gate: the run pauses until approved or denied.
    Gate(Box<Gate>),
    /// A named group of steps (a recipe stage); a `skip_remaining` inside ends only it.
    Stage {
        name: String,
        body: Region,
    },
    /// A process run through the shell with a templated command line (a recipe `bash` step).
    Command(Box<Command>),
    /// An agent turn with a templated prompt, in a dialect whose state is a context of named
    /// variables (a recipe agent step).
    Ask(Box<Ask>),
    /// Runs another workflow file with its own context (a recipe `type: recipe` step).
    SubWorkflow(Box<SubWorkflow>),
    /// Runs a body once per list item or while a condition holds.
    Loop(Box<Loop>),
    /// Starts a long-lived agent session (MEOW `spawn`).
    Spawn {
        agent: String,
    },
    /// Stops a spawned session.
    Kill {
        target: String,
    },
    /// Instantiates a template workflow at run time (MEOW `expand`; with `foreach`, once per
    /// item).
    Expand {
        call: CallRef,
        foreach: bool,
    },
    /// Ends the workflow with an outcome.
    Exit {
        outcome: Option<String>,
    },
}

impl NodeKind {
    pub fn name(&self) -> &'static str {
        match self {
            NodeKind::Transform { .. } => "transform",
            NodeKind::Tool { .. } => "tool",
            NodeKind::Shell { .. } => "shell",
            NodeKind::Agent { .. } => "agent",
            NodeKind::Call(_) => "call",
            NodeKind::Match { .. } => "match",
            NodeKind::Fold { .. } => "fold",
            NodeKind::ForEach { .. } => "for_each",
            NodeKind::Parallel { .. } => "parallel",
            NodeKind::Gate { .. } => "gate",
            NodeKind::Stage { .. } => "stage",
            NodeKind::Command(_) => "command",
            NodeKind::Ask(_) => "ask",
            NodeKind::SubWorkflow(_) => "sub_workflow",
            NodeKind::Loop(_) => "loop",
            NodeKind::Spawn { .. } => "spawn",
            NodeKind::Kill { .. } => "kill",
            NodeKind::Expand { foreach: true, .. } => "foreach",
            NodeKind::Expand { .. } => "expand",
            NodeKind::Exit { .. } => "exit",
        }
    }

    /// Whether running the step asks an agent (what costs money: graph JSON's `agent`).
    pub fn asks_an_agent(&self) -> bool {
        matches!(self, NodeKind::Agent(_) | NodeKind::Ask(_))
    }

    /// The nested regions with the role each plays (`do`, `collect`, `branch NAME`).
    pub fn regions(&self) -> Vec<(String, &Region)> {
        match self {
            NodeKind::Fold(f) => vec![("do".into(), &f.body)],
            NodeKind::ForEach(each) => {
                vec![("do".into(), &each.body), ("collect".into(), &each.collect)]
            }
            NodeKind::Parallel {
                branches, collect, ..
            } => {
                let mut v: Vec<(String, &Region)> = branches
                    .iter()
                    .map(|b| (format!("branch {}", b.name), &b.region))
                    .collect();
                v.push(("collect".into(), collect));
                v
            }
            NodeKind::Stage { body, .. } => vec![("stage".into(), body)],
            NodeKind::Loop(l) => vec![("do".into(), &l.body)],
            _ => Vec::new(),
        }
    }

    /// The workflows this node may run, with the case label for a match.
    pub fn calls(&self) -> Vec<(Option<&str>, &CallRef)> {
        match self {
            NodeKind::Call(c) | NodeKind::Expand { call: c, .. } => vec![(None, c)],
            NodeKind::Match(m) => {
                let mut v: Vec<(Option<&str>, &CallRef)> = m
                    .cases
                    .iter()
                    .map(|c| (Some(c.label.as_str()), &c.target))
                    .collect();
                if let Some(d) = &m.default {
                    v.push((Some("default"), d));
                }
                v
            }
            _ => Vec::new(),
        }
    }

    /// The node's error policy, if it has one (explicit or defaulted).
    pub fn on_error(&self) -> Option<OnErrorKind> {
        match self {
            NodeKind::Tool { on_error, .. } => on_error.map(|o| o.kind),
            NodeKind::Shell(sh) => sh.on_error.map(|o| o.kind),
            NodeKind::ForEach(each) => Some(each.on_error.kind),
            NodeKind::Parallel { on_error, .. } => Some(on_error.kind),
            _ => None,
        }
    }
}

/// What a failing step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnErrorKind {
    Continue,
    Abort,
    Retry(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnError {
    pub kind: OnErrorKind,
    /// `None` when defaulted.
    pub span: Option<Span>,
}

/// What a failing step of a context dialect does (recipes' `on_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorPolicy {
    /// The run fails.
    Fail,
    /// The step's result is empty (null, or a command's output so far) and the run goes on.
    Continue,
    /// The remaining steps (of the stage) are skipped; the run goes on from there.
    SkipRemaining,
}

impl ErrorPolicy {
    pub fn name(self) -> &'static str {
        match self {
            ErrorPolicy::Fail => "fail",
            ErrorPolicy::Continue => "continue",
            ErrorPolicy::SkipRemaining => "skip_remaining",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Command {
    /// The command line (a template), given to `bash -c`.
    pub command: Expr,
    /// The working directory (a template); relative to the project directory.
    pub cwd: Option<Expr>,
    /// Environment additions, each value a template.
    pub env: Vec<(String, Expr)>,
    pub timeout_secs: Option<u64>,
    /// Where the exit code is stored (as text).
    pub exit_code_to: Option<String>,
    pub on_error: ErrorPolicy,
    pub parse_json: bool,
}

#[derive(Debug, Clone)]
pub struct Ask {
    /// The agent (identity) the turn goes to.
    pub agent: String,
    pub prompt: Expr,
    pub mode: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub timeout_secs: Option<u64>,
    pub retry: Retry,
    pub on_error: ErrorPolicy,
    pub parse_json: bool,
    /// The shape later steps read from the reply (a JSON Schema), so an offline backend can
    /// answer with something the rest of the workflow can use. Never shown to a real agent.
    pub shape: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    pub max_attempts: u32,
    pub exponential: bool,
    pub initial_delay_secs: f64,
    pub max_delay_secs: f64,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            max_attempts: 1,
            exponential: true,
            initial_delay_secs: 5.0,
            max_delay_secs: 300.0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct SubWorkflow {
    /// The file (a template), relative to the calling file's directory.
    pub path: Expr,
    /// The context handed over: values whose strings are templates.
    pub context: Vec<(String, serde_json::Value)>,
    /// Overrides of the recursion limits for the callee (`max_depth`, `max_total_steps`).
    pub max_depth: Option<u64>,
    pub max_total_steps: Option<u64>,
    pub on_error: ErrorPolicy,
}

#[derive(Debug, Clone)]
pub struct Loop {
    pub mode: LoopMode,
    /// One node (the step itself) or the step's nested steps.
    pub body: Region,
    /// The body is the step's nested steps (not the step itself).
    pub nested: bool,
    /// Where the list of every iteration's result goes.
    pub collect: Option<String>,
}

#[derive(Debug, Clone)]
pub enum LoopMode {
    Each {
        /// The list (a template naming one variable).
        source: Expr,
        /// The variable each item is bound to.
        var: String,
        max_items: Option<u64>,
        /// `None`: one at a time; `Some(0)`: all at once; `Some(n)`: at most n at once.
        parallel: Option<u64>,
        on_error: ErrorPolicy,
    },
    While {
        condition: Expr,
        break_when: Option<Expr>,
        /// Variables set after each iteration, each value a template.
        update: Vec<(String, Expr)>,
        max_iterations: u64,
    },
}

pub fn on_error_text(kind: OnErrorKind) -> String {
    match kind {
        OnErrorKind::Continue => "continue".into(),
        OnErrorKind::Abort => "abort".into(),
        OnErrorKind::Retry(n) => format!("retry({n})"),
    }
}

impl Node {
    /// What graphs call the step's kind: the dialect's word, else the IR's.
    pub fn kind_label(&self) -> &'static str {
        self.kind_word.unwrap_or_else(|| self.kind.name())
    }

    /// The workflows this node may run, and why: its kind's calls, then its recovery.
    pub fn calls(&self) -> Vec<(CallRole<'_>, &CallRef)> {
        let mut v: Vec<(CallRole<'_>, &CallRef)> = self
            .kind
            .calls()
            .into_iter()
            .map(|(label, c)| (label.map_or(CallRole::Call, CallRole::Case), c))
            .collect();
        v.extend(self.recovery.as_deref().map(|c| (CallRole::OnError, c)));
        v
    }

    /// A one-line description for graph labels: the expression, the tool, the first words of
    /// the prompt, the callee.
    pub fn summary(&self) -> String {
        let s = match &self.kind {
            NodeKind::Transform { value } => value.src.clone(),
            NodeKind::Tool { name, .. } => name.clone(),
            NodeKind::Shell(sh) => match &sh.command {
                ArgValue::Literal(Value::Str(s)) => s.clone(),
                ArgValue::Literal(v) => v.to_json_string(),
                ArgValue::Expr(e) => format!("!expr {}", e.src),
            },
            NodeKind::Agent(a) => first_words(&a.prompt.src, 8),
            NodeKind::Call(c) => format!("→ {}", c.target),
            NodeKind::Match(m) => format!("on {}", m.on.src),
            NodeKind::Fold(f) => f.source.summary(),
            NodeKind::ForEach(each) => each.source.summary(),
            NodeKind::Parallel { branches, .. } => format!("{} branches", branches.len()),
            NodeKind::Gate(g) => match &g.prompt {
                Some(p) => first_words(&p.src, 8),
                None => format!("approve {}?", g.stage),
            },
            NodeKind::Stage { body, .. } => match body.graph.node_count() {
                1 => "1 step".into(),
                n => format!("{n} steps"),
            },
            NodeKind::Command(c) => c.command.src.clone(),
            NodeKind::Ask(a) => first_words(&a.prompt.src, 8),
            NodeKind::SubWorkflow(w) => format!("→ {}", w.path.src),
            NodeKind::Loop(l) => match &l.mode {
                LoopMode::Each { source, .. } => format!("for each {}", source.src),
                LoopMode::While { condition, .. } => format!("while {}", condition.src),
            },
            NodeKind::Spawn { agent } => agent.clone(),
            NodeKind::Kill { target } => target.clone(),
            NodeKind::Expand { call, .. } => format!("→ {}", call.target),
            NodeKind::Exit { outcome } => outcome.clone().unwrap_or_default(),
        };
        truncate(&collapse_ws(&s), 48)
    }
}

fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn first_words(s: &str, n: usize) -> String {
    let words: Vec<&str> = s.split_whitespace().collect();
    if words.len() > n {
        format!("{}…", words[..n].join(" "))
    } else {
        words.join(" ")
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max - 1).collect();
    format!("{}…", cut.trim_end())
}

impl Program {
    pub fn workflow(&self, id: WorkflowId) -> Option<&Workflow> {
        self.workflows.get(id.0)
    }

    /// A workflow by name; `None` when absent.
    pub fn find(&self, name: &str) -> Option<WorkflowId> {
        self.workflows
            .iter()
            .position(|w| w.name == name)
            .map(WorkflowId)
    }

    pub fn schemas_of(&self, w: &Workflow) -> Option<&SchemaSet> {
        self.schema_sets.get(w.schema_set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every step of a lowered workflow is one node in its region's graph, and `graph` of a
    /// large pipeline holds them all (docs/performance.md, "Graph memory"): a change that grows
    /// a node (an unboxed rare field, a region inline) should be a deliberate one. A node was
    /// 552 bytes, its kind 288 and a region 80 before issue 27.
    #[test]
    fn node_sizes_stay_small() {
        use std::mem::size_of;
        assert!(size_of::<Node>() <= 208, "Node: {}", size_of::<Node>());
        assert!(
            size_of::<NodeKind>() <= 96,
            "NodeKind: {}",
            size_of::<NodeKind>()
        );
        assert!(size_of::<Region>() <= 16, "Region: {}", size_of::<Region>());
    }
}
