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
    let paths = Paths::new(&view);
    serde_json::to_value(Document {
        view: &view,
        sources,
        paths: &paths,
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
    let paths = Paths::new(&view);
    serde_json::to_writer_pretty(
        out,
        &Document {
            view: &view,
            sources,
            paths: &paths,
        },
    )
}

/// Node numbers are dense and unique across the export: one table turns every edge end and call
/// site into its path in constant time (a search per edge end made large graphs quadratic).
struct Paths<'v>(Vec<&'v str>);

impl<'v> Paths<'v> {
    fn new(view: &'v View) -> Paths<'v> {
        fn index<'v>(r: &'v RegionView, paths: &mut Vec<&'v str>) {
            for n in &r.nodes {
                if paths.len() <= n.number {
                    paths.resize(n.number + 1, "");
                }
                paths[n.number] = &n.path;
                for (_, sub) in &n.regions {
                    index(sub, paths);
                }
            }
        }
        let mut paths = Vec::new();
        for w in &view.workflows {
            index(&w.body, &mut paths);
        }
        Paths(paths)
    }

    fn of(&self, number: usize) -> Option<&'v str> {
        self.0.get(number).copied().filter(|p| !p.is_empty())
    }
}

/// What every serializer below needs.
#[derive(Clone, Copy)]
struct Cx<'a, 'v> {
    sources: &'a SourceMap,
    paths: &'a Paths<'v>,
}

struct Document<'a, 'v> {
    view: &'a View<'v>,
    sources: &'a SourceMap,
    paths: &'a Paths<'v>,
}

impl Serialize for Document<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let cx = Cx {
            sources: self.sources,
            paths: self.paths,
        };
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("format", FORMAT)?;
        m.serialize_entry("version", &IR_VERSION)?;
        m.serialize_entry(
            "workflows",
            &List(&self.view.workflows, cx, |w, cx| WorkflowSer { w, cx }),
        )?;
        m.serialize_entry(
            "calls",
            &List(&self.view.calls, cx, |(from, role, target, to), cx| {
                let case = match role {
                    CallRole::Case(l) => Some(*l),
                    _ => None,
                };
                json!({
                    "from": cx.paths.of(*from),
                    "role": role.name(),
                    "case": case,
                    "target": target,
                    "workflow": to.map(|id| format!("w{}", id.0)),
                })
            }),
        )?;
        m.end()
    }
}

/// A list whose elements are made one at a time while it is written (a plain function, not a
/// closure, so that an element may borrow from its item).
struct List<'a, 'v, T, E>(&'a [T], Cx<'a, 'v>, fn(&'a T, Cx<'a, 'v>) -> E);

impl<'a, 'v, T, E: Serialize> Serialize for List<'a, 'v, T, E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&(self.2)(item, self.1))?;
        }
        seq.end()
    }
}

struct WorkflowSer<'a, 'v> {
    w: &'a WorkflowView<'v>,
    cx: Cx<'a, 'v>,
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
        m.serialize_entry(
            "body",
            &RegionSer {
                r: &w.body,
                cx: self.cx,
            },
        )?;
        m.end()
    }
}

struct RegionSer<'a, 'v> {
    r: &'a RegionView<'v>,
    cx: Cx<'a, 'v>,
}

impl Serialize for RegionSer<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (r, cx) = (self.r, self.cx);
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("id", &r.path)?;
        m.serialize_entry("entry", &r.entry.and_then(|e| cx.paths.of(e)))?;
        m.serialize_entry("nodes", &List(&r.nodes, cx, |n, cx| NodeSer { n, cx }))?;
        m.serialize_entry(
            "edges",
            &List(&r.edges, cx, |(a, b, e), cx| {
                json!({
                    "from": cx.paths.of(*a),
                    "to": cx.paths.of(*b),
                    "kind": e.name(),
                    "label": e.label(),
                })
            }),
        )?;
        m.end()
    }
}

struct NodeSer<'a, 'v> {
    n: &'a NodeView<'v>,
    cx: Cx<'a, 'v>,
}

impl Serialize for NodeSer<'_, '_> {
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
        m.serialize_entry(
            "regions",
            &List(&n.regions, cx, |(role, r), cx| RoleSer {
                role,
                region: RegionSer { r, cx },
            }),
        )?;
        m.end()
    }
}

struct RoleSer<'a, 'v> {
    role: &'a str,
    region: RegionSer<'a, 'v>,
}

impl Serialize for RoleSer<'_, '_> {
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
        NodeKind::Gate {
            stage,
            prompt,
            timeout_secs,
            default_approve,
        } => json!({
            "stage": stage,
            "prompt": prompt.as_ref().map(|p| &p.src),
            "timeout_secs": timeout_secs,
            "default": if *default_approve { "approve" } else { "deny" },
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
