//! A recipe lowered into the IR for `graph`: one node per step (an agent turn with its prompt
//! and resolved model tier), each outcome an `Outcome` edge. Exits are `Exit` nodes, one per
//! reason; a `restart-new-session` is a terminal `Call` of the recipe it starts, resolved when
//! it restarts this recipe. With `exitOnOther` the `other` outcome leads to the exit it takes
//! at run time, whatever its transition says. Cycles (review ⇄ fix) are kept as they are.

use crate::ast::{Recipe, Target};
use crate::rules::DEFAULT_OTHER_REASON;
use petgraph::stable_graph::NodeIndex;
use pipewright_ir::expr::{Expr, Lang};
use pipewright_ir::{CallRef, Edge, Graph, Limits, Node, NodeKind, Program, Region, WorkflowId};
use pipewright_yaml::ScalarStyle;
use std::collections::HashMap;
use std::path::Path;

pub fn program(r: &Recipe, path: &Path) -> Program {
    let name = r.id.as_ref().map_or_else(
        || {
            path.file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
        },
        |id| id.text.clone(),
    );
    let mut graph = Graph::default();
    let mut steps = HashMap::new();
    for (i, s) in r.steps.iter().enumerate() {
        let span = s.prompt.as_ref().map_or(s.name.span, |p| p.span);
        // The prompt is sent as written: no `{{…}}` substitution in this dialect.
        let prompt = Expr::text(
            Lang::Text,
            s.prompt
                .as_ref()
                .map_or_else(String::new, |p| p.text.clone()),
            span,
            ScalarStyle::DoubleQuoted,
        );
        let model = s
            .model
            .as_ref()
            .or(r.model.as_ref())
            .map(|m| m.text.clone());
        let n = graph.add_node(Node {
            index: i,
            id: Some(s.name.text.clone()),
            kind: NodeKind::Agent(Box::new(pipewright_ir::Agent {
                prompt,
                identity: None,
                capabilities: None,
                schema: None,
                model,
            })),
            span: s.name.span,
            kind_span: s.name.span,
            recovery: None,
            kind_word: None,
            output: None,
            condition: None,
        });
        steps.insert(s.name.text.as_str(), n);
    }
    let mut ends: HashMap<(bool, String), NodeIndex> = HashMap::new();
    let mut index = r.steps.len();
    for s in &r.steps {
        let Some(&from) = steps.get(s.name.text.as_str()) else {
            continue;
        };
        for o in &s.outcomes {
            let t = s.transition(&o.text);
            let other_exits = o.text == "other" && r.guardrails.exit_on_other;
            let reason_of = |t: Option<&crate::ast::Transition>| {
                t.filter(|t| t.target == Target::Exit)
                    .and_then(|t| t.reason.as_ref())
                    .map_or(DEFAULT_OTHER_REASON.to_string(), |r| r.text.clone())
            };
            let span = t.map_or(o.span, |t| t.span);
            let target = if other_exits {
                Some(exit(&mut graph, &mut ends, &mut index, reason_of(t), span))
            } else {
                match t.map(|t| &t.target) {
                    Some(Target::Next(n)) => steps.get(n.text.as_str()).copied(),
                    Some(Target::Exit) => {
                        Some(exit(&mut graph, &mut ends, &mut index, reason_of(t), span))
                    }
                    Some(Target::Restart(id)) => {
                        Some(*ends.entry((true, id.text.clone())).or_insert_with(|| {
                            index += 1;
                            graph.add_node(terminal(
                                index - 1,
                                NodeKind::Call(CallRef {
                                    target: id.text.clone(),
                                    resolved: (id.text == name).then_some(WorkflowId(0)),
                                    pass: Vec::new(),
                                    span: id.span,
                                }),
                                id.span,
                            ))
                        }))
                    }
                    _ => None,
                }
            };
            if let Some(to) = target {
                graph.add_edge(from, to, Edge::Outcome(o.text.clone()));
            }
        }
    }
    let entry = r
        .initial_step
        .as_ref()
        .and_then(|i| steps.get(i.text.as_str()).copied());
    Program {
        workflows: vec![pipewright_ir::Workflow {
            name,
            dialect: pipewright_dialect::Dialect::name(&crate::dialect::StateMachine),
            file: r.file,
            description: r.description.as_ref().map(|d| d.text.clone()),
            version: None,
            params: Vec::new(),
            limits: Limits {
                max_total_steps: Some(r.guardrails.max_total_steps),
                // §2.1: a step without a usable outcome gets one reminder in its session.
                turns_per_agent_step: Some(2),
                ..Limits::default()
            },
            body: Region {
                graph: Box::new(graph),
                entry,
            },
            span: r.span,
            schema_set: 0,
            step_keys: pipewright_ir::StepKeys::Named,
        }],
        schema_sets: Vec::new(),
    }
}

fn terminal(index: usize, kind: NodeKind, span: pipewright_syntax::Span) -> Node {
    Node {
        index,
        id: None,
        kind,
        span,
        kind_span: span,
        recovery: None,
        kind_word: None,
        output: None,
        condition: None,
    }
}

fn exit(
    graph: &mut Graph,
    ends: &mut HashMap<(bool, String), NodeIndex>,
    index: &mut usize,
    reason: String,
    span: pipewright_syntax::Span,
) -> NodeIndex {
    *ends.entry((false, reason.clone())).or_insert_with(|| {
        *index += 1;
        graph.add_node(terminal(
            *index - 1,
            NodeKind::Exit {
                outcome: Some(reason),
            },
            span,
        ))
    })
}
