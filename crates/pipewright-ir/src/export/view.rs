//! A numbered, ordered walk over the workflows an export shows.
//!
//! The walk is made while the export is written, region by region, rather than built whole
//! first: a view of a large graph (a path, a step key and a few vectors per node) was a
//! quarter of `graph`'s memory on a 10 MiB pipeline. Nodes are numbered in walk order: a
//! node, then the nodes of its regions, then the next node; every exporter writes in that
//! order, so a node's number is known when it is written, and a region's edges and entry once
//! its nodes are.

use crate::ir::{CallRole, Edge, Node, NodeKind, Program, Region, StepKeys, Workflow, WorkflowId};
use petgraph::stable_graph::NodeIndex;
use petgraph::visit::{EdgeRef, IntoEdgeReferences, NodeIndexable};
use std::cell::{Cell, Ref, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};

#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Show only this workflow and the workflows it calls, transitively. `None`: all.
    pub root: Option<WorkflowId>,
}

pub(crate) struct View<'a> {
    pub workflows: Vec<WorkflowView<'a>>,
    shown: HashSet<WorkflowId>,
    /// The next node number.
    counter: Cell<usize>,
    /// The entry node number of each shown workflow whose body was walked.
    entries: RefCell<HashMap<WorkflowId, Option<usize>>>,
    calls: RefCell<Vec<Call<'a>>>,
}

/// A call from a walked node.
pub(crate) struct Call<'a> {
    pub from: usize,
    /// The path of the calling node.
    pub from_path: String,
    pub role: CallRole<'a>,
    pub target: &'a str,
    /// The target workflow, if it is shown.
    pub to: Option<WorkflowId>,
}

pub(crate) struct WorkflowView<'a> {
    pub id: WorkflowId,
    pub workflow: &'a Workflow,
}

/// Where a region's steps get their keys from ([`StepKeys`]).
#[derive(Clone)]
enum Keys {
    None,
    Named,
    /// Positional, under this prefix (`""` at the top); `collapse`: a region of one node
    /// takes the prefix itself as its key (without its trailing dot).
    Positional {
        prefix: String,
        collapse: bool,
    },
}

pub(crate) struct RegionView<'v, 'a> {
    view: &'v View<'a>,
    region: &'a Region,
    /// A stable path such as `w0` or `w0.s2.do`.
    pub path: String,
    keys: Keys,
    /// The workflow this is the body of.
    body_of: Option<WorkflowId>,
    /// The region's nodes in their stable order ([`Region::nodes`]).
    order: Vec<NodeIndex>,
    /// Node numbers by position, given as the walk reaches them.
    numbers: RefCell<Vec<usize>>,
}

pub(crate) struct NodeView<'v, 'a> {
    view: &'v View<'a>,
    /// Unique across the whole export, in walk order.
    pub number: usize,
    /// A stable path such as `w0.s2.do.s0`.
    pub path: String,
    pub node: &'a Node,
    /// The key run events and landings give this step, where it has one of its own.
    pub step_key: Option<String>,
    keys: Keys,
}

impl<'a> View<'a> {
    pub(super) fn new(program: &'a Program, opts: &ExportOptions) -> View<'a> {
        let shown = shown(program, opts);
        View {
            workflows: shown
                .iter()
                .filter_map(|id| {
                    Some(WorkflowView {
                        id: *id,
                        workflow: program.workflow(*id)?,
                    })
                })
                .collect(),
            shown: shown.into_iter().collect(),
            counter: Cell::new(0),
            entries: RefCell::new(HashMap::new()),
            calls: RefCell::new(Vec::new()),
        }
    }

    /// The body of a shown workflow, to walk.
    pub(super) fn body<'v>(&'v self, w: &WorkflowView<'a>) -> RegionView<'v, 'a> {
        let keys = match w.workflow.step_keys {
            StepKeys::Unknown => Keys::None,
            StepKeys::Named => Keys::Named,
            StepKeys::Positional => Keys::Positional {
                prefix: String::new(),
                collapse: false,
            },
        };
        let mut body = RegionView::new(self, &w.workflow.body, format!("w{}", w.id.0), keys);
        body.body_of = Some(w.id);
        body
    }

    /// The entry node number of a shown workflow whose body was walked.
    pub(super) fn entry_of(&self, id: WorkflowId) -> Option<usize> {
        self.entries.borrow().get(&id).copied().flatten()
    }

    /// The calls of every node walked so far, in walk order (a node's after those of the
    /// nodes in its regions).
    pub(super) fn calls(&self) -> Ref<'_, Vec<Call<'a>>> {
        self.calls.borrow()
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

impl<'v, 'a> RegionView<'v, 'a> {
    fn new(view: &'v View<'a>, region: &'a Region, path: String, keys: Keys) -> Self {
        let order = region.nodes();
        RegionView {
            view,
            region,
            path,
            keys,
            body_of: None,
            numbers: RefCell::new(Vec::with_capacity(order.len())),
            order,
        }
    }

    /// The path of the node at `pos` in the region's order.
    pub(super) fn node_path(&self, pos: usize) -> String {
        format!("{}.s{pos}", self.path)
    }

    /// Calls `f` on each node in order, numbering it first. `f` must walk the node's regions
    /// (if it shows them) before it returns, so that numbers stay in walk order.
    pub(super) fn walk<E>(
        &self,
        mut f: impl FnMut(&NodeView<'v, 'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        let single = self.order.len() == 1;
        for (pos, ni) in self.order.iter().enumerate() {
            let node = &self.region.graph[*ni];
            let number = self.view.counter.get();
            self.view.counter.set(number + 1);
            self.numbers.borrow_mut().push(number);
            let step_key = match &self.keys {
                Keys::None => None,
                Keys::Named => node.id.clone(),
                Keys::Positional { prefix, collapse } if *collapse && single => {
                    Some(prefix.trim_end_matches('.').to_string())
                }
                Keys::Positional { prefix, .. } => Some(format!("{prefix}{}", node.index)),
            };
            let n = NodeView {
                view: self.view,
                number,
                path: self.node_path(pos),
                node,
                step_key,
                keys: self.keys.clone(),
            };
            f(&n)?;
            for (role, c) in node.calls() {
                self.view.calls.borrow_mut().push(Call {
                    from: number,
                    from_path: n.path.clone(),
                    role,
                    target: c.target.as_str(),
                    to: c.resolved.filter(|id| self.view.shown.contains(id)),
                });
            }
        }
        if let Some(id) = self.body_of {
            self.view.entries.borrow_mut().insert(id, self.entry());
        }
        Ok(())
    }

    /// How many nodes the region has.
    pub(super) fn len(&self) -> usize {
        self.order.len()
    }

    /// The position of the entry node in the region's order.
    fn entry_pos(&self) -> Option<usize> {
        let entry = self.region.entry?;
        self.order.iter().position(|n| *n == entry)
    }

    /// The number of the entry node, once the region was walked.
    pub(super) fn entry(&self) -> Option<usize> {
        self.numbers.borrow().get(self.entry_pos()?).copied()
    }

    /// The path of the entry node (known before the walk).
    pub(super) fn entry_path(&self) -> Option<String> {
        self.entry_pos().map(|p| self.node_path(p))
    }

    /// The region's edges between its nodes, by position, in the order of their ends.
    pub(super) fn edges_by_position(&self) -> Vec<(usize, usize, &'a Edge)> {
        let mut pos = vec![usize::MAX; self.region.graph.node_bound()];
        for (p, ni) in self.order.iter().enumerate() {
            pos[ni.index()] = p;
        }
        let at = |n: NodeIndex| pos.get(n.index()).copied().filter(|p| *p != usize::MAX);
        let region: &'a Region = self.region;
        let mut edges: Vec<(usize, usize, &'a Edge)> = region
            .graph
            .edge_references()
            .filter_map(|e| Some((at(e.source())?, at(e.target())?, e.weight())))
            .collect();
        // Numbers grow with position, so this is the order of their numbers too.
        edges.sort_by_key(|(a, b, _)| (*a, *b));
        edges
    }

    /// (from, to, edge) as node numbers, once the region was walked.
    pub(super) fn edges(&self) -> Vec<(usize, usize, &'a Edge)> {
        let numbers = self.numbers.borrow();
        self.edges_by_position()
            .into_iter()
            .filter_map(|(a, b, e)| Some((*numbers.get(a)?, *numbers.get(b)?, e)))
            .collect()
    }
}

impl<'v, 'a> NodeView<'v, 'a> {
    /// The node's nested regions with their roles, to walk.
    pub(super) fn regions(&self) -> Vec<(String, RegionView<'v, 'a>)> {
        let node = self.node;
        node.kind
            .regions()
            .into_iter()
            .map(|(role, sub)| {
                let rpath = format!("{}.{}", self.path, role.replace(' ', "."));
                let nested = match (&self.keys, &self.step_key) {
                    (Keys::Positional { .. }, Some(k)) => nested_prefix(&node.kind, &role, k),
                    _ => None,
                };
                let keys = match nested {
                    Some((prefix, collapse)) => Keys::Positional { prefix, collapse },
                    None => Keys::None,
                };
                let view = RegionView::new(self.view, sub, rpath, keys);
                (role, view)
            })
            .collect()
    }
}
