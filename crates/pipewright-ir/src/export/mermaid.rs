//! Mermaid flowchart. Workflows and nested regions are subgraphs; call edges point at the
//! callee's subgraph.

use super::view::{NodeView, RegionView, View};
use super::PushStr as _;
use super::{label_lines, region_title, ExportOptions};
use crate::ir::{Edge, NodeKind, Program};
use std::convert::Infallible;
use std::fmt::Write;

pub fn mermaid(program: &Program, opts: &ExportOptions) -> String {
    let mut out = String::new();
    write_mermaid(program, opts, &mut out);
    out
}

/// [`mermaid`], written piece by piece to `out`: a large graph's text is never whole in
/// memory. Write errors are the writer's to keep (writing stops mattering once one failed).
pub fn write_mermaid(program: &Program, opts: &ExportOptions, out: &mut impl Write) {
    let view = View::new(program, opts);
    out.push_str("flowchart TD\n");
    for w in &view.workflows {
        let _ = writeln!(
            out,
            "  subgraph w{}[\"{} {}\"]",
            w.id.0,
            w.workflow.dialect,
            esc(&w.workflow.name)
        );
        out.push_str("    direction TB\n");
        region(out, &view.body(w), 2);
        out.push_str("  end\n");
    }
    let mut unresolved = 0;
    for call in view.calls().iter() {
        let (from, role, target, to) = (call.from, &call.role, call.target, call.to);
        let edge_label = esc(&role.label());
        match to {
            Some(id) => {
                let _ = writeln!(out, "  n{from} -.->|\"{edge_label}\"| w{}", id.0);
            }
            None => {
                let _ = writeln!(
                    out,
                    "  missing{unresolved}>\"{} (not shown)\"]",
                    esc(target)
                );
                let _ = writeln!(out, "  n{from} -.->|\"{edge_label}\"| missing{unresolved}");
                unresolved += 1;
            }
        }
    }
}

fn region(out: &mut impl Write, r: &RegionView, depth: usize) {
    let pad = "  ".repeat(depth);
    let _ = r.walk(|n| {
        node(out, n, depth);
        Ok::<(), Infallible>(())
    });
    for (a, b, e) in r.edges() {
        let arrow = match e {
            Edge::Next => "-->".to_string(),
            Edge::Needs => "-.->|\"needs\"|".to_string(),
            Edge::Outcome(l) => format!("-->|\"{}\"|", esc(l)),
            Edge::Case(l) => format!("-->|\"case {}\"|", esc(l)),
            Edge::OnError => "-->|\"on_error\"|".to_string(),
        };
        let _ = writeln!(out, "{pad}n{a} {arrow} n{b}");
    }
}

fn node(out: &mut impl Write, n: &NodeView, depth: usize) {
    let pad = "  ".repeat(depth);
    let label = label_lines(n.node)
        .iter()
        .map(|l| esc(l))
        .collect::<Vec<_>>()
        .join("<br/>");
    let (open, close) = shape(&n.node.kind);
    let _ = writeln!(out, "{pad}n{}{open}\"{label}\"{close}", n.number);
    for (role, sub) in n.regions() {
        let id = ident(&sub.path);
        let _ = writeln!(
            out,
            "{pad}subgraph {id}[\"{}\"]",
            esc(&region_title(n.node, &role))
        );
        let _ = writeln!(out, "{pad}  direction TB");
        region(out, &sub, depth + 1);
        let _ = writeln!(out, "{pad}end");
        let _ = writeln!(out, "{pad}n{} -.->|\"{}\"| {id}", n.number, esc(&role));
    }
}

fn shape(kind: &NodeKind) -> (&'static str, &'static str) {
    match kind {
        NodeKind::Agent { .. } | NodeKind::Ask(_) => ("([", "])"),
        NodeKind::Call(_) | NodeKind::SubWorkflow(_) | NodeKind::Expand { .. } => ("[[", "]]"),
        NodeKind::Match { .. } => ("{{", "}}"),
        NodeKind::Gate { .. } => ("{", "}"),
        NodeKind::Tool { .. } | NodeKind::Shell { .. } | NodeKind::Command(_) => ("[/", "/]"),
        NodeKind::Fold { .. }
        | NodeKind::ForEach { .. }
        | NodeKind::Parallel { .. }
        | NodeKind::Loop(_) => ("[(", ")]"),
        _ => ("[", "]"),
    }
}

fn ident(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Escapes text for a quoted Mermaid label with entity codes, so quotes, `#`, angle brackets
/// and the characters Mermaid treats as shape delimiters cannot end the label.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("#quot;"),
            '#' => o.push_str("#35;"),
            '<' => o.push_str("#lt;"),
            '>' => o.push_str("#gt;"),
            '&' => o.push_str("#amp;"),
            '|' => o.push_str("#124;"),
            '`' => o.push_str("#96;"),
            '\n' | '\r' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}
