//! The plan of a pipeline: its steps in order with their nested bodies, each expression
//! evaluated where everything it reads is known before the run (the input, and the results of
//! `transform` steps, which are pure), a marker where it is not.

use pipewright_ir::{ArgValue, CallRef, ListSource, Node, NodeKind, Program, Region, Workflow};
use pipewright_r1::{TemplatePart, Value};
use pipewright_runtime::plan::{line_of, Plan, PlanStep};
use pipewright_syntax::SourceMap;
use std::collections::HashMap;

/// A value before the run: known, or why not (the text of a marker).
#[derive(Debug, Clone)]
enum Known {
    Value(Value),
    Unknown(String),
}

#[derive(Clone)]
struct Env {
    /// The stores in scope, one layer per nested scope.
    layers: Vec<HashMap<String, Known>>,
    pipe: Known,
    item: Option<Known>,
    acc: Option<Known>,
    /// A called pipeline: a store it is not given comes from its caller.
    callee: bool,
}

impl Env {
    fn store(&self, name: &str) -> Option<&Known> {
        self.layers.iter().rev().find_map(|l| l.get(name))
    }

    fn set(&mut self, name: &str, v: Known) {
        if let Some(top) = self.layers.last_mut() {
            top.insert(name.to_string(), v);
        }
    }

    fn nested(&self) -> Env {
        let mut e = self.clone();
        e.layers.push(HashMap::new());
        e
    }

    /// The stores in scope with a known value, as `ctx` (an expression reading one that is
    /// not known is not evaluated).
    fn ctx(&self) -> Value {
        let mut m = indexmap::IndexMap::new();
        for l in &self.layers {
            for (k, v) in l {
                if let Known::Value(v) = v {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        Value::Object(m)
    }

    /// Why `ctx` as a whole is not known, if it is not.
    fn ctx_unknown(&self) -> Option<String> {
        self.layers
            .iter()
            .flat_map(|l| l.values())
            .find_map(|v| match v {
                Known::Unknown(why) => Some(why.clone()),
                Known::Value(_) => None,
            })
    }

    /// The value of `e`, or why it is not known before the run.
    fn eval(&self, e: &pipewright_r1::Expr) -> Result<Value, String> {
        let views = pipewright_r1::free_path_views(e);
        for r in &views {
            // `get(ctx, "name", …)` lists its base `ctx` too: the `get` view stands for it.
            let base_of_get = r.segments.is_empty()
                && !r.via_get()
                && views
                    .iter()
                    .any(|g| g.via_get() && g.range.start == r.range.start);
            if base_of_get {
                continue;
            }
            let known = match r.root {
                "ctx" => match r.first_segment() {
                    Some(name) => match self.store(name) {
                        Some(k) => Some(k.clone()),
                        None if r.via_get() => None,
                        None if self.callee => Some(Known::Unknown("passed by the caller".into())),
                        None => Some(Known::Unknown("not given".into())),
                    },
                    None => self.ctx_unknown().map(Known::Unknown),
                },
                "pipe" => Some(self.pipe.clone()),
                "item" => self.item.clone(),
                "acc" => self.acc.clone(),
                _ => None,
            };
            if let Some(Known::Unknown(why)) = known {
                return Err(why);
            }
        }
        let ctx = self.ctx();
        let mut scope = pipewright_r1::Scope::new()
            .with_owned("ctx", ctx)
            .with_owned("pipe", known_or_null(&self.pipe));
        if let Some(i) = &self.item {
            scope = scope.with_owned("item", known_or_null(i));
        }
        if let Some(a) = &self.acc {
            scope = scope.with_owned("acc", known_or_null(a));
        }
        pipewright_r1::eval_with(e, &scope, &pipewright_r1::Limits::default())
            .map_err(|e| format!("fails: {}", e.message))
    }
}

fn known_or_null(k: &Known) -> Value {
    match k {
        Known::Value(v) => v.clone(),
        Known::Unknown(_) => Value::Null,
    }
}

fn marker(src: &str, why: &str) -> String {
    format!("<{}: {why}>", src.trim())
}

/// A value as a prompt or command shows it: strings as they are, the rest as JSON.
fn text(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        other => other.to_json_string(),
    }
}

pub fn plan(
    program: &Program,
    sources: &SourceMap,
    workflow: Option<&str>,
    input: &serde_json::Value,
) -> Result<Plan, String> {
    let w = match workflow {
        Some(name) => program
            .find(name)
            .and_then(|id| program.workflow(id))
            .ok_or_else(|| format!("no pipeline named `{name}`"))?,
        None => program
            .workflows
            .first()
            .ok_or("the file declares no pipeline")?,
    };
    let stores: HashMap<String, Known> = input
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), Known::Value(Value::from_json(v))))
                .collect()
        })
        .unwrap_or_default();
    let mut env = Env {
        layers: vec![stores],
        pipe: Known::Value(Value::Null),
        item: None,
        acc: None,
        callee: false,
    };
    let mut planner = Planner {
        sources,
        called: Vec::new(),
    };
    let steps = planner.region(&w.body, &mut env, "");
    // Each workflow the run may call, once, with the stores its callers pass unknown.
    let mut workflows = Vec::new();
    let mut i = 0;
    while let Some(name) = planner.called.get(i).cloned() {
        i += 1;
        let Some(callee) = program.find(&name).and_then(|id| program.workflow(id)) else {
            continue;
        };
        let mut env = Env {
            layers: vec![HashMap::new()],
            pipe: Known::Unknown("the caller's pipe".into()),
            item: None,
            acc: None,
            callee: true,
        };
        let steps = planner.region(&callee.body, &mut env, "");
        workflows.push((name, steps));
    }
    let p = Plan {
        workflow: w.name.clone(),
        steps,
        workflows,
        missing: crate::run::prerun::pipeline_lacks(w, sources, input),
        ..Plan::default()
    };
    Ok(with_description(p, w))
}

fn with_description(mut p: Plan, w: &Workflow) -> Plan {
    if let Some(d) = w.description.as_ref().filter(|d| !d.is_empty()) {
        p.about.push(("description".into(), d.clone()));
    }
    p
}

struct Planner<'s> {
    sources: &'s SourceMap,
    /// Workflows named by calls and match cases, in the order first met.
    called: Vec<String>,
}

impl Planner<'_> {
    fn region(&mut self, r: &Region, env: &mut Env, prefix: &str) -> Vec<PlanStep> {
        let mut out = Vec::new();
        for (i, n) in r.sequence().into_iter().enumerate() {
            let Some(node) = r.node(n) else { continue };
            let key = format!("{prefix}{}", i + 1);
            let (step, result) = self.node(node, env, &key);
            let result = result.unwrap_or_else(|| {
                Known::Unknown(format!("output of step {key} ({})", node.kind.name()))
            });
            if let Some(o) = node.output.as_ref().filter(|o| !o.is_empty()) {
                env.set(o, result.clone());
            }
            env.pipe = result;
            out.push(step);
        }
        out
    }

    fn expr(&self, e: &pipewright_ir::Expr, env: &Env) -> (String, Option<Value>) {
        match e.as_r1().map(|ast| env.eval(ast)) {
            Some(Ok(v)) => (v.to_json_string(), Some(v)),
            Some(Err(why)) => (marker(&e.src, &why), None),
            None => (e.src.clone(), None),
        }
    }

    fn call(&mut self, c: &CallRef, env: &Env) -> String {
        if !self.called.contains(&c.target) {
            self.called.push(c.target.clone());
        }
        let pass: Vec<String> = c
            .pass
            .iter()
            .map(|(name, e)| format!("{name} = {}", self.expr(e, env).0))
            .collect();
        if pass.is_empty() {
            format!("pipeline `{}`", c.target)
        } else {
            format!("pipeline `{}` with {}", c.target, pass.join(", "))
        }
    }

    /// The step's plan and, when it is known before the run, its result.
    fn node(&mut self, node: &Node, env: &Env, key: &str) -> (PlanStep, Option<Known>) {
        let mut s = PlanStep {
            key: key.to_string(),
            kind: node.kind.name().to_string(),
            line: line_of(self.sources, node.span),
            title: node.kind.name().to_string(),
            ..PlanStep::default()
        };
        let mut result = None;
        match &node.kind {
            NodeKind::Transform { value } => {
                s.field("value", value.src.trim());
                let (shown, v) = self.expr(value, env);
                s.field("result", shown);
                result = v.map(Known::Value);
            }
            NodeKind::Tool { name, args, .. } => {
                s.title = format!("tool `{name}`");
                for a in args {
                    let shown = match &a.value {
                        ArgValue::Literal(v) => v.to_json_string(),
                        ArgValue::Expr(e) => self.expr(e, env).0,
                    };
                    s.field(&format!("arg {}", a.name), shown);
                }
            }
            NodeKind::Shell(shell) => {
                let pipewright_ir::Shell { command, .. } = &**shell;
                let shown = match command {
                    ArgValue::Literal(v) => command_text(v),
                    ArgValue::Expr(e) => match e.as_r1().map(|ast| env.eval(ast)) {
                        Some(Ok(v)) => command_text(&v),
                        Some(Err(why)) => marker(&e.src, &why),
                        None => e.src.clone(),
                    },
                };
                s.field("command", shown);
            }
            NodeKind::Agent(agent) => {
                let pipewright_ir::Agent {
                    prompt,
                    identity,
                    model,
                    schema,
                    ..
                } = &**agent;
                if let Some(id) = identity {
                    s.title = format!("agent as `{id}`");
                }
                if let Some(m) = model {
                    s.field("model", m.clone());
                }
                if let Some(sc) = schema {
                    s.field("schema", sc.clone());
                }
                let shown = match prompt.as_r1_template() {
                    Some(t) => t
                        .parts
                        .iter()
                        .map(|p| match p {
                            TemplatePart::Text(t) => t.to_string(),
                            TemplatePart::Expr { expr, source, .. } => match env.eval(expr) {
                                Ok(v) => text(&v),
                                Err(why) => marker(source, &why),
                            },
                        })
                        .collect(),
                    None => prompt.src.clone(),
                };
                s.field("prompt", shown);
            }
            NodeKind::Call(c) => {
                s.title = "call".into();
                let shown = self.call(c, env);
                s.field("runs", shown);
            }
            NodeKind::Match(matching) => {
                let pipewright_ir::Match { on, cases, default } = &**matching;
                s.title = format!("match on {}", on.src.trim());
                let (shown, v) = self.expr(on, env);
                s.field("on", shown);
                if let Some(v) = v {
                    s.field("label", pipewright_runtime::value::python_str(&v));
                }
                for c in cases {
                    let shown = self.call(&c.target, env);
                    s.field(&format!("case {}", c.label), shown);
                }
                if let Some(d) = default {
                    let shown = self.call(d, env);
                    s.field("default", shown);
                }
            }
            NodeKind::Fold(fold) => {
                let pipewright_ir::Fold {
                    source,
                    init,
                    body,
                    max_items,
                } = &**fold;
                s.title = format!("fold {}", source_text(source));
                self.items(&mut s, source, env);
                if let Some(m) = max_items {
                    s.field("max_items", m.to_string());
                }
                s.field("init", self.expr(init, env).0);
                let mut inner = env.nested();
                inner.item = Some(Known::Unknown(format!("each item of step {key}")));
                inner.acc = Some(Known::Unknown(format!("the accumulator of step {key}")));
                s.regions.push((
                    "do".into(),
                    self.region(body, &mut inner, &format!("{key}.do.")),
                ));
            }
            NodeKind::ForEach(each) => {
                let pipewright_ir::ForEach {
                    source,
                    max_parallel,
                    on_error,
                    body,
                    collect,
                } = &**each;
                s.title = format!("for_each {}", source_text(source));
                self.items(&mut s, source, env);
                if let Some(m) = max_parallel {
                    s.field("max_parallel", m.to_string());
                }
                s.field("on_error", pipewright_ir::on_error_text(on_error.kind));
                let mut inner = env.nested();
                inner.item = Some(Known::Unknown(format!("each item of step {key}")));
                s.regions.push((
                    "do".into(),
                    self.region(body, &mut inner, &format!("{key}.do.")),
                ));
                let mut coll = env.nested();
                coll.pipe = Known::Unknown(format!("the item results of step {key}"));
                s.regions.push((
                    "collect".into(),
                    self.region(collect, &mut coll, &format!("{key}.collect.")),
                ));
            }
            NodeKind::Parallel {
                on_error,
                branches,
                collect,
            } => {
                s.title = format!("parallel, {} branches", branches.len());
                s.field("on_error", pipewright_ir::on_error_text(on_error.kind));
                for b in branches {
                    let mut inner = env.nested();
                    let steps = self.region(&b.region, &mut inner, &format!("{key}.{}.", b.name));
                    s.regions.push((format!("branch {}", b.name), steps));
                }
                let mut coll = env.nested();
                coll.pipe = Known::Unknown(format!("the branch results of step {key}"));
                s.regions.push((
                    "collect".into(),
                    self.region(collect, &mut coll, &format!("{key}.collect.")),
                ));
            }
            _ => s.field("summary", node.summary()),
        }
        if let Some(p) = node.kind.on_error() {
            if !s.fields.iter().any(|(k, _)| k == "on_error") {
                s.field("on_error", pipewright_ir::on_error_text(p));
            }
        }
        if let Some(o) = node.output.as_ref().filter(|o| !o.is_empty()) {
            s.field("output", format!("ctx.{o}"));
        }
        (s, result)
    }

    /// How many items a fan-out has, when its list is known.
    fn items(&self, s: &mut PlanStep, source: &ListSource, env: &Env) {
        let list = match source {
            ListSource::Over(e) => self.expr(e, env).1,
            ListSource::Items(v) => Some(v.clone()),
            ListSource::Pipe => match &env.pipe {
                Known::Value(v) => Some(v.clone()),
                Known::Unknown(_) => None,
            },
        };
        match list {
            Some(Value::List(items)) => s.field("items", items.len().to_string()),
            Some(other) => s.field("items", format!("not a list: {}", other.to_json_string())),
            None => {}
        }
    }
}

fn source_text(s: &ListSource) -> String {
    match s {
        ListSource::Over(e) => format!("over {}", e.src.trim()),
        ListSource::Items(v) => format!("over items {}", v.to_json_string()),
        ListSource::Pipe => "over pipe".into(),
    }
}

/// A shell command as the shell tool would be given it: a string as it is, a list as words.
fn command_text(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        Value::List(words) => words
            .iter()
            .map(|w| pipewright_r1::eval::shell_quote(&text(w)))
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_json_string(),
    }
}
