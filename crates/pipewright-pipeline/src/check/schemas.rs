//! Schema documents: duplicates, unresolved refs, recursive refs.

use crate::ast::{Field, FieldKind, PipelineFile, Schema};
use crate::codes;
use pipewright_syntax::suggest::help_for_unknown;
use pipewright_syntax::{Diagnostic, Span};
use std::collections::HashMap;

/// The schemas of one file by name (the reference keeps one registry per file).
pub(super) struct Registry<'a> {
    pub by_name: HashMap<&'a str, &'a Schema>,
}

impl<'a> Registry<'a> {
    pub(super) fn get(&self, name: &str) -> Option<&'a Schema> {
        self.by_name.get(name).copied()
    }

    pub(super) fn unresolved(&self, name: &str, span: Span) -> Option<Diagnostic> {
        if self.get(name).is_some() {
            return None;
        }
        let mut names: Vec<&str> = self.by_name.keys().copied().collect();
        names.sort_unstable();
        let help = help_for_unknown(name, names.iter().copied())
            .or_else(|| Some(format!("declare it in this file: `schema: {name}` with `fields:` in a `---`-separated document")));
        Some(
            Diagnostic::error(
                codes::UNKNOWN_SCHEMA,
                span,
                format!("no schema named `{name}` in this file"),
            )
            .with_label("unknown schema")
            .with_optional_help(help),
        )
    }
}

pub(super) fn check_schemas<'a>(
    file: &'a PipelineFile,
    diags: &mut Vec<Diagnostic>,
) -> Registry<'a> {
    let mut by_name: HashMap<&str, &Schema> = HashMap::new();
    for s in &file.schemas {
        if let Some(first) = by_name.get(&*s.name.text) {
            diags.push(
                Diagnostic::error(
                    codes::DUPLICATE_SCHEMA,
                    s.name.span,
                    format!("duplicate schema `{}`", s.name.text),
                )
                .with_label("declared again here")
                .with_secondary(first.name.span, "first declared here")
                .with_help(
                    "the reference runtime silently keeps the last one; rename or remove one",
                ),
            );
        }
        by_name.insert(&s.name.text, s);
    }
    let reg = Registry { by_name };
    for s in &file.schemas {
        for_each_ref(&s.fields, &mut |name, span| {
            if let Some(d) = reg.unresolved(name, span) {
                diags.push(d);
            }
        });
    }
    cycles(file, &reg, diags);
    reg
}

fn for_each_ref<'a>(fields: &'a [Field], f: &mut impl FnMut(&'a str, Span)) {
    let mut stack: Vec<&FieldKind> = fields.iter().map(|x| &x.ty.kind).collect();
    while let Some(k) = stack.pop() {
        match k {
            FieldKind::Ref(n) => f(&n.text, n.span),
            FieldKind::List(inner) => stack.push(&inner.kind),
            FieldKind::Object(fs) => stack.extend(fs.iter().map(|x| &x.ty.kind)),
            _ => {}
        }
    }
}

/// A ref cycle would make validation and the mock backend's reply synthesis loop forever.
fn cycles(file: &PipelineFile, reg: &Registry, diags: &mut Vec<Diagnostic>) {
    let names: Vec<&str> = file.schemas.iter().map(|s| &*s.name.text).collect();
    let mut graph = petgraph::graph::DiGraph::<&str, Span>::new();
    let mut nodes = HashMap::new();
    for n in &names {
        nodes.entry(*n).or_insert_with(|| graph.add_node(*n));
    }
    for s in reg.by_name.values() {
        for_each_ref(&s.fields, &mut |target, span| {
            if let (Some(&a), Some(&b)) = (nodes.get(&*s.name.text), nodes.get(target)) {
                graph.add_edge(a, b, span);
            }
        });
    }
    let mut sccs = petgraph::algo::tarjan_scc(&graph);
    sccs.sort_by_key(|c| c.iter().map(|n| graph[*n]).min());
    for scc in sccs {
        let cyclic = scc.len() > 1 || graph.find_edge(scc[0], scc[0]).is_some();
        if !cyclic {
            continue;
        }
        let path = crate::check::recursion::cycle_path(&graph, &scc);
        let chain: Vec<&str> = path
            .iter()
            .map(|&(n, _)| graph[n])
            .chain(path.first().map(|&(n, _)| graph[n]))
            .collect();
        let Some(&(_, first_edge)) = path.first() else {
            continue;
        };
        let mut d = Diagnostic::error(codes::RECURSIVE_SCHEMA, graph[first_edge], format!("recursive schema: {}", chain.join(" -> ")))
            .with_label("this reference closes a cycle")
            .with_help("schemas must be finite: make the recursive field a `string` holding JSON, or break the cycle");
        for &(_, e) in path.iter().skip(1) {
            d = d.with_secondary(graph[e], "part of the cycle");
        }
        diags.push(d);
    }
}
