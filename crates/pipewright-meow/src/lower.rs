//! MEOW modules lowered into the IR for `graph`: one workflow per module workflow, one node per
//! step (its id, its executor's kind), `needs` as `Needs` edges. Expand and foreach steps link
//! to the workflow they instantiate; a branch is a match whose cases are its outcomes; a step
//! whose `on_error` names a template links to it as its recovery.

use crate::ast::{Module, Step, Text, Workflow};
use crate::executor::{BranchTarget, Executor};
use crate::tree::Node as TNode;
use pipewright_ir::expr::{Expr, Lang};
use pipewright_ir::{
    ArgValue, CallRef, Case, Edge, Graph, Limits, Node, NodeKind, Param, Program, Region,
    WorkflowId,
};
use pipewright_r1::Value;
use pipewright_syntax::{FileId, Span};
use pipewright_yaml::ScalarStyle;
use std::collections::HashMap;

pub fn program(module: &Module, file: FileId) -> Program {
    let ids: HashMap<&str, usize> = module
        .workflows
        .iter()
        .enumerate()
        .map(|(i, w)| (w.name.as_str(), i))
        .collect();
    Program {
        workflows: module
            .workflows
            .iter()
            .map(|w| workflow(w, file, &ids))
            .collect(),
        schema_sets: Vec::new(),
    }
}

fn workflow(w: &Workflow, file: FileId, ids: &HashMap<&str, usize>) -> pipewright_ir::Workflow {
    let mut graph = Graph::default();
    let mut index = HashMap::new();
    for (i, s) in w.steps.iter().enumerate() {
        let n = graph.add_node(node(s, i, ids));
        index.insert(s.id.text.as_str(), n);
    }
    for s in &w.steps {
        let Some(&to) = index.get(s.id.text.as_str()) else {
            continue;
        };
        for need in &s.needs {
            // `E.child` waits for a step of E's expansion: drawn from E.
            let head = need
                .text
                .split_once('.')
                .map_or(need.text.as_str(), |(h, _)| h);
            if let Some(&from) = index.get(need.text.as_str()).or_else(|| index.get(head)) {
                graph.add_edge(from, to, Edge::Needs);
            }
        }
    }
    let entry = w
        .steps
        .first()
        .and_then(|s| index.get(s.id.text.as_str()).copied());
    pipewright_ir::Workflow {
        name: w.name.clone(),
        dialect: pipewright_dialect::Dialect::name(&crate::dialect::Meow),
        file,
        description: w
            .table
            .get("description")
            .and_then(TNode::as_str)
            .map(str::to_string),
        version: None,
        params: w
            .variables
            .iter()
            .map(|v| Param {
                name: v.name.clone(),
                default: v
                    .default
                    .as_ref()
                    .map_or(serde_json::Value::Null, TNode::to_json),
                required: v.required && v.default.is_none(),
            })
            .collect(),
        limits: Limits::default(),
        body: Region {
            graph: Box::new(graph),
            entry,
        },
        span: w.key_span,
        schema_set: 0,
        step_keys: pipewright_ir::StepKeys::Named,
    }
}

fn text(t: Option<&Text>, fallback: Span) -> Expr {
    let (src, span) = t.map_or((String::new(), fallback), |t| (t.text.clone(), t.span));
    Expr::text(Lang::MeowTemplate, src, span, ScalarStyle::Plain)
}

/// A field's text, "" when it is absent.
fn or_empty(t: &Option<Text>) -> String {
    t.as_ref().map_or_else(String::new, |t| t.text.clone())
}

fn call(target: &str, span: Span, ids: &HashMap<&str, usize>) -> CallRef {
    let local = target
        .strip_prefix('.')
        .or_else(|| target.strip_prefix('#'));
    CallRef {
        target: target.to_string(),
        resolved: local.and_then(|l| ids.get(l)).map(|&i| WorkflowId(i)),
        pass: Vec::new(),
        span,
    }
}

fn node(s: &Step, index: usize, ids: &HashMap<&str, usize>) -> Node {
    let expand = |template: &Option<Text>, variables: &Option<TNode>, foreach: bool| {
        let span = template.as_ref().map_or(s.span, |t| t.span);
        let mut c = call(&or_empty(template), span, ids);
        c.pass = passed(variables.as_ref());
        NodeKind::Expand { call: c, foreach }
    };
    let kind = match &s.executor {
        Executor::Shell(shell) => NodeKind::Shell(Box::new(pipewright_ir::Shell {
            command: ArgValue::Literal(Value::Str(or_empty(&shell.command.script))),
            schema: None,
            on_error: None,
        })),
        Executor::Agent(agent) => NodeKind::Agent(Box::new(pipewright_ir::Agent {
            prompt: text(agent.prompt.as_ref(), s.span),
            identity: Some(or_empty(&agent.agent)),
            capabilities: None,
            schema: None,
            model: None,
        })),
        Executor::Spawn(spawn) => NodeKind::Spawn {
            agent: or_empty(&spawn.agent),
        },
        Executor::Kill(kill) => NodeKind::Kill {
            target: or_empty(&kill.agent),
        },
        Executor::Expand(e) => expand(&e.template, &e.variables, false),
        Executor::Foreach(f) => expand(&f.template, &f.variables, true),
        Executor::Branch(branch) => {
            let cases = branch
                .targets()
                .into_iter()
                .filter_map(|(key, target)| {
                    let target = match target? {
                        BranchTarget::Template {
                            span,
                            template,
                            variables,
                        } => {
                            let mut c = call(&template.text, *span, ids);
                            c.pass = passed(variables.as_ref());
                            c
                        }
                        BranchTarget::Inline { span, steps } => {
                            call(&format!("inline ({} steps)", steps.len()), *span, ids)
                        }
                        BranchTarget::Nothing { span } => call("inline (0 steps)", *span, ids),
                        BranchTarget::NotATable => return None,
                    };
                    Some(Case {
                        label: key.trim_start_matches("on_").to_string(),
                        selectable: true,
                        target,
                    })
                })
                .collect();
            NodeKind::Match(Box::new(pipewright_ir::Match {
                on: text(branch.condition.script.as_ref(), s.span),
                cases,
                default: None,
            }))
        }
        Executor::Unknown { name } => NodeKind::Exit {
            outcome: Some(format!("unknown executor {name}")),
        },
    };
    Node {
        index,
        id: Some(s.id.text.clone()),
        // A `branch` is a match on its condition's outcome.
        kind_word: matches!(kind, NodeKind::Match { .. }).then_some("branch"),
        kind,
        span: s.span,
        kind_span: s.executor_text.as_ref().map_or(s.id.span, |e| e.span),
        output: None,
        condition: None,
        recovery: s.on_error.as_ref().and_then(|t| {
            crate::steps::on_error_template(&t.text).then(|| Box::new(call(&t.text, t.span, ids)))
        }),
    }
}

/// The variables an expansion passes, as the texts written.
fn passed(vars: Option<&TNode>) -> Vec<(String, Expr)> {
    let Some(t) = vars.and_then(TNode::as_table) else {
        return Vec::new();
    };
    t.entries
        .iter()
        .map(|e| {
            let src = match e.value.as_str() {
                Some(s) => s.to_string(),
                None => e.value.to_json().to_string(),
            };
            (
                e.key.clone(),
                Expr::text(Lang::MeowTemplate, src, e.value.span, ScalarStyle::Plain),
            )
        })
        .collect()
}
