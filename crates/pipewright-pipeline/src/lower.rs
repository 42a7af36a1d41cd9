//! Lowering from the typed pipeline AST into the dialect-neutral IR. The input is expected to
//! have passed `check_program`; lowering itself never fails: an unresolved call target stays
//! unresolved and fails the step if it runs.
//!
//! The AST is consumed: its names, expression sources and parsed trees move into the IR rather
//! than being copied, and each step is freed as it is lowered, so a large file's AST and IR are
//! never both whole in memory (`graph` of a 10 MiB pipeline, docs/performance.md).

use crate::ast::{self, StepKind};
use crate::literal::to_json;
use pipewright_ir::schema::{Field, FieldKind, FieldType, Schema};
use pipewright_ir::*;
use pipewright_r1::Value;
use std::collections::HashMap;

/// Lowers every pipeline of the program, in file then declaration order.
pub fn pipeline(program: ast::Program) -> Program {
    lower(program, true)
}

/// [`pipeline`] for drawing (`graph`): the expressions keep their text but not their parsed
/// trees ([`Parsed::NotKept`]). The program cannot be run.
///
/// The trees are freed before anything is lowered: they are a third of a large file's AST, and
/// the lowered graph's nodes are allocated while the rest of the AST still lives, so the
/// largest moment of `graph` is the AST less its trees plus the nodes, not the whole AST plus
/// the nodes.
pub fn drawn(mut program: ast::Program) -> Program {
    for f in &mut program.files {
        for p in &mut f.pipelines {
            p.steps.iter_mut().for_each(drop_trees);
        }
    }
    lower(program, false)
}

/// Frees the parsed trees of a step's expressions and its nested steps'.
fn drop_trees(s: &mut ast::Step) {
    fn expr(e: &mut ast::Expr) {
        e.ast = pipewright_r1::Expr {
            kind: pipewright_r1::ExprKind::Null,
            span: Default::default(),
        };
    }
    fn arg(v: &mut ast::ArgValue) {
        if let ast::ArgValue::Expr(e) = v {
            expr(e);
        }
    }
    fn source(s: &mut ast::ListSource) {
        if let ast::ListSource::Over(e) = s {
            expr(e);
        }
    }
    fn call(t: &mut ast::CallTarget) {
        t.pass.iter_mut().for_each(|p| expr(&mut p.value));
    }
    match &mut s.kind {
        StepKind::Transform { value } => expr(value),
        StepKind::Tool(t) => t.args.iter_mut().for_each(|a| arg(&mut a.value)),
        StepKind::Shell(sh) => arg(&mut sh.command),
        StepKind::Agent(a) => a.prompt.template.parts = Vec::new(),
        StepKind::Call(t) => call(t),
        StepKind::Match(m) => {
            expr(&mut m.on);
            m.cases.iter_mut().for_each(|c| call(&mut c.target));
            m.default.iter_mut().for_each(call);
        }
        StepKind::Fold(f) => {
            source(&mut f.source);
            expr(&mut f.init);
            drop_trees(&mut f.body);
        }
        StepKind::ForEach(each) => {
            source(&mut each.source);
            drop_trees(&mut each.body);
            drop_trees(&mut each.collect);
        }
        StepKind::Parallel {
            branches, collect, ..
        } => {
            branches.iter_mut().for_each(|b| drop_trees(&mut b.step));
            drop_trees(collect);
        }
    }
}

fn lower(program: ast::Program, keep_trees: bool) -> Program {
    let mut ids: Vec<HashMap<Box<str>, WorkflowId>> = Vec::new();
    let mut next = 0;
    for f in &program.files {
        let mut m = HashMap::new();
        for p in &f.pipelines {
            // First declaration wins; a duplicate is a check error already.
            m.entry(p.name.text.clone()).or_insert(WorkflowId(next));
            next += 1;
        }
        ids.push(m);
    }
    let namespaces: Vec<Option<String>> =
        program.files.iter().map(|f| f.namespace.clone()).collect();
    let resolver = Resolver {
        namespaces: &namespaces,
        ids: &ids,
    };
    let mut out = Program {
        workflows: Vec::with_capacity(next),
        schema_sets: Vec::with_capacity(program.files.len()),
    };
    for (fi, f) in program.files.into_iter().enumerate() {
        out.schema_sets.push(SchemaSet {
            file: f.file,
            schemas: f.schemas.into_iter().map(schema).collect(),
        });
        for p in f.pipelines {
            let resolve = |name: &str| resolver.resolve(fi, name);
            let cx = Cx {
                resolve: &resolve,
                keep_trees,
            };
            let body = lower_steps(p.steps, &cx);
            out.workflows.push(Workflow {
                name: p.name.text.into_string(),
                dialect: pipewright_dialect::Dialect::name(&crate::dialect::Pipeline),
                file: f.file,
                description: p.description,
                version: None,
                params: Vec::new(),
                limits: Limits::default(),
                body,
                span: p.span,
                schema_set: fi,
                step_keys: pipewright_ir::StepKeys::Positional,
            });
        }
    }
    out
}

struct Resolver<'a> {
    namespaces: &'a [Option<String>],
    ids: &'a [HashMap<Box<str>, WorkflowId>],
}

impl Resolver<'_> {
    /// Same rule as the checker: a sibling in the same file, then `ns.name` in the file whose
    /// namespace is `ns`, then the first file declaring the name.
    fn resolve(&self, file: usize, name: &str) -> Option<WorkflowId> {
        if let Some(id) = self.ids.get(file).and_then(|m| m.get(name)) {
            return Some(*id);
        }
        if let Some((ns, rest)) = name.split_once('.') {
            for (fi, namespace) in self.namespaces.iter().enumerate() {
                if namespace.as_deref() == Some(ns) {
                    if let Some(id) = self.ids[fi].get(rest) {
                        return Some(*id);
                    }
                }
            }
        }
        self.ids.iter().find_map(|m| m.get(name).copied())
    }
}

/// What lowering a step needs besides the step.
struct Cx<'a> {
    resolve: &'a dyn Fn(&str) -> Option<WorkflowId>,
    /// Parsed expression trees move into the IR; without, they are dropped.
    keep_trees: bool,
}

impl Cx<'_> {
    fn expr(&self, e: ast::Expr) -> Expr {
        let e = Expr::r1(e.src.into_string(), e.span, e.style, e.ast);
        if self.keep_trees {
            e
        } else {
            e.without_parsed()
        }
    }
}

fn lower_steps(steps: Vec<ast::Step>, cx: &Cx) -> Region {
    // Sized exactly: a graph grows by doubling (four slots for its first node), and most
    // regions (a `for_each` body, a `collect`) hold a single step.
    let mut region = Region {
        graph: Box::new(Graph::with_capacity(
            steps.len(),
            steps.len().saturating_sub(1),
        )),
        entry: None,
    };
    let mut prev = None;
    for (i, s) in steps.into_iter().enumerate() {
        let n = region.graph.add_node(lower_step(i, s, cx));
        match prev {
            Some(p) => {
                region.graph.add_edge(p, n, Edge::Next);
            }
            None => region.entry = Some(n),
        }
        prev = Some(n);
    }
    region
}

fn lower_step(index: usize, s: ast::Step, cx: &Cx) -> Node {
    let one = |step: ast::Step| lower_steps(vec![step], cx);
    let expr = |e: ast::Expr| cx.expr(e);
    let arg = |v: ast::ArgValue| match v {
        ast::ArgValue::Literal(node) => ArgValue::Literal(Value::from_json(&to_json(&node))),
        ast::ArgValue::Expr(e) => ArgValue::Expr(cx.expr(e)),
    };
    let list_source = |s: ast::ListSource| match s {
        ast::ListSource::Over(e) => ListSource::Over(cx.expr(e)),
        ast::ListSource::Items(node) => ListSource::Items(Value::from_json(&to_json(&node))),
        ast::ListSource::Pipe => ListSource::Pipe,
    };
    let call = |t: ast::CallTarget| CallRef {
        resolved: (cx.resolve)(&t.pipeline.text),
        target: t.pipeline.text.into_string(),
        pass: t
            .pass
            .into_iter()
            .map(|p| (p.name.text.into_string(), expr(p.value)))
            .collect(),
        span: t.span,
    };
    let name = |n: ast::Name| n.text.into_string();
    let kind = match s.kind {
        StepKind::Transform { value } => NodeKind::Transform { value: expr(value) },
        StepKind::Tool(t) => {
            let t = *t;
            NodeKind::Tool {
                name: name(t.name),
                args: t
                    .args
                    .into_iter()
                    .map(|a| Arg {
                        name: name(a.name),
                        value: arg(a.value),
                    })
                    .collect(),
                schema: t.schema.map(name),
                on_error: t.on_error,
            }
        }
        StepKind::Shell(sh) => {
            let sh = *sh;
            NodeKind::Shell(Box::new(pipewright_ir::Shell {
                command: arg(sh.command),
                schema: sh.schema.map(name),
                on_error: sh.on_error,
            }))
        }
        StepKind::Agent(a) => {
            let a = *a;
            let prompt = Expr::r1_template(
                a.prompt.src,
                a.prompt.span,
                a.prompt.style,
                a.prompt.template,
            );
            NodeKind::Agent(Box::new(pipewright_ir::Agent {
                prompt: if cx.keep_trees {
                    prompt
                } else {
                    prompt.without_parsed()
                },
                identity: a.identity.map(name),
                capabilities: a.capabilities.map(|c| c.into_iter().map(name).collect()),
                schema: a.schema.map(name),
                model: a.model.map(name),
            }))
        }
        StepKind::Call(t) => NodeKind::Call(call(t)),
        StepKind::Match(m) => {
            let m = *m;
            NodeKind::Match(Box::new(pipewright_ir::Match {
                on: expr(m.on),
                cases: m
                    .cases
                    .into_iter()
                    .map(|c| Case {
                        label: name(c.label),
                        selectable: c.label_is_string,
                        target: call(c.target),
                    })
                    .collect(),
                default: m.default.map(call),
            }))
        }
        StepKind::Fold(f) => {
            let f = *f;
            NodeKind::Fold(Box::new(pipewright_ir::Fold {
                source: list_source(f.source),
                init: expr(f.init),
                body: one(*f.body),
                max_items: f.max_items,
            }))
        }
        StepKind::ForEach(each) => {
            let each = *each;
            NodeKind::ForEach(Box::new(pipewright_ir::ForEach {
                source: list_source(each.source),
                max_parallel: each.max_parallel,
                on_error: each.on_error,
                body: one(*each.body),
                collect: one(*each.collect),
            }))
        }
        StepKind::Parallel {
            on_error,
            branches,
            collect,
        } => NodeKind::Parallel {
            on_error,
            branches: branches
                .into_iter()
                .map(|b| BranchRegion {
                    name: name(b.name),
                    region: one(b.step),
                })
                .collect(),
            collect: one(*collect),
        },
    };
    Node {
        index,
        id: None,
        kind,
        span: s.span,
        kind_span: s.kind_span,
        recovery: None,
        kind_word: None,
        output: s.output.map(name),
        condition: None,
    }
}

fn schema(s: ast::Schema) -> Schema {
    Schema {
        name: s.name.text.into_string(),
        fields: s.fields.into_iter().map(field).collect(),
        span: s.span,
    }
}

fn field(f: ast::Field) -> Field {
    Field {
        name: f.name.text.into_string(),
        ty: field_type(f.ty),
        required: f.required,
    }
}

fn field_type(t: ast::FieldType) -> FieldType {
    let kind = match t.kind {
        ast::FieldKind::Bool => FieldKind::Bool,
        ast::FieldKind::String => FieldKind::String,
        ast::FieldKind::Number { minimum, maximum } => FieldKind::Number { minimum, maximum },
        ast::FieldKind::Enum(v) => FieldKind::Enum(v),
        ast::FieldKind::List(t) => FieldKind::List(Box::new(field_type(*t))),
        ast::FieldKind::Object(fs) => FieldKind::Object(fs.into_iter().map(field).collect()),
        ast::FieldKind::Ref(n) => FieldKind::Ref(n.text.into_string()),
    };
    FieldType { kind, span: t.span }
}
