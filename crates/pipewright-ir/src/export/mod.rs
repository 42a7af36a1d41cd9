//! Graph exporters. All three walk the same [`view::View`], so node numbering, ordering and
//! the set of workflows shown are identical across formats and stable between runs.

pub mod dot;
pub mod json;
pub mod mermaid;
mod view;

pub use view::ExportOptions;

use crate::ir::{on_error_text, Node, NodeKind};

/// `push_str` for any text writer, so the exporters write to a `String` or a stream alike.
pub(crate) trait PushStr {
    fn push_str(&mut self, s: &str);
}

impl<W: std::fmt::Write> PushStr for W {
    fn push_str(&mut self, s: &str) {
        // A failed write is the writer's to report (see `dot::write_dot`).
        let _ = self.write_str(s);
    }
}

/// The title of a node's nested region: its kind and the region's role (`for_each do`), or,
/// where the role is the kind itself (a stage's steps), its kind and name (`stage plan`).
pub(crate) fn region_title(node: &Node, role: &str) -> String {
    let kind = node.kind_label();
    match &node.id {
        Some(name) if role == kind || role == node.kind.name() => format!("{kind} {name}"),
        _ if role == kind || role == node.kind.name() => kind.to_string(),
        _ => format!("{kind} {role}"),
    }
}

/// The lines of a node's label: kind, summary, output and error policy.
pub(crate) fn label_lines(node: &Node) -> Vec<String> {
    // A named step (a recipe step id) leads with its name.
    let mut lines = match &node.id {
        Some(id) => vec![format!("{id} ({})", node.kind_label())],
        None => vec![node.kind_label().to_string()],
    };
    let summary = node.summary();
    if !summary.is_empty() {
        lines.push(summary);
    }
    if let NodeKind::ForEach(each) = &node.kind {
        if let Some(n) = each.max_parallel {
            lines.push(format!("max_parallel: {n}"));
        }
    }
    if let Some(k) = node.kind.on_error() {
        lines.push(format!("on_error: {}", on_error_text(k)));
    }
    if let Some(c) = &node.condition {
        lines.push(format!(
            "if {}",
            c.src.split_whitespace().collect::<Vec<_>>().join(" ")
        ));
    }
    if let Some(o) = &node.output {
        lines.push(format!("→ {o}"));
    }
    lines
}
