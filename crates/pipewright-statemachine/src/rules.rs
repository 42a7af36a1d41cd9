//! The rules over one loaded recipe: the seven of spec §8 (rule 7, a step's required fields,
//! is checked while building the step), then what the spec implies but never checks.

use crate::ast::{Recipe, Step, Target};
use crate::codes;
use pipewright_syntax::{suggest, Diagnostic};
use std::collections::{HashMap, HashSet, VecDeque};

pub(crate) const MODELS: &[&str] = &["haiku", "sonnet", "opus"];

/// The exit reason an `other` outcome gets when `exitOnOther` ends the recipe and the step has
/// no `other` transition to take a reason from (the spec's convention, §6.3).
pub(crate) const DEFAULT_OTHER_REASON: &str = "user-provided-other";

pub(crate) fn check(r: &Recipe, diags: &mut Vec<Diagnostic>) {
    let names: Vec<&str> = r.steps.iter().map(|s| s.name.text.as_str()).collect();
    // Rule 1.
    if let Some(init) = &r.initial_step {
        if !names.contains(&init.text.as_str()) {
            diags.push(
                Diagnostic::error(
                    codes::INITIAL_STEP_UNKNOWN,
                    init.span,
                    format!("initial step `{}` is not in `steps`", init.text),
                )
                .with_label("no such step")
                .with_optional_help(suggest::help_for_unknown(&init.text, names.iter().copied())),
            );
        }
    }
    // Rule 6 at recipe level.
    if let Some(m) = &r.model {
        model(m, diags);
    }
    for s in &r.steps {
        step(r, s, &names, diags);
    }
    if r.id.as_ref().is_some_and(|id| !kebab(&id.text)) {
        if let Some(id) = &r.id {
            diags.push(
                Diagnostic::error(
                    codes::BAD_ID,
                    id.span,
                    format!("recipe id `{}` is not kebab-case", id.text),
                )
                .with_label("expected lowercase words joined by `-`")
                .with_note("ids are what `restart-new-session` and the command line name a recipe by (spec §1)"),
            );
        }
    }
    reachability(r, diags);
}

fn kebab(s: &str) -> bool {
    !s.is_empty()
        && s.split('-').all(|w| {
            !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

fn model(m: &crate::ast::Str, diags: &mut Vec<Diagnostic>) {
    if !MODELS.contains(&m.text.as_str()) {
        diags.push(
            Diagnostic::error(
                codes::BAD_MODEL,
                m.span,
                format!("`{}` is not a model tier", m.text),
            )
            .with_label("unknown model tier")
            .with_note("model tiers are `haiku`, `sonnet` and `opus`; each backend maps them to its own models")
            .with_optional_help(
                suggest::did_you_mean(&m.text, MODELS.iter().copied())
                    .map(|c| format!("did you mean `{c}`?")),
            ),
        );
    }
}

fn step(r: &Recipe, s: &Step, names: &[&str], diags: &mut Vec<Diagnostic>) {
    let exit_on_other = r.guardrails.exit_on_other;
    if let Some(m) = &s.model {
        model(m, diags);
    }
    for (outcome, t) in &s.on_outcome {
        // Rule 2 (when `outcomes` is missing or malformed, that is the error reported).
        if s.outcomes_span.is_some() && !s.declares(&outcome.text) {
            let mut d = Diagnostic::error(
                codes::UNDECLARED_OUTCOME,
                outcome.span,
                format!(
                    "step `{}` has a transition for `{}`, which is not one of its outcomes",
                    s.name.text, outcome.text
                ),
            )
            .with_label("not in `outcomes`")
            .with_optional_help(suggest::help_for_unknown(
                &outcome.text,
                s.outcomes.iter().map(|o| o.text.as_str()),
            ));
            if let Some(sp) = s.outcomes_span {
                d = d.with_secondary(sp, "the step's outcomes");
            }
            diags.push(d);
        }
        match &t.target {
            // Rule 3.
            Target::Next(n) if !names.contains(&n.text.as_str()) => diags.push(
                Diagnostic::error(
                    codes::NEXT_STEP_UNKNOWN,
                    n.span,
                    format!("next step `{}` is not in `steps`", n.text),
                )
                .with_label("no such step")
                .with_optional_help(suggest::help_for_unknown(&n.text, names.iter().copied())),
            ),
            // Rule 4.
            Target::Exit
                if !t.reason_bad && t.reason.as_ref().is_none_or(|r| r.text.trim().is_empty()) =>
            {
                let span = t.reason.as_ref().map_or(t.span, |r| r.span);
                diags.push(
                    Diagnostic::error(
                        codes::EXIT_WITHOUT_REASON,
                        span,
                        format!(
                            "the exit on `{}` of step `{}` has no reason",
                            outcome.text, s.name.text
                        ),
                    )
                    .with_label(if t.reason.is_some() {
                        "empty reason"
                    } else {
                        "no `reason`"
                    })
                    .with_note("the reason is what the run reports as its exit reason"),
                );
            }
            _ => {}
        }
        if outcome.text == "other" {
            other(s, t, exit_on_other, diags);
        }
    }
    // An outcome the agent may report but that leads nowhere: the run could not go on.
    for o in &s.outcomes {
        if s.transition(&o.text).is_some() || (o.text == "other" && exit_on_other) {
            continue;
        }
        diags.push(
            Diagnostic::error(
                codes::OUTCOME_WITHOUT_TRANSITION,
                o.span,
                format!("outcome `{}` of step `{}` has no transition", o.text, s.name.text),
            )
            .with_label("not in `onOutcome`")
            .with_help(format!("add `\"{}\": {{ \"action\": \"exit\", \"reason\": \"…\" }}` or a `nextStep` to `onOutcome`", o.text)),
        );
    }
}

/// Rule 5 and `exitOnOther`. Every `other` transition carries a `reason` (rule 5; on an exit
/// rule 4 already asks for it): with `exitOnOther` (the default) choosing `other` ends the
/// recipe with that reason whatever the transition's form, so a next step or restart there is
/// never taken (a warning); without it the transition is followed and the reason says why.
fn other(s: &Step, t: &crate::ast::Transition, exit_on_other: bool, diags: &mut Vec<Diagnostic>) {
    let leaves = matches!(t.target, Target::Next(_) | Target::Restart(_));
    if leaves && t.reason.is_none() && !t.reason_bad {
        let d = Diagnostic::error(
            codes::OTHER_WITHOUT_REASON,
            t.span,
            format!(
                "the `other` transition of step `{}` has no `reason`",
                s.name.text
            ),
        )
        .with_label("no `reason`")
        .with_note("spec §8 rule 5: every `other` outcome transition must have a `reason` string");
        diags.push(if exit_on_other {
            d.with_note(
                "with `exitOnOther` true (the default) choosing `other` exits with this reason",
            )
            .with_help(
                "add `\"reason\": \"…\"`, or make it `{\"action\": \"exit\", \"reason\": \"…\"}`",
            )
        } else {
            d.with_help("add `\"reason\": \"…\"` saying why the agent's `other` leads here")
        });
    }
    if exit_on_other && leaves {
        diags.push(
            Diagnostic::warning(
                codes::OTHER_NEVER_TAKEN,
                t.span,
                format!(
                    "the `other` transition of step `{}` is never taken",
                    s.name.text
                ),
            )
            .with_label("`exitOnOther` exits instead")
            .with_note("`exitOnOther` is true (the default): choosing `other` exits the recipe with this transition's `reason`")
            .with_help(
                "make it an exit with a reason, or set `\"exitOnOther\": false` in `guardrails`",
            ),
        );
    }
}

/// Unreachable steps, and reachable steps from which no exit can be reached (only the
/// guardrails would end such a loop).
fn reachability(r: &Recipe, diags: &mut Vec<Diagnostic>) {
    let Some(init) = &r.initial_step else { return };
    let index: HashMap<&str, usize> = r
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.text.as_str(), i))
        .collect();
    let Some(&start) = index.get(init.text.as_str()) else {
        return;
    };
    let next = |s: &Step| -> Vec<usize> {
        s.on_outcome
            .iter()
            .filter(|(o, _)| !(o.text == "other" && r.guardrails.exit_on_other))
            .filter_map(|(_, t)| match &t.target {
                Target::Next(n) => index.get(n.text.as_str()).copied(),
                _ => None,
            })
            .collect()
    };
    let succ: Vec<Vec<usize>> = r.steps.iter().map(next).collect();
    let mut seen = vec![false; r.steps.len()];
    let mut queue = VecDeque::from([start]);
    seen[start] = true;
    while let Some(i) = queue.pop_front() {
        for &j in &succ[i] {
            if !seen[j] {
                seen[j] = true;
                queue.push_back(j);
            }
        }
    }
    let mut unreachable_reported = HashSet::new();
    for (i, s) in r.steps.iter().enumerate() {
        if !seen[i] && unreachable_reported.insert(s.name.text.as_str()) {
            diags.push(
                Diagnostic::warning(
                    codes::UNREACHABLE_STEP,
                    s.name.span,
                    format!(
                        "step `{}` is never reached from `{}`",
                        s.name.text, init.text
                    ),
                )
                .with_label("unreachable")
                .with_note("no `nextStep` chain from the initial step leads here"),
            );
        }
    }
    // A step can leave the recipe when it has an exit or restart transition, or declares
    // `other` while `exitOnOther` holds.
    let leaves = |s: &Step| {
        (r.guardrails.exit_on_other && s.declares("other"))
            || s.on_outcome
                .iter()
                .any(|(_, t)| matches!(t.target, Target::Exit | Target::Restart(_)))
    };
    let mut can_end: Vec<bool> = r.steps.iter().map(leaves).collect();
    loop {
        let mut changed = false;
        for i in 0..r.steps.len() {
            if !can_end[i] && succ[i].iter().any(|&j| can_end[j]) {
                can_end[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (i, s) in r.steps.iter().enumerate() {
        if seen[i] && !can_end[i] {
            diags.push(
                Diagnostic::warning(
                    codes::NO_EXIT_REACHABLE,
                    s.name.span,
                    format!("no exit can be reached from step `{}`", s.name.text),
                )
                .with_label("every path from here loops")
                .with_note(
                    "only the guardrails (`maxStepVisits`, `maxTotalSteps`) would end the run",
                ),
            );
        }
    }
}
