//! Call-graph cycles: a pipeline that (transitively) calls itself has no depth cap at run time.

use super::targets::Index;
use crate::ast::{Program, StepKind};
use crate::codes;
use petgraph::graph::{DiGraph, EdgeIndex, NodeIndex};
use pipewright_syntax::{Diagnostic, Span};
use rustc_hash::FxHashSet;
use std::collections::HashMap;

pub(super) fn check(program: &Program, index: &Index, diags: &mut Vec<Diagnostic>) {
    let mut graph = DiGraph::<String, (Span, bool)>::new();
    let mut nodes = HashMap::new();
    for (fi, f) in program.files.iter().enumerate() {
        for (pi, p) in f.pipelines.iter().enumerate() {
            nodes.insert((fi, pi), graph.add_node(p.name.text.to_string()));
        }
    }
    for (fi, f) in program.files.iter().enumerate() {
        for (pi, p) in f.pipelines.iter().enumerate() {
            let conditional = conditional_targets(p);
            for t in super::targets::targets_of(p) {
                if let (Some(&a), Some(b)) = (
                    nodes.get(&(fi, pi)),
                    index
                        .resolve(fi, &t.pipeline.text)
                        .and_then(|id| nodes.get(&id)),
                ) {
                    graph.add_edge(a, *b, (t.pipeline.span, conditional.contains(&t.span)));
                }
            }
        }
    }
    let mut sccs = petgraph::algo::tarjan_scc(&graph);
    sccs.sort_by_key(|c| c.iter().map(|n| graph[*n].clone()).min());
    for scc in sccs {
        let cyclic = scc.len() > 1 || graph.find_edge(scc[0], scc[0]).is_some();
        if !cyclic {
            continue;
        }
        let path = cycle_path(&graph, &scc);
        let chain: Vec<String> = path
            .iter()
            .map(|&(n, _)| graph[n].clone())
            .chain(path.first().map(|&(n, _)| graph[n].clone()))
            .collect();
        let Some(&(_, first)) = path.first() else {
            continue;
        };
        let all_unconditional = path.iter().all(|&(_, e)| !graph[e].1);
        let (span, _) = graph[first];
        let mut d = if all_unconditional {
            Diagnostic::error(codes::RECURSION, span, format!("unbounded recursion: {}", chain.join(" -> ")))
                .with_label("this call closes a cycle that every run would follow forever")
                .with_help("pipelines have no call-depth limit; break the cycle or make it data-driven with a `match`")
        } else {
            Diagnostic::warning(codes::RECURSION, span, format!("recursion through `match`: {}", chain.join(" -> ")))
                .with_label("this call closes a cycle")
                .with_help("make sure some `match` case always ends it; at run time a recursion past `max_call_depth` (under [run], default 64) fails with PW0812")
        };
        for &(_, e) in path.iter().skip(1) {
            d = d.with_secondary(graph[e].0, "part of the cycle");
        }
        diags.push(d);
    }
}

/// Spans of targets selected at run time (match cases/defaults); a set, since every target of
/// the pipeline is looked up in it.
fn conditional_targets(p: &crate::ast::Pipeline) -> FxHashSet<Span> {
    let mut out = FxHashSet::default();
    let mut stack: Vec<&crate::ast::Step> = p.steps.iter().collect();
    while let Some(s) = stack.pop() {
        if let StepKind::Match(m) = &s.kind {
            out.extend(m.cases.iter().map(|c| c.target.span));
            out.extend(m.default.iter().map(|d| d.span));
        }
        s.each_child(|c| stack.push(c));
    }
    out
}

/// One cycle inside a strongly connected component, as (node, edge leaving it) pairs, starting
/// from the node whose outgoing cycle edge comes first in the source.
pub(super) fn cycle_path<N, E>(
    graph: &DiGraph<N, E>,
    scc: &[NodeIndex],
) -> Vec<(NodeIndex, EdgeIndex)> {
    let members: FxHashSet<NodeIndex> = scc.iter().copied().collect();
    let in_scc = |n: NodeIndex| members.contains(&n);
    let Some(&start) = scc.iter().min() else {
        return Vec::new();
    };
    // Breadth-first search from `start` back to itself within the component.
    let mut prev: HashMap<NodeIndex, (NodeIndex, EdgeIndex)> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    let mut end_edge = None;
    while let Some(n) = queue.pop_front() {
        for e in graph.edges(n) {
            use petgraph::visit::EdgeRef;
            let t = e.target();
            if t == start {
                end_edge = Some((n, e.id()));
                break;
            }
            if in_scc(t) && !prev.contains_key(&t) {
                prev.insert(t, (n, e.id()));
                queue.push_back(t);
            }
        }
        if end_edge.is_some() {
            break;
        }
    }
    let Some((last, last_edge)) = end_edge else {
        return Vec::new();
    };
    let mut path = vec![(last, last_edge)];
    let mut cur = last;
    while cur != start {
        let Some(&(p, e)) = prev.get(&cur) else { break };
        path.push((p, e));
        cur = p;
    }
    path.reverse();
    path
}
