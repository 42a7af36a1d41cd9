//! What a run lacks before it starts. A run that would certainly fail for want of an input
//! (a pipeline step reading a store that neither the input nor an earlier step gives, a
//! recipe's required context variable, a MEOW workflow's required variable) or that is given
//! an input its workflow does not declare is refused before the run store is opened: exit 2,
//! one message shape for every dialect, naming what to give (`--var`) or what to declare.
//!
//! Only what is certain to fail is refused. For pipelines that is a read of `ctx.NAME` that
//! every evaluation of its expression makes (not right of `and`/`or`, not inside a lambda,
//! not through `get(ctx, "NAME", …)`: `pipewright_r1::certain_path_views`), in a step that
//! runs whenever the run goes on (not in a fold or for_each body, which may have no items, not
//! in a `match` case, which may not be chosen) and whose failure fails the run (not a tool or
//! shell step, nor a parallel branch, under `on_error: continue`).

use pipewright_ir::{ArgValue, Dialect, ListSource, NodeKind, OnErrorKind, Program, Region};
use pipewright_syntax::SourceMap;
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

/// One input a run needs and is not given, and why it is needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lack {
    pub name: String,
    pub why: String,
}

/// Refuses a run that lacks an input or is given one it does not declare; `Ok` when it can
/// start. `workflow` is the one `--pipeline`/`file#name` chose (the first/`main` otherwise).
pub fn check(
    program: &Program,
    sources: &SourceMap,
    workflow: Option<&str>,
    input: &Value,
    source_path: Option<&Path>,
) -> Result<(), String> {
    let Some(first) = program.workflows.first() else {
        return Ok(());
    };
    match first.dialect {
        Dialect::Pipeline => pipeline(program, sources, workflow, input),
        Dialect::Recipe => recipe(first, input),
        Dialect::Meow => crate::meow::prerun(program, sources, workflow, input, source_path),
        Dialect::StateMachine => Ok(()),
    }
}

/// "`what` needs `a`, which nothing gives it", a line per input saying why, and the `--var`
/// to pass. `what` is "pipeline `main`", "recipe `review`", "workflow `main`".
pub fn needs_message(what: &str, lacks: &[Lack]) -> String {
    let names: Vec<String> = lacks.iter().map(|l| format!("`{}`", l.name)).collect();
    let mut s = format!("{what} needs {}, which nothing gives it", names.join(", "));
    for l in lacks {
        s.push_str(&format!("\n  `{}`: {}", l.name, l.why));
    }
    let vars: Vec<String> = lacks
        .iter()
        .map(|l| format!("--var {}=VALUE", l.name))
        .collect();
    let them = if lacks.len() == 1 { "it" } else { "them" };
    s.push_str(&format!(
        "\nhelp: give {them} with {} (a string), or in --input '{{\"{}\": …}}' (any JSON)",
        vars.join(" "),
        lacks.first().map_or("", |l| l.name.as_str())
    ));
    s
}

/// "`what` declares no `kind` `key`", the near miss or the declared names, and how to declare
/// it (`declare`, the dialect's own syntax).
pub fn undeclared_message(
    what: &str,
    kind: &str,
    key: &str,
    declared: &[&str],
    declare: &str,
) -> String {
    let hint = pipewright_syntax::suggest::did_you_mean(key, declared.iter().copied())
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    let list = if declared.is_empty() {
        "; it declares none".to_string()
    } else {
        let names: Vec<String> = declared.iter().map(|d| format!("`{d}`")).collect();
        format!("; it declares {}", names.join(", "))
    };
    format!("{what} declares no {kind} `{key}`{hint}{list}\nhelp: {declare}")
}

fn given(input: &Value) -> HashSet<&str> {
    input
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

// ---- recipes ------------------------------------------------------------------------------

/// Names the runner sets itself; an input of one of them is replaced, never read.
const RECIPE_RESERVED: &[&str] = &["recipe", "session", "step", "stage"];

pub(crate) fn recipe(w: &pipewright_ir::Workflow, input: &Value) -> Result<(), String> {
    let given = given(input);
    let declared: Vec<&str> = w.params.iter().map(|p| p.name.as_str()).collect();
    let what = format!("recipe `{}`", w.name);
    let mut keys: Vec<&&str> = given.iter().collect();
    keys.sort();
    for k in keys {
        if declared.contains(k) || RECIPE_RESERVED.contains(k) {
            continue;
        }
        return Err(undeclared_message(
            &what,
            "context variable",
            k,
            &declared,
            &format!(
                "declare it under `context:` so the steps can read `{{{{{k}}}}}`: `{k}: \"\"` \
                 (a default that --var replaces), or `{k}: {{type: string, required: true}}` \
                 (a value every run must give)"
            ),
        ));
    }
    let lacks = recipe_lacks(w, &given);
    if lacks.is_empty() {
        Ok(())
    } else {
        Err(needs_message(&what, &lacks))
    }
}

/// The recipe's required context variables (no default) that the input does not give.
pub(crate) fn recipe_lacks(w: &pipewright_ir::Workflow, given: &HashSet<&str>) -> Vec<Lack> {
    w.params
        .iter()
        .filter(|p| p.required && !given.contains(p.name.as_str()))
        .map(|p| Lack {
            name: p.name.clone(),
            why: "declared under `context:` with `required: true` and no default".into(),
        })
        .collect()
}

// ---- pipelines ----------------------------------------------------------------------------

fn pipeline(
    program: &Program,
    sources: &SourceMap,
    workflow: Option<&str>,
    input: &Value,
) -> Result<(), String> {
    let w = match workflow {
        Some(name) => program.find(name).and_then(|id| program.workflow(id)),
        None => program.workflows.first(),
    };
    // A name the file does not declare is the executor's to report.
    let Some(w) = w else { return Ok(()) };
    let lacks = pipeline_lacks(w, sources, input);
    if lacks.is_empty() {
        Ok(())
    } else {
        Err(needs_message(&format!("pipeline `{}`", w.name), &lacks))
    }
}

/// The stores a pipeline certainly reads before any step writes them and the input does not
/// give, each with where it is first read.
pub fn pipeline_lacks(
    w: &pipewright_ir::Workflow,
    sources: &SourceMap,
    input: &Value,
) -> Vec<Lack> {
    let mut walk = Walk {
        sources,
        layers: vec![given(input).into_iter().map(str::to_string).collect()],
        lacks: Vec::new(),
    };
    walk.region(&w.body);
    walk.lacks
}

struct Walk<'s> {
    sources: &'s SourceMap,
    /// The stores visible at this point: the input and what earlier steps wrote, one layer
    /// per nested scope (a parallel branch or a collect step writes only its own layer).
    layers: Vec<HashSet<String>>,
    lacks: Vec<Lack>,
}

impl Walk<'_> {
    fn has(&self, name: &str) -> bool {
        self.layers.iter().any(|l| l.contains(name))
    }

    fn nested(&mut self, r: &Region) {
        self.layers.push(HashSet::new());
        self.region(r);
        self.layers.pop();
    }

    fn region(&mut self, r: &Region) {
        for n in r.sequence() {
            let Some(node) = r.node(n) else { continue };
            self.node(node);
            if let (Some(o), Some(top)) = (node.output.as_ref(), self.layers.last_mut()) {
                if !o.is_empty() {
                    top.insert(o.clone());
                }
            }
        }
    }

    fn node(&mut self, node: &pipewright_ir::Node) {
        let kind = node.kind.name();
        let continues = node.kind.on_error() == Some(OnErrorKind::Continue);
        match &node.kind {
            NodeKind::Transform { value } => self.expr(value, kind),
            NodeKind::Tool { args, .. } if !continues => {
                for a in args {
                    if let ArgValue::Expr(e) = &a.value {
                        self.expr(e, kind);
                    }
                }
            }
            NodeKind::Shell {
                command: ArgValue::Expr(e),
                ..
            } if !continues => self.expr(e, kind),
            NodeKind::Agent { prompt, .. } => {
                if let Some(t) = prompt.as_r1_template() {
                    for part in &t.parts {
                        if let pipewright_r1::TemplatePart::Expr { expr, .. } = part {
                            self.r1(expr, prompt, kind);
                        }
                    }
                }
            }
            NodeKind::Call(c) => {
                for (_, e) in &c.pass {
                    self.expr(e, kind);
                }
            }
            NodeKind::Match { on, .. } => self.expr(on, kind),
            NodeKind::Fold { source, init, .. } => {
                self.source(source, kind);
                self.expr(init, kind);
            }
            NodeKind::ForEach {
                source, collect, ..
            } => {
                self.source(source, kind);
                self.nested(collect);
            }
            NodeKind::Parallel {
                branches, collect, ..
            } => {
                if !continues {
                    for b in branches {
                        self.nested(&b.region);
                    }
                }
                self.nested(collect);
            }
            _ => {}
        }
    }

    fn source(&mut self, s: &ListSource, kind: &str) {
        if let ListSource::Over(e) = s {
            self.expr(e, kind);
        }
    }

    fn expr(&mut self, e: &pipewright_ir::Expr, kind: &str) {
        if let Some(ast) = e.as_r1() {
            self.r1(ast, e, kind);
        }
    }

    fn r1(&mut self, ast: &pipewright_r1::Expr, at: &pipewright_ir::Expr, kind: &str) {
        for r in pipewright_r1::certain_path_views(ast) {
            let Some(name) = r.first_segment().filter(|_| r.root == "ctx") else {
                continue;
            };
            if self.has(name) || self.lacks.iter().any(|l| l.name == name) {
                continue;
            }
            let place = match self.sources.get(at.span.file) {
                Some(f) => {
                    let span = at.span_of(&f.text, r.range.clone());
                    let lc = f.line_col(span.start as usize);
                    format!("{}:{}:{}", f.name, lc.line, lc.col)
                }
                None => "an unknown place".into(),
            };
            self.lacks.push(Lack {
                name: name.to_string(),
                why: format!(
                    "read as `ctx.{name}` by the `{kind}` step at {place}, before any step writes it"
                ),
            });
        }
    }
}
