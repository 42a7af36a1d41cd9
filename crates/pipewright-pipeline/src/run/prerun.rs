//! What a pipeline run needs before it starts (`pipewright_runtime::prerun`).
//!
//! Only what is certain to fail is refused. For pipelines that is a read of `ctx.NAME` that
//! every evaluation of its expression makes (not right of `and`/`or`, not inside a lambda,
//! not through `get(ctx, "NAME", …)`: `pipewright_r1::certain_path_views`), in a step that
//! runs whenever the run goes on (not in a fold or for_each body, which may have no items, not
//! in a `match` case, which may not be chosen) and whose failure fails the run (not a tool or
//! shell step, nor a parallel branch, under `on_error: continue`).

use pipewright_ir::{ArgValue, ListSource, NodeKind, OnErrorKind, Program, Region};
use pipewright_runtime::prerun::{given, needs_message, Lack};
use pipewright_syntax::SourceMap;
use serde_json::Value;
use std::collections::HashSet;

pub fn pipeline(
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
            NodeKind::Shell(sh) if !continues => {
                if let ArgValue::Expr(e) = &sh.command {
                    self.expr(e, kind)
                }
            }
            NodeKind::Agent(agent) => {
                let pipewright_ir::Agent { prompt, .. } = &**agent;
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
            NodeKind::Match(matching) => {
                let pipewright_ir::Match { on, .. } = &**matching;
                self.expr(on, kind)
            }
            NodeKind::Fold(fold) => {
                let pipewright_ir::Fold { source, init, .. } = &**fold;
                self.source(source, kind);
                self.expr(init, kind);
            }
            NodeKind::ForEach(each) => {
                let pipewright_ir::ForEach {
                    source, collect, ..
                } = &**each;
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
