//! The `{{var}}` template language (grammar: `grammar/recipe-template.ebnf`).
//!
//! A reference is `{{` path `}}` with no blanks, path = word (`.` word)*, exactly the runner's
//! regex `\{\{(\w+(?:\.\w+)*)\}\}`; everything else is literal text. Because the runner leaves
//! non-matching braces verbatim, pipewright reports them — as an error when the intent is
//! obviously a reference (`{{ name }}`, `{{a..b}}`), as a warning otherwise (`{{#if x}}`).

use crate::codes;
use crate::issue::{is_word, lookup, path_len, Issue};
use crate::value::Value;
use std::ops::Range;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarRef {
    /// `a.b.c` split at the dots.
    pub path: Vec<String>,
    /// The whole `{{…}}`.
    pub range: Range<usize>,
    /// Just the path inside the braces.
    pub path_range: Range<usize>,
}

impl VarRef {
    pub fn dotted(&self) -> String {
        self.path.join(".")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(Range<usize>),
    Var(VarRef),
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Template {
    pub parts: Vec<Part>,
}

impl Template {
    pub fn vars(&self) -> impl Iterator<Item = &VarRef> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v),
            Part::Text(_) => None,
        })
    }
}

/// Splits `src` into text and references; never fails (the runner never does either) but
/// reports suspicious brace text.
pub fn parse(src: &str) -> (Template, Vec<Issue>) {
    let mut parts = Vec::new();
    let mut issues = Vec::new();
    let mut text_start = 0usize;
    let mut i = 0usize;
    let bytes = src.as_bytes();
    while let Some(off) = src.get(i..).and_then(|s| s.find("{{")) {
        let at = i + off;
        let inner = &src[at + 2..];
        if let Some(n) = path_len(inner).filter(|&n| inner[n..].starts_with("}}")) {
            if text_start < at {
                parts.push(Part::Text(text_start..at));
            }
            let path_range = at + 2..at + 2 + n;
            parts.push(Part::Var(VarRef {
                path: src[path_range.clone()]
                    .split('.')
                    .map(str::to_owned)
                    .collect(),
                range: at..at + 2 + n + 2,
                path_range,
            }));
            i = at + 2 + n + 2;
            text_start = i;
            continue;
        }
        // `{{{x}}}`: the reference is the inner `{{x}}`, the first brace is text.
        if bytes.get(at + 2) != Some(&b'{') {
            if let Some(issue) = classify(src, at) {
                issues.push(issue);
            }
        }
        i = at + 1;
    }
    if text_start < src.len() {
        parts.push(Part::Text(text_start..src.len()));
    }
    (Template { parts }, issues)
}

/// Explains a `{{` at `at` that does not start a reference.
fn classify(src: &str, at: usize) -> Option<Issue> {
    let rest = &src[at + 2..];
    let Some(close) = rest.find("}}") else {
        return Some(
            Issue::warning(
                codes::TEMPLATE_NOT_REFERENCE,
                at..at + 2,
                "`{{` without a closing `}}` is literal text",
            )
            .label("not a variable reference")
            .help("if this was meant as a variable, write `{{name}}`"),
        );
    };
    let content = &rest[..close];
    if content.contains("{{") || content.contains('\n') && content.trim().is_empty() {
        return None;
    }
    let range = at..at + 2 + close + 2;
    let trimmed = content.trim();
    let valid_path = path_len(trimmed) == Some(trimmed.len());
    if valid_path && trimmed.len() != content.len() {
        return Some(
            Issue::error(
                codes::TEMPLATE_MALFORMED,
                range,
                format!("blanks inside `{{{{ {trimmed} }}}}` make it literal text, not a variable reference"),
            )
            .label("the runner leaves this text as it is")
            .help(format!("write `{{{{{trimmed}}}}}`")),
        );
    }
    let starts_word = content.chars().next().is_some_and(is_word);
    if starts_word && content.chars().all(|c| is_word(c) || c == '.') {
        let rel = content
            .find("..")
            .or_else(|| content.ends_with('.').then(|| content.len() - 1))
            .unwrap_or(0);
        return Some(
            Issue::error(
                codes::TEMPLATE_MALFORMED,
                at + 2 + rel..at + 2 + rel + 1,
                format!("`{{{{{content}}}}}` has an empty path segment"),
            )
            .label("a name is missing around this dot")
            .help("a reference is `{{name}}` or `{{name.field.subfield}}`"),
        );
    }
    Some(
        Issue::warning(
            codes::TEMPLATE_NOT_REFERENCE,
            range,
            format!("`{{{{{}}}}}` is not a variable reference and is left as literal text", content),
        )
        .label("literal text")
        .help("recipe templates only substitute `{{name}}` and `{{name.field}}`; there are no filters, blocks or expressions"),
    )
}

/// Substitutes every reference from `ctx` (a JSON object), as [`render_value`] does. An integer
/// beyond 64 bits has already lost digits in a `serde_json::Value`: [`render_json`] keeps them.
pub fn render(src: &str, ctx: &serde_json::Value) -> Result<String, Issue> {
    render_value(src, &Value::from(ctx))
}

/// Substitutes every reference from a context given as JSON text, read as the runner reads
/// JSON (integers of any size, `NaN`, `Infinity`).
pub fn render_json(src: &str, ctx_json: &str) -> Result<String, Issue> {
    let ctx = Value::from_json_text(ctx_json).map_err(|e| {
        Issue::error(
            codes::UNDEFINED_VARIABLE,
            0..0,
            format!("the context is not valid JSON: {e}"),
        )
        .label("no variables to substitute")
    })?;
    render_value(src, &ctx)
}

/// Substitutes every reference from `ctx` (a mapping) with the runner's text for each value
/// ([`Value::render`]); an undefined variable is an error.
pub fn render_value(src: &str, ctx: &Value) -> Result<String, Issue> {
    let (t, issues) = parse(src);
    if let Some(e) = issues.into_iter().find(Issue::is_error) {
        return Err(e);
    }
    substitute_parts(src, &t, |v, out| {
        let path: Vec<&str> = v.path.iter().map(String::as_str).collect();
        let value = lookup(ctx, &path).map_err(|m| {
            Issue::error(codes::UNDEFINED_VARIABLE, v.range.clone(), m)
                .label("cannot be substituted")
        })?;
        value.render(out);
        Ok(())
    })
}

/// The runner's single substitution pass: text between references, including brace text that
/// is not a reference, is copied verbatim; `var` writes the text of each reference. A value
/// containing `{{y}}` is not expanded again. The runtime ([`crate::runtime`]) supplies the
/// runner's own lookup and value text through `var`.
pub fn substitute<E>(
    src: &str,
    var: impl FnMut(&VarRef, &mut String) -> Result<(), E>,
) -> Result<String, E> {
    let (t, _) = parse(src);
    substitute_parts(src, &t, var)
}

fn substitute_parts<E>(
    src: &str,
    t: &Template,
    mut var: impl FnMut(&VarRef, &mut String) -> Result<(), E>,
) -> Result<String, E> {
    let mut out = String::with_capacity(src.len());
    for p in &t.parts {
        match p {
            Part::Text(r) => out.push_str(&src[r.clone()]),
            Part::Var(v) => var(v, &mut out)?,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_and_literals() {
        let (t, issues) = parse("a {{x}} b {{y.z}} {{{w}}}");
        let v: Vec<String> = t.vars().map(VarRef::dotted).collect();
        assert_eq!(v, ["x", "y.z", "w"]);
        assert!(issues.is_empty());
        let (_, issues) = parse("{{ x }} {{#if a}} {{a..b}}");
        assert_eq!(issues.len(), 3);
        assert!(issues[0].is_error() && !issues[1].is_error() && issues[2].is_error());
    }

    #[test]
    fn renders() {
        let ctx = json!({"x": "hi", "n": 3, "d": {"k": [1, true]}, "b": false});
        assert_eq!(
            render("{{x}}/{{n}}/{{d}}/{{d.k}}/{{b}}", &ctx).unwrap(),
            "hi/3/{\"k\": [1, true]}/[1, true]/false"
        );
        let ctx = json!({"f": 1e-7, "one": 1.0, "e": 1e20, "m": {"k": ["é", 0.5]}});
        assert_eq!(
            render("{{f}} {{one}} {{e}} {{m}}", &ctx).unwrap(),
            r#"1e-07 1.0 1e+20 {"k": ["\u00e9", 0.5]}"#
        );
        assert!(render("{{nope}}", &ctx).is_err());
        assert!(render("{{x.y}}", &ctx).is_err());
    }
}
