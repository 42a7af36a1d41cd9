//! The schema's structural rules: required fields, formats, ranges, enumerations, per-type
//! fields, loop-field dependencies and `depends_on`.

use crate::ast::*;
use crate::codes;
use pipewright_syntax::suggest::help_for_unknown;
use pipewright_syntax::{Diagnostic, Span};
use std::collections::HashMap;

pub const RESERVED: &[&str] = &["recipe", "session", "step"];
pub const MODEL_CLASSES: &[&str] = &["reasoning", "fast", "vision", "research"];
/// The values of the enumerated fields (the JSON Schema's enums come from these too).
pub const STEP_TYPES: &[&str] = &["agent", "recipe", "bash"];
pub const ON_ERROR_VALUES: &[&str] = &["fail", "continue", "skip_remaining"];
pub const RETRY_BACKOFFS: &[&str] = &["exponential", "linear"];
pub const SPAWN_MODES: &[&str] = &["subprocess"];
pub const APPROVAL_DEFAULTS: &[&str] = &["approve", "deny"];
/// The runner's `rate_limiting.backoff` defaults, used when only one bound is written.
const DEFAULT_INITIAL_DELAY_MS: i64 = 1000;
const DEFAULT_MAX_DELAY_MS: i64 = 60_000;

pub struct Validator {
    pub diags: Vec<Diagnostic>,
    /// Where to point when a required top-level field is missing.
    anchor: Span,
}

/// Python's `str.isalnum` after removing the allowed punctuation: the runner's name rule.
fn alnum_after_removing(s: &str, allowed: &[char]) -> bool {
    let rest: Vec<char> = s.chars().filter(|c| !allowed.contains(c)).collect();
    !rest.is_empty() && rest.iter().all(|c| c.is_alphanumeric())
}

/// The runner's rule for output names: letters, digits and `_`, with at least one letter or
/// digit.
pub fn is_variable_name(s: &str) -> bool {
    alnum_after_removing(s, &['_'])
}

impl Validator {
    pub fn new(anchor: Span) -> Validator {
        Validator {
            diags: Vec::new(),
            anchor,
        }
    }

    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    pub fn recipe(&mut self, r: &Recipe) {
        self.required_text(r, &r.name, "name", "a recipe needs a `name`");
        self.required_text(
            r,
            &r.description,
            "description",
            "a recipe needs a `description`",
        );
        self.required_text(r, &r.version, "version", "a recipe needs a `version`");
        if let Some(n) = &r.name {
            if !alnum_after_removing(&n.value, &['-', '_']) {
                self.push(
                    Diagnostic::error(
                        codes::BAD_NAME,
                        n.span,
                        format!(
                            "recipe name `{}` may contain only letters, digits, `-` and `_`",
                            n.value
                        ),
                    )
                    .with_label("invalid recipe name")
                    .with_help(format!("for example `{}`", suggest_name(&n.value))),
                );
            } else if n.value.chars().count() > 100 {
                self.push(
                    Diagnostic::error(
                        codes::BAD_NAME,
                        n.span,
                        "recipe name is longer than 100 characters",
                    )
                    .with_label("too long"),
                );
            }
        }
        if let Some(d) = &r.description {
            let n = d.value.chars().count();
            if n > 500 {
                self.push(
                    Diagnostic::warning(
                        codes::LONG_TEXT,
                        d.span,
                        format!("description is {n} characters long; the schema allows 500"),
                    )
                    .with_label("too long for the schema")
                    .with_help(
                        "keep the description to one paragraph and move details to comments",
                    ),
                );
            } else if d.value.trim().is_empty() {
                self.push(
                    Diagnostic::error(codes::MISSING_FIELD, d.span, "description is empty")
                        .with_label("empty"),
                );
            }
        }
        if let Some(v) = &r.version {
            self.version(v);
        }
        for t in [&r.created, &r.updated].into_iter().flatten() {
            if !is_iso8601(&t.value) {
                self.push(
                    Diagnostic::warning(
                        codes::BAD_TIMESTAMP,
                        t.span,
                        format!("`{}` is not an ISO 8601 date-time", t.value),
                    )
                    .with_label("expected e.g. 2025-11-18T14:30:00Z"),
                );
            }
        }
        for c in &r.context {
            if RESERVED.contains(&c.key.value.as_str()) {
                self.push(
                    Diagnostic::error(
                        codes::RESERVED_NAME,
                        c.key.span,
                        format!("`{}` is reserved", c.key.value),
                    )
                    .with_label("the runner overwrites this context variable")
                    .with_help("choose another name"),
                );
            }
        }
        if let Some(rc) = &r.recursion {
            self.recursion(rc);
        }
        if let Some(rl) = &r.rate_limiting {
            self.rate_limiting(rl);
        }
        self.range(
            &r.min_delay_between_calls_ms,
            "orchestrator.config.min_delay_between_calls_ms",
            0,
            None,
        );
        let steps = r.steps.as_ref().filter(|s| !s.value.is_empty());
        let stages = r.stages.as_ref().filter(|s| !s.value.is_empty());
        match (steps, stages) {
            (Some(_), Some(st)) => self.push(
                Diagnostic::error(
                    codes::STEPS_XOR_STAGES,
                    st.span,
                    "a recipe cannot have both `steps` and `stages`",
                )
                .with_label("stages given here")
                .with_secondary(
                    r.steps.as_ref().map_or(st.span, |s| s.span),
                    "and steps here",
                )
                .with_help("put the flat steps into a stage, or drop `stages`"),
            ),
            (None, None) => {
                let at = r
                    .steps
                    .as_ref()
                    .map(|s| s.span)
                    .or(r.stages.as_ref().map(|s| s.span))
                    .unwrap_or(self.anchor);
                self.push(
                    Diagnostic::error(codes::STEPS_XOR_STAGES, at, "the recipe has no steps")
                        .with_label("at least one step or stage is required")
                        .with_help("add `steps:` with at least one step"),
                )
            }
            _ => {}
        }
        if let Some(stages) = &r.stages {
            let mut names: HashMap<&str, Span> = HashMap::new();
            for st in &stages.value {
                self.stage(st);
                if let Some(n) = &st.name {
                    if let Some(first) = names.get(n.value.as_str()) {
                        self.push(
                            Diagnostic::error(
                                codes::DUPLICATE,
                                n.span,
                                format!("duplicate stage name `{}`", n.value),
                            )
                            .with_label("used again here")
                            .with_secondary(*first, "first used here"),
                        );
                    } else {
                        names.insert(&n.value, n.span);
                    }
                }
            }
        }
        let all = r.all_steps();
        for (_, s) in &all {
            self.step(s, false);
        }
        self.unique_ids(&all.iter().map(|(_, s)| *s).collect::<Vec<_>>());
        self.depends_on(&all.iter().map(|(_, s)| *s).collect::<Vec<_>>());
    }

    fn required_text(&mut self, r: &Recipe, t: &Option<Text>, field: &str, msg: &str) {
        if t.is_none() && !r.mistyped.contains(&field) {
            self.push(
                Diagnostic::error(codes::MISSING_FIELD, self.anchor, msg)
                    .with_label(format!("`{field}` is missing"))
                    .with_help(format!("add `{field}: …` at the top level")),
            );
        }
    }

    fn version(&mut self, v: &Text) {
        let s = v.value.as_str();
        let problem = if let Some(rest) = s.strip_prefix('v') {
            Some((
                "a version has no `v` prefix",
                format!("write `{}`", pad_version(rest)),
            ))
        } else if s.contains('-') || s.contains('+') {
            Some((
                "pre-release and build tags are not allowed",
                "use MAJOR.MINOR.PATCH only".to_string(),
            ))
        } else if s.split('.').count() != 3 {
            Some((
                "a version has exactly three parts",
                "write MAJOR.MINOR.PATCH, e.g. `1.0.0`".to_string(),
            ))
        } else if !s
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            Some((
                "version parts must be numbers",
                "write MAJOR.MINOR.PATCH, e.g. `1.0.0`".to_string(),
            ))
        } else {
            None
        };
        if let Some((label, help)) = problem {
            self.push(
                Diagnostic::error(
                    codes::BAD_VERSION,
                    v.span,
                    format!("version `{s}` is not semantic versioning (MAJOR.MINOR.PATCH)"),
                )
                .with_label(label)
                .with_help(help),
            );
        }
    }

    fn range(&mut self, v: &Option<Spanned<i64>>, field: &str, lo: i64, hi: Option<i64>) {
        let Some(v) = v else { return };
        let bad = v.value < lo || hi.is_some_and(|h| v.value > h);
        if bad {
            let allowed = match hi {
                Some(h) => format!("{lo} to {h}"),
                None if lo == 1 => "a positive integer".to_string(),
                None => format!("at least {lo}"),
            };
            self.push(
                Diagnostic::error(
                    codes::OUT_OF_RANGE,
                    v.span,
                    format!("`{field}` is {}, must be {allowed}", v.value),
                )
                .with_label(format!("allowed: {allowed}")),
            );
        }
    }

    fn recursion(&mut self, r: &Recursion) {
        self.range(&r.max_depth, "recursion.max_depth", 1, Some(20));
        self.range(
            &r.max_total_steps,
            "recursion.max_total_steps",
            1,
            Some(1000),
        );
    }

    fn rate_limiting(&mut self, r: &RateLimiting) {
        // The runner's limits; it reports the upper bounds as "unusually high" errors too.
        self.range(
            &r.max_concurrent_llm,
            "rate_limiting.max_concurrent_llm",
            1,
            Some(100),
        );
        self.range(
            &r.min_delay_ms,
            "rate_limiting.min_delay_ms",
            0,
            Some(60_000),
        );
        if let Some(b) = &r.backoff {
            self.range(&b.initial_delay_ms, "backoff.initial_delay_ms", 100, None);
            self.range(
                &b.reset_after_success,
                "backoff.reset_after_success",
                1,
                None,
            );
            // An omitted bound takes the runner's default in this comparison.
            match (&b.initial_delay_ms, &b.max_delay_ms) {
                (Some(i), Some(m)) if m.value < i.value => self.push(
                    Diagnostic::error(
                        codes::OUT_OF_RANGE,
                        m.span,
                        format!(
                            "`backoff.max_delay_ms` ({}) is below `initial_delay_ms` ({})",
                            m.value, i.value
                        ),
                    )
                    .with_label("must be at least initial_delay_ms")
                    .with_secondary(i.span, "initial delay"),
                ),
                (None, Some(m)) if m.value < DEFAULT_INITIAL_DELAY_MS => self.push(
                    Diagnostic::error(
                        codes::OUT_OF_RANGE,
                        m.span,
                        format!(
                            "`backoff.max_delay_ms` ({}) is below the default `initial_delay_ms` ({DEFAULT_INITIAL_DELAY_MS})",
                            m.value
                        ),
                    )
                    .with_label("must be at least initial_delay_ms")
                    .with_help("set `initial_delay_ms` too, or raise `max_delay_ms`"),
                ),
                (Some(i), None) if i.value > DEFAULT_MAX_DELAY_MS => self.push(
                    Diagnostic::error(
                        codes::OUT_OF_RANGE,
                        i.span,
                        format!(
                            "`backoff.initial_delay_ms` ({}) is above the default `max_delay_ms` ({DEFAULT_MAX_DELAY_MS})",
                            i.value
                        ),
                    )
                    .with_label("must be at most max_delay_ms")
                    .with_help("set `max_delay_ms` too, or lower `initial_delay_ms`"),
                ),
                _ => {}
            }
            if let Some(m) = &b.multiplier {
                if m.value < 1.0 || !m.value.is_finite() {
                    self.push(
                        Diagnostic::error(
                            codes::OUT_OF_RANGE,
                            m.span,
                            format!("`backoff.multiplier` is {}, must be at least 1.0", m.value),
                        )
                        .with_label("a backoff must not shrink"),
                    );
                }
            }
        }
    }

    fn stage(&mut self, st: &Stage) {
        match &st.name {
            None if st.mistyped.contains(&"name") => {}
            None => self.push(
                Diagnostic::error(
                    codes::MISSING_FIELD,
                    st.span.sub(0..0),
                    "a stage needs a `name`",
                )
                .with_label("`name` is missing")
                .with_help("add `name: …` to the stage"),
            ),
            Some(n)
                if !alnum_after_removing(&n.value, &['-', '_', ' '])
                    || n.value.chars().count() > 100 =>
            {
                self.push(
                    Diagnostic::error(
                        codes::BAD_NAME,
                        n.span,
                        format!(
                            "stage name `{}` may contain only letters, digits, spaces, `-` and `_`",
                            n.value
                        ),
                    )
                    .with_label("invalid stage name")
                    .with_help("approval commands address stages by name; drop other punctuation"),
                )
            }
            _ => {}
        }
        if st.steps.is_empty() {
            self.push(
                Diagnostic::error(
                    codes::MISSING_FIELD,
                    st.steps_span.unwrap_or(st.span),
                    "a stage needs at least one step",
                )
                .with_label("no steps"),
            );
        }
        if let Some(a) = &st.approval {
            let required = a.required.is_some_and(|r| r.value);
            if required && a.prompt.as_ref().is_none_or(|p| p.value.trim().is_empty()) {
                self.push(
                    Diagnostic::error(
                        codes::MISSING_FIELD,
                        a.span,
                        "`approval.prompt` is required when `approval.required` is true",
                    )
                    .with_label("no prompt for the reviewer"),
                );
            }
            if let Some(t) = &a.timeout {
                if t.value < 0 {
                    self.push(
                        Diagnostic::error(
                            codes::OUT_OF_RANGE,
                            t.span,
                            "`approval.timeout` must not be negative",
                        )
                        .with_label("0 means wait forever"),
                    );
                }
            }
            if let Some(d) = &a.default {
                self.enum_value(d, "approval.default", APPROVAL_DEFAULTS);
            }
        }
    }

    fn enum_value(&mut self, t: &Text, field: &str, allowed: &[&str]) {
        if !allowed.contains(&t.value.as_str()) {
            self.push(
                Diagnostic::error(
                    codes::BAD_ENUM,
                    t.span,
                    format!(
                        "`{field}` must be one of {}, found `{}`",
                        quote_list(allowed),
                        t.value
                    ),
                )
                .with_label("not an allowed value")
                .with_optional_help(help_for_unknown(&t.value, allowed.iter().copied())),
            );
        }
    }

    fn var_name(&mut self, t: &Option<Text>, field: &str, reserved_is_error: bool) {
        let Some(t) = t else { return };
        if !is_variable_name(&t.value) {
            self.push(
                Diagnostic::error(
                    codes::BAD_VARIABLE_NAME,
                    t.span,
                    format!(
                        "`{field}` must be a variable name (letters, digits and `_`), found `{}`",
                        t.value
                    ),
                )
                .with_label("not a variable name")
                .with_help("templates can only refer to names made of letters, digits and `_`"),
            );
        } else if RESERVED.contains(&t.value.as_str()) {
            if reserved_is_error {
                self.push(
                    Diagnostic::error(
                        codes::RESERVED_NAME,
                        t.span,
                        format!(
                            "`{}` is a reserved variable and cannot be the `{field}`",
                            t.value
                        ),
                    )
                    .with_label("reserved")
                    .with_help(
                        "the runner sets recipe, session and step itself; choose another name",
                    ),
                );
            } else {
                self.push(
                    Diagnostic::warning(
                        codes::SHADOWS_RESERVED,
                        t.span,
                        format!(
                            "loop variable `{}` hides the reserved `{{{{{}.*}}}}` inside this step",
                            t.value, t.value
                        ),
                    )
                    .with_label("shadows a reserved variable")
                    .with_help("the schema forbids reserved names here; rename the loop variable"),
                );
            }
        }
    }

    fn forbid(&mut self, s: &Step, fields: &[&str], kind: &str, severity_error: bool) {
        for f in fields {
            if let Some(sp) = s.key_span(f) {
                let d = if severity_error {
                    Diagnostic::error(
                        codes::FIELD_NOT_FOR_TYPE,
                        sp,
                        format!("`{f}` is not valid on {} {kind} step", article(kind)),
                    )
                    .with_label(format!("not {} {kind}-step field", article(kind)))
                } else {
                    Diagnostic::warning(
                        codes::INEFFECTIVE_FIELD,
                        sp,
                        format!("`{f}` has no effect on {} {kind} step", article(kind)),
                    )
                    .with_label("ignored by the runner")
                };
                self.push(d.with_help(field_owner_help(f)));
            }
        }
    }

    fn require(&mut self, s: &Step, t: &Option<Text>, field: &str, kind: &str) {
        match t {
            None if s.mistyped.contains(&field) => {}
            None => self.push(
                Diagnostic::error(
                    codes::MISSING_FIELD,
                    s.id.as_ref().map_or(s.span.sub(0..0), |i| i.span),
                    format!("{kind} step `{}` has no `{field}`", s.id_str()),
                )
                .with_label(format!("`{field}` is required on {kind} steps"))
                .with_help(format!("add `{field}: …`")),
            ),
            Some(t) if t.value.trim().is_empty() => self.push(
                Diagnostic::error(
                    codes::MISSING_FIELD,
                    t.span,
                    format!("`{field}` of step `{}` is empty", s.id_str()),
                )
                .with_label("empty"),
            ),
            _ => {}
        }
    }

    fn step(&mut self, s: &Step, nested: bool) {
        match &s.id {
            None if s.mistyped.contains(&"id") => {}
            None => self.push(
                Diagnostic::error(
                    codes::MISSING_FIELD,
                    s.span.sub(0..0),
                    "a step needs an `id`",
                )
                .with_label("`id` is missing")
                .with_help("add `id: \"…\"` (letters, digits, `-`, `_`)"),
            ),
            Some(id)
                if !alnum_after_removing(&id.value, &['-', '_'])
                    || id.value.chars().count() > 50 =>
            {
                self.push(
                    Diagnostic::error(
                        codes::BAD_NAME,
                        id.span,
                        format!(
                            "step id `{}` must be at most 50 letters, digits, `-` or `_`",
                            id.value
                        ),
                    )
                    .with_label("invalid step id"),
                )
            }
            _ => {}
        }
        if s.step_type.is_none() {
            if let Some(t) = &s.type_text {
                self.push(
                    Diagnostic::error(
                        codes::BAD_STEP_TYPE,
                        t.span,
                        format!("unknown step type `{}`", t.value),
                    )
                    .with_label("expected `agent`, `recipe` or `bash`")
                    .with_optional_help(
                        STEP_TYPES
                            .iter()
                            .find(|k| k.eq_ignore_ascii_case(&t.value))
                            .map(|k| format!("types are lowercase: write `{k}`"))
                            .or_else(|| help_for_unknown(&t.value, STEP_TYPES.iter().copied())),
                    ),
                );
            }
        }
        match s.effective_type() {
            Some(StepType::Agent) => {
                if !s.is_compound() {
                    self.require(s, &s.agent, "agent", "agent");
                    self.require(s, &s.prompt, "prompt", "agent");
                }
                self.forbid(s, &["recipe", "context", "command"], "agent", true);
                self.forbid(
                    s,
                    &["cwd", "env", "output_exit_code", "recursion"],
                    "agent",
                    false,
                );
                if let Some(a) = &s.agent {
                    if !a.value.contains(':')
                        && a.value != "self"
                        && !a.value.contains("{{")
                        && !a.value.trim().is_empty()
                    {
                        self.push(
                            Diagnostic::warning(
                                codes::BARE_AGENT,
                                a.span,
                                format!("agent `{}` has no bundle namespace", a.value),
                            )
                            .with_label("expected `bundle:agent-name`")
                            .with_help(format!("for example `foundation:{}`", a.value)),
                        );
                    }
                }
            }
            Some(StepType::Recipe) => {
                self.require(s, &s.recipe, "recipe", "recipe");
                self.forbid(
                    s,
                    &[
                        "agent",
                        "prompt",
                        "mode",
                        "spawn_mode",
                        "command",
                        "cwd",
                        "env",
                        "output_exit_code",
                        "provider",
                        "model",
                        "provider_preferences",
                        "model_role",
                        "agent_config",
                    ],
                    "recipe",
                    true,
                );
                self.forbid(s, &["timeout", "retry"], "recipe", false);
            }
            Some(StepType::Bash) => {
                self.require(s, &s.command, "command", "bash");
                self.forbid(
                    s,
                    &[
                        "agent",
                        "prompt",
                        "mode",
                        "agent_config",
                        "recipe",
                        "context",
                        "recursion",
                        "spawn_mode",
                        "provider",
                        "model",
                        "provider_preferences",
                        "model_role",
                    ],
                    "bash",
                    true,
                );
                self.forbid(s, &["retry"], "bash", false);
            }
            None => {}
        }
        if let Some(pp) = &s.provider_preferences {
            for f in ["provider", "model"] {
                if let Some(sp) = s.key_span(f) {
                    self.push(
                        Diagnostic::error(
                            codes::PROVIDER_PREFERENCES,
                            sp,
                            format!("`{f}` cannot be combined with `provider_preferences`"),
                        )
                        .with_label("choose one approach")
                        .with_secondary(pp.span, "preferences given here")
                        .with_help("move the provider/model into a `provider_preferences` entry"),
                    );
                }
            }
            if let Some(sp) = s.key_span("model_role") {
                self.push(
                    Diagnostic::error(
                        codes::PROVIDER_PREFERENCES,
                        sp,
                        "`model_role` cannot be combined with `provider_preferences`",
                    )
                    .with_label("choose one approach")
                    .with_secondary(pp.span, "preferences given here"),
                );
            }
            if pp.value.is_empty() {
                self.push(
                    Diagnostic::error(
                        codes::PROVIDER_PREFERENCES,
                        pp.span,
                        "`provider_preferences` cannot be an empty list",
                    )
                    .with_label("empty"),
                );
            }
            for p in &pp.value {
                if let ProviderPreference::Class { class, .. } = p {
                    if !MODEL_CLASSES.contains(&class.value.as_str()) {
                        self.push(
                            Diagnostic::error(
                                codes::PROVIDER_PREFERENCES,
                                class.span,
                                format!("unknown model class `{}`", class.value),
                            )
                            .with_label(format!("expected one of {}", quote_list(MODEL_CLASSES)))
                            .with_optional_help(help_for_unknown(
                                &class.value,
                                MODEL_CLASSES.iter().copied(),
                            )),
                        );
                    }
                }
            }
        }
        if let (Some(sp), true) = (
            s.key_span("model_role"),
            s.has("provider") || s.has("model"),
        ) {
            self.push(
                Diagnostic::error(
                    codes::PROVIDER_PREFERENCES,
                    sp,
                    "`model_role` cannot be combined with `provider`/`model`",
                )
                .with_label("choose one approach"),
            );
        }
        if let Some(m) = &s.spawn_mode {
            self.enum_value(m, "spawn_mode", SPAWN_MODES);
        }
        self.range(&s.timeout, "timeout", 1, None);
        if let Some(r) = &s.retry {
            self.range(&r.max_attempts, "retry.max_attempts", 1, None);
            self.range(&r.initial_delay, "retry.initial_delay", 0, None);
            self.range(&r.max_delay, "retry.max_delay", 0, None);
            if let Some(b) = &r.backoff {
                self.enum_value(b, "retry.backoff", RETRY_BACKOFFS);
            }
        }
        if let Some(rc) = &s.recursion {
            self.recursion(rc);
        }
        if let Some(o) = &s.on_error {
            self.enum_value(o, "on_error", ON_ERROR_VALUES);
        }
        self.var_name(&s.output, "output", true);
        self.var_name(&s.collect, "collect", true);
        self.var_name(&s.output_exit_code, "output_exit_code", true);
        self.var_name(&s.as_var, "as", false);
        for e in s.update_context.iter().flatten() {
            self.var_name(&Some(e.key.clone()), "update_context key", true);
        }
        self.loops(s);
        if let Some(body) = &s.while_steps {
            for sub in &body.value {
                self.step(sub, true);
            }
        }
        let _ = nested;
    }

    fn loop_error(&mut self, span: Span, msg: String, label: &str, help: &str) {
        self.push(
            Diagnostic::error(codes::LOOP_FIELDS, span, msg)
                .with_label(label.to_string())
                .with_help(help.to_string()),
        );
    }

    fn ineffective(&mut self, span: Span, msg: String, label: &str) {
        self.push(
            Diagnostic::warning(codes::INEFFECTIVE_FIELD, span, msg).with_label(label.to_string()),
        );
    }

    fn loops(&mut self, s: &Step) {
        let foreach = s.has("foreach");
        let whiles = s.has("while_condition");
        if let (Some(w), Some(f)) = (s.key_span("while_condition"), s.key_span("foreach")) {
            self.push(
                Diagnostic::error(
                    codes::LOOP_FIELDS,
                    w,
                    "`while_condition` and `foreach` cannot be used together",
                )
                .with_label("a step is either a while loop or a foreach loop")
                .with_secondary(f, "foreach given here")
                .with_help("split the step, or nest one loop in a sub-recipe"),
            );
        }
        if let Some(p) = &s.parallel {
            match p.value {
                Parallel::Limit(n) if n < 1 => self.push(
                    Diagnostic::error(
                        codes::OUT_OF_RANGE,
                        p.span,
                        format!("`parallel` is {n}, must be true, false or a positive integer"),
                    )
                    .with_label("not a concurrency limit"),
                ),
                Parallel::Bool(true) | Parallel::Limit(_) if !foreach => self.loop_error(
                    p.span,
                    "`parallel` requires `foreach`".into(),
                    "nothing to run in parallel",
                    "add `foreach:` or remove `parallel`",
                ),
                _ => {}
            }
        }
        if !foreach {
            for f in ["as", "max_iterations"] {
                if let Some(sp) = s.key_span(f) {
                    self.ineffective(
                        sp,
                        format!("`{f}` has no effect without `foreach`"),
                        "only used by foreach loops",
                    );
                }
            }
            if let (Some(sp), false) = (s.key_span("collect"), whiles) {
                self.ineffective(
                    sp,
                    "`collect` has no effect without a loop".into(),
                    "only used by foreach and while loops",
                );
            }
            if let Some(sp) = s.key_span("checkpoint_iterations") {
                self.loop_error(
                    sp,
                    "`checkpoint_iterations` requires `foreach`".into(),
                    "no loop to checkpoint",
                    "add `foreach:` or remove the field",
                );
            }
        } else if let (Some(sp), Some(Parallel::Bool(true) | Parallel::Limit(_))) = (
            s.key_span("checkpoint_iterations"),
            s.parallel.map(|p| p.value),
        ) {
            self.loop_error(
                sp,
                "`checkpoint_iterations` cannot be combined with `parallel`".into(),
                "parallel loops are all-or-nothing",
                "remove one of them",
            );
        }
        self.range(&s.max_iterations, "max_iterations", 1, None);
        self.range(
            &s.max_while_iterations,
            "max_while_iterations",
            1,
            Some(1000),
        );
        if !whiles {
            if let Some(sp) = s.key_span("max_while_iterations") {
                self.ineffective(
                    sp,
                    "`max_while_iterations` has no effect without `while_condition`".into(),
                    "only used by while loops",
                );
            }
        }
        if let (Some(sp), false) = (s.key_span("break_when"), foreach || whiles) {
            self.loop_error(
                sp,
                "`break_when` requires `foreach` or `while_condition`".into(),
                "no loop to break out of",
                "add a loop or turn this into a `condition`",
            );
        }
        if let Some(sp) = s.key_span("update_context") {
            if foreach && !whiles {
                self.ineffective(
                    sp,
                    "`update_context` is ignored on foreach loops".into(),
                    "only applied after while-loop iterations",
                );
            } else if !whiles {
                self.loop_error(
                    sp,
                    "`update_context` requires `while_condition`".into(),
                    "no loop iteration to update after",
                    "add `while_condition:`, or set the values with a step output",
                );
            }
        }
        if let (Some(sp), false) = (
            s.key_span("while_steps").or(s.key_span("steps")),
            foreach || whiles,
        ) {
            self.loop_error(
                sp,
                "a step body (`while_steps`) requires `while_condition` or `foreach`".into(),
                "no loop around this body",
                "add a loop, or make the body ordinary steps",
            );
        }
        if let (Some(p), Some(StepType::Recipe)) = (&s.parallel, s.effective_type()) {
            if foreach && matches!(p.value, Parallel::Bool(true) | Parallel::Limit(_)) {
                self.push(
                    Diagnostic::warning(codes::PARALLEL_RECIPE, p.span, "parallel `foreach` over a recipe step")
                        .with_label("approval gates in the sub-recipe would run in parallel")
                        .with_help("parallel approval gates are undefined behavior; use `parallel: false` if the sub-recipe has stages with approval"),
                );
            }
        }
    }

    fn unique_ids(&mut self, steps: &[&Step]) {
        let mut seen: HashMap<&str, Span> = HashMap::new();
        let mut stack: Vec<&Step> = steps.iter().rev().copied().collect();
        let mut order = Vec::new();
        while let Some(s) = stack.pop() {
            order.push(s);
            if let Some(b) = &s.while_steps {
                stack.extend(b.value.iter().rev());
            }
        }
        for s in order {
            let Some(id) = &s.id else { continue };
            if let Some(first) = seen.get(id.value.as_str()) {
                self.push(
                    Diagnostic::error(
                        codes::DUPLICATE,
                        id.span,
                        format!("duplicate step id `{}`", id.value),
                    )
                    .with_label("used again here")
                    .with_secondary(*first, "first used here")
                    .with_help("step ids must be unique across the whole recipe (all stages)"),
                );
            } else {
                seen.insert(&id.value, id.span);
            }
        }
    }

    fn depends_on(&mut self, steps: &[&Step]) {
        let index: HashMap<&str, usize> = steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.id.as_ref().map(|id| (id.value.as_str(), i)))
            .collect();
        let mut ids: Vec<&str> = index.keys().copied().collect();
        ids.sort_unstable();
        // Edges i -> j (step i depends on step j).
        let edges: Vec<Vec<(usize, Span)>> = steps
            .iter()
            .map(|s| {
                s.depends_on
                    .iter()
                    .flat_map(|d| &d.value)
                    .filter_map(|d| index.get(d.value.as_str()).map(|&j| (j, d.span)))
                    .collect()
            })
            .collect();
        let mut reported_cycles: Vec<Vec<usize>> = Vec::new();
        for (i, s) in steps.iter().enumerate() {
            for d in s.depends_on.iter().flat_map(|d| &d.value) {
                match index.get(d.value.as_str()) {
                    None => self.push(
                        Diagnostic::error(
                            codes::DEPENDS_UNKNOWN,
                            d.span,
                            format!("`depends_on` names unknown step `{}`", d.value),
                        )
                        .with_label("no step has this id")
                        .with_optional_help(help_for_unknown(&d.value, ids.iter().copied())),
                    ),
                    Some(&j) if j == i => self.push(
                        Diagnostic::error(
                            codes::DEPENDS_ORDER,
                            d.span,
                            format!("step `{}` depends on itself", d.value),
                        )
                        .with_label("a step cannot depend on itself")
                        .with_help("remove this entry"),
                    ),
                    Some(&j) if j > i => {
                        if let Some(cycle) = find_path(&edges, j, i) {
                            let mut key = cycle.clone();
                            key.sort_unstable();
                            if !reported_cycles.contains(&key) {
                                reported_cycles.push(key);
                                let mut chain: Vec<&str> = std::iter::once(i)
                                    .chain(cycle)
                                    .map(|k| steps[k].id_str())
                                    .collect();
                                chain.dedup();
                                self.push(
                                    Diagnostic::error(codes::DEPENDS_CYCLE, d.span, format!("`depends_on` cycle: {}", chain.join(" → ")))
                                        .with_label("this dependency closes the cycle")
                                        .with_help("steps run in file order; a dependency must be an earlier step"),
                                );
                            }
                        } else {
                            self.push(
                                Diagnostic::error(
                                    codes::DEPENDS_ORDER,
                                    d.span,
                                    format!(
                                        "step `{}` depends on `{}`, which comes later",
                                        s.id_str(),
                                        d.value
                                    ),
                                )
                                .with_label("defined after this step")
                                .with_secondary(
                                    steps[j].id.as_ref().map_or(steps[j].span, |t| t.span),
                                    "defined here",
                                )
                                .with_help(
                                    "steps run in file order; move the dependency before this step",
                                ),
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

/// A dependency path from `from` to `to` (inclusive of both), if one exists.
fn find_path(edges: &[Vec<(usize, Span)>], from: usize, to: usize) -> Option<Vec<usize>> {
    let mut prev: HashMap<usize, usize> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    let mut seen = vec![false; edges.len()];
    seen[from] = true;
    while let Some(n) = queue.pop_front() {
        if n == to {
            let mut path = vec![n];
            let mut cur = n;
            while let Some(&p) = prev.get(&cur) {
                path.push(p);
                cur = p;
            }
            path.reverse();
            return Some(path);
        }
        for &(m, _) in edges.get(n).map_or(&[][..], |v| v.as_slice()) {
            if !seen[m] {
                seen[m] = true;
                prev.insert(m, n);
                queue.push_back(m);
            }
        }
    }
    None
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn quote_list(xs: &[&str]) -> String {
    xs.iter()
        .map(|x| format!("`{x}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn field_owner_help(f: &str) -> String {
    match f {
        "recipe" | "context" | "recursion" => format!("`{f}` belongs to `type: recipe` steps"),
        "command" | "cwd" | "env" | "output_exit_code" => {
            format!("`{f}` belongs to `type: bash` steps")
        }
        "timeout" => {
            "recipe steps run without a timeout; set timeouts inside the sub-recipe".into()
        }
        "retry" => "only agent steps are retried".into(),
        _ => format!("`{f}` belongs to agent steps"),
    }
}

fn pad_version(v: &str) -> String {
    let mut parts: Vec<&str> = v.split('.').take(3).collect();
    while parts.len() < 3 {
        parts.push("0");
    }
    parts.join(".")
}

fn suggest_name(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "my-recipe".into()
    } else {
        out
    }
}

/// `YYYY-MM-DD`, optionally followed by `T`/space, `hh:mm[:ss[.frac]]` and `Z` or `±hh:mm`.
fn is_iso8601(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|x| x.iter().all(u8::is_ascii_digit));
    if !(digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10))
    {
        return false;
    }
    if b.len() == 10 {
        return true;
    }
    let time_starts = matches!(b.get(10), Some(b'T' | b't' | b' '))
        && digits(11..13)
        && b.get(13) == Some(&b':')
        && digits(14..16);
    if !time_starts {
        return false;
    }
    let mut i = 16;
    if b.get(i) == Some(&b':') {
        if !digits(i + 1..i + 3) {
            return false;
        }
        i += 3;
        if b.get(i) == Some(&b'.') {
            i += 1;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
    }
    match b.get(i) {
        None => true,
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            digits(i + 1..i + 3)
                && (b.len() == i + 3
                    || (b.get(i + 3) == Some(&b':') && digits(i + 4..i + 6) && b.len() == i + 6))
        }
        _ => false,
    }
}
