//! The pure rules of the execution loop (spec §2.2–§2.6, §3.2): the prompt with its outcome
//! block, the reminder, outcome extraction, the orchestration state, and the choice of what
//! a reported outcome leads to, guardrails included. Nothing here does I/O, so every rule is
//! a unit test.

use super::machine::{Machine, StepDef, Transition};
use std::collections::BTreeMap;

/// What `other` exits with when `exitOnOther` ends the recipe and the step has no `other`
/// transition to take a reason from (§6.3's convention; docs/statemachine.md "What
/// `exitOnOther` means").
pub const DEFAULT_OTHER_REASON: &str = "user-provided-other";
pub const ORCHESTRATION_ERROR: &str = "orchestration-error";
pub const MAX_TOTAL_STEPS: &str = "max-total-steps";
pub const MAX_RESTARTS: &str = "max-restarts";

/// One line per outcome, as §2.2 lists them: the others sorted, then `other` with its
/// description template.
pub fn outcome_block(outcomes: &[String]) -> String {
    let mut named: Vec<&str> = outcomes
        .iter()
        .map(String::as_str)
        .filter(|o| *o != "other")
        .collect();
    named.sort_unstable();
    named.dedup();
    let mut lines: Vec<String> = named
        .iter()
        .map(|o| format!("{{\"outcome\": {}}}", json_str(o)))
        .collect();
    if outcomes.iter().any(|o| o == "other") {
        lines.push(
            "{\"outcome\": \"other\", \"otherDescription\": \"<brief description>\"}".to_string(),
        );
    }
    lines.join("\n")
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// §2.2: the step's prompt as written, two newlines, the instruction and the outcome block.
pub fn build_prompt(step_prompt: &str, outcomes: &[String]) -> String {
    format!(
        "{step_prompt}\n\nEnd your response with one of these JSON blocks on the last line:\n\n{}",
        outcome_block(outcomes)
    )
}

/// §2.4: sent in the same session when the first reply had no usable outcome.
pub fn reminder_prompt(error: &str, outcomes: &[String]) -> String {
    format!(
        "Your previous response did not include the required JSON outcome block.\nPlease respond now with ONLY the JSON outcome on a single line.\n\nError: {error}\n\nValid responses:\n\n{}\n\nRespond with ONLY the JSON block, nothing else.",
        outcome_block(outcomes)
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub outcome: String,
    /// `otherDescription`, kept only for `other` (§2.3 rule 5: ignored otherwise).
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractError {
    pub error: String,
    /// The candidate line when one was found but did not parse or validate.
    pub malformed_json: Option<String>,
}

/// How many lines at the end of a reply are searched for the outcome (§2.3 step 1).
const TAIL_LINES: usize = 5;

/// A line of the tail that holds the outcome: its trimmed form is `{…}`, or is `{…}` once the
/// code-fence markers around it on the same line are taken off (`` ```json {…} ``` ``).
fn is_candidate(line: &str) -> bool {
    let t = line.trim();
    let braced = |s: &str| s.starts_with('{') && s.ends_with('}');
    braced(t) || ((t.starts_with("```") || t.ends_with("```")) && braced(strip_fences(t)))
}

/// Takes code-fence markers (an opening `` ``` `` with its language word, a closing one) off a
/// candidate line. Only the candidate is touched, never the reply (§2.3: stripping the whole
/// reply would corrupt code blocks the agent wrote).
fn strip_fences(line: &str) -> &str {
    let mut t = line.trim();
    if let Some(rest) = t.strip_prefix("```") {
        // The language word (`json`) runs up to the first space or `{`.
        let end = rest.find(['{', ' ', '\t']).unwrap_or(rest.len());
        t = rest[end..].trim_start();
    }
    if let Some(rest) = t.strip_suffix("```") {
        t = rest.trim_end();
    }
    t
}

/// §2.3: the outcome of a reply, from the most recent of its last five lines that is a JSON
/// object line, validated against the step's outcomes.
pub fn extract_outcome(reply: &str, outcomes: &[String]) -> Result<Extracted, ExtractError> {
    let lines: Vec<&str> = reply.lines().collect();
    let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
    let Some(line) = tail.iter().rev().find(|l| is_candidate(l)) else {
        return Err(ExtractError {
            error: "No JSON block found in response".into(),
            malformed_json: None,
        });
    };
    let candidate = strip_fences(line);
    let malformed = |error: String| ExtractError {
        error,
        malformed_json: Some(candidate.to_string()),
    };
    let value: serde_json::Value =
        serde_json::from_str(candidate).map_err(|e| malformed(format!("Invalid JSON: {e}")))?;
    let outcome = match value.get("outcome") {
        None => return Err(malformed("Missing 'outcome' field".into())),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(_) => return Err(malformed("'outcome' must be a string".into())),
    };
    if !outcomes.contains(&outcome) {
        let mut valid: Vec<&str> = outcomes.iter().map(String::as_str).collect();
        valid.sort_unstable();
        valid.dedup();
        return Err(malformed(format!(
            "Invalid outcome '{outcome}'. Valid outcomes: {}",
            valid.join(", ")
        )));
    }
    let description = if outcome == "other" {
        match value.get("otherDescription").and_then(|d| d.as_str()) {
            Some(d) if !d.trim().is_empty() => Some(d.to_string()),
            _ => {
                return Err(malformed(
                    "Outcome 'other' requires a non-empty 'otherDescription' string".into(),
                ))
            }
        }
    } else {
        None
    };
    Ok(Extracted {
        outcome,
        description,
    })
}

/// The guardrails in force: the recipe's, with the command line's overrides (§2.6: "they can
/// be overridden by CLI flags").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_step_visits: u64,
    pub max_total_steps: u64,
    pub exit_on_other: bool,
}

impl Limits {
    pub fn of(m: &Machine, max_visits: Option<u64>, max_steps: Option<u64>) -> Limits {
        Limits {
            max_step_visits: max_visits.unwrap_or(m.guardrails.max_step_visits),
            max_total_steps: max_steps.unwrap_or(m.guardrails.max_total_steps),
            exit_on_other: m.guardrails.exit_on_other,
        }
    }
}

/// §2.5: the state of one recipe execution (one session). Retries are per execution of a
/// step and live in the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub recipe: String,
    pub current_step: String,
    /// Steps executed so far in this recipe execution, the current one included.
    pub step_count: u64,
    pub visits: BTreeMap<String, u64>,
}

impl State {
    /// §20.2.1: at the initial step, count 1, one visit to it.
    pub fn new(m: &Machine) -> State {
        State {
            recipe: m.id.clone(),
            current_step: m.initial.clone(),
            step_count: 1,
            visits: BTreeMap::from([(m.initial.clone(), 1)]),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "recipe": self.recipe,
            "step": self.current_step,
            "step_count": self.step_count,
            "visits": self.visits,
        })
    }

    /// The state as [`State::to_json`] wrote it (a landing read back on resume).
    pub fn from_json(v: &serde_json::Value) -> Option<State> {
        Some(State {
            recipe: v.get("recipe")?.as_str()?.to_string(),
            current_step: v.get("step")?.as_str()?.to_string(),
            step_count: v.get("step_count")?.as_u64()?,
            visits: v
                .get("visits")?
                .as_object()?
                .iter()
                .map(|(k, n)| Some((k.clone(), n.as_u64()?)))
                .collect::<Option<_>>()?,
        })
    }

    pub fn visits_of(&self, step: &str) -> u64 {
        self.visits.get(step).copied().unwrap_or(0)
    }

    /// §2.5's update on a next-step transition.
    pub fn advance(&mut self, next: &str) {
        self.current_step = next.to_string();
        self.step_count += 1;
        *self.visits.entry(next.to_string()).or_insert(0) += 1;
    }
}

/// What an outcome leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Next(String),
    /// An exit transition (`other` under `exitOnOther` included).
    Exit(String),
    Restart(String),
    /// A guardrail stopped a next-step transition: `max-step-visits-exceeded:<step>` or
    /// `max-total-steps`.
    Guardrail(String),
}

impl Decision {
    /// The reason the run ends with, or `None` for a next step or a restart.
    pub fn exit_reason(&self) -> Option<&str> {
        match self {
            Decision::Exit(r) | Decision::Guardrail(r) => Some(r),
            Decision::Next(_) | Decision::Restart(_) => None,
        }
    }
}

/// §2.1 steps 9–10 and §2.6: the transition of a validated outcome, with the guardrails
/// checked before a next step (only there: exits and restarts are never stopped by them).
/// `None` when the step has no transition for it, which `check` rules out (PW0720).
pub fn decide(step: &StepDef, state: &State, outcome: &str, limits: Limits) -> Option<Decision> {
    let t = step.transition(outcome);
    if outcome == "other" && limits.exit_on_other {
        let reason = step
            .other_reason
            .clone()
            .unwrap_or_else(|| DEFAULT_OTHER_REASON.to_string());
        return Some(Decision::Exit(reason));
    }
    Some(match t? {
        Transition::Exit(r) => Decision::Exit(r.clone()),
        Transition::Restart(id) => Decision::Restart(id.clone()),
        Transition::Next(next) => {
            if state.visits_of(next) >= limits.max_step_visits {
                Decision::Guardrail(format!("max-step-visits-exceeded:{next}"))
            } else if state.step_count >= limits.max_total_steps {
                Decision::Guardrail(MAX_TOTAL_STEPS.to_string())
            } else {
                Decision::Next(next.clone())
            }
        }
    })
}

/// `--max-restarts`: whether one more restart is allowed after `done` of them.
pub fn restart_allowed(done: u64, max: Option<u64>) -> bool {
    max.is_none_or(|m| done < m)
}

/// §1 model tiers: `--model` over the step's tier over the recipe's; `None` leaves the
/// backend's default.
pub fn model_tier<'a>(
    cli: Option<&'a str>,
    step: &'a StepDef,
    machine: &'a Machine,
) -> Option<&'a str> {
    cli.or(step.model.as_deref()).or(machine.model.as_deref())
}

/// The outcome the offline mock reports: the step's first declared outcome that is not
/// `other`, and after a restart one that does not restart again, so a dry run ends.
pub fn mock_choice(step: &StepDef, restarts: u64) -> Option<&str> {
    let named = || step.outcomes.iter().filter(|o| *o != "other");
    named()
        .find(|o| restarts == 0 || !matches!(step.transition(o), Some(Transition::Restart(_))))
        .or_else(|| named().next())
        .or_else(|| step.outcomes.first())
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::machine::Guardrails;

    fn outs(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn step(name: &str, t: &[(&str, Transition)]) -> StepDef {
        let outcomes: Vec<String> = t.iter().map(|(o, _)| o.to_string()).collect();
        StepDef {
            name: name.into(),
            prompt: format!("do {name}"),
            sent: build_prompt(&format!("do {name}"), &outcomes),
            model: None,
            outcomes,
            transitions: t.iter().map(|(o, t)| (o.to_string(), t.clone())).collect(),
            other_reason: t.iter().find_map(|(o, t)| match t {
                Transition::Exit(r) if *o == "other" => Some(r.clone()),
                _ => None,
            }),
        }
    }

    fn machine(steps: Vec<StepDef>, g: Guardrails) -> Machine {
        Machine {
            id: "r".into(),
            label: "R".into(),
            initial: steps[0].name.clone(),
            model: None,
            guardrails: g,
            steps: steps.into_iter().map(|s| (s.name.clone(), s)).collect(),
        }
    }

    fn review_fix() -> Machine {
        machine(
            vec![
                step(
                    "review",
                    &[
                        ("no-issues", Transition::Exit("clean".into())),
                        ("issues-found", Transition::Next("fix".into())),
                        ("other", Transition::Exit("user-provided-other".into())),
                    ],
                ),
                step(
                    "fix",
                    &[
                        ("complete", Transition::Next("review".into())),
                        ("again", Transition::Restart("r".into())),
                    ],
                ),
            ],
            Guardrails::default(),
        )
    }

    // §2.2
    #[test]
    fn prompt_sorts_outcomes_and_puts_other_last() {
        let p = build_prompt("Review it.", &outs(&["other", "no-issues", "issues-found"]));
        assert_eq!(
            p,
            "Review it.\n\nEnd your response with one of these JSON blocks on the last line:\n\n{\"outcome\": \"issues-found\"}\n{\"outcome\": \"no-issues\"}\n{\"outcome\": \"other\", \"otherDescription\": \"<brief description>\"}"
        );
    }

    #[test]
    fn prompt_without_other_has_no_description_line_and_keeps_the_prompt_as_written() {
        let p = build_prompt("Say {{x}}\n", &outs(&["b", "a"]));
        assert!(p.starts_with("Say {{x}}\n\n\nEnd your response"));
        assert!(p.ends_with("{\"outcome\": \"a\"}\n{\"outcome\": \"b\"}"));
        assert!(!p.contains("otherDescription"));
    }

    #[test]
    fn outcome_names_are_json_escaped() {
        assert_eq!(outcome_block(&outs(&["a\"b"])), "{\"outcome\": \"a\\\"b\"}");
    }

    // §2.4
    #[test]
    fn reminder_names_the_error_and_the_valid_replies() {
        let r = reminder_prompt("No JSON block found in response", &outs(&["done", "other"]));
        assert_eq!(
            r,
            "Your previous response did not include the required JSON outcome block.\nPlease respond now with ONLY the JSON outcome on a single line.\n\nError: No JSON block found in response\n\nValid responses:\n\n{\"outcome\": \"done\"}\n{\"outcome\": \"other\", \"otherDescription\": \"<brief description>\"}\n\nRespond with ONLY the JSON block, nothing else."
        );
    }

    // §2.3
    #[test]
    fn extracts_the_last_json_line() {
        let o = outs(&["a", "b"]);
        let e = extract_outcome("I did it.\n{\"outcome\": \"a\"}\n", &o).unwrap();
        assert_eq!(e.outcome, "a");
        assert_eq!(e.description, None);
        // Most recent first.
        let e = extract_outcome("{\"outcome\": \"a\"}\n{\"outcome\": \"b\"}", &o).unwrap();
        assert_eq!(e.outcome, "b");
        // Surrounding blanks.
        let e = extract_outcome("x\n   {\"outcome\": \"b\"}   \n\n", &o).unwrap();
        assert_eq!(e.outcome, "b");
    }

    #[test]
    fn only_the_last_five_lines_are_searched() {
        let o = outs(&["a"]);
        let five_after = "{\"outcome\": \"a\"}\n1\n2\n3\n4\n5";
        assert_eq!(
            extract_outcome(five_after, &o).unwrap_err().error,
            "No JSON block found in response"
        );
        let four_after = "{\"outcome\": \"a\"}\n1\n2\n3\n4";
        assert_eq!(extract_outcome(four_after, &o).unwrap().outcome, "a");
    }

    #[test]
    fn fences_are_stripped_from_the_candidate_only() {
        let o = outs(&["a"]);
        let fenced = "Done.\n```json\n{\"outcome\": \"a\"}\n```";
        assert_eq!(extract_outcome(fenced, &o).unwrap().outcome, "a");
        let inline = "Done.\n```json {\"outcome\": \"a\"} ```";
        assert_eq!(extract_outcome(inline, &o).unwrap().outcome, "a");
        let inline_tight = "Done.\n```{\"outcome\": \"a\"}```";
        assert_eq!(extract_outcome(inline_tight, &o).unwrap().outcome, "a");
        // A code block earlier in the reply is no candidate and is left alone.
        let code = "```json\n{\"outcome\": \"zzz\"}\n```\nline\nline\nline\nline\nline";
        assert!(extract_outcome(code, &o).is_err());
    }

    #[test]
    fn the_most_recent_candidate_is_used_even_when_it_is_broken() {
        let o = outs(&["a"]);
        let e = extract_outcome("{\"outcome\": \"a\"}\n{bad}", &o).unwrap_err();
        assert!(e.error.starts_with("Invalid JSON"), "{}", e.error);
        assert_eq!(e.malformed_json.as_deref(), Some("{bad}"));
    }

    #[test]
    fn the_outcome_field_is_validated() {
        let o = outs(&["a", "other"]);
        let err = |r: &str| extract_outcome(r, &o).unwrap_err();
        assert_eq!(err("{\"result\": \"a\"}").error, "Missing 'outcome' field");
        assert_eq!(err("{\"outcome\": 3}").error, "'outcome' must be a string");
        assert_eq!(
            err("{\"outcome\": \"zz\"}").error,
            "Invalid outcome 'zz'. Valid outcomes: a, other"
        );
        assert_eq!(
            err("{\"outcome\": \"zz\"}").malformed_json.as_deref(),
            Some("{\"outcome\": \"zz\"}")
        );
        assert_eq!(err("no json at all").malformed_json, None);
    }

    #[test]
    fn other_needs_a_description_which_is_ignored_elsewhere() {
        let o = outs(&["a", "other"]);
        assert!(extract_outcome("{\"outcome\": \"other\"}", &o)
            .unwrap_err()
            .error
            .contains("otherDescription"));
        assert!(
            extract_outcome("{\"outcome\": \"other\", \"otherDescription\": \" \"}", &o).is_err()
        );
        let e = extract_outcome(
            "{\"outcome\": \"other\", \"otherDescription\": \"stuck\"}",
            &o,
        )
        .unwrap();
        assert_eq!(e.description.as_deref(), Some("stuck"));
        let e = extract_outcome(
            "{\"outcome\": \"a\", \"otherDescription\": \"ignored\"}",
            &o,
        )
        .unwrap();
        assert_eq!(e.description, None);
    }

    // §2.5
    #[test]
    fn state_starts_at_the_initial_step_and_counts_transitions() {
        let m = review_fix();
        let mut s = State::new(&m);
        assert_eq!(s.current_step, "review");
        assert_eq!(s.step_count, 1);
        assert_eq!(s.visits_of("review"), 1);
        s.advance("fix");
        s.advance("review");
        assert_eq!(s.current_step, "review");
        assert_eq!(s.step_count, 3);
        assert_eq!(s.visits_of("review"), 2);
        assert_eq!(s.visits_of("fix"), 1);
    }

    // §2.1 steps 9–11
    #[test]
    fn transitions_are_chosen_by_outcome() {
        let m = review_fix();
        let s = State::new(&m);
        let l = Limits::of(&m, None, None);
        let review = &m.steps["review"];
        assert_eq!(
            decide(review, &s, "issues-found", l),
            Some(Decision::Next("fix".into()))
        );
        assert_eq!(
            decide(review, &s, "no-issues", l),
            Some(Decision::Exit("clean".into()))
        );
        assert_eq!(
            decide(&m.steps["fix"], &s, "again", l),
            Some(Decision::Restart("r".into()))
        );
        assert_eq!(decide(review, &s, "unknown", l), None);
    }

    // §2.6 rule 1
    #[test]
    fn a_step_visited_max_times_is_not_entered_again() {
        let m = review_fix();
        let mut s = State::new(&m);
        let l = Limits::of(&m, None, None);
        s.advance("fix");
        s.advance("review");
        s.advance("fix");
        s.advance("review"); // review: 3 visits
        assert_eq!(
            decide(&m.steps["fix"], &s, "complete", l),
            Some(Decision::Guardrail(
                "max-step-visits-exceeded:review".into()
            ))
        );
        // fix has 2 visits: one more is allowed.
        assert_eq!(
            decide(&m.steps["review"], &s, "issues-found", l),
            Some(Decision::Next("fix".into()))
        );
    }

    // §2.6 rule 2, and the order of the two checks
    #[test]
    fn the_total_limit_counts_executed_steps() {
        let m = review_fix();
        let mut s = State::new(&m);
        let l = Limits::of(&m, Some(10), Some(3));
        s.advance("fix");
        assert_eq!(
            decide(&m.steps["fix"], &s, "complete", l),
            Some(Decision::Next("review".into()))
        );
        s.advance("review"); // step 3 of 3
        assert_eq!(
            decide(&m.steps["review"], &s, "issues-found", l),
            Some(Decision::Guardrail("max-total-steps".into()))
        );
        // Both exceeded: the per-step limit is checked first.
        let l = Limits::of(&m, Some(1), Some(3));
        assert_eq!(
            decide(&m.steps["review"], &s, "issues-found", l),
            Some(Decision::Guardrail("max-step-visits-exceeded:fix".into()))
        );
    }

    // §2.6: "not on exit/restart transitions"
    #[test]
    fn guardrails_never_stop_exits_or_restarts() {
        let m = review_fix();
        let mut s = State::new(&m);
        for _ in 0..5 {
            s.advance("fix");
            s.advance("review");
        }
        let l = Limits::of(&m, Some(1), Some(1));
        assert_eq!(
            decide(&m.steps["review"], &s, "no-issues", l),
            Some(Decision::Exit("clean".into()))
        );
        assert_eq!(
            decide(&m.steps["fix"], &s, "again", l),
            Some(Decision::Restart("r".into()))
        );
    }

    #[test]
    fn command_line_limits_override_the_recipe() {
        let m = review_fix();
        assert_eq!(
            Limits::of(&m, None, None),
            Limits {
                max_step_visits: 3,
                max_total_steps: 100,
                exit_on_other: true
            }
        );
        let l = Limits::of(&m, Some(7), Some(9));
        assert_eq!((l.max_step_visits, l.max_total_steps), (7, 9));
    }

    // §1 exitOnOther
    #[test]
    fn other_exits_while_exit_on_other_whatever_its_transition() {
        let mut m = machine(
            vec![step(
                "s",
                &[
                    ("done", Transition::Exit("ok".into())),
                    ("other", Transition::Next("s".into())),
                ],
            )],
            Guardrails::default(),
        );
        let s = State::new(&m);
        let l = Limits::of(&m, None, None);
        assert_eq!(
            decide(&m.steps["s"], &s, "other", l),
            Some(Decision::Exit(DEFAULT_OTHER_REASON.into()))
        );
        // The `other` transition's own reason, whatever its form (§8 rule 5).
        let mut with_reason = m.clone();
        if let Some(st) = with_reason.steps.get_mut("s") {
            st.other_reason = Some("needs-triage".into());
        }
        assert_eq!(
            decide(&with_reason.steps["s"], &s, "other", l),
            Some(Decision::Exit("needs-triage".into()))
        );
        m.guardrails.exit_on_other = false;
        let l = Limits::of(&m, None, None);
        assert_eq!(
            decide(&m.steps["s"], &s, "other", l),
            Some(Decision::Next("s".into()))
        );
        // With an exit, its reason is kept.
        let m = review_fix();
        let l = Limits::of(&m, None, None);
        assert_eq!(
            decide(&m.steps["review"], &State::new(&m), "other", l),
            Some(Decision::Exit("user-provided-other".into()))
        );
    }

    // §3.2 --max-restarts
    #[test]
    fn restarts_are_unlimited_unless_capped() {
        assert!(restart_allowed(1000, None));
        assert!(restart_allowed(1, Some(2)));
        assert!(!restart_allowed(2, Some(2)));
        assert!(!restart_allowed(0, Some(0)));
    }

    // §3.2 step 3: fresh state for the target recipe
    #[test]
    fn a_restart_starts_fresh_state() {
        let m = review_fix();
        let mut s = State::new(&m);
        s.advance("fix");
        let fresh = State::new(&m);
        assert_ne!(s, fresh);
        assert_eq!(fresh.step_count, 1);
        assert_eq!(fresh.visits.len(), 1);
    }

    // §1 model tiers
    #[test]
    fn model_resolution_order() {
        let mut m = review_fix();
        m.model = Some("sonnet".into());
        let mut st = m.steps["review"].clone();
        assert_eq!(model_tier(None, &st, &m), Some("sonnet"));
        st.model = Some("haiku".into());
        assert_eq!(model_tier(None, &st, &m), Some("haiku"));
        assert_eq!(model_tier(Some("opus"), &st, &m), Some("opus"));
        m.model = None;
        st.model = None;
        assert_eq!(model_tier(None, &st, &m), None);
    }

    #[test]
    fn the_mock_avoids_other_and_repeated_restarts() {
        let m = review_fix();
        assert_eq!(mock_choice(&m.steps["review"], 0), Some("no-issues"));
        let s = step(
            "c",
            &[
                ("committed", Transition::Restart("r".into())),
                ("nothing", Transition::Exit("x".into())),
            ],
        );
        assert_eq!(mock_choice(&s, 0), Some("committed"));
        assert_eq!(mock_choice(&s, 1), Some("nothing"));
    }
}
