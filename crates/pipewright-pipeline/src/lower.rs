//! Lowering from the typed pipeline AST into the dialect-neutral IR. The input is expected to
//! have passed `check_program`; lowering itself never fails: an unresolved call target stays
//! unresolved and fails the step if it runs.

use crate::ast::{self, StepKind};
use crate::literal::to_json;
use pipewright_ir::schema::{Field, FieldKind, FieldType, Schema};
use pipewright_ir::*;
use pipewright_r1::Value;
use std::collections::HashMap;

/// Lowers every pipeline of the program, in file then declaration order.
pub fn pipeline(program: &ast::Program) -> Program {
    let mut ids: Vec<HashMap<&str, WorkflowId>> = Vec::new();
    let mut next = 0;
    for f in &program.files {
        let mut m = HashMap::new();
        for p in &f.pipelines {
            // First declaration wins; a duplicate is a check error already.
            m.entry(&*p.name.text).or_insert(WorkflowId(next));
            next += 1;
        }
        ids.push(m);
    }
    let resolver = Resolver { program, ids: &ids };
    let mut out = Program::default();
    for (fi, f) in program.files.iter().enumerate() {
        out.schema_sets.push(SchemaSet {
            file: f.file,
            schemas: f.schemas.iter().map(schema).collect(),
        });
        for p in &f.pipelines {
            let body = lower_steps(&p.steps, &|name: &str| resolver.resolve(fi, name));
            out.workflows.push(Workflow {
                name: p.name.text.to_string(),
                dialect: pipewright_dialect::Dialect::name(&crate::dialect::Pipeline),
                file: f.file,
                description: p.description.clone(),
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
    program: &'a ast::Program,
    ids: &'a [HashMap<&'a str, WorkflowId>],
}

impl Resolver<'_> {
    /// Same rule as the checker: a sibling in the same file, then `ns.name` in the file whose
    /// namespace is `ns`, then the first file declaring the name.
    fn resolve(&self, file: usize, name: &str) -> Option<WorkflowId> {
        if let Some(id) = self.ids.get(file).and_then(|m| m.get(name)) {
            return Some(*id);
        }
        if let Some((ns, rest)) = name.split_once('.') {
            for (fi, f) in self.program.files.iter().enumerate() {
                if f.namespace.as_deref() == Some(ns) {
                    if let Some(id) = self.ids[fi].get(rest) {
                        return Some(*id);
                    }
                }
            }
        }
        self.ids.iter().find_map(|m| m.get(name).copied())
    }
}

fn lower_steps(steps: &[ast::Step], resolve: &dyn Fn(&str) -> Option<WorkflowId>) -> Region {
    let mut region = Region::default();
    let mut prev = None;
    for (i, s) in steps.iter().enumerate() {
        let n = region.graph.add_node(lower_step(i, s, resolve));
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

fn lower_step(index: usize, s: &ast::Step, resolve: &dyn Fn(&str) -> Option<WorkflowId>) -> Node {
    let one = |step: &ast::Step| lower_steps(std::slice::from_ref(step), resolve);
    let call = |t: &ast::CallTarget| CallRef {
        target: t.pipeline.text.to_string(),
        resolved: resolve(&t.pipeline.text),
        pass: t
            .pass
            .iter()
            .map(|p| (p.name.text.to_string(), expr(&p.value)))
            .collect(),
        span: t.span,
    };
    let kind = match &s.kind {
        StepKind::Transform { value } => NodeKind::Transform { value: expr(value) },
        StepKind::Tool(t) => NodeKind::Tool {
            name: t.name.text.to_string(),
            args: t
                .args
                .iter()
                .map(|a| Arg {
                    name: a.name.text.to_string(),
                    value: arg(&a.value),
                })
                .collect(),
            schema: t.schema.as_ref().map(|n| n.text.to_string()),
            on_error: t.on_error,
        },
        StepKind::Shell(sh) => NodeKind::Shell {
            command: arg(&sh.command),
            schema: sh.schema.as_ref().map(|n| n.text.to_string()),
            on_error: sh.on_error,
        },
        StepKind::Agent(a) => NodeKind::Agent {
            prompt: Expr::r1_template(
                a.prompt.src.to_string(),
                a.prompt.span,
                a.prompt.style,
                a.prompt.template.clone(),
            ),
            identity: a.identity.as_ref().map(|n| n.text.to_string()),
            capabilities: a
                .capabilities
                .as_ref()
                .map(|c| c.iter().map(|n| n.text.to_string()).collect()),
            schema: a.schema.as_ref().map(|n| n.text.to_string()),
            model: a.model.as_ref().map(|n| n.text.to_string()),
        },
        StepKind::Call(t) => NodeKind::Call(call(t)),
        StepKind::Match(m) => NodeKind::Match {
            on: expr(&m.on),
            cases: m
                .cases
                .iter()
                .map(|c| Case {
                    label: c.label.text.to_string(),
                    selectable: c.label_is_string,
                    target: call(&c.target),
                })
                .collect(),
            default: m.default.as_ref().map(call),
        },
        StepKind::Fold(f) => NodeKind::Fold {
            source: list_source(&f.source),
            init: expr(&f.init),
            body: one(&f.body),
            max_items: f.max_items,
        },
        StepKind::ForEach(each) => NodeKind::ForEach {
            source: list_source(&each.source),
            max_parallel: each.max_parallel,
            on_error: each.on_error,
            body: one(&each.body),
            collect: one(&each.collect),
        },
        StepKind::Parallel {
            on_error,
            branches,
            collect,
        } => NodeKind::Parallel {
            on_error: *on_error,
            branches: branches
                .iter()
                .map(|b| BranchRegion {
                    name: b.name.text.to_string(),
                    region: one(&b.step),
                })
                .collect(),
            collect: one(collect),
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
        output: s.output.as_ref().map(|n| n.text.to_string()),
        condition: None,
    }
}

fn arg(v: &ast::ArgValue) -> ArgValue {
    match v {
        ast::ArgValue::Literal(node) => ArgValue::Literal(Value::from_json(&to_json(node))),
        ast::ArgValue::Expr(e) => ArgValue::Expr(expr(e)),
    }
}

fn list_source(s: &ast::ListSource) -> ListSource {
    match s {
        ast::ListSource::Over(e) => ListSource::Over(expr(e)),
        ast::ListSource::Items(node) => ListSource::Items(Value::from_json(&to_json(node))),
        ast::ListSource::Pipe => ListSource::Pipe,
    }
}

fn expr(e: &ast::Expr) -> Expr {
    Expr::r1(e.src.to_string(), e.span, e.style, e.ast.clone())
}

fn schema(s: &ast::Schema) -> Schema {
    Schema {
        name: s.name.text.to_string(),
        fields: s.fields.iter().map(field).collect(),
        span: s.span,
    }
}

fn field(f: &ast::Field) -> Field {
    Field {
        name: f.name.text.to_string(),
        ty: field_type(&f.ty),
        required: f.required,
    }
}

fn field_type(t: &ast::FieldType) -> FieldType {
    let kind = match &t.kind {
        ast::FieldKind::Bool => FieldKind::Bool,
        ast::FieldKind::String => FieldKind::String,
        ast::FieldKind::Number { minimum, maximum } => FieldKind::Number {
            minimum: *minimum,
            maximum: *maximum,
        },
        ast::FieldKind::Enum(v) => FieldKind::Enum(v.clone()),
        ast::FieldKind::List(t) => FieldKind::List(Box::new(field_type(t))),
        ast::FieldKind::Object(fs) => FieldKind::Object(fs.iter().map(field).collect()),
        ast::FieldKind::Ref(n) => FieldKind::Ref(n.text.to_string()),
    };
    FieldType { kind, span: t.span }
}
