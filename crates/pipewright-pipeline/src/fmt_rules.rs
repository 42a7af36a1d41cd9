//! Canonical rules of the pipeline dialect (pipeline-dsl-reference.md, pipeline-runtime.md §3).

use pipewright_fmt::rules::{CstPath, DialectRules, ExprChildren, Seg};
use pipewright_yaml::Node;

pub struct PipelineRules;

/// Where a path points in a pipeline file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc<'a> {
    PipelineDoc,
    SchemaDoc,
    Steps,
    Step,
    Body(&'a str),
    Field(&'a str, &'a str),
    Branches,
    Cases,
    Target,
    Pass,
    PassValue,
    FieldMap,
    FieldType,
    Other,
}

fn locate<'a>(path: &CstPath<'a>) -> Loc<'a> {
    let mut loc = Loc::Other;
    for (i, seg) in path.iter().enumerate() {
        loc = match (i, loc, *seg) {
            (0, _, Seg::Doc("pipeline")) => Loc::PipelineDoc,
            (0, _, Seg::Doc("schema")) => Loc::SchemaDoc,
            (_, Loc::PipelineDoc, Seg::Key("steps")) => Loc::Steps,
            (_, Loc::Steps, Seg::Index(_)) => Loc::Step,
            // A `match`, not `STEP_KINDS.contains`: this runs for every scalar and mapping.
            (
                _,
                Loc::Step,
                Seg::Key(
                    k @ ("transform" | "tool" | "shell" | "agent" | "call" | "match" | "fold"
                    | "for_each" | "parallel"),
                ),
            ) => Loc::Body(k),
            (_, Loc::Body(kind), Seg::Key(f)) => match (kind, f) {
                ("fold" | "for_each", "do") | ("for_each" | "parallel", "collect") => Loc::Step,
                ("parallel", "branches") => Loc::Branches,
                ("match", "cases") => Loc::Cases,
                ("match", "default") => Loc::Target,
                ("call", "pass") => Loc::Pass,
                _ => Loc::Field(kind, f),
            },
            (_, Loc::Branches, Seg::Key(_)) => Loc::Step,
            (_, Loc::Cases, Seg::Key(_)) => Loc::Target,
            (_, Loc::Target, Seg::Key("pass")) => Loc::Pass,
            (_, Loc::Pass, Seg::Key(_)) => Loc::PassValue,
            (_, Loc::SchemaDoc, Seg::Key("fields")) | (_, Loc::FieldType, Seg::Key("fields")) => {
                Loc::FieldMap
            }
            (_, Loc::FieldMap, Seg::Key(_)) | (_, Loc::FieldType, Seg::Key("of")) => Loc::FieldType,
            _ => Loc::Other,
        };
        if loc == Loc::Other {
            break;
        }
    }
    loc
}

impl DialectRules for PipelineRules {
    fn doc_kind(&self, root: &Node) -> &'static str {
        // `schema` wins when both keys are present, as in the reference parser.
        if root.get("schema").is_some() {
            "schema"
        } else if root.get("pipeline").is_some() {
            "pipeline"
        } else {
            "other"
        }
    }

    fn key_order(&self, path: &CstPath) -> Option<&'static [&'static str]> {
        Some(match locate(path) {
            Loc::PipelineDoc => &["pipeline", "description", "steps"],
            Loc::SchemaDoc => &["schema", "fields"],
            Loc::Body("transform") => &["value", "output"],
            Loc::Body("tool") => &["name", "args", "schema", "on_error", "output"],
            Loc::Body("shell") => &["command", "schema", "on_error", "output"],
            Loc::Body("agent") => &[
                "prompt",
                "identity",
                "model",
                "capabilities",
                "schema",
                "output",
            ],
            Loc::Body("call") => &["pipeline", "pass", "output"],
            Loc::Body("match") => &["on", "cases", "default", "output"],
            Loc::Body("fold") => &["over", "items", "init", "do", "output", "max_items"],
            Loc::Body("for_each") => &[
                "over",
                "items",
                "max_parallel",
                "on_error",
                "do",
                "collect",
                "output",
            ],
            Loc::Body("parallel") => &["on_error", "branches", "collect", "output"],
            Loc::Target => &["pipeline", "pass"],
            Loc::FieldType => &["type", "values", "of", "schema", "fields", "required"],
            _ => return None,
        })
    }

    fn is_expression(&self, path: &CstPath) -> bool {
        matches!(
            locate(path),
            Loc::Field("transform", "value")
                | Loc::Field("match", "on")
                | Loc::Field("fold" | "for_each", "over")
                | Loc::Field("fold", "init")
                | Loc::PassValue
        )
    }

    fn prefer_flow(&self, path: &CstPath) -> bool {
        matches!(locate(path), Loc::Body(_))
    }

    fn expression_children(&self, path: &CstPath, seq: bool) -> ExprChildren {
        // A sequence's items are never located as expressions (an index leads nowhere there).
        if seq {
            return ExprChildren::None;
        }
        match locate(path) {
            Loc::Body("transform") => ExprChildren::Keys(&["value"]),
            Loc::Body("match") => ExprChildren::Keys(&["on"]),
            Loc::Body("fold") => ExprChildren::Keys(&["over", "init"]),
            Loc::Body("for_each") => ExprChildren::Keys(&["over"]),
            Loc::Pass => ExprChildren::All,
            _ => ExprChildren::None,
        }
    }
    /// The pipeline runtime's loader turns the YAML 1.1 `yes/no/on/off` booleans off (so that
    /// `match`'s `on:` is a key): quoting them would change nothing for it.
    fn yaml11_bool_words(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::STEP_KINDS;

    #[test]
    fn every_step_kind_is_a_body() {
        for k in STEP_KINDS {
            let p = [
                Seg::Doc("pipeline"),
                Seg::Key("steps"),
                Seg::Index(0),
                Seg::Key(k),
            ];
            assert_eq!(locate(&p), Loc::Body(k));
        }
        let p = [
            Seg::Doc("pipeline"),
            Seg::Key("steps"),
            Seg::Index(0),
            Seg::Key("nope"),
        ];
        assert_eq!(locate(&p), Loc::Other);
    }

    #[test]
    fn locates_nested_steps() {
        let p = [
            Seg::Doc("pipeline"),
            Seg::Key("steps"),
            Seg::Index(0),
            Seg::Key("fold"),
            Seg::Key("do"),
            Seg::Key("transform"),
            Seg::Key("value"),
        ];
        assert!(PipelineRules.is_expression(&p));
        let p = [
            Seg::Doc("pipeline"),
            Seg::Key("steps"),
            Seg::Index(0),
            Seg::Key("parallel"),
            Seg::Key("branches"),
            Seg::Key("a"),
            Seg::Key("agent"),
        ];
        assert!(PipelineRules.prefer_flow(&p));
        let p = [
            Seg::Doc("pipeline"),
            Seg::Key("steps"),
            Seg::Index(3),
            Seg::Key("match"),
            Seg::Key("cases"),
            Seg::Key("x"),
            Seg::Key("pass"),
            Seg::Key("m"),
        ];
        assert!(PipelineRules.is_expression(&p));
        let p = [
            Seg::Doc("schema"),
            Seg::Key("fields"),
            Seg::Key("a"),
            Seg::Key("of"),
        ];
        assert_eq!(PipelineRules.key_order(&p).map(|o| o[0]), Some("type"));
        let p = [
            Seg::Doc("pipeline"),
            Seg::Key("steps"),
            Seg::Index(0),
            Seg::Key("agent"),
            Seg::Key("prompt"),
        ];
        assert!(!PipelineRules.is_expression(&p));
    }
}
