//! `pipewright eval`: evaluate one expression or template against a JSON context.

use crate::cli::{ConditionSite, EvalArgs};
use crate::exit::ExitStatus;
use pipewright_r1::{Scope, Value};
use pipewright_syntax::{render, Diagnostic, SourceMap, Span};

pub(crate) fn run(args: &EvalArgs) -> ExitStatus {
    let mut sources = SourceMap::new();
    // `--scope` is the whole top level; `--ctx` (and `--pipe`, `--item`, `--acc`) bind one name.
    let (flag, given) = match &args.scope {
        Some(scope) => ("--scope", scope.as_str()),
        None => ("--ctx", args.ctx.as_str()),
    };
    let ctx_file = sources.add(flag, given);
    let expr_file = sources.add("EXPR", args.expr.as_str());
    let parse_json = |text: &str, what: &str| -> Result<serde_json::Value, String> {
        serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON: {e}"))
    };
    let ctx = match parse_json(given, flag) {
        Ok(v) => v,
        Err(e) => return fail_usage(&sources, ctx_file, given, &e),
    };
    let mut scope = Scope::new();
    if args.scope.is_some() {
        let Some(names) = ctx.as_object() else {
            errln!("error: --scope must be a JSON object of top-level names, e.g. '{{\"ctx\": {{}}, \"pipe\": 1}}'");
            return ExitStatus::COULD_NOT_START;
        };
        let values: Vec<(&str, Value)> = names
            .iter()
            .map(|(n, v)| (n.as_str(), Value::from_json(v)))
            .collect();
        for (n, v) in &values {
            scope = scope.with(*n, v);
        }
        return evaluate(args, &sources, expr_file, &scope, &ctx);
    }
    let mut bound = vec![("ctx", Value::from_json(&ctx)), ("pipe", Value::Null)];
    for (name, text) in [
        ("pipe", &args.pipe),
        ("item", &args.item),
        ("acc", &args.acc),
    ] {
        if let Some(t) = text {
            match parse_json(t, &format!("--{name}")) {
                Ok(v) => {
                    bound.retain(|(n, _)| *n != name);
                    bound.push((name, Value::from_json(&v)));
                }
                Err(e) => {
                    errln!("error: {e}");
                    return ExitStatus::COULD_NOT_START;
                }
            }
        }
    }
    for (n, v) in &bound {
        scope = scope.with(*n, v);
    }
    evaluate(args, &sources, expr_file, &scope, &ctx)
}

/// Evaluates EXPR in `scope` (R1, prompt) or against `vars` (recipe condition, template).
fn evaluate(
    args: &EvalArgs,
    sources: &SourceMap,
    expr_file: pipewright_syntax::FileId,
    scope: &Scope,
    vars: &serde_json::Value,
) -> ExitStatus {
    let whole = |r: std::ops::Range<usize>| Span::new(expr_file, r);
    let result: Result<String, Vec<Diagnostic>> = match args.lang.as_str() {
        "r1" => match pipewright_r1::parse(&args.expr) {
            Err(errs) => Err(errs.iter().map(|e| e.to_diagnostic(whole)).collect()),
            Ok(expr) => pipewright_r1::eval(&expr, scope)
                .map(|v| v.to_json_string())
                .map_err(|e| vec![eval_error(whole(e.range.clone()), &e.message)]),
        },
        "prompt" => match pipewright_r1::parse_template(&args.expr) {
            Err(errs) => Err(errs.iter().map(|e| e.to_diagnostic(whole)).collect()),
            Ok(t) => pipewright_r1::render(&t, scope)
                .map(|s| serde_json::Value::String(s).to_string())
                .map_err(|e| vec![eval_error(whole(e.range.clone()), &e.message)]),
        },
        other => match pipewright_registry::DIALECTS
            .iter()
            .flat_map(|d| d.eval_languages())
            .find(|l| l.name == other)
        {
            Some(lang) => (lang.eval)(&pipewright_dialect::EvalInput {
                expr: &args.expr,
                vars_text: args.scope.as_deref().unwrap_or(&args.ctx),
                vars,
                in_loop: args.site == ConditionSite::Loop,
                at: &whole,
            }),
            // clap accepts only the languages above.
            None => Err(vec![eval_error(
                whole(0..0),
                &format!("no language `{other}`"),
            )]),
        },
    };
    match result {
        Ok(json) => {
            outln!("{json}");
            ExitStatus::OK
        }
        Err(diags) => {
            out!(
                "{}",
                render::human(&diags, sources, crate::output::use_color())
            );
            ExitStatus::FAILED
        }
    }
}

fn eval_error(span: Span, message: &str) -> Diagnostic {
    Diagnostic::error(
        super::check::EVAL_FAILED,
        span,
        format!("evaluation failed: {message}"),
    )
    .with_label("while evaluating this")
}

fn fail_usage(
    sources: &SourceMap,
    file: pipewright_syntax::FileId,
    text: &str,
    message: &str,
) -> ExitStatus {
    let d = Diagnostic::error(
        super::check::INVALID_JSON_ARGUMENT,
        Span::new(file, 0..text.len()),
        message.to_string(),
    )
    .with_label("invalid JSON");
    err!("{}", render::human(&[d], sources, false));
    ExitStatus::COULD_NOT_START
}
