//! `run --dry-run`: the plan of a run, built from the checked workflow and the input alone.
//! Nothing executes: no command, no agent turn, no file write, no run store. Commands and
//! prompts are rendered with the values known before the run (the input, defaults, and what
//! pure pipeline `transform` steps compute from them); a value known only at run time is
//! shown as a marker, `<ctx.review: output of step 2 (agent)>`.
//!
//! One shape for every dialect ([`Plan`], [`PlanStep`]); docs/run.md describes its JSON.

use crate::prerun::Lack;
use pipewright_syntax::{SourceMap, Span};
use serde_json::{json, Map, Value};

/// The plan of one run.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub dialect: &'static str,
    pub file: String,
    pub workflow: String,
    pub input: Value,
    /// Facts about the whole run (a state machine's guardrails, a recipe's version).
    pub about: Vec<(String, String)>,
    pub steps: Vec<PlanStep>,
    /// Workflows the run may call or expand, each planned once, by name.
    pub workflows: Vec<(String, Vec<PlanStep>)>,
    /// What the run would refuse to start without (`crate::prerun`).
    pub missing: Vec<Lack>,
    /// The human form, when the dialect writes its own (a state machine's).
    pub human: Option<fn(&Plan) -> String>,
}

/// One step as it would run.
#[derive(Debug, Clone, Default)]
pub struct PlanStep {
    /// Its place: `2`, `3.do.1`, `3.branch a.1`; a state-machine step's or a MEOW step's name.
    pub key: String,
    pub kind: String,
    pub line: usize,
    /// One line: what the step is (`shell`, `agent as reviewer`, `for_each over ctx.files`).
    pub title: String,
    /// What it would do, rendered: `command`, `prompt`, `args`, `output`, `condition`, `needs`…
    pub fields: Vec<(String, String)>,
    /// Nested steps by role (`do`, `collect`, `branch NAME`, `stage`).
    pub regions: Vec<(String, Vec<PlanStep>)>,
}

impl PlanStep {
    pub fn field(&mut self, k: &str, v: impl Into<String>) {
        self.fields.push((k.to_string(), v.into()));
    }
}

impl Plan {
    /// What every dialect's plan says the same way: the dialect, the input, the file of the
    /// program's first workflow.
    pub fn of_run(
        mut self,
        dialect: &'static str,
        program: &pipewright_ir::Program,
        sources: &SourceMap,
        input: &Value,
    ) -> Plan {
        self.dialect = dialect;
        self.input = input.clone();
        if let Some(f) = program.workflows.first().and_then(|w| sources.get(w.file)) {
            self.file = f.name.clone();
        }
        self
    }
}

/// The 1-based line of a span.
pub fn line_of(sources: &SourceMap, span: Span) -> usize {
    sources
        .get(span.file)
        .map_or(0, |f| f.line_col(span.start as usize).line)
}

impl Plan {
    pub fn to_json(&self) -> Value {
        let workflows: Map<String, Value> = self
            .workflows
            .iter()
            .map(|(n, s)| (n.clone(), steps_json(s)))
            .collect();
        let about: Map<String, Value> = self
            .about
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        json!({
            "dry_run": true,
            "dialect": self.dialect,
            "file": self.file,
            "workflow": self.workflow,
            "input": self.input,
            "about": about,
            "steps": steps_json(&self.steps),
            "workflows": workflows,
            "missing": self.missing.iter().map(|l| json!({"name": l.name, "why": l.why})).collect::<Vec<_>>(),
        })
    }

    /// The plan for a reader: a header, then each step with its fields indented under it.
    pub fn to_human(&self) -> String {
        if let Some(human) = self.human {
            return human(self);
        }
        let mut out = format!(
            "dry run of {} `{}` in {} (nothing is executed)\n",
            self.dialect, self.workflow, self.file
        );
        for (k, v) in &self.about {
            out.push_str(&format!("  {k}: {v}\n"));
        }
        human_steps(&self.steps, 1, &mut out);
        for (name, steps) in &self.workflows {
            out.push_str(&format!("\nworkflow `{name}` (called by the run):\n"));
            human_steps(steps, 1, &mut out);
        }
        out
    }
}

fn steps_json(steps: &[PlanStep]) -> Value {
    Value::Array(
        steps
            .iter()
            .map(|s| {
                let fields: Map<String, Value> = s
                    .fields
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                let regions: Map<String, Value> = s
                    .regions
                    .iter()
                    .map(|(k, r)| (k.clone(), steps_json(r)))
                    .collect();
                json!({
                    "key": s.key,
                    "kind": s.kind,
                    "line": s.line,
                    "title": s.title,
                    "fields": fields,
                    "regions": regions,
                })
            })
            .collect(),
    )
}

fn human_steps(steps: &[PlanStep], depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    for s in steps {
        let line = if s.line > 0 {
            format!("  (line {})", s.line)
        } else {
            String::new()
        };
        out.push_str(&format!("{pad}{} {}{line}\n", s.key, s.title));
        for (k, v) in &s.fields {
            if v.contains('\n') {
                out.push_str(&format!("{pad}    {k}:\n"));
                for l in v.lines() {
                    out.push_str(&format!("{pad}      | {l}\n"));
                }
            } else {
                out.push_str(&format!("{pad}    {k}: {v}\n"));
            }
        }
        for (role, inner) in &s.regions {
            out.push_str(&format!("{pad}    {role}:\n"));
            human_steps(inner, depth + 3, out);
        }
    }
}
