//! Agent prompt templates: text with `{expr}` references (see docs/r1.md, "Prompt templates").

use crate::ast::{ByteRange, Expr};
use crate::codes;
use crate::error::ParseError;
use crate::eval::{eval, EvalError, Scope};
use crate::parser::parse;
use crate::value::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub parts: Vec<TemplatePart>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TemplatePart {
    Text(Box<str>),
    /// A `{…}` reference. `range` is the interior of the braces and `expr`'s spans are relative
    /// to the template source; `source` is the interior without surrounding whitespace.
    Expr {
        expr: Expr,
        range: ByteRange,
        source: Box<str>,
    },
}

/// Splits a template into text and references; every reference that does not parse is
/// reported. A `{` … `}` pair holding no other brace is a reference, `{}` is text, and braces
/// without a partner are text. There is no escape for a literal `{word}`.
pub fn parse_template(src: &str) -> Result<Template, Vec<ParseError>> {
    let mut parts = Vec::new();
    let mut errors = Vec::new();
    let mut text = String::new();
    let mut pos = 0;
    while pos < src.len() {
        let rest = &src[pos..];
        let Some(open) = rest.find('{') else {
            text.push_str(rest);
            break;
        };
        let after = pos + open + 1;
        let Some(close_rel) = src[after..].find(['{', '}']) else {
            text.push_str(rest);
            break;
        };
        let close = after + close_rel;
        if src.as_bytes().get(close) == Some(&b'{') {
            // `{` followed by another `{`: the first brace is plain text.
            text.push_str(&src[pos..close]);
            pos = close;
            continue;
        }
        if close == after {
            // `{}` is plain text.
            text.push_str(&src[pos..=close]);
            pos = close + 1;
            continue;
        }
        text.push_str(&src[pos..pos + open]);
        let interior = &src[after..close];
        let trimmed = interior.trim_matches([' ', '\t', '\r', '\n']);
        if trimmed.is_empty() {
            errors.push(
                ParseError::new(
                    after - 1..close + 1,
                    codes::EMPTY,
                    "empty template reference",
                    "nothing between the braces",
                )
                .with_help("write an expression such as `{ctx.name}`, or remove the braces"),
            );
        } else {
            match parse(interior) {
                Ok(mut expr) => {
                    expr.shift(after);
                    if !text.is_empty() {
                        parts.push(TemplatePart::Text(std::mem::take(&mut text).into()));
                    }
                    parts.push(TemplatePart::Expr {
                        expr,
                        range: ByteRange::new(after..close),
                        source: trimmed.into(),
                    });
                }
                Err(es) => errors.extend(es.into_iter().map(|e| e.shifted(after))),
            }
        }
        pos = close + 1;
    }
    if !text.is_empty() {
        parts.push(TemplatePart::Text(text.into()));
    }
    // Every template of a pipeline is kept until the check ends: no spare capacity.
    parts.shrink_to_fit();
    if errors.is_empty() {
        Ok(Template { parts })
    } else {
        Err(errors)
    }
}

/// Renders a template: strings are inserted as they are, other values as compact JSON.
pub fn render(template: &Template, scope: &Scope<'_>) -> Result<String, EvalError> {
    let mut out = String::new();
    for part in &template.parts {
        match part {
            TemplatePart::Text(t) => out.push_str(t),
            TemplatePart::Expr { expr, source, .. } => match eval(expr, scope) {
                Ok(Value::Str(s)) => out.push_str(&s),
                Ok(v) => out.push_str(&v.to_json_string()),
                Err(e) => {
                    return Err(EvalError {
                        range: e.range,
                        message: format!(
                            "prompt template reference {{{source}}} could not be resolved: {}",
                            e.message
                        ),
                    })
                }
            },
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str) -> Result<String, String> {
        let ctx = Value::from_json(
            &serde_json::json!({"s": "hi", "n": 3, "f": 3.0, "l": [1, "a"], "o": {"k": 1}, "b": true, "z": null}),
        );
        let t = parse_template(src).map_err(|e| format!("{e:?}"))?;
        render(&t, &Scope::new().with("ctx", &ctx)).map_err(|e| e.message)
    }

    #[test]
    fn interpolation_rules() {
        assert_eq!(run("a {ctx.s} b").as_deref(), Ok("a hi b"));
        assert_eq!(run("{{ctx.s}}").as_deref(), Ok("{hi}"));
        assert_eq!(run("{} {ctx.s").as_deref(), Ok("{} {ctx.s"));
        assert_eq!(run("ctx.s}").as_deref(), Ok("ctx.s}"));
        assert_eq!(
            run("{ctx.n + 1}|{ctx.f}|{ctx.l}|{ctx.o}|{ctx.b}|{ctx.z}").as_deref(),
            Ok("4|3.0|[1,\"a\"]|{\"k\":1}|true|null")
        );
        assert!(run("{ }").is_err());
        assert!(run("{ctx.}").is_err());
        assert_eq!(
            run("x {ctx.nope}"),
            Err("prompt template reference {ctx.nope} could not be resolved: path 'ctx.nope' is absent: no field 'ctx.nope' in context".to_string())
        );
    }

    #[test]
    fn spans_are_relative_to_the_template() {
        let t = parse_template("ab {ctx.s}").unwrap_or_else(|e| panic!("{e:?}"));
        match &t.parts[1] {
            TemplatePart::Expr { expr, range, .. } => {
                assert_eq!(range.range(), 4..9);
                assert_eq!(expr.span.range(), 4..9);
            }
            other => panic!("{other:?}"),
        }
        let e = parse_template("ab {1 +}").err().unwrap_or_default();
        assert_eq!(e[0].range.start, 7);
    }
}
