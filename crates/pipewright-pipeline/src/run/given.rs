//! What an agent, shell or tool step is given, for its `step_started` event (docs/ui.md: the
//! UI's step detail): the prompt rendered, the command or the tool's arguments evaluated, and
//! the pipe it reads. The same rendering the step itself does (`render_prompt`, `arg_value`).

use super::{Frame, Interp};
use indexmap::IndexMap;
use pipewright_ir::{ArgValue, Expr, Node, NodeKind};
use pipewright_r1::Value;
use pipewright_runtime::codes;
use pipewright_runtime::failure::Failure;
use pipewright_runtime::given::Given;

impl Interp {
    /// An agent step's prompt, rendered against the frame.
    pub(crate) fn render_prompt(
        &self,
        node: &Node,
        key: &str,
        frame: &Frame,
        prompt: &Expr,
    ) -> Result<String, Failure> {
        let Some(template) = prompt.as_r1_template() else {
            return Err(self
                .fail(codes::EVAL, key, node, super::steps::not_r1(prompt))
                .into());
        };
        pipewright_r1::render(template, &frame.scope()).map_err(|e| {
            let span = match self.sources.get(prompt.span.file) {
                Some(f) => prompt.span_of(&f.text, e.range.clone()),
                None => prompt.span,
            };
            self.fail(codes::EVAL, key, node, e.message).at(span).into()
        })
    }

    /// A tool argument's value: as written, or its expression evaluated.
    pub(crate) fn arg_value(
        &self,
        node: &Node,
        key: &str,
        frame: &Frame,
        name: &str,
        v: &ArgValue,
    ) -> Result<Value, Failure> {
        match v {
            ArgValue::Literal(l) => Ok(l.clone()),
            ArgValue::Expr(e) => {
                self.eval(node, key, frame, e, Some(&format!("argument `{name}`")))
            }
        }
    }

    /// What the step at `key` is given, when the run is recorded; `None` for a step that
    /// renders nothing (its failure to render is the step's own, reported when it runs).
    pub(crate) fn given(&self, node: &Node, frame: &Frame, key: &str) -> Option<Given> {
        if !self.session.recorded() {
            return None;
        }
        let given = match &node.kind {
            NodeKind::Agent(agent) => {
                Given::prompt(&self.render_prompt(node, key, frame, &agent.prompt).ok()?)
            }
            NodeKind::Shell(shell) => Given::command(&command_text(
                &self
                    .arg_value(node, key, frame, "command", &shell.command)
                    .ok()?,
            )),
            NodeKind::Tool { args, .. } => {
                let mut resolved = IndexMap::new();
                for a in args.iter() {
                    resolved.insert(
                        a.name.clone(),
                        self.arg_value(node, key, frame, &a.name, &a.value).ok()?,
                    );
                }
                // A tool's call is its arguments: its input.
                return Some(Given::default().with_input(&Value::Object(resolved).to_json()));
            }
            _ => return None,
        };
        Some(given.with_input(&frame.pipe.to_json()))
    }
}

/// A shell command as it runs: a string as it is, a list (an argv) joined with spaces.
fn command_text(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        Value::List(items) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map_or_else(|| pipewright_runtime::value::python_str(i), str::to_string)
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => pipewright_runtime::value::python_str(other),
    }
}
