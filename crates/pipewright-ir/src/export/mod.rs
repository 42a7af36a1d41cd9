//! Graph exporters. All three walk the same [`view::View`], so node numbering, ordering and
//! the set of workflows shown are identical across formats and stable between runs.

pub mod dot;
pub mod json;
pub mod mermaid;
mod view;

pub use view::ExportOptions;

use crate::ir::{on_error_text, Node, NodeKind};

/// The lines of a node's label: kind, summary, output and error policy.
pub(crate) fn label_lines(node: &Node) -> Vec<String> {
    // A named step (a recipe step id) leads with its name.
    let mut lines = match &node.id {
        Some(id) => vec![format!("{id} ({})", node.kind.name())],
        None => vec![node.kind.name().to_string()],
    };
    let summary = node.summary();
    if !summary.is_empty() {
        lines.push(summary);
    }
    if let NodeKind::ForEach {
        max_parallel: Some(n),
        ..
    } = &node.kind
    {
        lines.push(format!("max_parallel: {n}"));
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
