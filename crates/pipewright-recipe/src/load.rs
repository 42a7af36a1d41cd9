//! From the YAML node tree to the typed [`Recipe`]. Every value of the wrong YAML type becomes
//! one diagnostic and an absent field, so later passes never see garbage and nothing panics.

use crate::ast::*;
use crate::codes;
use pipewright_syntax::suggest::{did_you_mean, help_for_unknown};
use pipewright_syntax::{Diagnostic, Fix, Span};
use pipewright_yaml::{Entry, Node, NodeKind, ScalarValue};

pub const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "version",
    "author",
    "created",
    "updated",
    "tags",
    "context",
    "recursion",
    "rate_limiting",
    "steps",
    "stages",
    "orchestrator",
];
pub const STAGE_KEYS: &[&str] = &["name", "steps", "approval"];
pub const APPROVAL_KEYS: &[&str] = &["required", "prompt", "timeout", "default"];
pub const STEP_KEYS: &[&str] = &[
    "id",
    "type",
    "agent",
    "mode",
    "prompt",
    "provider",
    "model",
    "provider_preferences",
    "model_role",
    "spawn_mode",
    "agent_config",
    "recipe",
    "context",
    "step_context",
    "recursion",
    "command",
    "cwd",
    "env",
    "output_exit_code",
    "condition",
    "foreach",
    "as",
    "as_var",
    "collect",
    "parallel",
    "max_iterations",
    "checkpoint_iterations",
    "while_condition",
    "max_while_iterations",
    "break_when",
    "update_context",
    "while_steps",
    "steps",
    "output",
    "parse_json",
    "timeout",
    "retry",
    "on_error",
    "depends_on",
];
pub const RETRY_KEYS: &[&str] = &["max_attempts", "backoff", "initial_delay", "max_delay"];
pub const RECURSION_KEYS: &[&str] = &["max_depth", "max_total_steps"];
pub const RATE_KEYS: &[&str] = &["max_concurrent_llm", "min_delay_ms", "backoff"];
pub const BACKOFF_KEYS: &[&str] = &[
    "enabled",
    "initial_delay_ms",
    "max_delay_ms",
    "multiplier",
    "reset_after_success",
];
pub const PREFERENCE_KEYS: &[&str] = &["class", "provider", "model"];

pub struct Loader {
    pub diags: Vec<Diagnostic>,
}

fn static_key(known: &[&'static str], k: &str) -> Option<&'static str> {
    known.iter().copied().find(|x| *x == k)
}

impl Loader {
    pub fn new() -> Loader {
        Loader { diags: Vec::new() }
    }

    pub fn recipe(&mut self, root: &Node) -> Recipe {
        let mut r = Recipe {
            name: None,
            description: None,
            version: None,
            author: None,
            created: None,
            updated: None,
            tags: Vec::new(),
            context: Vec::new(),
            recursion: None,
            rate_limiting: None,
            min_delay_between_calls_ms: None,
            mistyped: Vec::new(),
            steps: None,
            stages: None,
            span: root.span,
        };
        for e in root.as_map().unwrap_or(&[]) {
            let key = e.key.key_text().unwrap_or("");
            let before = self.diags.len();
            match key {
                "name" => r.name = self.text(e),
                "description" => r.description = self.text(e),
                "version" => r.version = self.text(e),
                "author" => r.author = self.text(e),
                "created" => r.created = self.text(e),
                "updated" => r.updated = self.text(e),
                "tags" => r.tags = self.text_list(e),
                "context" => r.context = self.context(e).map(|c| c.value).unwrap_or_default(),
                "recursion" => r.recursion = self.recursion(e),
                "rate_limiting" => r.rate_limiting = self.rate_limiting(e),
                "steps" => r.steps = self.steps(e),
                "stages" => {
                    r.stages = self.list(e, "a list of stages").map(|items| Spanned {
                        value: items.iter().filter_map(|n| self.stage(n)).collect(),
                        span: e.value.span,
                    })
                }
                "orchestrator" => r.min_delay_between_calls_ms = self.orchestrator(e),
                _ => self.unknown(e, TOP_KEYS, false, "recipe"),
            }
            if let Some(k) = static_key(TOP_KEYS, key).filter(|_| self.mistyped_since(before)) {
                r.mistyped.push(k);
            }
        }
        r
    }

    /// Whether a wrong-type diagnostic was pushed since `before` (the field's value is then
    /// absent from the AST, but it was written).
    fn mistyped_since(&self, before: usize) -> bool {
        self.diags[before..]
            .iter()
            .any(|d| d.code == codes::WRONG_TYPE)
    }

    /// The runner reads only `orchestrator.config`, and validates only this one setting of it.
    fn orchestrator(&mut self, e: &Entry) -> Option<Spanned<i64>> {
        let m = self.map_value(e)?;
        let config = m.iter().find(|c| c.key.key_text() == Some("config"))?;
        let cm = self.map_value(config)?;
        let delay = cm
            .iter()
            .find(|c| c.key.key_text() == Some("min_delay_between_calls_ms"))?;
        self.int(delay)
    }

    fn unknown(&mut self, e: &Entry, known: &[&str], strict: bool, what: &str) {
        let key = e.key.key_text().unwrap_or("");
        let help = help_for_unknown(key, known.iter().copied());
        let d = if strict {
            Diagnostic::error(
                codes::UNKNOWN_STEP_KEY,
                e.key.span,
                format!("unknown key `{key}` in {what}"),
            )
            .with_label("the runner refuses to load a recipe with this key")
        } else {
            Diagnostic::warning(
                codes::UNKNOWN_TOP_KEY,
                e.key.span,
                format!("unknown key `{key}` in {what}"),
            )
            .with_label("the runner ignores this key silently")
        };
        self.diags.push(d.with_optional_help(help));
    }

    fn wrong_type(&mut self, e: &Entry, expected: &str, help: Option<String>) {
        let key = e.key.key_text().unwrap_or("");
        self.diags.push(
            Diagnostic::error(
                codes::WRONG_TYPE,
                e.value.span,
                format!("`{key}` must be {expected}, found {}", e.value.describe()),
            )
            .with_label(format!("expected {expected}"))
            .with_optional_help(help),
        );
    }

    /// A string field. Null counts as absent (the runner's default applies).
    fn text(&mut self, e: &Entry) -> Option<Text> {
        self.text_node(&e.value, e)
    }

    fn text_node(&mut self, n: &Node, e: &Entry) -> Option<Text> {
        match &n.kind {
            NodeKind::Scalar(s) => match s.resolve() {
                ScalarValue::Str(_) => {
                    if let Some(b) = yaml11_bool(n) {
                        let quoted = format!("\"{}\"", s.text);
                        self.diags.push(
                            yaml11_warning(n, e, b)
                                .with_help(format!(
                                    "quote it (`{quoted}`) for the string both read, or write `{b}` for the boolean"
                                ))
                                .with_fix(Fix::replace(
                                    format!("Quote `{}`", s.text),
                                    n.span,
                                    quoted,
                                )),
                        );
                    }
                    Some(Text {
                        value: s.text.to_string(),
                        span: n.span,
                        style: s.style,
                    })
                }
                ScalarValue::Null => None,
                _ => {
                    self.diags.push(
                        Diagnostic::error(
                            codes::WRONG_TYPE,
                            n.span,
                            format!(
                                "`{}` must be a string, found {}",
                                e.key.key_text().unwrap_or(""),
                                n.describe()
                            ),
                        )
                        .with_label("expected a string")
                        .with_help(format!("quote it: \"{}\"", s.text)),
                    );
                    None
                }
            },
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        codes::WRONG_TYPE,
                        n.span,
                        format!(
                            "`{}` must be a string, found {}",
                            e.key.key_text().unwrap_or(""),
                            n.describe()
                        ),
                    )
                    .with_label("expected a string"),
                );
                None
            }
        }
    }

    fn int(&mut self, e: &Entry) -> Option<Spanned<i64>> {
        let n = &e.value;
        match n.as_scalar().map(|s| s.resolve()) {
            Some(ScalarValue::Int(v)) => Some(Spanned {
                value: v,
                span: n.span,
            }),
            Some(ScalarValue::Null) => None,
            Some(ScalarValue::Str(s)) if s.trim().parse::<i64>().is_ok() => {
                self.wrong_type(
                    e,
                    "an integer",
                    Some(format!("write {} without quotes", s.trim())),
                );
                None
            }
            Some(ScalarValue::Str(s)) if s.contains("{{") => {
                self.wrong_type(
                    e,
                    "an integer",
                    Some("this field is not a template: the value is used as written".into()),
                );
                None
            }
            _ => {
                self.wrong_type(e, "an integer", None);
                None
            }
        }
    }

    fn float(&mut self, e: &Entry) -> Option<Spanned<f64>> {
        let n = &e.value;
        match n.as_scalar().map(|s| s.resolve()) {
            Some(ScalarValue::Int(v)) => Some(Spanned {
                value: v as f64,
                span: n.span,
            }),
            Some(ScalarValue::Float(v)) => Some(Spanned {
                value: v,
                span: n.span,
            }),
            Some(ScalarValue::Null) => None,
            _ => {
                self.wrong_type(e, "a number", None);
                None
            }
        }
    }

    fn boolean(&mut self, e: &Entry) -> Option<Spanned<bool>> {
        let n = &e.value;
        match n.as_scalar().map(|s| s.resolve()) {
            Some(ScalarValue::Bool(v)) => Some(Spanned {
                value: v,
                span: n.span,
            }),
            Some(ScalarValue::Null) => None,
            // What the runner reads, with a warning that pipewright reads a string.
            Some(ScalarValue::Str(s)) if yaml11_bool(n).is_some() => {
                let value = yaml11_bool(n)?;
                self.diags.push(
                    yaml11_warning(n, e, value)
                        .with_help(format!("write `{value}`, which both read alike"))
                        .with_fix(Fix::replace(
                            format!("Replace `{s}` with `{value}`"),
                            n.span,
                            value.to_string(),
                        )),
                );
                Some(Spanned {
                    value,
                    span: n.span,
                })
            }
            Some(ScalarValue::Str(s))
                if matches!(
                    s.to_ascii_lowercase().as_str(),
                    "true" | "false" | "yes" | "no" | "on" | "off"
                ) =>
            {
                let v = matches!(s.to_ascii_lowercase().as_str(), "true" | "yes" | "on");
                self.wrong_type(e, "a boolean", Some(format!("write {v} without quotes")));
                None
            }
            _ => {
                self.wrong_type(e, "a boolean", Some("write true or false".into()));
                None
            }
        }
    }

    fn list<'n>(&mut self, e: &'n Entry, expected: &str) -> Option<&'n [Node]> {
        match &e.value.kind {
            NodeKind::Seq(items) => Some(items),
            _ if e.value.is_null() => None,
            _ => {
                self.wrong_type(e, expected, None);
                None
            }
        }
    }

    fn map_value<'n>(&mut self, e: &'n Entry) -> Option<&'n [Entry]> {
        match &e.value.kind {
            NodeKind::Map(m) => Some(m),
            _ if e.value.is_null() => None,
            _ => {
                self.wrong_type(e, "a mapping", None);
                None
            }
        }
    }

    fn text_list(&mut self, e: &Entry) -> Vec<Text> {
        let Some(items) = self.list(e, "a list of strings") else {
            return Vec::new();
        };
        items.iter().filter_map(|n| self.text_node(n, e)).collect()
    }

    fn key_text(e: &Entry) -> Text {
        let (value, style) = e
            .key
            .as_scalar()
            .map_or((String::new(), pipewright_yaml::ScalarStyle::Plain), |s| {
                (s.text.to_string(), s.style)
            });
        Text {
            value,
            span: e.key.span,
            style,
        }
    }

    fn context(&mut self, e: &Entry) -> Option<Spanned<Vec<ContextEntry>>> {
        let m = self.map_value(e)?;
        Some(Spanned {
            value: m
                .iter()
                .map(|c| ContextEntry {
                    key: Self::key_text(c),
                    value: c.value.clone(),
                })
                .collect(),
            span: e.value.span,
        })
    }

    fn text_entries(&mut self, e: &Entry) -> Option<Vec<TextEntry>> {
        let m = self.map_value(e)?;
        Some(
            m.iter()
                .map(|c| {
                    let value = match c.value.as_scalar().map(|s| s.resolve()) {
                        // Numbers and booleans are stringified by the runner (`str(value)`).
                        Some(
                            ScalarValue::Int(_) | ScalarValue::Float(_) | ScalarValue::Bool(_),
                        ) => None,
                        _ => self.text_node(&c.value, c),
                    };
                    TextEntry {
                        key: Self::key_text(c),
                        value,
                    }
                })
                .collect(),
        )
    }

    fn recursion(&mut self, e: &Entry) -> Option<Recursion> {
        let m = self.map_value(e)?;
        let mut r = Recursion {
            span: e.value.span,
            ..Recursion::default()
        };
        for c in m {
            match c.key.key_text().unwrap_or("") {
                "max_depth" => r.max_depth = self.int(c),
                "max_total_steps" => r.max_total_steps = self.int(c),
                _ => self.unknown(c, RECURSION_KEYS, true, "`recursion`"),
            }
        }
        Some(r)
    }

    fn rate_limiting(&mut self, e: &Entry) -> Option<RateLimiting> {
        let m = self.map_value(e)?;
        let mut r = RateLimiting {
            span: e.value.span,
            ..RateLimiting::default()
        };
        for c in m {
            match c.key.key_text().unwrap_or("") {
                "max_concurrent_llm" => r.max_concurrent_llm = self.int(c),
                "min_delay_ms" => r.min_delay_ms = self.int(c),
                "backoff" => {
                    if let Some(bm) = self.map_value(c) {
                        let mut b = Backoff {
                            span: c.value.span,
                            ..Backoff::default()
                        };
                        for d in bm {
                            match d.key.key_text().unwrap_or("") {
                                "enabled" => b.enabled = self.boolean(d),
                                "initial_delay_ms" => b.initial_delay_ms = self.int(d),
                                "max_delay_ms" => b.max_delay_ms = self.int(d),
                                "multiplier" => b.multiplier = self.float(d),
                                "reset_after_success" => b.reset_after_success = self.int(d),
                                _ => self.unknown(d, BACKOFF_KEYS, true, "`rate_limiting.backoff`"),
                            }
                        }
                        r.backoff = Some(b);
                    }
                }
                _ => self.unknown(c, RATE_KEYS, true, "`rate_limiting`"),
            }
        }
        Some(r)
    }

    fn steps(&mut self, e: &Entry) -> Option<Spanned<Vec<Step>>> {
        let items = self.list(e, "a list of steps")?;
        Some(Spanned {
            value: items.iter().filter_map(|n| self.step(n)).collect(),
            span: e.value.span,
        })
    }

    fn stage(&mut self, n: &Node) -> Option<Stage> {
        let Some(m) = n.as_map() else {
            self.diags.push(
                Diagnostic::error(
                    codes::WRONG_TYPE,
                    n.span,
                    format!("a stage must be a mapping, found {}", n.describe()),
                )
                .with_label("expected `name:`, `steps:` and optionally `approval:`"),
            );
            return None;
        };
        let mut st = Stage {
            name: None,
            steps: Vec::new(),
            steps_span: None,
            approval: None,
            mistyped: Vec::new(),
            span: n.span,
        };
        for e in m {
            match e.key.key_text().unwrap_or("") {
                "name" => {
                    let before = self.diags.len();
                    st.name = self.text(e);
                    if self.mistyped_since(before) {
                        st.mistyped.push("name");
                    }
                }
                "steps" => {
                    st.steps_span = Some(e.value.span);
                    st.steps = self.steps(e).map(|s| s.value).unwrap_or_default();
                }
                "approval" => {
                    if let Some(am) = self.map_value(e) {
                        let mut a = Approval {
                            span: e.value.span,
                            ..Approval::default()
                        };
                        for c in am {
                            match c.key.key_text().unwrap_or("") {
                                "required" => a.required = self.boolean(c),
                                "prompt" => a.prompt = self.text(c),
                                "timeout" => a.timeout = self.int(c),
                                "default" => a.default = self.text(c),
                                _ => self.unknown(c, APPROVAL_KEYS, true, "`approval`"),
                            }
                        }
                        st.approval = Some(a);
                    }
                }
                _ => self.unknown(e, STAGE_KEYS, false, "a stage"),
            }
        }
        Some(st)
    }

    pub fn step(&mut self, n: &Node) -> Option<Step> {
        let Some(m) = n.as_map() else {
            self.diags.push(
                Diagnostic::error(
                    codes::WRONG_TYPE,
                    n.span,
                    format!("a step must be a mapping, found {}", n.describe()),
                )
                .with_label("expected `id:` and the fields of the step"),
            );
            return None;
        };
        let mut s = Step {
            span: n.span,
            ..Step::default()
        };
        for e in m {
            let key = e.key.key_text().unwrap_or("");
            let Some(k) = static_key(STEP_KEYS, key) else {
                let help = did_you_mean(key, STEP_KEYS.iter().copied())
                    .map(|c| format!("did you mean `{c}`?"));
                self.diags.push(
                    Diagnostic::error(
                        codes::UNKNOWN_STEP_KEY,
                        e.key.span,
                        format!("unknown step key `{key}`"),
                    )
                    .with_label("the runner refuses to load a step with this key")
                    .with_optional_help(help),
                );
                continue;
            };
            // The runner's loader renames `as`, `context` and `steps` to the names of its step
            // fields and accepts those names too: two spellings of one field.
            let k = match k {
                "as_var" => "as",
                "step_context" => "context",
                "steps" => "while_steps",
                other => other,
            };
            if let Some(first) = s.key_span(k) {
                self.diags.push(
                    Diagnostic::error(
                        codes::DUPLICATE,
                        e.key.span,
                        format!("`{key}` sets the same field as an earlier key"),
                    )
                    .with_label("a second spelling of one step field")
                    .with_secondary(first, "first set here")
                    .with_help(format!(
                        "{} are one field: keep one of them",
                        alias_names(k)
                    )),
                );
                continue;
            }
            s.keys.push((k, e.key.span));
            let before = self.diags.len();
            match k {
                "id" => s.id = self.text(e),
                "type" => {
                    s.type_text = self.text(e);
                    s.step_type = s.type_text.as_ref().and_then(|t| match t.value.as_str() {
                        "agent" => Some(StepType::Agent),
                        "recipe" => Some(StepType::Recipe),
                        "bash" => Some(StepType::Bash),
                        _ => None,
                    });
                }
                "agent" => s.agent = self.text(e),
                "mode" => s.mode = self.text(e),
                "prompt" => s.prompt = self.text(e),
                "provider" => s.provider = self.text(e),
                "model" => s.model = self.text(e),
                "provider_preferences" => s.provider_preferences = self.preferences(e),
                "model_role" => s.model_role = self.text(e),
                "spawn_mode" => s.spawn_mode = self.text(e),
                "agent_config" => s.agent_config = self.map_value(e).map(|_| e.value.span),
                "recipe" => s.recipe = self.text(e),
                "context" => s.context = self.context(e),
                "recursion" => s.recursion = self.recursion(e),
                "command" => s.command = self.text(e),
                "cwd" => s.cwd = self.text(e),
                "env" => s.env = self.text_entries(e),
                "output_exit_code" => s.output_exit_code = self.text(e),
                "condition" => s.condition = self.text(e),
                "foreach" => s.foreach = self.text(e),
                "as" => s.as_var = self.text(e),
                "collect" => s.collect = self.text(e),
                "parallel" => {
                    s.parallel = match e.value.as_scalar().map(|x| x.resolve()) {
                        Some(ScalarValue::Bool(b)) => Some(Spanned {
                            value: Parallel::Bool(b),
                            span: e.value.span,
                        }),
                        Some(ScalarValue::Int(i)) => Some(Spanned {
                            value: Parallel::Limit(i),
                            span: e.value.span,
                        }),
                        Some(ScalarValue::Null) => None,
                        // `parallel: no` is false to the runner (PyYAML): read it so, and warn.
                        Some(ScalarValue::Str(_)) if yaml11_bool(&e.value).is_some() => {
                            self.boolean(e).map(|b| Spanned {
                                value: Parallel::Bool(b.value),
                                span: b.span,
                            })
                        }
                        _ => {
                            self.wrong_type(e, "true, false or a positive integer", None);
                            None
                        }
                    }
                }
                "max_iterations" => s.max_iterations = self.int(e),
                "checkpoint_iterations" => s.checkpoint_iterations = self.boolean(e),
                "while_condition" => s.while_condition = self.text(e),
                "max_while_iterations" => s.max_while_iterations = self.int(e),
                "break_when" => s.break_when = self.text(e),
                "update_context" => s.update_context = self.text_entries(e),
                "while_steps" => s.while_steps = self.steps(e),
                "output" => s.output = self.text(e),
                "parse_json" => s.parse_json = self.boolean(e),
                "timeout" => s.timeout = self.int(e),
                "retry" => s.retry = self.retry(e),
                "on_error" => s.on_error = self.text(e),
                "depends_on" => s.depends_on = self.depends_on(e),
                _ => {}
            }
            if self.mistyped_since(before) {
                s.mistyped.push(k);
            }
        }
        Some(s)
    }

    fn retry(&mut self, e: &Entry) -> Option<Retry> {
        let m = self.map_value(e)?;
        let mut r = Retry {
            span: e.value.span,
            ..Retry::default()
        };
        for c in m {
            match c.key.key_text().unwrap_or("") {
                "max_attempts" => r.max_attempts = self.int(c),
                "backoff" => r.backoff = self.text(c),
                "initial_delay" => r.initial_delay = self.int(c),
                "max_delay" => r.max_delay = self.int(c),
                _ => self.unknown(c, RETRY_KEYS, true, "`retry`"),
            }
        }
        Some(r)
    }

    fn depends_on(&mut self, e: &Entry) -> Option<Spanned<Vec<Text>>> {
        if let Some(s) = e.value.as_str() {
            // One diagnostic for the whole string: the runner iterates it per character.
            self.wrong_type(
                e,
                "a list of step ids",
                Some(format!("write `depends_on: [\"{s}\"]`")),
            );
            return None;
        }
        let items = self.list(e, "a list of step ids")?;
        Some(Spanned {
            value: items.iter().filter_map(|n| self.text_node(n, e)).collect(),
            span: e.value.span,
        })
    }

    fn preferences(&mut self, e: &Entry) -> Option<Spanned<Vec<ProviderPreference>>> {
        let items = self.list(e, "a list of `class:` or `provider:` entries")?;
        let mut out = Vec::new();
        for n in items {
            let Some(m) = n.as_map() else {
                // Kept as an entry: the list is not empty, only this entry is wrong.
                out.push(ProviderPreference::Invalid { span: n.span });
                self.diags.push(
                    Diagnostic::error(
                        codes::PROVIDER_PREFERENCES,
                        n.span,
                        format!(
                            "a `provider_preferences` entry must be a mapping, found {}",
                            n.describe()
                        ),
                    )
                    .with_label("expected `class: …` or `provider: …`")
                    .with_help("write `- provider: anthropic` or `- class: reasoning`"),
                );
                continue;
            };
            let (mut class, mut provider, mut model) = (None, None, None);
            for c in m {
                match c.key.key_text().unwrap_or("") {
                    "class" => class = Some((self.text(c), c.key.span)),
                    "provider" => provider = self.text(c),
                    "model" => model = Some((self.text(c), c.key.span)),
                    _ => self.unknown(c, PREFERENCE_KEYS, true, "a `provider_preferences` entry"),
                }
            }
            let pref = match (class, provider) {
                (Some((Some(class), _)), None) => {
                    if let Some((_, ms)) = model {
                        self.diags.push(
                            Diagnostic::error(
                                codes::PROVIDER_PREFERENCES,
                                ms,
                                "a `class:` entry cannot name a model",
                            )
                            .with_label("`model` belongs to `provider:` entries")
                            .with_help("use `- provider: …` with `model: …`, or drop `model`"),
                        );
                    }
                    ProviderPreference::Class {
                        class,
                        span: n.span,
                    }
                }
                (Some((_, cs)), Some(_)) => {
                    self.diags.push(
                        Diagnostic::error(
                            codes::PROVIDER_PREFERENCES,
                            cs,
                            "an entry has both `class` and `provider`",
                        )
                        .with_label("one entry is either a class or a provider")
                        .with_help("split it into two entries"),
                    );
                    ProviderPreference::Invalid { span: n.span }
                }
                (None, Some(provider)) => ProviderPreference::Provider {
                    provider,
                    model: model.and_then(|m| m.0),
                    span: n.span,
                },
                _ => {
                    if m.iter()
                        .all(|c| PREFERENCE_KEYS.contains(&c.key.key_text().unwrap_or("")))
                    {
                        self.diags.push(
                            Diagnostic::error(
                                codes::PROVIDER_PREFERENCES,
                                n.span,
                                "a `provider_preferences` entry needs `class` or `provider`",
                            )
                            .with_label("neither key here")
                            .with_help("write `- provider: anthropic` or `- class: reasoning`"),
                        );
                    }
                    ProviderPreference::Invalid { span: n.span }
                }
            };
            out.push(pref);
        }
        Some(Spanned {
            value: out,
            span: e.value.span,
        })
    }
}

impl Default for Loader {
    fn default() -> Self {
        Loader::new()
    }
}

/// The spellings of a step field that has two, for a help text.
fn alias_names(field: &str) -> &'static str {
    match field {
        "as" => "`as`/`as_var`",
        "context" => "`context`/`step_context`",
        _ => "`steps`/`while_steps`",
    }
}

pub fn span_of(t: &Option<Text>) -> Option<Span> {
    t.as_ref().map(|t| t.span)
}

/// The boolean the recipe runner (PyYAML, YAML 1.1) reads in `n` where YAML 1.2 reads a string:
/// a plain, untagged `yes`/`no`/`on`/`off` in one of PyYAML's casings.
fn yaml11_bool(n: &Node) -> Option<bool> {
    let s = n.as_scalar()?;
    if n.tag.is_some() || s.style != pipewright_yaml::ScalarStyle::Plain {
        return None;
    }
    match s.resolve() {
        ScalarValue::Str(t) => match pipewright_yaml::yaml11::resolve(t) {
            pipewright_yaml::yaml11::Plain::Bool(b) => Some(b),
            _ => None,
        },
        _ => None,
    }
}

fn yaml11_warning(n: &Node, e: &Entry, value: bool) -> Diagnostic {
    let text = n.as_scalar().map_or("", |s| &*s.text);
    Diagnostic::warning(
        codes::YAML11_BOOLEAN,
        n.span,
        format!(
            "`{}: {text}` is the boolean {value} to the recipe runner but the string \"{text}\" to YAML 1.2",
            e.key.key_text().unwrap_or("")
        ),
    )
    .with_label(format!(
        "PyYAML (YAML 1.1) reads {}",
        if value { "True" } else { "False" }
    ))
}
