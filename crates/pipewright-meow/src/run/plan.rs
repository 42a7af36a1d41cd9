//! The plan of a MEOW workflow (`run --dry-run`): its top-level steps in the order their
//! `needs` allow, each field the executor reads rendered with the workflow's variables (a
//! shell command quoted as it would run), a marker for step outputs and run-time builtins.

use super::subst;
use super::template::Template;
use crate::ast::Module;
use pipewright_runtime::plan::{line_of, Plan, PlanStep};
use pipewright_runtime::prerun::Lack;
use serde_json::{Map, Value};
use std::sync::Arc;

pub fn plan(
    program: &pipewright_ir::Program,
    module: Arc<Module>,
    sources: &pipewright_syntax::SourceMap,
    workflow: Option<&str>,
    input: &Value,
    source_path: Option<&std::path::Path>,
) -> Result<Plan, String> {
    let (name, _, root) = super::root_template(program, module, sources, workflow, source_path)?;
    let given = super::given_variables(input)?;
    let missing: Vec<Lack> = root
        .vars
        .iter()
        .filter(|v| v.required && v.default.is_none() && !given.contains_key(&v.name))
        .map(|v| Lack {
            name: v.name.clone(),
            why: format!(
                "declared under `[{name}.variables]` with `required = true` and no default"
            ),
        })
        .collect();
    // A missing variable is shown as such; any other refusal (an undeclared or ill-typed
    // variable) is the run's own.
    let vars = if missing.is_empty() {
        root.bind(given, true)?
    } else {
        let mut vars: Map<String, Value> = root
            .vars
            .iter()
            .filter_map(|v| v.default.clone().map(|d| (v.name.clone(), d)))
            .collect();
        vars.extend(given);
        vars
    };
    let mut about = Vec::new();
    if !vars.is_empty() {
        let mut shown: Vec<String> = vars
            .iter()
            .map(|(k, v)| format!("{k} = {}", subst::to_text(v)))
            .collect();
        shown.sort();
        about.push(("variables".to_string(), shown.join(", ")));
    }
    let steps = order(&root)
        .into_iter()
        .map(|t| {
            let mut s = PlanStep {
                key: t.id.clone(),
                kind: t.executor.name().to_string(),
                line: line_of(sources, t.span),
                title: format!("[{}]", t.executor.name()),
                ..PlanStep::default()
            };
            if !t.needs.is_empty() {
                s.field("needs", t.needs.join(", "));
            }
            for (key, value) in super::dispatch::substituted_fields(&t.executor) {
                let shell = matches!(key, "command" | "condition");
                let r = |text: &str| render(text, &vars, &missing, &t.id, shell);
                let shown = match value {
                    Value::String(text) => r(&text),
                    other => rendered_json(other, &r).to_string(),
                };
                s.field(key, shown);
            }
            s
        })
        .collect();
    Ok(Plan {
        workflow: name,
        about,
        steps,
        missing,
        ..Plan::default()
    })
}

/// The steps with each after the steps it needs (declaration order otherwise); a step in a
/// cycle, which `check` refuses, comes last.
fn order(t: &Template) -> Vec<&super::template::TemplateStep> {
    let mut out: Vec<&super::template::TemplateStep> = Vec::new();
    let mut left: Vec<&super::template::TemplateStep> = t.steps.iter().map(|s| &**s).collect();
    while !left.is_empty() {
        let ready = left.iter().position(|s| {
            s.needs
                .iter()
                .all(|n| out.iter().any(|o| o.id == *n) || !left.iter().any(|l| l.id == *n))
        });
        let i = ready.unwrap_or(0);
        out.push(left.remove(i));
    }
    out
}

fn render(
    text: &str,
    vars: &Map<String, Value>,
    missing: &[Lack],
    step: &str,
    shell: bool,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end, inner) in subst::refs(text) {
        out.push_str(&text[last..start]);
        last = end;
        let shown = match subst::parse(inner) {
            subst::Ref::Output { step: from, .. } => {
                format!("<{{{{{inner}}}}}: output of step `{from}`>")
            }
            subst::Ref::Var { root, path } => match (root, vars.get(root)) {
                ("step_id", None) => step.to_string(),
                (_, Some(v)) if path.is_empty() => {
                    let t = subst::to_text(v);
                    if shell {
                        subst::quote(&t)
                    } else {
                        t
                    }
                }
                (_, Some(v)) => {
                    let mut cur = Some(v);
                    for p in &path {
                        cur = cur.and_then(|c| c.get(p));
                    }
                    match cur {
                        Some(v) if shell => subst::quote(&subst::to_text(v)),
                        Some(v) => subst::to_text(v),
                        None => format!("<{{{{{inner}}}}}: absent>"),
                    }
                }
                (r, None) if missing.iter().any(|l| l.name == r) => {
                    format!("<{{{{{inner}}}}}: not given>")
                }
                _ => format!("<{{{{{inner}}}}}: set when the run starts>"),
            },
        };
        out.push_str(&shown);
    }
    out.push_str(&text[last..]);
    out
}

/// A table or list with every string in it rendered.
fn rendered_json(v: Value, r: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(r(&s)),
        Value::Array(a) => Value::Array(a.into_iter().map(|x| rendered_json(x, r)).collect()),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, x)| (k, rendered_json(x, r)))
                .collect(),
        ),
        other => other,
    }
}
