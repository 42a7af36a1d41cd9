//! The seven executors, each with the fields it reads, typed. Built once per step when a module
//! loads ([`crate::ast::step`]) and read by check, lower and the runtime, so that each field's
//! key is spelled here and nowhere else.
//!
//! A value of the wrong type reads as absent, as the reference reads it; `check` reports it
//! (`steps`). The run still meets such values in a template it loads only at run time (a
//! reference computed from `{{…}}`, a file no check reached), so the few fields whose wrong
//! values the runtime treats apart from absent ones keep that difference (`Timeout::Invalid`,
//! `Flag::Other`, `BranchTarget::NotATable`).

use crate::ast::{self, Step, Text};
use crate::tree::{Kind, Node, Table};
use pipewright_syntax::Span;

#[derive(Debug, Clone)]
pub enum Executor {
    Shell(Shell),
    Spawn(Spawn),
    Kill(Kill),
    Expand(Expand),
    Branch(Branch),
    Foreach(Foreach),
    Agent(Agent),
    /// No `executor` (or not a string, held as ""), or a name that is none of the seven.
    /// `check` refuses it; the run fails such a step when it is dispatched.
    Unknown {
        name: String,
    },
}

/// A shell step: its command.
#[derive(Debug, Clone)]
pub struct Shell {
    pub command: Command,
}

/// A command a shell or branch step runs, and what it captures.
#[derive(Debug, Clone)]
pub struct Command {
    /// `command` of a shell step, `condition` of a branch.
    pub script: Option<Text>,
    pub workdir: Option<Text>,
    pub env: Env,
    /// Branch steps declare it; shell steps honour it too (check calls it unread there).
    pub timeout: Option<Timeout>,
    /// `shell_outputs`, or for a shell step without it the `outputs` alias.
    pub captures: Vec<Capture>,
}

/// `env`: the variables a step sets.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// The value as written, shown by `run --dry-run` as it is.
    pub written: Option<Node>,
}

impl Env {
    /// The variables set: the entries of the table whose value is a string.
    pub fn vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.written
            .as_ref()
            .and_then(Node::as_table)
            .into_iter()
            .flat_map(|t| &t.entries)
            .filter_map(|e| e.value.as_str().map(|v| (e.key.as_str(), v)))
    }
}

/// An output a shell or branch step captures.
#[derive(Debug, Clone)]
pub struct Capture {
    pub name: String,
    /// `stdout` when not given.
    pub source: Option<Text>,
    /// `type = "json"`: stored parsed rather than as text.
    pub json: bool,
}

/// `timeout`.
#[derive(Debug, Clone)]
pub enum Timeout {
    /// A Go duration (`30s`), parsed by whoever runs the step.
    Text(Text),
    /// A positive integer: seconds.
    Seconds(u64),
    /// Neither: the step fails when it is dispatched.
    Invalid,
}

#[derive(Debug, Clone)]
pub struct Spawn {
    pub agent: Option<Text>,
    pub adapter: Option<Text>,
    pub workdir: Option<Text>,
    pub env: Env,
    pub resume_session: Option<Text>,
    pub spawn_args: Option<SpawnArgs>,
}

/// `spawn_args`: one string, or a list of strings (each quoted for the shell when joined).
#[derive(Debug, Clone)]
pub enum SpawnArgs {
    Text(Text),
    List(Vec<Text>),
}

#[derive(Debug, Clone)]
pub struct Kill {
    pub agent: Option<Text>,
    /// `true` when not given.
    pub graceful: bool,
}

#[derive(Debug, Clone)]
pub struct Expand {
    pub template: Option<Text>,
    /// The variables passed, as written (a table whose values take `{{…}}`).
    pub variables: Option<Node>,
}

#[derive(Debug, Clone)]
pub struct Branch {
    pub condition: Command,
    pub on_true: Option<BranchTarget>,
    pub on_false: Option<BranchTarget>,
    pub on_timeout: Option<BranchTarget>,
}

impl Branch {
    /// Each outcome with its key and its target, in the order written in the spec.
    pub fn targets(&self) -> [(&'static str, Option<&BranchTarget>); 3] {
        [
            ("on_true", self.on_true.as_ref()),
            ("on_false", self.on_false.as_ref()),
            ("on_timeout", self.on_timeout.as_ref()),
        ]
    }
}

/// What a branch outcome expands.
#[derive(Debug, Clone)]
pub enum BranchTarget {
    /// `{ template = "…", variables = {…} }`; a template wins over `inline`.
    Template {
        /// The whole target.
        span: Span,
        template: Text,
        variables: Option<Node>,
    },
    /// `{ inline = [steps] }`: each item as a step, or why it is not one (the first
    /// diagnostic building the items met).
    Inline {
        span: Span,
        steps: Vec<Result<Step, String>>,
    },
    /// A table with neither: nothing to expand.
    Nothing { span: Span },
    /// Not a table: no target, although a timeout still picks `on_timeout` over `on_false`.
    NotATable,
}

#[derive(Debug, Clone)]
pub struct Foreach {
    pub items: Option<Text>,
    pub items_file: Option<Text>,
    pub item_var: Option<Text>,
    pub index_var: Option<Text>,
    pub template: Option<Text>,
    pub variables: Option<Node>,
    pub parallel: Option<Flag>,
    pub join: Option<Flag>,
    pub max_concurrent: Option<MaxConcurrent>,
}

/// A boolean that may also be written as text (`"{{parallel}}"`, `"yes"`).
#[derive(Debug, Clone)]
pub enum Flag {
    Bool(bool),
    Text(Text),
    /// Another type: the step fails when it is dispatched.
    Other(Node),
}

/// `max_concurrent`: an integer, or text that renders to one.
#[derive(Debug, Clone)]
pub enum MaxConcurrent {
    Count(i64),
    Text(Text),
    /// Another type: no limit.
    Other(Node),
}

#[derive(Debug, Clone)]
pub struct Agent {
    pub agent: Option<Text>,
    pub prompt: Option<Text>,
    /// As written: besides `fire_forget` and `interactive`, any text runs as `autonomous`.
    pub mode: Option<Text>,
    pub timeout: Option<Timeout>,
    pub outputs: Vec<OutputDecl>,
}

impl Agent {
    pub fn fire_forget(&self) -> bool {
        self.mode.as_ref().is_some_and(|m| m.text == "fire_forget")
    }
}

/// A declared output of an agent step: `name = { required, type, description }`.
#[derive(Debug, Clone)]
pub struct OutputDecl {
    pub name: String,
    pub required: bool,
    /// `string` when not given.
    pub ty: String,
    pub description: String,
}

/// How an agent, spawn or kill step uses the agent it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentUse {
    Ask,
    Spawn,
    Kill,
}

impl Executor {
    /// The agent an agent, spawn or kill step names (as written; `None` inside when the step
    /// gives none), and how it uses it; `None` for the other executors.
    pub fn agent_named(&self) -> Option<(Option<&Text>, AgentUse)> {
        Some(match self {
            Executor::Agent(a) => (a.agent.as_ref(), AgentUse::Ask),
            Executor::Spawn(s) => (s.agent.as_ref(), AgentUse::Spawn),
            Executor::Kill(k) => (k.agent.as_ref(), AgentUse::Kill),
            _ => return None,
        })
    }

    /// The `executor` as written ("" when there is none).
    pub fn name(&self) -> &str {
        self.keyword().unwrap_or(match self {
            Executor::Unknown { name } => name,
            _ => "",
        })
    }

    /// The executor's name when it is one of the seven.
    pub fn keyword(&self) -> Option<&'static str> {
        Some(match self {
            Executor::Shell(_) => "shell",
            Executor::Spawn(_) => "spawn",
            Executor::Kill(_) => "kill",
            Executor::Expand(_) => "expand",
            Executor::Branch(_) => "branch",
            Executor::Foreach(_) => "foreach",
            Executor::Agent(_) => "agent",
            Executor::Unknown { .. } => return None,
        })
    }

    /// The fields of executor `name` read from a step's table.
    pub(crate) fn read(name: &str, table: &Table) -> Executor {
        Executor::from_fields(name, &Fields::new(table))
    }

    fn from_fields(name: &str, t: &Fields) -> Executor {
        match name {
            "shell" => Executor::Shell(Shell {
                command: t.command("command", true),
            }),
            "branch" => Executor::Branch(Branch {
                condition: t.command("condition", false),
                on_true: t.target("on_true"),
                on_false: t.target("on_false"),
                on_timeout: t.target("on_timeout"),
            }),
            "spawn" => Executor::Spawn(Spawn {
                agent: t.text("agent"),
                adapter: t.text("adapter"),
                workdir: t.text("workdir"),
                env: t.env(),
                resume_session: t.text("resume_session"),
                spawn_args: t.get("spawn_args").and_then(|n| match &n.kind {
                    Kind::Str(s) => Some(SpawnArgs::Text(text(s, n.span))),
                    Kind::Array(a) => {
                        Some(SpawnArgs::List(a.iter().filter_map(Text::of).collect()))
                    }
                    _ => None,
                }),
            }),
            "kill" => Executor::Kill(Kill {
                agent: t.text("agent"),
                graceful: t.get("graceful").and_then(Node::as_bool).unwrap_or(true),
            }),
            "expand" => Executor::Expand(Expand {
                template: t.text("template"),
                variables: t.get("variables").cloned(),
            }),
            "foreach" => Executor::Foreach(Foreach {
                items: t.text("items"),
                items_file: t.text("items_file"),
                item_var: t.text("item_var"),
                index_var: t.text("index_var"),
                template: t.text("template"),
                variables: t.get("variables").cloned(),
                parallel: t.flag("parallel"),
                join: t.flag("join"),
                max_concurrent: t.get("max_concurrent").map(|n| match &n.kind {
                    Kind::Int(i) => MaxConcurrent::Count(*i),
                    Kind::Str(s) => MaxConcurrent::Text(text(s, n.span)),
                    _ => MaxConcurrent::Other(n.clone()),
                }),
            }),
            "agent" => Executor::Agent(Agent {
                agent: t.text("agent"),
                prompt: t.text("prompt"),
                mode: t.text("mode"),
                timeout: t.timeout(),
                outputs: t.output_decls(),
            }),
            other => Executor::Unknown {
                name: other.to_string(),
            },
        }
    }
}

fn text(s: &str, span: Span) -> Text {
    Text {
        text: s.to_string(),
        span,
    }
}

/// A step's table, read by key. Tests can ask which keys were read.
struct Fields<'t> {
    table: &'t Table,
    #[cfg(test)]
    read: std::cell::RefCell<Vec<&'static str>>,
}

impl<'t> Fields<'t> {
    fn new(table: &'t Table) -> Self {
        Fields {
            table,
            #[cfg(test)]
            read: Default::default(),
        }
    }

    fn get(&self, key: &'static str) -> Option<&'t Node> {
        #[cfg(test)]
        self.read.borrow_mut().push(key);
        self.table.get(key)
    }

    fn text(&self, key: &'static str) -> Option<Text> {
        self.get(key).and_then(Text::of)
    }

    fn env(&self) -> Env {
        Env {
            written: self.get("env").cloned(),
        }
    }

    /// `shell_outputs`; a shell step falls back on `outputs` only when that key is absent.
    fn command(&self, script: &'static str, outputs_alias: bool) -> Command {
        let declared = match self.get("shell_outputs") {
            None if outputs_alias => self.get("outputs"),
            found => found,
        };
        let captures = declared
            .and_then(Node::as_table)
            .into_iter()
            .flat_map(|t| &t.entries)
            .filter_map(|e| {
                let d = e.value.as_table()?;
                Some(Capture {
                    name: e.key.clone(),
                    source: d.get("source").and_then(Text::of),
                    json: d.get("type").and_then(Node::as_str) == Some("json"),
                })
            })
            .collect();
        Command {
            script: self.text(script),
            workdir: self.text("workdir"),
            env: self.env(),
            timeout: self.timeout(),
            captures,
        }
    }

    fn timeout(&self) -> Option<Timeout> {
        self.get("timeout").map(|n| match &n.kind {
            Kind::Str(s) => Timeout::Text(text(s, n.span)),
            Kind::Int(s) if *s > 0 => Timeout::Seconds(s.unsigned_abs()),
            _ => Timeout::Invalid,
        })
    }

    fn flag(&self, key: &'static str) -> Option<Flag> {
        self.get(key).map(|n| match &n.kind {
            Kind::Bool(b) => Flag::Bool(*b),
            Kind::Str(s) => Flag::Text(text(s, n.span)),
            _ => Flag::Other(n.clone()),
        })
    }

    fn output_decls(&self) -> Vec<OutputDecl> {
        let Some(t) = self.get("outputs").and_then(Node::as_table) else {
            return Vec::new();
        };
        t.entries
            .iter()
            .filter_map(|e| {
                let d = e.value.as_table()?;
                Some(OutputDecl {
                    name: e.key.clone(),
                    required: d.get("required").and_then(Node::as_bool).unwrap_or(false),
                    ty: d
                        .get("type")
                        .and_then(Node::as_str)
                        .unwrap_or("string")
                        .to_string(),
                    description: d
                        .get("description")
                        .and_then(Node::as_str)
                        .unwrap_or("")
                        .to_string(),
                })
            })
            .collect()
    }

    fn target(&self, key: &'static str) -> Option<BranchTarget> {
        let n = self.get(key)?;
        let Some(t) = n.as_table() else {
            return Some(BranchTarget::NotATable);
        };
        let span = n.span;
        if let Some(template) = t.get("template").and_then(Text::of) {
            return Some(BranchTarget::Template {
                span,
                template,
                variables: t.get("variables").cloned(),
            });
        }
        let Some(items) = t.get("inline").and_then(Node::as_array) else {
            return Some(BranchTarget::Nothing { span });
        };
        let mut diags = Vec::new();
        let mut steps = Vec::new();
        for (k, item) in items.iter().enumerate() {
            let step = ast::step(item, k, "inline step", &mut diags);
            steps.push(step.ok_or_else(|| {
                diags
                    .first()
                    .map_or("not a step", |d| d.message.as_str())
                    .to_string()
            }));
        }
        Some(BranchTarget::Inline { span, steps })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::{reads, EXECUTORS};

    /// The keys each executor's fields are read from are the keys `check` knows it reads
    /// (`steps::reads`, which also gives the schema), but for the exception listed here.
    #[test]
    fn the_fields_read_are_the_keys_check_knows() {
        let table = Table::default();
        for ex in EXECUTORS {
            let f = Fields::new(&table);
            Executor::from_fields(ex, &f);
            let mut read = f.read.borrow().clone();
            // `on_error` is every step's (`ast::Step`), not one executor's field.
            let mut known: Vec<&str> = reads(ex)
                .iter()
                .copied()
                .filter(|k| *k != "on_error")
                .collect();
            // The run applies a shell step's `timeout`, which check calls unread there.
            if ex == "shell" {
                known.push("timeout");
            }
            read.sort_unstable();
            read.dedup();
            known.sort_unstable();
            assert_eq!(read, known, "executor `{ex}`");
        }
    }
}
