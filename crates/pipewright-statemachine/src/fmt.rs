//! The canonical key order of a state-machine recipe (spec §1 and §10): `id`, `label`,
//! `description`, `initialStep`, `guardrails`, `model`, `steps`; in guardrails
//! `maxStepVisits`, `maxTotalSteps`, `exitOnOther`; in a step `prompt`, `model`, `outcomes`,
//! `onOutcome`, whose transitions follow the order of `outcomes`; in a transition `nextStep`,
//! `action`, `recipeId`, `reason`. Steps stay in the author's order. Unknown keys follow the
//! known ones in the order written, and duplicates keep their relative order, so the last
//! one still wins. Layout is the JSON formatter's: two-space indent, one member or element per
//! line. Strings and numbers are copied as written, so prompts are untouched byte for byte.

use crate::ast::{GUARDRAIL_KEYS, INCLUDE_KEY, ROOT_KEYS, STEP_KEYS, TRANSITION_KEYS};
use crate::json::{self, Member, Node, Value};
use pipewright_syntax::{Diagnostic, FileId};

#[derive(Clone, Copy)]
enum Ctx<'a> {
    Root,
    Guardrails,
    Steps,
    Step,
    OnOutcome(&'a [Node]),
    Transition,
    Other,
}

pub fn format(file: FileId, text: &str) -> Result<String, Vec<Diagnostic>> {
    let root = json::parse(file, text).map_err(|e| {
        vec![
            Diagnostic::error("PW0001", e.span, format!("invalid JSON: {}", e.message))
                .with_label("here"),
        ]
    })?;
    let mut out = String::with_capacity(text.len());
    value(&root, Ctx::Root, text, 0, &mut out);
    out.push('\n');
    Ok(out)
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn rank(ctx: Ctx, m: &Member) -> usize {
    let pos = |keys: &[&str]| keys.iter().position(|k| *k == m.key).unwrap_or(usize::MAX);
    match ctx {
        Ctx::Root => pos(ROOT_KEYS),
        Ctx::Guardrails => pos(GUARDRAIL_KEYS),
        Ctx::Step => pos(STEP_KEYS),
        Ctx::Transition => pos(TRANSITION_KEYS),
        Ctx::OnOutcome(outcomes) => outcomes
            .iter()
            .position(|o| o.as_str() == Some(m.key.as_str()))
            .unwrap_or(usize::MAX),
        Ctx::Steps | Ctx::Other => 0,
    }
}

fn child<'a>(ctx: Ctx<'a>, parent: &'a Node, m: &Member) -> Ctx<'a> {
    match (ctx, m.key.as_str()) {
        (Ctx::Root, "guardrails") => Ctx::Guardrails,
        (Ctx::Root, "steps") => Ctx::Steps,
        (Ctx::Steps, k) if k != INCLUDE_KEY => Ctx::Step,
        (Ctx::Step, "onOutcome") => Ctx::OnOutcome(
            parent
                .get("outcomes")
                .and_then(Node::elements)
                .unwrap_or(&[]),
        ),
        (Ctx::OnOutcome(_), _) => Ctx::Transition,
        _ => Ctx::Other,
    }
}

fn value(n: &Node, ctx: Ctx, text: &str, level: usize, out: &mut String) {
    match &n.value {
        Value::Object(members) if !members.is_empty() => {
            let mut order: Vec<&Member> = members.iter().collect();
            // Stable: equal ranks (unknown keys, duplicates) keep the order written.
            order.sort_by_key(|m| rank(ctx, m));
            out.push_str("{\n");
            for (i, m) in order.iter().enumerate() {
                indent(out, level + 1);
                out.push_str(&text[m.key_span.range()]);
                out.push_str(": ");
                value(&m.value, child(ctx, n, m), text, level + 1, out);
                if i + 1 < order.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            indent(out, level);
            out.push('}');
        }
        Value::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                indent(out, level + 1);
                value(item, Ctx::Other, text, level + 1, out);
                if i + 1 < items.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            indent(out, level);
            out.push(']');
        }
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
        _ => out.push_str(&text[n.span.range()]),
    }
}
