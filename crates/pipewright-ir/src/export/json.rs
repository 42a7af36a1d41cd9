//! The versioned JSON graph (docs/graph-json.md). Field order is fixed and every list is in
//! walk order, so the output is byte-stable.

use super::view::{NodeView, RegionView, View};
use super::ExportOptions;
use crate::ir::{on_error_text, ArgValue, ListSource, NodeKind, Program, IR_VERSION};
use pipewright_syntax::{SourceMap, Span};
use serde_json::{json, Map, Value};

/// The `format` field every document carries.
pub const FORMAT: &str = "pipewright-graph";

pub fn json(program: &Program, sources: &SourceMap, opts: &ExportOptions) -> Value {
    let view = View::new(program, opts);
    // Node numbers are dense and unique across the export: one table turns every edge end and
    // call site into its path in constant time (a search per edge end made large graphs
    // quadratic).
    let mut paths: Vec<&str> = Vec::new();
    for w in &view.workflows {
        index_paths(&w.body, &mut paths);
    }
    let path_of = |n: usize| paths.get(n).copied().filter(|p| !p.is_empty());
    let workflows: Vec<Value> = view
        .workflows
        .iter()
        .map(|w| {
            json!({
                "id": format!("w{}", w.id.0),
                "name": w.workflow.name,
                "dialect": w.workflow.dialect.name(),
                "description": w.workflow.description,
                "span": span(sources, w.workflow.span),
                "body": region(sources, &w.body, &path_of),
            })
        })
        .collect();
    let calls: Vec<Value> = view
        .calls
        .iter()
        .map(|(from, label, target, to)| {
            json!({
                "from": path_of(*from),
                "case": label,
                "target": target,
                "workflow": to.map(|id| format!("w{}", id.0)),
            })
        })
        .collect();
    json!({
        "format": FORMAT,
        "version": IR_VERSION,
        "workflows": workflows,
        "calls": calls,
    })
}

fn index_paths<'v>(r: &'v RegionView, paths: &mut Vec<&'v str>) {
    for n in &r.nodes {
        if paths.len() <= n.number {
            paths.resize(n.number + 1, "");
        }
        paths[n.number] = &n.path;
        for (_, sub) in &n.regions {
            index_paths(sub, paths);
        }
    }
}

fn region<'v>(
    sources: &SourceMap,
    r: &RegionView,
    path_of: &impl Fn(usize) -> Option<&'v str>,
) -> Value {
    json!({
        "id": r.path,
        "entry": r.entry.and_then(path_of),
        "nodes": r.nodes.iter().map(|n| node(sources, n, path_of)).collect::<Vec<_>>(),
        "edges": r.edges.iter().map(|(a, b, e)| json!({
            "from": path_of(*a),
            "to": path_of(*b),
            "kind": e.name(),
            "label": e.label(),
        })).collect::<Vec<_>>(),
    })
}

fn node<'v>(
    sources: &SourceMap,
    n: &NodeView,
    path_of: &impl Fn(usize) -> Option<&'v str>,
) -> Value {
    let node = n.node;
    let mut o = Map::new();
    o.insert("id".into(), json!(n.path));
    o.insert("kind".into(), json!(node.kind.name()));
    o.insert("summary".into(), json!(node.summary()));
    o.insert("span".into(), span(sources, node.span));
    o.insert("output".into(), json!(node.output));
    o.insert(
        "on_error".into(),
        json!(node.kind.on_error().map(on_error_text)),
    );
    o.insert("details".into(), details(&node.kind));
    o.insert(
        "regions".into(),
        Value::Array(
            n.regions
                .iter()
                .map(|(role, r)| json!({"role": role, "region": region(sources, r, path_of)}))
                .collect(),
        ),
    );
    Value::Object(o)
}

fn details(kind: &NodeKind) -> Value {
    let arg = |v: &ArgValue| match v {
        ArgValue::Literal(l) => json!({"literal": l.to_json()}),
        ArgValue::Expr(e) => json!({"expr": e.src}),
    };
    let source = |s: &ListSource| match s {
        ListSource::Over(e) => json!({"over": e.src}),
        ListSource::Items(v) => json!({"items": v.to_json()}),
        ListSource::Pipe => json!("pipe"),
    };
    match kind {
        NodeKind::Transform { value } => json!({"value": value.src}),
        NodeKind::Tool {
            name, args, schema, ..
        } => json!({
            "name": name,
            "args": args.iter().map(|a| json!({"name": a.name, "value": arg(&a.value)})).collect::<Vec<_>>(),
            "schema": schema,
        }),
        NodeKind::Shell {
            command, schema, ..
        } => json!({"command": arg(command), "schema": schema}),
        NodeKind::Agent {
            prompt,
            identity,
            capabilities,
            schema,
            model,
        } => json!({
            "prompt": prompt.src,
            "identity": identity,
            "capabilities": capabilities,
            "schema": schema,
            "model": model,
        }),
        NodeKind::Call(c) => {
            json!({"pipeline": c.target, "pass": c.pass.iter().map(|(n, e)| json!({"name": n, "expr": e.src})).collect::<Vec<_>>()})
        }
        NodeKind::Match { on, cases, default } => json!({
            "on": on.src,
            "cases": cases.iter().map(|c| json!({"label": c.label, "selectable": c.selectable, "pipeline": c.target.target})).collect::<Vec<_>>(),
            "default": default.as_ref().map(|d| d.target.clone()),
        }),
        NodeKind::Fold {
            source: s,
            init,
            max_items,
            ..
        } => json!({"source": source(s), "init": init.src, "max_items": max_items}),
        NodeKind::ForEach {
            source: s,
            max_parallel,
            ..
        } => json!({"source": source(s), "max_parallel": max_parallel}),
        NodeKind::Parallel { branches, .. } => {
            json!({"branches": branches.iter().map(|b| b.name.clone()).collect::<Vec<_>>()})
        }
        NodeKind::Gate { prompt } => json!({"prompt": prompt}),
        NodeKind::Spawn { agent } => json!({"agent": agent}),
        NodeKind::Kill { target } => json!({"target": target}),
        NodeKind::Expand { template } => json!({"template": template}),
        NodeKind::Exit { outcome } => json!({"outcome": outcome}),
    }
}

fn span(sources: &SourceMap, s: Span) -> Value {
    match sources.get(s.file) {
        Some(f) => {
            let lc = f.line_col(s.start as usize);
            json!({"file": f.name, "start": s.start, "end": s.end, "line": lc.line, "column": lc.col})
        }
        None => json!({"file": null, "start": s.start, "end": s.end, "line": null, "column": null}),
    }
}
