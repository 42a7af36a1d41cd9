//! The most agent calls a workflow can make, known before it runs (`check --worst-case`).
//!
//! Agent calls are what a run pays for, so a budget (`--max-agent-calls`) is easier to set when
//! the ceiling is known. The count is an upper bound: every conditional step is assumed to run,
//! every `match` to take its costliest case, every retry to be spent. It is unknown ("no static
//! bound") where the number of repetitions is known only at run time: a fan-out over a list
//! computed by the run, a loop without a cap, a cycle of steps, another workflow file.

use crate::ir::{ListSource, LoopMode, NodeKind, Program, Region, WorkflowId};
use petgraph::algo::is_cyclic_directed;
use pipewright_r1::ast::ExprKind;
use pipewright_syntax::Span;

/// An upper bound on agent calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Calls {
    AtMost(u64),
    /// No bound can be known before the run; `at` is the step that makes it so.
    Unbounded {
        at: Span,
        why: String,
    },
}

impl Calls {
    fn add(self, other: Calls) -> Calls {
        match (self, other) {
            (Calls::AtMost(a), Calls::AtMost(b)) => Calls::AtMost(a.saturating_add(b)),
            (u @ Calls::Unbounded { .. }, _) | (_, u @ Calls::Unbounded { .. }) => u,
        }
    }

    /// The costlier of two alternatives.
    fn max(self, other: Calls) -> Calls {
        match (self, other) {
            (Calls::AtMost(a), Calls::AtMost(b)) => Calls::AtMost(a.max(b)),
            (u @ Calls::Unbounded { .. }, _) | (_, u @ Calls::Unbounded { .. }) => u,
        }
    }

    /// `self` repeated `times` times: a body that makes no call costs nothing however often it
    /// runs, so an unknown repetition count only matters for a body that asks an agent.
    fn times(self, times: Repeat) -> Calls {
        match (self, times) {
            (Calls::AtMost(0), _) => Calls::AtMost(0),
            (Calls::AtMost(n), Repeat::AtMost(k)) => Calls::AtMost(n.saturating_mul(k)),
            (Calls::AtMost(_), Repeat::Unknown { at, why }) => Calls::Unbounded { at, why },
            (u @ Calls::Unbounded { .. }, _) => u,
        }
    }
}

/// How many times a body runs.
enum Repeat {
    AtMost(u64),
    Unknown { at: Span, why: String },
}

/// One workflow's worst case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorstCase {
    pub workflow: WorkflowId,
    /// Steps that ask an agent, wherever they sit (in this workflow's own body).
    pub agent_steps: usize,
    pub calls: Calls,
    /// Fan-outs and loops that multiply the calls of their body, with what bounds them
    /// (`for_each over 3 items`, `at most 4 at once`).
    pub factors: Vec<(Span, String)>,
    /// Whether the workflow starts agent sessions (MEOW `spawn`) whose calls nobody counts.
    pub spawns_sessions: bool,
}

/// The worst case of every workflow of `program`.
pub fn worst_cases(program: &Program) -> Vec<WorstCase> {
    (0..program.workflows.len())
        .map(|i| {
            let mut w = Walk {
                program,
                stack: vec![WorkflowId(i)],
                agent_steps: 0,
                factors: Vec::new(),
                spawns_sessions: false,
                top: true,
            };
            let calls = w.region(&program.workflows[i].body, WorkflowId(i));
            WorstCase {
                workflow: WorkflowId(i),
                agent_steps: w.agent_steps,
                calls,
                factors: w.factors,
                spawns_sessions: w.spawns_sessions,
            }
        })
        .collect()
}

struct Walk<'p> {
    program: &'p Program,
    /// The workflows being walked, innermost last: a call back into one of them is recursion.
    stack: Vec<WorkflowId>,
    agent_steps: usize,
    factors: Vec<(Span, String)>,
    spawns_sessions: bool,
    /// Whether the walk is in the workflow asked about (steps of called workflows are theirs).
    top: bool,
}

impl Walk<'_> {
    fn region(&mut self, region: &Region, wf: WorkflowId) -> Calls {
        let mut total = Calls::AtMost(0);
        let mut first_costly = None;
        for n in region.nodes() {
            let Some(node) = region.node(n) else { continue };
            let c = self.node(&node.kind, node.span, wf);
            if c != Calls::AtMost(0) && first_costly.is_none() {
                first_costly = Some(node.span);
            }
            total = total.add(c);
        }
        // A state machine's steps may go round (review ⇄ fix): each step can run as often as
        // the workflow's step cap allows, and without a cap there is no bound.
        if is_cyclic_directed(&*region.graph) {
            if let Some(at) = first_costly {
                let steps = self.program.workflows[wf.0].limits.max_total_steps;
                let per_step = region
                    .nodes()
                    .into_iter()
                    .filter_map(|n| region.node(n))
                    .map(|node| self.peek(&node.kind, node.span, wf))
                    .fold(Calls::AtMost(0), Calls::max);
                return match steps {
                    Some(cap) => {
                        if self.top {
                            self.factors.push((
                                self.program.workflows[wf.0].span,
                                match self.program.workflows[wf.0].limits.turns_per_agent_step {
                                    Some(t) if t > 1 => format!(
                                        "its steps form a cycle, capped at {cap} steps in all, \
                                     each of up to {t} agent turns"
                                    ),
                                    _ => format!(
                                        "its steps form a cycle, capped at {cap} steps in all"
                                    ),
                                },
                            ));
                        }
                        per_step.times(Repeat::AtMost(cap))
                    }
                    None => Calls::Unbounded {
                        at,
                        why: "its steps form a cycle with no cap on the steps taken".into(),
                    },
                };
            }
        }
        total
    }

    /// A node's cost without recording anything about it (for a cycle's per-step maximum).
    fn peek(&mut self, kind: &NodeKind, span: Span, wf: WorkflowId) -> Calls {
        let (agent_steps, factors, top) = (self.agent_steps, self.factors.len(), self.top);
        self.top = false;
        let c = self.node(kind, span, wf);
        self.agent_steps = agent_steps;
        self.factors.truncate(factors);
        self.top = top;
        c
    }

    fn factor(&mut self, span: Span, text: String) {
        if self.top {
            self.factors.push((span, text));
        }
    }

    fn node(&mut self, kind: &NodeKind, span: Span, wf: WorkflowId) -> Calls {
        match kind {
            NodeKind::Agent { .. } => {
                self.count_agent();
                Calls::AtMost(
                    self.program.workflows[wf.0]
                        .limits
                        .turns_per_agent_step
                        .unwrap_or(1),
                )
            }
            NodeKind::Ask(ask) => {
                self.count_agent();
                Calls::AtMost(u64::from(ask.retry.max_attempts.max(1)))
            }
            NodeKind::Spawn { .. } => {
                if self.top {
                    self.spawns_sessions = true;
                }
                Calls::AtMost(0)
            }
            NodeKind::Call(c)
            | NodeKind::Expand {
                call: c,
                foreach: false,
            } => self.call(c.resolved, c.span, &c.target),
            NodeKind::Expand {
                call: c,
                foreach: true,
            } => {
                let body = self.call(c.resolved, c.span, &c.target);
                body.times(Repeat::Unknown {
                    at: span,
                    why: "it expands a template once per item of a list known only at run time"
                        .into(),
                })
            }
            NodeKind::Match(m) => {
                let mut worst = Calls::AtMost(0);
                let mut costliest = None;
                for c in m.cases.iter().map(|c| &c.target).chain(m.default.as_ref()) {
                    let cost = self.call(c.resolved, c.span, &c.target);
                    if let (Calls::AtMost(n), Calls::AtMost(w)) = (&cost, &worst) {
                        if n > w {
                            costliest = Some((c.target.as_str(), *n));
                        }
                    }
                    worst = worst.max(cost);
                }
                if let (Some((target, n)), Calls::AtMost(_)) = (costliest, &worst) {
                    let calls = if n == 1 { "call" } else { "calls" };
                    self.factor(
                        span,
                        format!("its costliest case, `{target}`, makes {n} agent {calls}"),
                    );
                }
                worst
            }
            NodeKind::Stage { body, .. } => self.region(body, wf),
            NodeKind::Parallel {
                branches, collect, ..
            } => {
                let mut total = self.region(collect, wf);
                for b in branches {
                    total = total.add(self.region(&b.region, wf));
                }
                total
            }
            NodeKind::Fold(f) => {
                let body = self.region(&f.body, wf);
                let times = self.list_repeat(&f.source, f.max_items, span, "fold", None);
                body.times(times)
            }
            NodeKind::ForEach(each) => {
                let body = self.region(&each.body, wf);
                let collect = self.region(&each.collect, wf);
                let times =
                    self.list_repeat(&each.source, None, span, "for_each", each.max_parallel);
                body.times(times).add(collect)
            }
            NodeKind::Loop(l) => {
                let body = self.region(&l.body, wf);
                let times = match &l.mode {
                    LoopMode::Each {
                        source,
                        max_items,
                        parallel,
                        ..
                    } => {
                        let literal = source.as_r1().and_then(|e| match &e.kind {
                            ExprKind::List(items) => Some(items.len() as u64),
                            _ => None,
                        });
                        self.bounded(span, "foreach", literal, *max_items, *parallel)
                    }
                    LoopMode::While { max_iterations, .. } => {
                        self.factor(span, format!("while: at most {max_iterations} iterations"));
                        Repeat::AtMost(*max_iterations)
                    }
                };
                body.times(times)
            }
            NodeKind::SubWorkflow(_) => Calls::Unbounded {
                at: span,
                why: "it runs another workflow file, which this count does not read".into(),
            },
            NodeKind::Transform { .. }
            | NodeKind::Tool { .. }
            | NodeKind::Shell { .. }
            | NodeKind::Gate { .. }
            | NodeKind::Command(_)
            | NodeKind::Kill { .. }
            | NodeKind::Exit { .. } => Calls::AtMost(0),
        }
    }

    fn count_agent(&mut self) {
        if self.top {
            self.agent_steps += 1;
        }
    }

    fn call(&mut self, target: Option<WorkflowId>, span: Span, name: &str) -> Calls {
        let Some(id) = target else {
            return Calls::Unbounded {
                at: span,
                why: format!("it runs `{name}`, whose steps are not part of this file's graph"),
            };
        };
        if self.stack.contains(&id) {
            return Calls::Unbounded {
                at: span,
                why: format!("it calls `{name}` recursively"),
            };
        }
        let Some(w) = self.program.workflows.get(id.0) else {
            return Calls::AtMost(0);
        };
        self.stack.push(id);
        let top = std::mem::replace(&mut self.top, false);
        let c = self.region(&w.body, id);
        self.top = top;
        self.stack.pop();
        c
    }

    fn list_repeat(
        &mut self,
        source: &ListSource,
        max_items: Option<u64>,
        span: Span,
        what: &str,
        parallel: Option<u64>,
    ) -> Repeat {
        let literal = match source {
            ListSource::Items(pipewright_r1::Value::List(items)) => Some(items.len() as u64),
            ListSource::Over(e) => e.as_r1().and_then(|e| match &e.kind {
                ExprKind::List(items) => Some(items.len() as u64),
                _ => None,
            }),
            _ => None,
        };
        self.bounded(span, what, literal, max_items, parallel)
    }

    /// The repetitions of a fan-out or loop over a list: its literal length, else its cap.
    fn bounded(
        &mut self,
        span: Span,
        what: &str,
        literal: Option<u64>,
        cap: Option<u64>,
        parallel: Option<u64>,
    ) -> Repeat {
        let at_once = parallel.map_or_else(String::new, |p| format!(", at most {p} at once"));
        let n = match (literal, cap) {
            (Some(l), Some(c)) => Some(l.min(c)),
            (Some(l), None) => Some(l),
            (None, c) => c,
        };
        match n {
            Some(n) => {
                let which = if literal.is_some() { "items" } else { "items (its cap)" };
                self.factor(span, format!("{what} over {n} {which}{at_once}"));
                Repeat::AtMost(n)
            }
            None => Repeat::Unknown {
                at: span,
                why: format!(
                    "this {what} runs its body once per item of a list known only at run time{at_once}"
                ),
            },
        }
    }
}
