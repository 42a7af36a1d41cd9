//! Lowering a recipe into the dialect-neutral IR, for `graph` and `run`.
//!
//! A flat recipe is one region of step nodes; a staged recipe is a region of [`NodeKind::Stage`]
//! nodes, each followed by a [`NodeKind::Gate`] when the stage requires approval (the runner
//! pauses *after* the stage). A step becomes an `Ask` (agent), a `Command` (bash) or a
//! `SubWorkflow` (recipe); a `foreach` or `while_condition` wraps it, or its nested `steps:`,
//! in a `Loop`. Templates and conditions keep their text: the runner substitutes values into
//! them before it parses anything (notes §3.6, §4).

use crate::ast::{Parallel, Recipe, Stage, Step, StepType, Text};
use pipewright_ir::{
    Ask, Backoff, Command, Edge, ErrorPolicy, Expr, Lang, Limits, Loop, LoopMode, Node, NodeKind,
    Param, Program, Region, Retry, SubWorkflow, Workflow,
};
use pipewright_syntax::{FileId, Span};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The runner's default `max_while_iterations`.
pub const DEFAULT_MAX_WHILE_ITERATIONS: u64 = 100;

/// Lowers one loaded recipe (which has passed `check`, or is a sub-recipe the runner only
/// parses) into a one-workflow program.
pub fn recipe(r: &Recipe, file: FileId) -> Program {
    let shapes = Shapes::of(r);
    let body = match &r.stages {
        Some(stages) => stages_region(&stages.value, &shapes),
        None => steps_region(r.steps.as_ref().map_or(&[][..], |s| &s.value[..]), &shapes),
    };
    Program {
        workflows: vec![Workflow {
            name: text(&r.name).unwrap_or_default(),
            dialect: pipewright_dialect::Dialect::name(&crate::dialect::Recipe),
            file,
            description: text(&r.description),
            version: text(&r.version),
            params: r
                .context
                .iter()
                .map(|c| param(&c.key.value, &c.value))
                .collect(),
            limits: limits(r),
            body,
            span: r.span,
            schema_set: 0,
            step_keys: pipewright_ir::StepKeys::Positional,
        }],
        schema_sets: Vec::new(),
    }
}

/// Keys of a declaration mapping (`{type: string, default: "", description: …}`).
const DECLARATION_KEYS: &[&str] = &[
    "type",
    "default",
    "description",
    "required",
    "enum",
    "example",
    "examples",
];

/// A context entry. Authors write inputs as declarations; the reference runner would hand the
/// whole mapping to the templates (notes §8, item 44), which no author means: a declaration
/// starts as its `default`, and one marked `required` without a default must be given by the
/// caller (docs/recipe.md).
fn param(name: &str, value: &pipewright_yaml::Node) -> Param {
    let json = pipewright_yaml::to_json(value);
    let declaration = json.as_object().filter(|m| {
        !m.is_empty()
            && m.keys().all(|k| DECLARATION_KEYS.contains(&k.as_str()))
            && (m.contains_key("type") || m.contains_key("description"))
    });
    match declaration {
        Some(m) => Param {
            name: name.to_string(),
            default: m.get("default").cloned().unwrap_or(Value::Null),
            required: m.get("default").is_none()
                && m.get("required").and_then(Value::as_bool) == Some(true),
        },
        None => Param {
            name: name.to_string(),
            default: json,
            required: false,
        },
    }
}

fn limits(r: &Recipe) -> Limits {
    let rec = r.recursion.as_ref();
    let rate = r.rate_limiting.as_ref();
    Limits {
        turns_per_agent_step: None,
        max_depth: rec.and_then(|x| secs(x.max_depth)),
        max_total_steps: rec.and_then(|x| secs(x.max_total_steps)),
        max_concurrent_agents: rate.and_then(|x| secs(x.max_concurrent_llm)),
        min_agent_delay_ms: rate
            .and_then(|x| secs(x.min_delay_ms))
            .or_else(|| secs(r.min_delay_between_calls_ms)),
        // The runner's limiter exists with a `rate_limiting` block, and its backoff is on
        // unless disabled; the defaults are the schema's.
        backoff: rate.and_then(|x| {
            let b = x.backoff.as_ref();
            if b.and_then(|b| b.enabled).is_some_and(|e| !e.value) {
                return None;
            }
            let initial_ms = b.and_then(|b| secs(b.initial_delay_ms)).unwrap_or(1000);
            Some(Backoff {
                initial_ms,
                max_ms: b
                    .and_then(|b| secs(b.max_delay_ms))
                    .unwrap_or(60_000)
                    .max(initial_ms),
                multiplier: b
                    .and_then(|b| b.multiplier)
                    .map_or(2.0, |m| m.value.max(1.0)),
                reset_after: b
                    .and_then(|b| secs(b.reset_after_success))
                    .unwrap_or(3)
                    .max(1),
            })
        }),
    }
}

fn text(t: &Option<Text>) -> Option<String> {
    t.as_ref().map(|t| t.value.clone())
}

fn template(t: &Text) -> Expr {
    Expr::text(Lang::RecipeTemplate, t.value.clone(), t.span, t.style)
}

fn condition(t: &Text) -> Expr {
    Expr::text(Lang::RecipeCondition, t.value.clone(), t.span, t.style)
}

/// Chains nodes with `Next` edges in order.
fn chain(nodes: Vec<Node>) -> Region {
    let mut region = Region::default();
    let mut prev = None;
    for n in nodes {
        let id = region.graph.add_node(n);
        match prev {
            Some(p) => {
                region.graph.add_edge(p, id, Edge::Next);
            }
            None => region.entry = Some(id),
        }
        prev = Some(id);
    }
    region
}

fn stages_region(stages: &[Stage], shapes: &Shapes) -> Region {
    let mut nodes = Vec::new();
    for (i, st) in stages.iter().enumerate() {
        let name = text(&st.name).unwrap_or_else(|| format!("stage_{i}"));
        nodes.push(Node {
            index: nodes.len(),
            id: Some(name.clone()),
            kind: NodeKind::Stage {
                name: name.clone(),
                body: steps_region(&st.steps, shapes),
            },
            span: st.span,
            kind_span: st.name.as_ref().map_or(st.span, |n| n.span),
            recovery: None,
            kind_word: None,
            output: None,
            condition: None,
        });
        let Some(ap) = &st.approval else { continue };
        if !ap.required.is_some_and(|r| r.value) {
            continue;
        }
        nodes.push(Node {
            index: nodes.len(),
            id: Some(format!("{name} approval")),
            kind: NodeKind::Gate(Box::new(pipewright_ir::Gate {
                stage: name,
                prompt: ap
                    .prompt
                    .as_ref()
                    .filter(|p| !p.value.is_empty())
                    .map(template),
                timeout_secs: ap
                    .timeout
                    .map_or(0, |t| u64::try_from(t.value).unwrap_or(0)),
                default_approve: ap.default.as_ref().is_some_and(|d| d.value == "approve"),
            })),
            span: ap.span,
            kind_span: ap.span,
            recovery: None,
            kind_word: None,
            output: None,
            condition: None,
        });
    }
    chain(nodes)
}

fn steps_region(steps: &[Step], shapes: &Shapes) -> Region {
    chain(
        steps
            .iter()
            .enumerate()
            .map(|(i, s)| step_node(i, s, shapes))
            .collect(),
    )
}

fn policy(s: &Step) -> ErrorPolicy {
    match s.on_error.as_ref().map(|t| t.value.as_str()) {
        Some("continue") => ErrorPolicy::Continue,
        Some("skip_remaining") => ErrorPolicy::SkipRemaining,
        _ => ErrorPolicy::Fail,
    }
}

fn secs(v: Option<crate::ast::Spanned<i64>>) -> Option<u64> {
    v.and_then(|t| u64::try_from(t.value).ok())
}

/// The step's id, or `step_<i>` as the runner names an anonymous one.
pub fn step_id(i: usize, s: &Step) -> String {
    text(&s.id).unwrap_or_else(|| format!("step_{i}"))
}

/// The node that does the step's own work, once.
fn action(s: &Step, shapes: &Shapes) -> NodeKind {
    let kind = s.step_type.unwrap_or(if s.command.is_some() {
        StepType::Bash
    } else if s.recipe.is_some() {
        StepType::Recipe
    } else {
        StepType::Agent
    });
    let parse_json = s.parse_json.is_some_and(|p| p.value);
    let empty = |span: Span| {
        Expr::text(
            Lang::RecipeTemplate,
            String::new(),
            span,
            pipewright_yaml::ScalarStyle::Plain,
        )
    };
    match kind {
        StepType::Bash => NodeKind::Command(Box::new(Command {
            command: s.command.as_ref().map_or_else(|| empty(s.span), template),
            cwd: s.cwd.as_ref().map(template),
            env: s
                .env
                .iter()
                .flatten()
                .filter_map(|e| Some((e.key.value.clone(), template(e.value.as_ref()?))))
                .collect(),
            timeout_secs: secs(s.timeout),
            exit_code_to: text(&s.output_exit_code),
            on_error: policy(s),
            parse_json,
        })),
        StepType::Recipe => NodeKind::SubWorkflow(Box::new(SubWorkflow {
            path: s.recipe.as_ref().map_or_else(|| empty(s.span), template),
            context: s
                .context
                .iter()
                .flat_map(|c| c.value.iter())
                .map(|c| (c.key.value.clone(), pipewright_yaml::to_json(&c.value)))
                .collect(),
            max_depth: s.recursion.as_ref().and_then(|r| secs(r.max_depth)),
            max_total_steps: s.recursion.as_ref().and_then(|r| secs(r.max_total_steps)),
            on_error: policy(s),
        })),
        StepType::Agent => NodeKind::Ask(Box::new(Ask {
            agent: text(&s.agent).unwrap_or_default(),
            prompt: s.prompt.as_ref().map_or_else(|| empty(s.span), template),
            mode: text(&s.mode),
            provider: text(&s.provider),
            model: text(&s.model),
            timeout_secs: secs(s.timeout),
            retry: retry(s),
            on_error: policy(s),
            parse_json,
            shape: s.output.as_ref().and_then(|o| shapes.of_var(&o.value)),
        })),
    }
}

fn retry(s: &Step) -> Retry {
    let mut r = Retry::default();
    if let Some(rt) = &s.retry {
        if let Some(n) = rt.max_attempts {
            r.max_attempts = u32::try_from(n.value.max(1)).unwrap_or(1);
        }
        if let Some(b) = &rt.backoff {
            r.exponential = b.value != "linear";
        }
        if let Some(d) = rt.initial_delay {
            r.initial_delay_secs = d.value.max(0) as f64;
        }
        if let Some(d) = rt.max_delay {
            r.max_delay_secs = d.value.max(0) as f64;
        }
    }
    r
}

/// A step's `type` as the recipe writes it, for the kinds the IR names otherwise.
fn step_word(kind: &NodeKind) -> Option<&'static str> {
    match kind {
        NodeKind::Ask(_) => Some("agent"),
        NodeKind::Command(_) => Some("bash"),
        NodeKind::SubWorkflow(_) => Some("recipe"),
        _ => None,
    }
}

fn step_node(i: usize, s: &Step, shapes: &Shapes) -> Node {
    let own = |kind: NodeKind, output: Option<String>| Node {
        index: 0,
        id: Some(step_id(i, s)),
        kind_word: step_word(&kind),
        kind,
        span: s.span,
        kind_span: s.id.as_ref().map_or(s.span, |t| t.span),
        recovery: None,
        output,
        condition: None,
    };
    // A loop's body is the nested steps when there are any, else the step's own action.
    let nested = s.while_steps.as_ref().is_some_and(|n| !n.value.is_empty());
    let body = || match &s.while_steps {
        Some(n) if nested => steps_region(&n.value, shapes),
        _ => chain(vec![own(action(s, shapes), None)]),
    };
    let parallel = s
        .parallel
        .is_some_and(|p| !matches!(p.value, Parallel::Bool(false) | Parallel::Limit(0)));
    let kind = if let Some(source) = &s.foreach {
        NodeKind::Loop(Box::new(Loop {
            mode: LoopMode::Each {
                source: template(source),
                var: text(&s.as_var).unwrap_or_else(|| "item".into()),
                max_items: secs(s.max_iterations),
                parallel: match s.parallel.map(|p| p.value) {
                    Some(Parallel::Bool(true)) => Some(0),
                    Some(Parallel::Limit(n)) if n > 0 => u64::try_from(n).ok(),
                    _ => None,
                },
                on_error: policy(s),
            },
            // A parallel foreach dispatches the step itself for each item; nested steps are
            // ignored there (notes §5.7).
            body: if parallel {
                chain(vec![own(action(s, shapes), None)])
            } else {
                body()
            },
            nested: nested && !parallel,
            collect: text(&s.collect),
        }))
    } else if let Some(cond) = &s.while_condition {
        NodeKind::Loop(Box::new(Loop {
            mode: LoopMode::While {
                condition: template(cond),
                break_when: s.break_when.as_ref().map(template),
                update: s
                    .update_context
                    .iter()
                    .flatten()
                    .filter_map(|e| Some((e.key.value.clone(), template(e.value.as_ref()?))))
                    .collect(),
                max_iterations: secs(s.max_while_iterations)
                    .unwrap_or(DEFAULT_MAX_WHILE_ITERATIONS),
            },
            body: body(),
            nested,
            collect: text(&s.collect),
        }))
    } else {
        action(s, shapes)
    };
    Node {
        index: i,
        id: Some(step_id(i, s)),
        kind_word: step_word(&kind),
        kind,
        span: s.span,
        kind_span: s.id.as_ref().map_or(s.span, |t| t.span),
        recovery: None,
        output: text(&s.output),
        condition: s.condition.as_ref().map(|c| Box::new(condition(c))),
    }
}

/// What later steps read from each variable: `{{x.a.b}}` makes `x` an object with `a.b`, a
/// `foreach: "{{x}}"` makes it a list (of what the loop variable is read as). An offline
/// backend answers an agent step with a value of its output's shape, so a dry run of any
/// recipe gets through the templates that read it.
#[derive(Default)]
struct Shapes {
    vars: BTreeMap<String, Shape>,
}

#[derive(Default, Clone)]
struct Shape {
    fields: BTreeMap<String, Shape>,
    list_of: Option<Box<Shape>>,
    /// Values a condition compares it with (`{{kind}} == 'simple'`), in the order met.
    one_of: Vec<String>,
}

impl Shape {
    fn at(&mut self, path: &[String]) -> &mut Shape {
        let mut s = self;
        for p in path {
            s = s.fields.entry(p.clone()).or_default();
        }
        s
    }

    fn schema(&self, depth: usize) -> Value {
        if depth > 16 {
            return json!({"type": "string"});
        }
        if let Some(item) = &self.list_of {
            return json!({"type": "array", "items": item.schema(depth + 1)});
        }
        if self.fields.is_empty() {
            if !self.one_of.is_empty() {
                return json!({"enum": self.one_of});
            }
            return json!({"type": "string"});
        }
        let mut props = Map::new();
        for (k, v) in &self.fields {
            props.insert(k.clone(), v.schema(depth + 1));
        }
        json!({"type": "object", "properties": props})
    }
}

impl Shapes {
    fn of(r: &Recipe) -> Shapes {
        let mut shapes = Shapes::default();
        let mut loops: Vec<(String, Vec<String>)> = Vec::new();
        let mut visit = |s: &Step, shapes: &mut Shapes| {
            let texts = [
                &s.prompt,
                &s.command,
                &s.cwd,
                &s.condition,
                &s.while_condition,
                &s.break_when,
                &s.recipe,
            ];
            let mut srcs: Vec<&str> = texts
                .iter()
                .filter_map(|t| t.as_ref())
                .map(|t| t.value.as_str())
                .collect();
            for e in s
                .env
                .iter()
                .flatten()
                .chain(s.update_context.iter().flatten())
            {
                if let Some(v) = &e.value {
                    srcs.push(&v.value);
                }
            }
            // Strings handed to a sub-recipe are templates too.
            let mut handed = Vec::new();
            for c in s.context.iter().flat_map(|c| c.value.iter()) {
                strings(&pipewright_yaml::to_json(&c.value), &mut handed);
            }
            srcs.extend(handed.iter().map(String::as_str));
            for cond in [&s.condition, &s.while_condition, &s.break_when]
                .into_iter()
                .flatten()
            {
                for (path, lit) in equalities(&cond.value) {
                    if let Some((head, rest)) = path.split_first() {
                        let one_of =
                            &mut shapes.vars.entry(head.clone()).or_default().at(rest).one_of;
                        if !one_of.contains(&lit) {
                            one_of.push(lit);
                        }
                    }
                }
            }
            for src in srcs {
                let (t, _) = crate::template::parse(src);
                for v in t.vars() {
                    if let Some((head, rest)) = v.path.split_first() {
                        shapes.vars.entry(head.clone()).or_default().at(rest);
                    }
                }
            }
            if let Some(f) = &s.foreach {
                let (t, _) = crate::template::parse(&f.value);
                let first = t.vars().next().map(|v| v.path.clone());
                if let Some(path) = first {
                    let var = text(&s.as_var).unwrap_or_else(|| "item".into());
                    loops.push((var, path));
                }
            }
        };
        let mut all: Vec<&Step> = Vec::new();
        fn walk<'r>(steps: &'r [Step], out: &mut Vec<&'r Step>) {
            for s in steps {
                out.push(s);
                if let Some(n) = &s.while_steps {
                    walk(&n.value, out);
                }
            }
        }
        if let Some(st) = &r.steps {
            walk(&st.value, &mut all);
        }
        for stage in r.stages.iter().flat_map(|s| s.value.iter()) {
            walk(&stage.steps, &mut all);
        }
        for s in all {
            visit(s, &mut shapes);
        }
        // A list is read through its loop variable: the items have that variable's shape.
        for (var, path) in loops {
            let item = shapes.vars.get(&var).cloned().unwrap_or_default();
            if let Some((head, rest)) = path.split_first() {
                let target = shapes.vars.entry(head.clone()).or_default().at(rest);
                target.list_of = Some(Box::new(item));
            }
        }
        shapes
    }

    /// The shape of a variable some step reads beyond its plain text, as a JSON Schema.
    fn of_var(&self, name: &str) -> Option<Value> {
        let s = self.vars.get(name)?;
        if s.fields.is_empty() && s.list_of.is_none() && s.one_of.is_empty() {
            return None;
        }
        Some(s.schema(0))
    }
}

/// The `{{path}} == literal` comparisons of a condition (the variable optionally quoted, the
/// literal quoted or a bare word).
fn equalities(src: &str) -> Vec<(Vec<String>, String)> {
    let (t, _) = crate::template::parse(src);
    let mut out = Vec::new();
    for v in t.vars() {
        let mut rest = &src[v.range.end..];
        // The quoted form `'{{s}}' == 'done'` of loop conditions.
        if let Some(r) = rest.strip_prefix(['\'', '"']) {
            rest = r;
        }
        let Some(r) = rest.trim_start().strip_prefix("==") else {
            continue;
        };
        let r = r.trim_start();
        let lit = match r.chars().next() {
            Some(q @ ('\'' | '"')) => r[1..].split(q).next().map(str::to_string),
            Some(_) => Some(
                r.chars()
                    .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
                    .collect(),
            ),
            None => None,
        };
        if let Some(lit) = lit.filter(|l| !l.is_empty()) {
            out.push((v.path.clone(), lit));
        }
    }
    out
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(m) => m.values().for_each(|i| strings(i, out)),
        _ => {}
    }
}
