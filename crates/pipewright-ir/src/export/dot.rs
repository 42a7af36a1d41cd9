//! Graphviz DOT. Workflows and nested regions are clusters; `compound=true` lets a call edge
//! end at the callee's cluster border (`lhead`).

use super::view::{NodeView, RegionView, View};
use super::PushStr as _;
use super::{label_lines, region_title, ExportOptions};
use crate::ir::{Edge, NodeKind, Program};
use std::convert::Infallible;
use std::fmt::Write;

pub fn dot(program: &Program, opts: &ExportOptions) -> String {
    let mut out = String::new();
    write_dot(program, opts, &mut out);
    out
}

/// [`dot`], written piece by piece to `out`: a large graph's text is never whole in memory.
/// Write errors are the writer's to keep (writing stops mattering once one failed).
pub fn write_dot(program: &Program, opts: &ExportOptions, out: &mut impl Write) {
    let view = View::new(program, opts);
    out.push_str("digraph pipewright {\n");
    out.push_str("  graph [rankdir=TB, compound=true, fontname=\"Helvetica\", fontsize=11];\n");
    out.push_str("  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n");
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for w in &view.workflows {
        let _ = writeln!(out, "  subgraph cluster_w{} {{", w.id.0);
        let _ = writeln!(
            out,
            "    label=\"{} {}\";",
            w.workflow.dialect,
            esc(&w.workflow.name)
        );
        out.push_str("    style=rounded;\n");
        region(out, &view.body(w), 2);
        out.push_str("  }\n");
    }
    let mut unresolved = 0;
    for call in view.calls().iter() {
        let (from, role, target, to) = (call.from, &call.role, call.target, call.to);
        let edge_label = esc(&role.label());
        match to.and_then(|id| view.entry_of(id).map(|e| (id, e))) {
            Some((id, entry)) => {
                let _ = writeln!(
                    out,
                    "  n{from} -> n{entry} [style=dashed, color=\"#555555\", label=\"{edge_label}\", lhead=cluster_w{}];",
                    id.0
                );
            }
            None => {
                let _ = writeln!(out, "  missing{unresolved} [shape=note, color=\"#b00020\", label=\"{}\\n(not shown)\"];", esc(target));
                let _ = writeln!(out, "  n{from} -> missing{unresolved} [style=dashed, color=\"#b00020\", label=\"{edge_label}\"];");
                unresolved += 1;
            }
        }
    }
    out.push_str("}\n");
}

fn region(out: &mut impl Write, r: &RegionView, depth: usize) {
    let pad = "  ".repeat(depth);
    let _ = r.walk(|n| {
        node(out, n, depth);
        Ok::<(), Infallible>(())
    });
    for (a, b, e) in r.edges() {
        let attrs = match e {
            Edge::Next => String::new(),
            Edge::Needs => " [style=dotted, label=\"needs\"]".into(),
            Edge::Outcome(l) => format!(" [label=\"{}\"]", esc(l)),
            Edge::Case(l) => format!(" [label=\"case {}\"]", esc(l)),
            Edge::OnError => " [color=\"#b00020\", label=\"on_error\"]".into(),
        };
        let _ = writeln!(out, "{pad}n{a} -> n{b}{attrs};");
    }
}

fn node(out: &mut impl Write, n: &NodeView, depth: usize) {
    let pad = "  ".repeat(depth);
    let label = label_lines(n.node)
        .iter()
        .map(|l| esc(l))
        .collect::<Vec<_>>()
        .join("\\n");
    let _ = writeln!(
        out,
        "{pad}n{} [label=\"{label}\"{}];",
        n.number,
        style(&n.node.kind)
    );
    for (role, sub) in n.regions() {
        let cluster = format!("cluster_{}", ident(&sub.path));
        let _ = writeln!(out, "{pad}subgraph {cluster} {{");
        let _ = writeln!(
            out,
            "{pad}  label=\"{}\";",
            esc(&region_title(n.node, &role))
        );
        let _ = writeln!(out, "{pad}  style=dashed;");
        region(out, &sub, depth + 1);
        let _ = writeln!(out, "{pad}}}");
        if let Some(entry) = sub.entry() {
            let _ = writeln!(out, "{pad}n{} -> n{entry} [style=dashed, arrowhead=open, label=\"{}\", lhead={cluster}];", n.number, esc(&role));
        }
    }
}

fn style(kind: &NodeKind) -> &'static str {
    match kind {
        NodeKind::Agent { .. } | NodeKind::Ask(_) => {
            ", style=\"rounded,filled\", fillcolor=\"#e3ecfa\""
        }
        NodeKind::Tool { .. } | NodeKind::Shell { .. } | NodeKind::Command(_) => {
            ", style=filled, fillcolor=\"#fdf3d8\""
        }
        NodeKind::Call(_) | NodeKind::SubWorkflow(_) | NodeKind::Expand { .. } => {
            ", shape=component"
        }
        NodeKind::Match { .. } => ", shape=hexagon",
        NodeKind::Fold { .. }
        | NodeKind::ForEach { .. }
        | NodeKind::Parallel { .. }
        | NodeKind::Loop(_) => ", shape=box3d",
        NodeKind::Gate { .. } => ", shape=octagon",
        NodeKind::Exit { .. } => ", shape=doublecircle",
        _ => "",
    }
}

/// A DOT identifier fragment: everything but ASCII alphanumerics becomes `_`.
fn ident(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Escapes text for a double-quoted DOT string.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => {}
            c => o.push(c),
        }
    }
    o
}
