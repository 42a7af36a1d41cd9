//! The typed recipe: every field of the v1.7 schema, each value with the span it came from so
//! that later passes can point at it. Fields whose YAML value had the wrong type are `None`
//! (the loader already reported them) but still appear in `keys`, so "field not allowed here"
//! rules see them.

use pipewright_syntax::Span;
use pipewright_yaml::{map_scalar_range, Node, ScalarStyle};

/// A string scalar together with what is needed to point inside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Text {
    pub value: String,
    pub span: Span,
    pub style: ScalarStyle,
}

impl Text {
    /// The source span of a byte range of the value (exact even for quoted and block scalars).
    pub fn sub_span(&self, source: &str, rel: std::ops::Range<usize>) -> Span {
        map_scalar_range(source, self.span, self.style, &self.value, rel)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Recipe {
    pub name: Option<Text>,
    pub description: Option<Text>,
    pub version: Option<Text>,
    pub author: Option<Text>,
    pub created: Option<Text>,
    pub updated: Option<Text>,
    pub tags: Vec<Text>,
    pub context: Vec<ContextEntry>,
    pub recursion: Option<Recursion>,
    pub rate_limiting: Option<RateLimiting>,
    /// `orchestrator.config.min_delay_between_calls_ms`, the one orchestrator setting the
    /// runner validates.
    pub min_delay_between_calls_ms: Option<Spanned<i64>>,
    /// Top-level keys whose value had the wrong type (already reported): not also "missing".
    pub mistyped: Vec<&'static str>,
    /// `None` when the key is absent or its value is not a list.
    pub steps: Option<Spanned<Vec<Step>>>,
    pub stages: Option<Spanned<Vec<Stage>>>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextEntry {
    pub key: Text,
    pub value: Node,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recursion {
    pub max_depth: Option<Spanned<i64>>,
    pub max_total_steps: Option<Spanned<i64>>,
    pub span: Span,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RateLimiting {
    pub max_concurrent_llm: Option<Spanned<i64>>,
    pub min_delay_ms: Option<Spanned<i64>>,
    pub backoff: Option<Backoff>,
    pub span: Span,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Backoff {
    pub enabled: Option<Spanned<bool>>,
    pub initial_delay_ms: Option<Spanned<i64>>,
    pub max_delay_ms: Option<Spanned<i64>>,
    pub multiplier: Option<Spanned<f64>>,
    pub reset_after_success: Option<Spanned<i64>>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub name: Option<Text>,
    pub steps: Vec<Step>,
    pub steps_span: Option<Span>,
    pub approval: Option<Approval>,
    /// Keys whose value had the wrong type (already reported): not also "missing".
    pub mistyped: Vec<&'static str>,
    pub span: Span,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Approval {
    pub required: Option<Spanned<bool>>,
    pub prompt: Option<Text>,
    pub timeout: Option<Spanned<i64>>,
    pub default: Option<Text>,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepType {
    Agent,
    Recipe,
    Bash,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Parallel {
    Bool(bool),
    Limit(i64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ProviderPreference {
    /// `- class: reasoning`
    Class { class: Text, span: Span },
    /// `- provider: anthropic` with an optional `model:` glob.
    Provider {
        provider: Text,
        model: Option<Text>,
        span: Span,
    },
    /// An entry with neither key (already reported).
    Invalid { span: Span },
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retry {
    pub max_attempts: Option<Spanned<i64>>,
    pub backoff: Option<Text>,
    pub initial_delay: Option<Spanned<i64>>,
    pub max_delay: Option<Spanned<i64>>,
    pub span: Span,
}

/// A `key: "{{template}}"` pair (env, update_context).
#[derive(Debug, Clone, PartialEq)]
pub struct TextEntry {
    pub key: Text,
    pub value: Option<Text>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    pub id: Option<Text>,
    /// The `type:` as written; `step_type` is its resolution (`None` when invalid).
    pub type_text: Option<Text>,
    pub step_type: Option<StepType>,
    pub agent: Option<Text>,
    pub mode: Option<Text>,
    pub prompt: Option<Text>,
    pub provider: Option<Text>,
    pub model: Option<Text>,
    pub provider_preferences: Option<Spanned<Vec<ProviderPreference>>>,
    pub model_role: Option<Text>,
    pub spawn_mode: Option<Text>,
    pub agent_config: Option<Span>,
    pub recipe: Option<Text>,
    /// The sub-recipe context (`context:` on a recipe step).
    pub context: Option<Spanned<Vec<ContextEntry>>>,
    pub recursion: Option<Recursion>,
    pub command: Option<Text>,
    pub cwd: Option<Text>,
    pub env: Option<Vec<TextEntry>>,
    pub output_exit_code: Option<Text>,
    pub condition: Option<Text>,
    pub foreach: Option<Text>,
    pub as_var: Option<Text>,
    pub collect: Option<Text>,
    pub parallel: Option<Spanned<Parallel>>,
    pub max_iterations: Option<Spanned<i64>>,
    pub checkpoint_iterations: Option<Spanned<bool>>,
    pub while_condition: Option<Text>,
    pub max_while_iterations: Option<Spanned<i64>>,
    pub break_when: Option<Text>,
    pub update_context: Option<Vec<TextEntry>>,
    /// `while_steps:` (or the engine's alias `steps:`).
    pub while_steps: Option<Spanned<Vec<Step>>>,
    pub output: Option<Text>,
    pub parse_json: Option<Spanned<bool>>,
    pub timeout: Option<Spanned<i64>>,
    pub retry: Option<Retry>,
    pub on_error: Option<Text>,
    pub depends_on: Option<Spanned<Vec<Text>>>,
    /// Every key written on the step (known ones), with the key's span.
    pub keys: Vec<(&'static str, Span)>,
    /// Keys whose value had the wrong type (already reported): not also "missing".
    pub mistyped: Vec<&'static str>,
    pub span: Span,
}

impl Step {
    pub fn key_span(&self, key: &str) -> Option<Span> {
        self.keys.iter().find(|(k, _)| *k == key).map(|(_, s)| *s)
    }

    pub fn has(&self, key: &str) -> bool {
        self.key_span(key).is_some()
    }

    /// The step's type, `agent` when not written.
    pub fn effective_type(&self) -> Option<StepType> {
        if self.type_text.is_none() && !self.has("type") {
            Some(StepType::Agent)
        } else {
            self.step_type
        }
    }

    /// A loop container whose body is `while_steps`: agent fields are not required on it.
    pub fn is_compound(&self) -> bool {
        self.while_steps.is_some() && (self.foreach.is_some() || self.while_condition.is_some())
    }

    pub fn id_str(&self) -> &str {
        self.id.as_ref().map_or("?", |t| t.value.as_str())
    }
}

impl Recipe {
    /// Every top-level step in execution order, with the index of its stage (if staged).
    pub fn all_steps(&self) -> Vec<(Option<usize>, &Step)> {
        let mut out = Vec::new();
        if let Some(steps) = &self.steps {
            out.extend(steps.value.iter().map(|s| (None, s)));
        }
        if let Some(stages) = &self.stages {
            for (i, st) in stages.value.iter().enumerate() {
                out.extend(st.steps.iter().map(|s| (Some(i), s)));
            }
        }
        out
    }
}
