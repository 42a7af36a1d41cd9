//! A numbered, ordered walk over the workflows an export shows.

use crate::ir::{CallRole, Edge, Node, NodeKind, Program, Region, StepKeys, WorkflowId};
use petgraph::stable_graph::NodeIndex;
use petgraph::visit::{EdgeRef, IntoEdgeReferences};
use std::collections::{BTreeSet, HashMap, HashSet};

#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Show only this workflow and the workflows it calls, transitively. `None`: all.
    pub root: Option<WorkflowId>,
}

pub(crate) struct View<'a> {
    pub workflows: Vec<WorkflowView<'a>>,
    /// The entry node number of each shown workflow.
    entries: HashMap<WorkflowId, Option<usize>>,
    /// Calls: (from node number, case label, target name, target workflow if shown).
    pub calls: Vec<(usize, CallRole<'a>, &'a str, Option<WorkflowId>)>,
}

pub(crate) struct WorkflowView<'a> {
    pub id: WorkflowId,
    pub workflow: &'a crate::ir::Workflow,
    pub body: RegionView<'a>,
}

pub(crate) struct RegionView<'a> {
    /// A stable path such as `w0` or `w0.s2.do`.
    pub path: String,
    pub nodes: Vec<NodeView<'a>>,
    /// (from, to, edge) as node numbers.
    pub edges: Vec<(usize, usize, &'a Edge)>,
    /// The number of the entry node.
    pub entry: Option<usize>,
}

pub(crate) struct NodeView<'a> {
    /// Unique across the whole export, in walk order.
    pub number: usize,
    /// A stable path such as `w0.s2.do.s0`.
    pub path: String,
    pub node: &'a Node,
    /// The key run events and landings give this step, where it has one of its own.
    pub step_key: Option<String>,
    pub regions: Vec<(String, RegionView<'a>)>,
}

/// Where a region's steps get their keys from ([`StepKeys`]).
#[derive(Clone, Copy)]
enum Keys<'p> {
    None,
    Named,
    /// Positional, under this prefix (`""` at the top); `collapse`: a region of one node
    /// takes the prefix itself as its key (without its trailing dot).
    Positional {
        prefix: &'p str,
        collapse: bool,
    },
}

impl<'a> View<'a> {
    pub(super) fn new(program: &'a Program, opts: &ExportOptions) -> View<'a> {
        let shown = shown(program, opts);
        let shown_set: HashSet<WorkflowId> = shown.iter().copied().collect();
        let mut counter = 0;
        let mut calls = Vec::new();
        let workflows = shown
            .iter()
            .filter_map(|id| {
                let w = program.workflow(*id)?;
                let keys = match w.step_keys {
                    StepKeys::Unknown => Keys::None,
                    StepKeys::Named => Keys::Named,
                    StepKeys::Positional => Keys::Positional {
                        prefix: "",
                        collapse: false,
                    },
                };
                let mut walk = Walk {
                    counter: &mut counter,
                    calls: &mut calls,
                    shown: &shown_set,
                };
                let body = walk.region(&w.body, format!("w{}", id.0), keys);
                Some(WorkflowView {
                    id: *id,
                    workflow: w,
                    body,
                })
            })
            .collect::<Vec<WorkflowView>>();
        let entries = workflows.iter().map(|w| (w.id, w.body.entry)).collect();
        View {
            workflows,
            entries,
            calls,
        }
    }

    /// The entry node number of a shown workflow.
    pub(super) fn entry_of(&self, id: WorkflowId) -> Option<usize> {
        self.entries.get(&id).copied().flatten()
    }
}

fn shown(program: &Program, opts: &ExportOptions) -> Vec<WorkflowId> {
    let Some(root) = opts.root else {
        return (0..program.workflows.len()).map(WorkflowId).collect();
    };
    let mut seen = BTreeSet::new();
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        let Some(w) = program.workflow(id) else {
            continue;
        };
        if !seen.insert(id) {
            continue;
        }
        let mut regions = vec![&w.body];
        while let Some(r) = regions.pop() {
            for n in r.graph.node_weights() {
                stack.extend(n.calls().into_iter().filter_map(|(_, c)| c.resolved));
                regions.extend(n.kind.regions().into_iter().map(|(_, r)| r));
            }
        }
    }
    // The root first, then callees in program order.
    let mut v: Vec<WorkflowId> = seen.into_iter().filter(|i| *i != root).collect();
    v.insert(0, root);
    v
}

struct Walk<'w, 'a> {
    counter: &'w mut usize,
    calls: &'w mut Vec<(usize, CallRole<'a>, &'a str, Option<WorkflowId>)>,
    shown: &'w HashSet<WorkflowId>,
}

/// The keys of a nested region of a node keyed `key` (see [`StepKeys::Positional`]).
fn nested_prefix(kind: &NodeKind, role: &str, key: &str) -> Option<(String, bool)> {
    match role {
        "stage" => Some((format!("{key}."), false)),
        "collect" => Some((format!("{key}.{}.collect.", kind.name()), true)),
        _ => role
            .strip_prefix("branch ")
            .map(|name| (format!("{key}.parallel.{name}."), true)),
    }
}

impl<'a> Walk<'_, 'a> {
    fn region(&mut self, r: &'a Region, path: String, keys: Keys<'_>) -> RegionView<'a> {
        // Sized up front: the body of a large workflow has tens of thousands of nodes, and a
        // vector grown by doubling briefly holds both its old and new buffers.
        let mut numbers: HashMap<NodeIndex, usize> = HashMap::with_capacity(r.graph.node_count());
        let mut nodes = Vec::with_capacity(r.graph.node_count());
        let order = r.nodes();
        let single = order.len() == 1;
        for (i, ni) in order.into_iter().enumerate() {
            let node = &r.graph[ni];
            let number = *self.counter;
            *self.counter += 1;
            numbers.insert(ni, number);
            let npath = format!("{path}.s{i}");
            let step_key = match keys {
                Keys::None => None,
                Keys::Named => node.id.clone(),
                Keys::Positional { prefix, collapse } if collapse && single => {
                    Some(prefix.trim_end_matches('.').to_string())
                }
                Keys::Positional { prefix, .. } => Some(format!("{prefix}{}", node.index)),
            };
            let regions = node
                .kind
                .regions()
                .into_iter()
                .map(|(role, sub)| {
                    let rpath = format!("{npath}.{}", role.replace(' ', "."));
                    let nested = match (keys, &step_key) {
                        (Keys::Positional { .. }, Some(k)) => nested_prefix(&node.kind, &role, k),
                        _ => None,
                    };
                    let sub_view = match &nested {
                        Some((prefix, collapse)) => self.region(
                            sub,
                            rpath,
                            Keys::Positional {
                                prefix,
                                collapse: *collapse,
                            },
                        ),
                        None => self.region(sub, rpath, Keys::None),
                    };
                    (role, sub_view)
                })
                .collect();
            for (role, c) in node.calls() {
                self.calls.push((
                    number,
                    role,
                    c.target.as_str(),
                    c.resolved.filter(|id| self.shown.contains(id)),
                ));
            }
            nodes.push(NodeView {
                number,
                path: npath,
                node,
                step_key,
                regions,
            });
        }
        region_end(r, path, nodes, numbers)
    }
}

fn region_end<'a>(
    r: &'a Region,
    path: String,
    nodes: Vec<NodeView<'a>>,
    numbers: HashMap<NodeIndex, usize>,
) -> RegionView<'a> {
    let mut edges: Vec<(usize, usize, &Edge)> = r
        .graph
        .edge_references()
        .filter_map(|e| {
            Some((
                *numbers.get(&e.source())?,
                *numbers.get(&e.target())?,
                e.weight(),
            ))
        })
        .collect();
    edges.sort_by_key(|(a, b, _)| (*a, *b));
    let entry = r.entry.and_then(|e| numbers.get(&e).copied());
    RegionView {
        path,
        nodes,
        edges,
        entry,
    }
}
