//! The plan of a state-machine recipe, printed as the spec's §19.3 dry run: the recipe, its
//! guardrails, each step with its outcomes and transitions and its model tier; the JSON plan
//! adds each prompt as it is sent (§2.2, with the outcome block).

use crate::ast::Recipe;
use crate::run::machine::{self, Machine, Transition};
use crate::run::semantics::build_prompt;
use pipewright_ir::Workflow;
use pipewright_runtime::plan::{Plan, PlanStep};
use pipewright_syntax::SourceMap;
use std::path::Path;

/// The plan of `recipe`, the checked recipe `w` was lowered from.
pub fn plan(
    w: &Workflow,
    recipe: &Recipe,
    sources: &SourceMap,
    source_path: Option<&Path>,
) -> Result<Plan, String> {
    let recipes = machine::load(recipe, sources, w.file, source_path)?;
    let Some((id, m)) = recipes.by_id.first() else {
        return Err("the file declares no recipe".into());
    };
    let g = m.guardrails;
    let mut about = vec![("Label".to_string(), m.label.clone())];
    if let Some(d) = w.description.as_ref() {
        about.push(("Description".into(), d.clone()));
    }
    about.push((
        "Guardrails".into(),
        format!(
            "maxStepVisits={}, maxTotalSteps={}, exitOnOther={}",
            g.max_step_visits, g.max_total_steps, g.exit_on_other
        ),
    ));
    let steps = m
        .steps
        .values()
        .map(|s| {
            // A step from an `$include` is written in another file: the plan, which names
            // the recipe's, gives it no line.
            let line = recipes
                .spans
                .get(&s.name)
                .filter(|sp| sp.file == w.file)
                .map_or(0, |sp| pipewright_runtime::plan::line_of(sources, *sp));
            let initial = if s.name == m.initial {
                " (initial)"
            } else {
                ""
            };
            let mut p = PlanStep {
                key: s.name.clone(),
                kind: "step".into(),
                line,
                title: format!("{}{initial}", s.name),
                ..PlanStep::default()
            };
            p.field("Outcomes", outcomes(m, s));
            p.field(
                "Model",
                s.model.clone().unwrap_or_else(|| match &m.model {
                    Some(r) => format!("(recipe: {r})"),
                    None => "(default)".into(),
                }),
            );
            p.field("Prompt", build_prompt(&s.prompt, &s.outcomes));
            p
        })
        .collect();
    // The recipes a restart-new-session may start, planned the same way.
    let workflows = recipes
        .by_id
        .iter()
        .skip(1)
        .map(|(rid, rm)| {
            let steps = rm
                .steps
                .values()
                .map(|s| {
                    let mut p = PlanStep {
                        key: s.name.clone(),
                        kind: "step".into(),
                        title: s.name.clone(),
                        ..PlanStep::default()
                    };
                    p.field("Outcomes", outcomes(rm, s));
                    p
                })
                .collect();
            (rid.clone(), steps)
        })
        .collect();
    Ok(Plan {
        workflow: id.clone(),
        about,
        steps,
        workflows,
        human: Some(human),
        ..Plan::default()
    })
}

fn outcomes(m: &Machine, s: &machine::StepDef) -> String {
    s.outcomes
        .iter()
        .map(|o| {
            let to = match s.transition(o) {
                _ if o == "other" && m.guardrails.exit_on_other => "EXIT".to_string(),
                Some(Transition::Next(n)) => n.clone(),
                Some(Transition::Exit(_)) => "EXIT".into(),
                Some(Transition::Restart(id)) => format!("RESTART {id} (new session)"),
                None => "?".into(),
            };
            format!("{o} → {to}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// §19.3's text; the prompts follow, as they are sent on a step's first visit.
pub fn human(p: &Plan) -> String {
    let mut out = format!("Recipe: {}\n", p.workflow);
    for (k, v) in &p.about {
        out.push_str(&format!("  {k}: {v}\n"));
    }
    out.push_str("\n  Steps:\n");
    for s in &p.steps {
        out.push_str(&format!("    {}\n", s.title));
        for (k, v) in s.fields.iter().filter(|(k, _)| k != "Prompt") {
            out.push_str(&format!("      {k}: {v}\n"));
        }
    }
    for (id, steps) in &p.workflows {
        out.push_str(&format!(
            "\nRecipe: {id} (reached by a restart)\n  Steps:\n"
        ));
        for s in steps {
            out.push_str(&format!("    {}\n", s.title));
            for (k, v) in &s.fields {
                out.push_str(&format!("      {k}: {v}\n"));
            }
        }
    }
    out.push_str("\n  Prompts (as sent):\n");
    for s in &p.steps {
        if let Some((_, prompt)) = s.fields.iter().find(|(k, _)| k == "Prompt") {
            out.push_str(&format!("    {}:\n", s.key));
            for l in prompt.lines() {
                out.push_str(&format!("      | {l}\n"));
            }
        }
    }
    out.push_str("\n(dry run: nothing is executed)\n");
    out
}
