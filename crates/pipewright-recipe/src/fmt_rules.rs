//! Canonical rules of the recipe dialect (recipe-schema-v1.7.md, notes/recipe-runtime.md §1).
//!
//! Only key order is dialect-specific. Conditions (`condition`, `while_condition`,
//! `break_when`) and `{{var}}` templates are not R1, so no scalar is an expression: they are
//! kept exactly as written. Recipes are written in block style; flow collections the author
//! wrote (`depends_on: [a, b]`, `tags: [...]`) stay flow when they fit, nothing is forced into
//! flow.

use pipewright_fmt::rules::{CstPath, DialectRules, ExprChildren, Seg};
use pipewright_yaml::Node;

pub struct RecipeRules;

/// Top level, in the order of the spec's "Top-Level Structure" (`stages`, the alternative to
/// `steps`, follows it; `orchestrator`, read by the runner, follows `rate_limiting`).
const TOP: &[&str] = &[
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
    "orchestrator",
    "steps",
    "stages",
];

/// A step, in the order of the spec's "Step Object" listing: identity, then the fields of each
/// step type (agent, recipe, bash), then the common fields. Fields documented elsewhere go next
/// to their group: `provider_preferences`, `model_role` and `spawn_mode` after `model`; the
/// step-level `recursion` override after the sub-recipe `context`; `parallel` and
/// `checkpoint_iterations` after `collect`; `steps` (the runner's spelling of `while_steps`)
/// with it; `parse_json` after `output`. The runner's internal spellings `as_var` and
/// `step_context` sit next to `as` and `context`.
const STEP: &[&str] = &[
    "id",
    "type",
    // agent steps
    "agent",
    "mode",
    "prompt",
    "provider",
    "model",
    "provider_preferences",
    "model_role",
    "spawn_mode",
    // recipe steps
    "recipe",
    "context",
    "step_context",
    "recursion",
    // bash steps
    "command",
    "cwd",
    "env",
    "output_exit_code",
    // common
    "condition",
    "foreach",
    "as",
    "as_var",
    "collect",
    "parallel",
    "checkpoint_iterations",
    "max_iterations",
    "while_condition",
    "max_while_iterations",
    "break_when",
    "update_context",
    "while_steps",
    "steps",
    "output",
    "parse_json",
    "agent_config",
    "timeout",
    "retry",
    "on_error",
    "depends_on",
];

/// A stage ("Stage Object"): the gate follows the steps it closes.
const STAGE: &[&str] = &["name", "steps", "approval"];
const APPROVAL: &[&str] = &["required", "prompt", "timeout", "default"];
const RECURSION: &[&str] = &["max_depth", "max_total_steps"];
const RATE_LIMITING: &[&str] = &["max_concurrent_llm", "min_delay_ms", "backoff"];
const BACKOFF: &[&str] = &[
    "enabled",
    "initial_delay_ms",
    "max_delay_ms",
    "multiplier",
    "reset_after_success",
];
const RETRY: &[&str] = &["max_attempts", "backoff", "initial_delay", "max_delay"];
/// A `provider_preferences` entry: a class entry, or a provider entry with its model.
const PREFERENCE: &[&str] = &["class", "provider", "model"];

/// Where a path points in a recipe file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    Top,
    Steps,
    Step,
    Stages,
    Stage,
    Approval,
    Recursion,
    RateLimiting,
    Backoff,
    Retry,
    Preferences,
    Preference,
    Other,
}

fn locate(path: &CstPath) -> Loc {
    let mut loc = Loc::Other;
    for (i, seg) in path.iter().enumerate() {
        loc = match (i, loc, *seg) {
            (0, _, Seg::Doc("recipe")) => Loc::Top,
            (_, Loc::Top, Seg::Key("steps")) => Loc::Steps,
            (_, Loc::Top, Seg::Key("stages")) => Loc::Stages,
            (_, Loc::Top, Seg::Key("recursion")) => Loc::Recursion,
            (_, Loc::Top, Seg::Key("rate_limiting")) => Loc::RateLimiting,
            (_, Loc::RateLimiting, Seg::Key("backoff")) => Loc::Backoff,
            (_, Loc::Stages, Seg::Index(_)) => Loc::Stage,
            (_, Loc::Stage, Seg::Key("steps")) => Loc::Steps,
            (_, Loc::Stage, Seg::Key("approval")) => Loc::Approval,
            (_, Loc::Steps, Seg::Index(_)) => Loc::Step,
            // A loop body: a list of full step definitions.
            (_, Loc::Step, Seg::Key("steps" | "while_steps")) => Loc::Steps,
            (_, Loc::Step, Seg::Key("recursion")) => Loc::Recursion,
            (_, Loc::Step, Seg::Key("retry")) => Loc::Retry,
            (_, Loc::Step, Seg::Key("provider_preferences")) => Loc::Preferences,
            (_, Loc::Preferences, Seg::Index(_)) => Loc::Preference,
            _ => Loc::Other,
        };
        if loc == Loc::Other {
            break;
        }
    }
    loc
}

impl DialectRules for RecipeRules {
    fn doc_kind(&self, root: &Node) -> &'static str {
        // A mapping with any recipe key; other YAML (a schema file next to recipes) keeps the
        // author's order throughout.
        if ["name", "steps", "stages"]
            .iter()
            .any(|k| root.get(k).is_some())
        {
            "recipe"
        } else {
            "other"
        }
    }

    fn key_order(&self, path: &CstPath) -> Option<&'static [&'static str]> {
        Some(match locate(path) {
            Loc::Top => TOP,
            Loc::Step => STEP,
            Loc::Stage => STAGE,
            Loc::Approval => APPROVAL,
            Loc::Recursion => RECURSION,
            Loc::RateLimiting => RATE_LIMITING,
            Loc::Backoff => BACKOFF,
            Loc::Retry => RETRY,
            Loc::Preference => PREFERENCE,
            // `context`, `env`, `update_context`, `agent_config`: user-named keys.
            Loc::Steps | Loc::Stages | Loc::Preferences | Loc::Other => return None,
        })
    }

    fn is_expression(&self, _path: &CstPath) -> bool {
        false
    }

    fn expression_children(&self, _path: &CstPath, _seq: bool) -> ExprChildren {
        ExprChildren::None
    }

    fn prefer_flow(&self, _path: &CstPath) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(path: &[Seg]) -> Option<&'static str> {
        RecipeRules.key_order(path).map(|o| o[0])
    }

    #[test]
    fn locates_steps_stages_and_loop_bodies() {
        let doc = Seg::Doc("recipe");
        assert_eq!(order(&[doc]), Some("name"));
        assert_eq!(order(&[doc, Seg::Key("steps"), Seg::Index(2)]), Some("id"));
        let stage = [doc, Seg::Key("stages"), Seg::Index(0)];
        assert_eq!(order(&stage), Some("name"));
        let mut p = stage.to_vec();
        p.push(Seg::Key("approval"));
        assert_eq!(order(&p), Some("required"));
        let mut p = stage.to_vec();
        p.extend([Seg::Key("steps"), Seg::Index(1)]);
        assert_eq!(order(&p), Some("id"));
        p.extend([Seg::Key("steps"), Seg::Index(0)]);
        assert_eq!(order(&p), Some("id"), "while/foreach body steps");
        p.extend([Seg::Key("retry")]);
        assert_eq!(order(&p), Some("max_attempts"));
        let p = [
            doc,
            Seg::Key("steps"),
            Seg::Index(0),
            Seg::Key("provider_preferences"),
            Seg::Index(0),
        ];
        assert_eq!(order(&p), Some("class"));
        let p = [doc, Seg::Key("rate_limiting"), Seg::Key("backoff")];
        assert_eq!(order(&p), Some("enabled"));
        // User-named mappings keep the author's order.
        assert_eq!(order(&[doc, Seg::Key("context")]), None);
        let p = [doc, Seg::Key("steps"), Seg::Index(0), Seg::Key("context")];
        assert_eq!(order(&p), None);
        let p = [doc, Seg::Key("steps"), Seg::Index(0), Seg::Key("env")];
        assert_eq!(order(&p), None);
        let p = [doc, Seg::Key("steps"), Seg::Index(0), Seg::Key("condition")];
        assert!(!RecipeRules.is_expression(&p));
        assert_eq!(order(&[Seg::Doc("other")]), None);
    }

    #[test]
    fn every_listed_key_once() {
        for table in [
            TOP,
            STEP,
            STAGE,
            APPROVAL,
            RECURSION,
            RATE_LIMITING,
            BACKOFF,
            RETRY,
            PREFERENCE,
        ] {
            let mut seen = std::collections::HashSet::new();
            assert!(table.iter().all(|k| seen.insert(k)), "{table:?}");
        }
    }
}
