//! The tools a pipeline may name: pipewright's built-ins, the host tools of the reference
//! runtime (so real pipelines written for it check clean), and tools a project declares.

use pipewright_syntax::Span;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOrigin {
    /// Implemented by `pipewright run`.
    Builtin,
    /// Provided by the reference runtime's host; `pipewright run` needs a project
    /// declaration to execute it.
    Host,
    /// Declared in the project config file.
    Project(Option<Span>),
}

#[derive(Debug, Clone)]
pub struct ToolDecl {
    pub name: String,
    pub origin: ToolOrigin,
}

/// Tool names that exist but may never be dispatched from a pipeline step: nesting is
/// call-only, and hook installation is an escalation.
pub const DENIED_TOOLS: &[(&str, &str)] = &[
    (
        "run_pipeline",
        "a pipeline launches other pipelines with `call`, never through a tool",
    ),
    (
        "run_pipeline_async",
        "a pipeline launches other pipelines with `call`, never through a tool",
    ),
    (
        "run_pipeline_inline",
        "a pipeline launches other pipelines with `call`, never through a tool",
    ),
    (
        "run_pipeline_inline_async",
        "a pipeline launches other pipelines with `call`, never through a tool",
    ),
    (
        "hooks_add",
        "installing hooks from a pipeline would escalate its capabilities",
    ),
];

const BUILTIN: &[&str] = &["shell", "file__read", "file__write"];

/// Host tools of the reference runtime that real pipelines use.
const HOST: &[&str] = &[
    "web_search",
    "web_fetch",
    "present",
    "embed",
    "call_mcp_tool",
    "glob_files",
    "grep_files",
    "file__list",
    "file__edit",
    "ask_user",
    "memory__read",
    "memory__write",
];

#[derive(Debug, Clone)]
pub struct ToolCatalogue {
    pub tools: Vec<ToolDecl>,
}

impl Default for ToolCatalogue {
    fn default() -> ToolCatalogue {
        let mut tools: Vec<ToolDecl> = BUILTIN
            .iter()
            .map(|n| ToolDecl {
                name: n.to_string(),
                origin: ToolOrigin::Builtin,
            })
            .collect();
        tools.extend(HOST.iter().map(|n| ToolDecl {
            name: n.to_string(),
            origin: ToolOrigin::Host,
        }));
        ToolCatalogue { tools }
    }
}

impl ToolCatalogue {
    pub fn add_project_tool(&mut self, name: impl Into<String>, span: Option<Span>) {
        let name = name.into();
        self.tools.retain(|t| t.name != name);
        self.tools.push(ToolDecl {
            name,
            origin: ToolOrigin::Project(span),
        });
    }

    pub fn get(&self, name: &str) -> Option<&ToolDecl> {
        self.tools.iter().find(|t| t.name == name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> + Clone {
        self.tools.iter().map(|t| t.name.as_str())
    }
}
