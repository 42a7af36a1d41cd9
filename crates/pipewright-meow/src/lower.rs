//! MEOW modules lowered into the IR for `graph`: one workflow per module workflow, one node per
//! step (its id, its executor's kind), `needs` as `Needs` edges. Expand and foreach steps link
//! to the workflow they instantiate; a branch is a match whose cases are its outcomes; a step
//! whose `on_error` names a template links to it as its recovery.

use crate::ast::{Module, Step, Workflow};
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
        body: Region { graph, entry },
        span: w.key_span,
        schema_set: 0,
    }
}

fn text(n: Option<&TNode>, fallback: Span) -> Expr {
    let (src, span) = n
        .and_then(|n| n.as_str().map(|s| (s.to_string(), n.span)))
        .unwrap_or((String::new(), fallback));
    Expr::text(Lang::MeowTemplate, src, span, ScalarStyle::Plain)
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
    let get = |k: &str| {
        s.table
            .get(k)
            .and_then(TNode::as_str)
            .unwrap_or("")
            .to_string()
    };
    let kind = match s.executor() {
        "shell" => NodeKind::Shell {
            command: ArgValue::Literal(Value::Str(get("command"))),
            schema: None,
            on_error: None,
        },
        "agent" => NodeKind::Agent {
            prompt: text(s.table.get("prompt"), s.span),
            identity: Some(get("agent")),
            capabilities: None,
            schema: None,
            model: None,
        },
        "spawn" => NodeKind::Spawn {
            agent: get("agent"),
        },
        "kill" => NodeKind::Kill {
            target: get("agent"),
        },
        "expand" | "foreach" => {
            let span = s.table.get("template").map_or(s.span, |n| n.span);
            let mut c = call(&get("template"), span, ids);
            c.pass = passed(s.table.get("variables"));
            NodeKind::Expand {
                call: c,
                foreach: s.executor() == "foreach",
            }
        }
        "branch" => {
            let cases = ["on_true", "on_false", "on_timeout"]
                .iter()
                .filter_map(|k| {
                    let e = s.table.entry(k)?;
                    let t = e.value.as_table()?;
                    let target = match t.get("template").and_then(TNode::as_str) {
                        Some(tpl) => {
                            let mut c = call(tpl, e.value.span, ids);
                            c.pass = passed(t.get("variables"));
                            c
                        }
                        None => {
                            let n = t
                                .get("inline")
                                .and_then(TNode::as_array)
                                .map_or(0, <[TNode]>::len);
                            call(&format!("inline ({n} steps)"), e.value.span, ids)
                        }
                    };
                    Some(Case {
                        label: k.trim_start_matches("on_").to_string(),
                        selectable: true,
                        target,
                    })
                })
                .collect();
            NodeKind::Match {
                on: text(s.table.get("condition"), s.span),
                cases,
                default: None,
            }
        }
        other => NodeKind::Exit {
            outcome: Some(format!("unknown executor {other}")),
        },
    };
    Node {
        index,
        id: Some(s.id.text.clone()),
        // A `branch` is a match on its condition's outcome.
        kind_word: matches!(kind, NodeKind::Match { .. }).then_some("branch"),
        kind,
        span: s.span,
        kind_span: s.executor.as_ref().map_or(s.id.span, |e| e.span),
        output: None,
        condition: None,
        recovery: s.table.get("on_error").and_then(|n| {
            let t = n.as_str().filter(|t| crate::steps::on_error_template(t))?;
            Some(call(t, n.span, ids))
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
