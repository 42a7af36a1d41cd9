//! The versioned JSON graph (docs/graph-json.md). Field order is fixed and every list is in
//! walk order, so the output is byte-stable.

use super::view::{NodeView, RegionView, View, WorkflowView};
use super::ExportOptions;
use crate::ir::{
    on_error_text, ArgValue, CallRole, ListSource, LoopMode, NodeKind, Program, IR_VERSION,
};
use pipewright_syntax::{SourceMap, Span};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

/// The `format` field every document carries.
pub const FORMAT: &str = "pipewright-graph";

/// The graph document as a JSON value (for tests and library users; `graph` streams it with
/// [`write_pretty`] instead, since a large graph's value tree costs many times its text).
pub fn json(program: &Program, sources: &SourceMap, opts: &ExportOptions) -> Value {
    let view = View::new(program, opts);
    serde_json::to_value(Document {
        view: &view,
        cx: Cx { sources },
    })
    .unwrap_or(Value::Null)
}

/// Writes the graph document pretty-printed (the same bytes as `serde_json::to_string_pretty`
/// of [`json`]), one node at a time: no value tree of the whole graph is ever built.
pub fn write_pretty(
    program: &Program,
    sources: &SourceMap,
    opts: &ExportOptions,
    out: impl std::io::Write,
) -> serde_json::Result<()> {
    let view = View::new(program, opts);
    serde_json::to_writer_pretty(
        out,
        &Document {
            view: &view,
            cx: Cx { sources },
        },
    )
}

/// What every serializer below needs.
#[derive(Clone, Copy)]
struct Cx<'a> {
    sources: &'a SourceMap,
}

struct Document<'a, 'v> {
    view: &'a View<'v>,
    cx: Cx<'a>,
}

impl Serialize for Document<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (view, cx) = (self.view, self.cx);
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("format", FORMAT)?;
        m.serialize_entry("version", &IR_VERSION)?;
        m.serialize_entry("workflows", &Workflows { view, cx })?;
        // After the workflows: their walk is what found the calls.
        m.serialize_entry("calls", &Calls(view))?;
        m.end()
    }
}

/// The calls the walk found, each made as it is written.
struct Calls<'a, 'v>(&'a View<'v>);

impl Serialize for Calls<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let calls = self.0.calls();
        let mut seq = s.serialize_seq(Some(calls.len()))?;
        for c in calls.iter() {
            let case = match c.role {
                CallRole::Case(l) => Some(l),
                _ => None,
            };
            seq.serialize_element(&json!({
                "from": c.from_path,
                "role": c.role.name(),
                "case": case,
                "target": c.target,
                "workflow": c.to.map(|id| format!("w{}", id.0)),
            }))?;
        }
        seq.end()
    }
}

struct Workflows<'a, 'v> {
    view: &'a View<'v>,
    cx: Cx<'a>,
}

impl Serialize for Workflows<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.view.workflows.len()))?;
        for w in &self.view.workflows {
            seq.serialize_element(&WorkflowSer {
                w,
                view: self.view,
                cx: self.cx,
            })?;
        }
        seq.end()
    }
}

struct WorkflowSer<'a, 'v> {
    w: &'a WorkflowView<'v>,
    view: &'a View<'v>,
    cx: Cx<'a>,
}

impl Serialize for WorkflowSer<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let w = self.w;
        let mut m = s.serialize_map(Some(6))?;
        m.serialize_entry("id", &format!("w{}", w.id.0))?;
        m.serialize_entry("name", &w.workflow.name)?;
        m.serialize_entry("dialect", w.workflow.dialect)?;
        m.serialize_entry("description", &w.workflow.description)?;
        m.serialize_entry("span", &span(self.cx.sources, w.workflow.span))?;
        let body = self.view.body(w);
        m.serialize_entry(
            "body",
            &RegionSer {
                r: &body,
                cx: self.cx,
            },
        )?;
        m.end()
    }
}

struct RegionSer<'a, 'v, 'p> {
    r: &'a RegionView<'v, 'p>,
    cx: Cx<'a>,
}

impl Serialize for RegionSer<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (r, cx) = (self.r, self.cx);
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("id", &r.path)?;
        m.serialize_entry("entry", &r.entry_path())?;
        m.serialize_entry("nodes", &Nodes { r, cx })?;
        m.serialize_entry("edges", &Edges(r))?;
        m.end()
    }
}

/// A region's edges, each made as it is written.
struct Edges<'a, 'v, 'p>(&'a RegionView<'v, 'p>);

impl Serialize for Edges<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let edges = self.0.edges_by_position();
        let mut seq = s.serialize_seq(Some(edges.len()))?;
        for (a, b, e) in edges {
            seq.serialize_element(&json!({
                "from": self.0.node_path(a),
                "to": self.0.node_path(b),
                "kind": e.name(),
                "label": e.label(),
            }))?;
        }
        seq.end()
    }
}

/// A region's nodes, numbered as they are written.
struct Nodes<'a, 'v, 'p> {
    r: &'a RegionView<'v, 'p>,
    cx: Cx<'a>,
}

impl Serialize for Nodes<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.r.len()))?;
        self.r
            .walk(|n| seq.serialize_element(&NodeSer { n, cx: self.cx }))?;
        seq.end()
    }
}

struct NodeSer<'a, 'v, 'p> {
    n: &'a NodeView<'v, 'p>,
    cx: Cx<'a>,
}

impl Serialize for NodeSer<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (n, cx) = (self.n, self.cx);
        let node = n.node;
        let mut m = s.serialize_map(Some(8))?;
        m.serialize_entry("id", &n.path)?;
        m.serialize_entry("step_key", &n.step_key)?;
        m.serialize_entry("kind", node.kind.name())?;
        // Agent calls cost money: a view can mark them without knowing every dialect's kinds.
        if node.kind.asks_an_agent() {
            m.serialize_entry("agent", &true)?;
        }
        // Only dialects that name their steps or kinds otherwise have these; a pipeline's
        // document is unchanged.
        if let Some(word) = node.kind_word {
            m.serialize_entry("dialect_kind", word)?;
        }
        if let Some(name) = &node.id {
            m.serialize_entry("name", name)?;
        }
        if let Some(c) = &node.condition {
            m.serialize_entry("condition", &c.src)?;
        }
        m.serialize_entry("summary", &node.summary())?;
        m.serialize_entry("span", &span(cx.sources, node.span))?;
        m.serialize_entry("output", &node.output)?;
        m.serialize_entry("on_error", &node.kind.on_error().map(on_error_text))?;
        m.serialize_entry("details", &details(&node.kind))?;
        let regions = n.regions();
        m.serialize_entry(
            "regions",
            &Regions {
                regions: &regions,
                cx,
            },
        )?;
        m.end()
    }
}

struct Regions<'a, 'v, 'p> {
    regions: &'a [(String, RegionView<'v, 'p>)],
    cx: Cx<'a>,
}

impl Serialize for Regions<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.regions.len()))?;
        for (role, r) in self.regions {
            seq.serialize_element(&RoleSer {
                role,
                region: RegionSer { r, cx: self.cx },
            })?;
        }
        seq.end()
    }
}

struct RoleSer<'a, 'v, 'p> {
    role: &'a str,
    region: RegionSer<'a, 'v, 'p>,
}

impl Serialize for RoleSer<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("role", self.role)?;
        m.serialize_entry("region", &self.region)?;
        m.end()
    }
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
        NodeKind::Shell(sh) => json!({"command": arg(&sh.command), "schema": sh.schema}),
        NodeKind::Agent(a) => json!({
            "prompt": a.prompt.src,
            "identity": a.identity,
            "capabilities": a.capabilities,
            "schema": a.schema,
            "model": a.model,
        }),
        NodeKind::Call(c) => {
            json!({"pipeline": c.target, "pass": c.pass.iter().map(|(n, e)| json!({"name": n, "expr": e.src})).collect::<Vec<_>>()})
        }
        NodeKind::Match(m) => json!({
            "on": m.on.src,
            "cases": m.cases.iter().map(|c| json!({"label": c.label, "selectable": c.selectable, "pipeline": c.target.target})).collect::<Vec<_>>(),
            "default": m.default.as_ref().map(|d| d.target.clone()),
        }),
        NodeKind::Fold(f) => {
            json!({"source": source(&f.source), "init": f.init.src, "max_items": f.max_items})
        }
        NodeKind::ForEach(each) => {
            json!({"source": source(&each.source), "max_parallel": each.max_parallel})
        }
        NodeKind::Parallel { branches, .. } => {
            json!({"branches": branches.iter().map(|b| b.name.clone()).collect::<Vec<_>>()})
        }
        NodeKind::Gate(g) => json!({
            "stage": g.stage,
            "prompt": g.prompt.as_ref().map(|p| &p.src),
            "timeout_secs": g.timeout_secs,
            "default": if g.default_approve { "approve" } else { "deny" },
        }),
        NodeKind::Stage { name, .. } => json!({"name": name}),
        NodeKind::Command(c) => json!({
            "command": c.command.src,
            "cwd": c.cwd.as_ref().map(|e| &e.src),
            "env": c.env.iter().map(|(k, v)| json!({"name": k, "value": v.src})).collect::<Vec<_>>(),
            "timeout_secs": c.timeout_secs,
            "exit_code_to": c.exit_code_to,
            "on_error": c.on_error.name(),
            "parse_json": c.parse_json,
        }),
        NodeKind::Ask(a) => json!({
            "agent": a.agent,
            "prompt": a.prompt.src,
            "mode": a.mode,
            "provider": a.provider,
            "model": a.model,
            "timeout_secs": a.timeout_secs,
            "max_attempts": a.retry.max_attempts,
            "on_error": a.on_error.name(),
            "parse_json": a.parse_json,
        }),
        NodeKind::SubWorkflow(w) => json!({
            "path": w.path.src,
            "context": w.context.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
            "on_error": w.on_error.name(),
        }),
        NodeKind::Loop(l) => match &l.mode {
            LoopMode::Each {
                source,
                var,
                max_items,
                parallel,
                on_error,
            } => json!({
                "each": source.src,
                "as": var,
                "max_items": max_items,
                "parallel": parallel,
                "on_error": on_error.name(),
                "collect": l.collect,
            }),
            LoopMode::While {
                condition,
                break_when,
                update,
                max_iterations,
            } => json!({
                "while": condition.src,
                "break_when": break_when.as_ref().map(|e| &e.src),
                "update": update.iter().map(|(k, v)| json!({"name": k, "value": v.src})).collect::<Vec<_>>(),
                "max_iterations": max_iterations,
                "collect": l.collect,
            }),
        },
        NodeKind::Spawn { agent } => json!({"agent": agent}),
        NodeKind::Kill { target } => json!({"target": target}),
        NodeKind::Expand { call, foreach } => {
            json!({"template": call.target, "foreach": foreach, "pass": call.pass.iter().map(|(n, e)| json!({"name": n, "expr": e.src})).collect::<Vec<_>>()})
        }
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
