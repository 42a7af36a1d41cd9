//! The typed recipe, built from the JSON tree. Building reports what is wrong with the shape
//! of one file (missing fields, wrong types, unknown and duplicate keys, malformed
//! transitions, guardrails); the rules that relate parts to each other are in `rules`.

use crate::codes;
use crate::json::{Member, Node, Value};
use pipewright_syntax::{suggest, Diagnostic, FileId, Span};

/// A string value and where it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Str {
    pub text: String,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct Recipe {
    pub file: FileId,
    /// The opening `{` of the top-level object.
    pub span: Span,
    pub id: Option<Str>,
    pub label: Option<Str>,
    pub description: Option<Str>,
    pub initial_step: Option<Str>,
    pub model: Option<Str>,
    pub guardrails: Guardrails,
    pub steps: Vec<Step>,
    /// `$include` values with the number of inline steps written before each (its steps are
    /// placed there), resolved by `include`.
    pub includes: Vec<(usize, Str)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Guardrails {
    pub max_step_visits: u64,
    pub max_total_steps: u64,
    pub exit_on_other: bool,
}

impl Default for Guardrails {
    /// The defaults of spec §1.
    fn default() -> Self {
        Guardrails {
            max_step_visits: 3,
            max_total_steps: 100,
            exit_on_other: true,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Step {
    pub name: Str,
    pub prompt: Option<Str>,
    pub model: Option<Str>,
    pub outcomes: Vec<Str>,
    /// The `outcomes` array, for "declared here" labels.
    pub outcomes_span: Option<Span>,
    pub on_outcome: Vec<(Str, Transition)>,
    /// The `$include` value this step came from (`None`: written inline).
    pub included_by: Option<Span>,
}

impl Step {
    pub fn transition(&self, outcome: &str) -> Option<&Transition> {
        self.on_outcome
            .iter()
            .rev()
            .find(|(o, _)| o.text == outcome)
            .map(|(_, t)| t)
    }

    pub fn declares(&self, outcome: &str) -> bool {
        self.outcomes.iter().any(|o| o.text == outcome)
    }
}

#[derive(Debug, Clone)]
pub struct Transition {
    pub span: Span,
    pub target: Target,
    pub reason: Option<Str>,
    /// `reason` is present but not a string (already reported).
    pub reason_bad: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Next(Str),
    Exit,
    Restart(Str),
    /// Malformed (already reported).
    Invalid,
}

pub const ROOT_KEYS: &[&str] = &[
    "id",
    "label",
    "description",
    "initialStep",
    "guardrails",
    "model",
    "steps",
];
pub const GUARDRAIL_KEYS: &[&str] = &["maxStepVisits", "maxTotalSteps", "exitOnOther"];
pub const STEP_KEYS: &[&str] = &["prompt", "model", "outcomes", "onOutcome"];
/// The step keys rule 7 requires (PW0716 when missing).
pub const STEP_REQUIRED: &[&str] = &["prompt", "outcomes", "onOutcome"];
pub const TRANSITION_KEYS: &[&str] = &["nextStep", "action", "recipeId", "reason"];
pub const INCLUDE_KEY: &str = "$include";

/// The root keys a recipe needs (spec §1).
pub const REQUIRED: &[&str] = &[
    "id",
    "label",
    "description",
    "initialStep",
    "steps",
    "guardrails",
];

pub fn head(n: &Node) -> Span {
    Span::new(
        n.span.file,
        n.span.start as usize..n.span.start as usize + 1,
    )
}

/// Duplicate keys (PW0005) and keys outside `allowed` (PW0702, a warning: they are ignored).
pub fn keys(members: &[Member], allowed: &[&str], what: &str, diags: &mut Vec<Diagnostic>) {
    for (i, m) in members.iter().enumerate() {
        if let Some(first) = members[..i].iter().find(|f| f.key == m.key) {
            diags.push(
                Diagnostic::error(
                    "PW0005",
                    m.key_span,
                    format!("`{}` appears twice in this {what}", m.key),
                )
                .with_label("duplicate key")
                .with_secondary(first.key_span, "first written here")
                .with_note("JSON readers keep only the last one; which one a reader keeps is not defined by RFC 8259"),
            );
        }
        if !allowed.contains(&m.key.as_str()) {
            diags.push(
                Diagnostic::warning(
                    codes::UNKNOWN_KEY,
                    m.key_span,
                    format!("unknown key `{}` in a {what}", m.key),
                )
                .with_label("ignored")
                .with_optional_help(suggest::help_for_unknown(&m.key, allowed.iter().copied())),
            );
        }
    }
}

fn wrong_type(field: &str, expected: &str, n: &Node) -> Diagnostic {
    Diagnostic::error(
        codes::WRONG_TYPE,
        n.span,
        format!("`{field}` must be {expected}, found {}", n.kind()),
    )
    .with_label(format!("expected {expected}"))
}

/// A string field; a value of another type is reported and taken as absent.
fn string(m: Option<&Member>, diags: &mut Vec<Diagnostic>) -> Option<Str> {
    let m = m?;
    match m.value.as_str() {
        Some(s) => Some(Str {
            text: s.to_string(),
            span: m.value.span,
        }),
        None => {
            diags.push(wrong_type(&m.key, "a string", &m.value));
            None
        }
    }
}

pub fn recipe(root: &Node, diags: &mut Vec<Diagnostic>) -> Option<Recipe> {
    let Some(members) = root.members() else {
        diags.push(
            Diagnostic::error(
                codes::WRONG_TYPE,
                head(root),
                format!("a recipe is a JSON object, found {}", root.kind()),
            )
            .with_label("not an object"),
        );
        return None;
    };
    keys(members, ROOT_KEYS, "recipe", diags);
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|k| root.member(k).is_none())
        .collect();
    if !missing.is_empty() {
        let list = missing
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        diags.push(
            Diagnostic::error(
                codes::MISSING_FIELD,
                head(root),
                format!("this recipe has no {list}"),
            )
            .with_label("in this recipe")
            .with_note("a recipe needs `id`, `label`, `description`, `initialStep`, `guardrails` and `steps` (spec §1)"),
        );
    }
    let mut recipe = Recipe {
        file: root.span.file,
        span: head(root),
        id: string(root.member("id"), diags),
        label: string(root.member("label"), diags),
        description: string(root.member("description"), diags),
        initial_step: string(root.member("initialStep"), diags),
        model: string(root.member("model"), diags),
        guardrails: root
            .member("guardrails")
            .map(|m| guardrails(&m.value, diags))
            .unwrap_or_default(),
        steps: Vec::new(),
        includes: Vec::new(),
    };
    if let Some(m) = root.member("steps") {
        match m.value.members() {
            Some(steps) => {
                for (i, s) in steps.iter().enumerate() {
                    if let Some(first) = steps[..i].iter().find(|f| f.key == s.key) {
                        diags.push(
                            Diagnostic::error(
                                "PW0005",
                                s.key_span,
                                format!("step `{}` is defined twice", s.key),
                            )
                            .with_label("duplicate key")
                            .with_secondary(first.key_span, "first defined here")
                            .with_note("JSON readers keep only the last one"),
                        );
                    }
                    if s.key.starts_with('$') && s.key != INCLUDE_KEY {
                        diags.push(
                            Diagnostic::warning(
                                codes::UNKNOWN_KEY,
                                s.key_span,
                                format!("unknown key `{}` in `steps`", s.key),
                            )
                            .with_label("ignored")
                            .with_note("the only `$` key of `steps` is `$include`")
                            .with_optional_help(suggest::help_for_unknown(&s.key, [INCLUDE_KEY])),
                        );
                    } else if s.key == INCLUDE_KEY {
                        let at = recipe.steps.len();
                        recipe
                            .includes
                            .extend(include_paths(&s.value, diags).into_iter().map(|p| (at, p)));
                    } else if let Some(step) = step(s, None, diags) {
                        recipe.steps.push(step);
                    }
                }
            }
            None => diags.push(wrong_type("steps", "an object of steps", &m.value)),
        }
    }
    Some(recipe)
}

fn include_paths(n: &Node, diags: &mut Vec<Diagnostic>) -> Vec<Str> {
    let one = |n: &Node, diags: &mut Vec<Diagnostic>| match n.as_str() {
        Some(s) => Some(Str {
            text: s.to_string(),
            span: n.span,
        }),
        None => {
            diags.push(wrong_type(INCLUDE_KEY, "a file name", n));
            None
        }
    };
    match n.elements() {
        Some(items) => items.iter().filter_map(|i| one(i, diags)).collect(),
        None => one(n, diags).into_iter().collect(),
    }
}

fn guardrails(n: &Node, diags: &mut Vec<Diagnostic>) -> Guardrails {
    let mut g = Guardrails::default();
    let Some(members) = n.members() else {
        diags.push(wrong_type("guardrails", "an object", n));
        return g;
    };
    keys(members, GUARDRAIL_KEYS, "guardrails object", diags);
    for (key, slot) in [
        ("maxStepVisits", &mut g.max_step_visits),
        ("maxTotalSteps", &mut g.max_total_steps),
    ] {
        let Some(v) = n.get(key) else { continue };
        let parsed = match &v.value {
            Value::Number(raw) => raw.parse::<u64>().ok().filter(|&x| x > 0),
            _ => None,
        };
        match parsed {
            Some(x) => *slot = x,
            None => diags.push(
                Diagnostic::error(
                    codes::BAD_GUARDRAIL,
                    v.span,
                    format!("`{key}` must be a positive integer"),
                )
                .with_label(match &v.value {
                    Value::Number(_) => "not a positive integer".to_string(),
                    _ => format!("found {}", v.kind()),
                })
                .with_note(
                    "the default is used instead: 3 for `maxStepVisits`, 100 for `maxTotalSteps`",
                ),
            ),
        }
    }
    if let Some(v) = n.get("exitOnOther") {
        match v.value {
            Value::Bool(b) => g.exit_on_other = b,
            _ => diags.push(
                Diagnostic::error(
                    codes::BAD_GUARDRAIL,
                    v.span,
                    "`exitOnOther` must be `true` or `false`",
                )
                .with_label(format!("found {}", v.kind())),
            ),
        }
    }
    g
}

/// One step of a `steps` object (or of an included step file).
pub fn step(m: &Member, included_by: Option<Span>, diags: &mut Vec<Diagnostic>) -> Option<Step> {
    let name = Str {
        text: m.key.clone(),
        span: m.key_span,
    };
    let n = &m.value;
    let Some(members) = n.members() else {
        diags.push(
            Diagnostic::error(
                codes::STEP_FIELD_MISSING,
                n.span,
                format!("step `{}` must be an object, found {}", m.key, n.kind()),
            )
            .with_label("not a step")
            .with_note(
                "a step has `prompt` (a string), `outcomes` (an array) and `onOutcome` (an object)",
            ),
        );
        return None;
    };
    keys(members, STEP_KEYS, "step", diags);
    let rule7 = |field: &str, expected: &str, found: Option<&Node>| {
        let (span, label) = match found {
            Some(v) => (v.span, format!("found {}", v.kind())),
            None => (m.key_span, format!("no `{field}`")),
        };
        Diagnostic::error(
            codes::STEP_FIELD_MISSING,
            span,
            format!("step `{}` needs `{field}` ({expected})", m.key),
        )
        .with_label(label)
    };
    let prompt = match n.get("prompt") {
        Some(v) => match v.as_str() {
            Some(s) => Some(Str {
                text: s.to_string(),
                span: v.span,
            }),
            None => {
                diags.push(rule7("prompt", "a string", Some(v)));
                None
            }
        },
        None => {
            diags.push(rule7("prompt", "a string", None));
            None
        }
    };
    let mut step = Step {
        name,
        prompt,
        model: string(n.member("model"), diags),
        outcomes: Vec::new(),
        outcomes_span: None,
        on_outcome: Vec::new(),
        included_by,
    };
    match n.get("outcomes") {
        Some(v) => {
            match v.elements() {
                Some(items) => {
                    step.outcomes_span = Some(v.span);
                    for item in items {
                        match item.as_str() {
                            Some(s) => {
                                if let Some(first) = step.outcomes.iter().find(|o| o.text == s) {
                                    diags.push(
                                    Diagnostic::warning(
                                        codes::DUPLICATE_OUTCOME,
                                        item.span,
                                        format!("outcome `{s}` is listed twice"),
                                    )
                                    .with_label("again")
                                    .with_secondary(first.span, "first listed here")
                                    .with_note("`outcomes` is a set: the prompt lists each outcome once"),
                                );
                                } else {
                                    step.outcomes.push(Str {
                                        text: s.to_string(),
                                        span: item.span,
                                    });
                                }
                            }
                            None => diags.push(wrong_type("outcomes", "an array of strings", item)),
                        }
                    }
                }
                None => diags.push(rule7("outcomes", "an array of outcome names", Some(v))),
            }
        }
        None => diags.push(rule7("outcomes", "an array of outcome names", None)),
    }
    match n.get("onOutcome") {
        Some(v) => match v.members() {
            Some(ts) => {
                for (i, t) in ts.iter().enumerate() {
                    if let Some(first) = ts[..i].iter().find(|f| f.key == t.key) {
                        diags.push(
                            Diagnostic::error(
                                "PW0005",
                                t.key_span,
                                format!("outcome `{}` has two transitions", t.key),
                            )
                            .with_label("duplicate key")
                            .with_secondary(first.key_span, "first written here")
                            .with_note("JSON readers keep only the last one"),
                        );
                    }
                    let outcome = Str {
                        text: t.key.clone(),
                        span: t.key_span,
                    };
                    step.on_outcome.push((outcome, transition(&t.value, diags)));
                }
            }
            None => diags.push(rule7("onOutcome", "an object of transitions", Some(v))),
        },
        None => diags.push(rule7("onOutcome", "an object of transitions", None)),
    }
    Some(step)
}

pub const ACTIONS: &[&str] = &["exit", "restart-new-session"];

fn transition(n: &Node, diags: &mut Vec<Diagnostic>) -> Transition {
    let mut t = Transition {
        span: n.span,
        target: Target::Invalid,
        reason: None,
        reason_bad: false,
    };
    let bad = |msg: String, span: Span, label: &str| {
        Diagnostic::error(codes::BAD_TRANSITION, span, msg)
            .with_label(label.to_string())
            .with_note("a transition is `{\"nextStep\": STEP}`, `{\"action\": \"exit\", \"reason\": REASON}` or `{\"action\": \"restart-new-session\", \"recipeId\": ID}`")
    };
    let Some(members) = n.members() else {
        diags.push(bad(
            format!("a transition must be an object, found {}", n.kind()),
            n.span,
            "not a transition",
        ));
        return t;
    };
    keys(members, TRANSITION_KEYS, "transition", diags);
    if let Some(m) = n.member("reason") {
        match m.value.as_str() {
            Some(s) => {
                t.reason = Some(Str {
                    text: s.to_string(),
                    span: m.value.span,
                })
            }
            None => {
                t.reason_bad = true;
                diags.push(wrong_type("reason", "a string", &m.value));
            }
        }
    }
    let next = n.member("nextStep");
    let action = n.member("action");
    let recipe_id = n.member("recipeId");
    match (next, action) {
        (Some(ns), Some(a)) => diags.push(
            bad(
                "a transition has both `nextStep` and `action`".into(),
                a.key_span,
                "and an action",
            )
            .with_secondary(ns.key_span, "a next step"),
        ),
        (None, None) => diags.push(bad(
            "a transition needs `nextStep` or `action`".into(),
            head(n),
            "neither `nextStep` nor `action`",
        )),
        (Some(ns), None) => {
            if let Some(r) = recipe_id {
                diags.push(bad(
                    "`recipeId` belongs to a `restart-new-session` transition".into(),
                    r.key_span,
                    "not used by `nextStep`",
                ));
            }
            if let Some(s) = string(Some(ns), diags) {
                t.target = Target::Next(s);
            }
        }
        (None, Some(a)) => match a.value.as_str() {
            Some("exit") => {
                if let Some(r) = recipe_id {
                    diags.push(bad(
                        "`recipeId` belongs to a `restart-new-session` transition".into(),
                        r.key_span,
                        "not used by `exit`",
                    ));
                }
                t.target = Target::Exit;
            }
            Some("restart-new-session") => match recipe_id {
                Some(r) => {
                    if let Some(s) = string(Some(r), diags) {
                        t.target = Target::Restart(s);
                    }
                }
                None => diags.push(bad(
                    "a `restart-new-session` transition needs `recipeId`".into(),
                    a.value.span,
                    "which recipe?",
                )),
            },
            Some(other) => diags.push(
                bad(
                    format!("unknown action `{other}`"),
                    a.value.span,
                    "not an action",
                )
                .with_optional_help(suggest::help_for_unknown(other, ACTIONS.iter().copied())),
            ),
            None => diags.push(wrong_type("action", "a string", &a.value)),
        },
    }
    t
}
