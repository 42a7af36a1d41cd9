//! The body of each step kind.

use crate::ast::*;
use crate::codes;
use crate::load::Loader;
use pipewright_syntax::{Diagnostic, Span};
use pipewright_yaml::{Entry, Node, ScalarValue};

/// The keys of each step kind's body, in the order `fmt` and the spec list them. The loader
/// reports any other key (PW0203); the JSON Schema (crate::schema) is generated from it.
pub const STEP_BODY_KEYS: &[(&str, &[&str])] = &[
    ("transform", &["value", "output"]),
    ("tool", &["name", "args", "schema", "output", "on_error"]),
    ("shell", &["command", "schema", "output", "on_error"]),
    (
        "agent",
        &[
            "prompt",
            "identity",
            "capabilities",
            "schema",
            "model",
            "output",
        ],
    ),
    ("call", &["pipeline", "pass", "output"]),
    ("match", &["on", "cases", "default", "output"]),
    (
        "fold",
        &["over", "items", "init", "do", "output", "max_items"],
    ),
    (
        "for_each",
        &[
            "over",
            "items",
            "max_parallel",
            "on_error",
            "do",
            "collect",
            "output",
        ],
    ),
    ("parallel", &["branches", "collect", "on_error", "output"]),
];
/// The keys of a call target (a match case or default).
pub(crate) const TARGET_KEYS: &[&str] = &["pipeline", "pass"];

/// The keys each kind cannot do without (PW0204 when missing).
pub(crate) const STEP_REQUIRED_KEYS: &[(&str, &[&str])] = &[
    ("transform", &["value"]),
    ("tool", &["name"]),
    ("shell", &["command"]),
    ("agent", &["prompt"]),
    ("call", &["pipeline"]),
    ("match", &["on", "cases"]),
    ("fold", &["init", "do", "output"]),
    ("for_each", &["on_error", "do", "collect"]),
    ("parallel", &["branches", "collect"]),
];

/// `kind`'s row of a per-kind table (empty for a kind not in it).
pub(crate) fn keys_of(
    table: &[(&str, &'static [&'static str])],
    kind: &str,
) -> &'static [&'static str] {
    table
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[], |(_, v)| v)
}

pub(crate) fn step_body(
    l: &mut Loader,
    kind: &str,
    key: &Node,
    body: &Node,
    entries: &[Entry],
    span: Span,
) -> Option<Step> {
    let allowed = keys_of(STEP_BODY_KEYS, kind);
    let what = step_what(kind);
    l.unknown_keys(entries, allowed, what, &[]);
    let output = match body.get("output") {
        Some(o) if o.is_null() && kind != "fold" => None,
        // The reference writes a store only under a non-empty name, so `output: ""` is a
        // no-op there, not an error; a fold is the exception, it requires its name.
        Some(o) if kind != "fold" && o.tag.is_none() && o.as_str() == Some("") => {
            l.diags.push(
                Diagnostic::warning(
                    codes::EMPTY_OUTPUT_NAME,
                    o.span,
                    "`output: \"\"` names no store: the result is never written",
                )
                .with_label("empty store name")
                .with_help("remove `output`, or name the store: `output: NAME`"),
            );
            None
        }
        Some(o) => l.name(o, "`output`"),
        None => None,
    };
    // Required keys are reported when missing; a step whose other parts loaded is still
    // returned (with a placeholder where needed) so the checks after loading see it too.
    let req = |l: &mut Loader, k: &str, help: &str| -> Option<&Node> {
        debug_assert!(keys_of(STEP_REQUIRED_KEYS, kind).contains(&k), "{kind}.{k}");
        let n = body.get(k);
        if n.is_none() {
            l.missing(key.span, k, what, help);
        }
        n
    };
    let kind = match kind {
        "transform" => {
            let v = req(l, "value", "add `value: \"<R1 expression>\"`");
            StepKind::Transform {
                value: v.and_then(|n| l.expr(n, "`transform.value`"))?,
            }
        }
        "tool" | "shell" => {
            let schema = body.get("schema").and_then(|n| l.name(n, "`schema`"));
            let on_error = body
                .get("on_error")
                .and_then(|n| l.on_error(n, "`on_error`"));
            if kind == "shell" {
                let c = req(
                    l,
                    "command",
                    "add `command: \"ls\"` or `command: !expr \"['ls', ctx.dir]\"`",
                )?;
                let command = arg_value(l, c, "the shell command")?;
                StepKind::Shell(Box::new(ShellStep {
                    command,
                    schema,
                    on_error,
                }))
            } else {
                let n = req(l, "name", "add `name: TOOL`");
                let name = n.and_then(|n| l.name(n, "the tool name"));
                let mut args = match body.get("args") {
                    None => Vec::new(),
                    Some(a) if a.is_null() => Vec::new(),
                    Some(a) => match a.as_map() {
                        None => {
                            l.wrong_type(a, "`args`", "a mapping of argument names to values");
                            Vec::new()
                        }
                        Some(m) => m
                            .iter()
                            .filter_map(|e| {
                                let name = l.name(&e.key, "an argument name")?;
                                let what = format!("argument `{}`", name.text);
                                let value = arg_value(l, &e.value, &what)?;
                                Some(Arg { name, value })
                            })
                            .collect(),
                    },
                };
                // A filtered collect starts with room for four; the step is kept until the
                // check ends.
                args.shrink_to_fit();
                StepKind::Tool(Box::new(ToolStep {
                    name: name?,
                    args,
                    schema,
                    on_error,
                }))
            }
        }
        "agent" => {
            let p = req(l, "prompt", "add `prompt: \"…\"`");
            let prompt = p.and_then(|n| prompt(l, n));
            let identity = body.get("identity").and_then(|n| l.name(n, "`identity`"));
            let model = body.get("model").and_then(|n| l.name(n, "`model`"));
            let schema = body.get("schema").and_then(|n| l.name(n, "`schema`"));
            let capabilities = body.get("capabilities").and_then(|n| capabilities(l, n));
            StepKind::Agent(Box::new(AgentStep {
                prompt: prompt?,
                identity,
                capabilities,
                schema,
                model,
            }))
        }
        "call" => StepKind::Call(target(l, body, key.span, "a `call` step")?),
        "match" => {
            let on =
                req(l, "on", "add `on: \"<R1 expression>\"`").and_then(|n| l.expr(n, "`match.on`"));
            let cases = req(l, "cases", "add `cases: {\"LABEL\": {pipeline: NAME}}`")
                .map(|n| match_cases(l, n))
                .unwrap_or_default();
            let default = match body.get("default") {
                Some(d) if !d.is_null() => match d.as_map() {
                    Some(_) => target(l, d, d.span, "the match default"),
                    None => {
                        l.wrong_type(d, "`default`", "a mapping `{pipeline: NAME, pass: …}`");
                        None
                    }
                },
                _ => None,
            };
            StepKind::Match(Box::new(MatchStep {
                on: on?,
                cases,
                default,
            }))
        }
        "fold" => {
            let source = list_source(l, body, "fold");
            let init = req(
                l,
                "init",
                "add `init: \"<R1 expression>\"`, e.g. `init: \"0\"`",
            )
            .and_then(|n| l.expr(n, "`fold.init`"));
            let do_ = req(l, "do", "add `do: {transform: {value: \"acc + item\"}}`")
                .and_then(|n| l.step(n, "fold `do` step"));
            if body.get("output").is_none() {
                l.missing(
                    key.span,
                    "output",
                    "a `fold` step",
                    "a fold's purpose is its named result: add `output: NAME`",
                );
            }
            let max_items = body
                .get("max_items")
                .and_then(|n| l.positive_int(n, "`max_items`"));
            StepKind::Fold(Box::new(FoldStep {
                source: source?,
                init: init?,
                body: Box::new(do_?),
                max_items,
            }))
        }
        "for_each" => {
            let source = list_source(l, body, "for_each");
            let max_parallel = body
                .get("max_parallel")
                .and_then(|n| l.positive_int(n, "`max_parallel`"));
            // An invalid or missing policy is reported; checking the body goes on as if `abort`.
            let on_error = match body.get("on_error") {
                Some(n) => l.on_error(n, "`for_each.on_error`"),
                None => {
                    l.missing(key.span, "on_error", "a `for_each` step", "state what a failed item does: `on_error: continue`, `abort` or `\"retry(N)\"`");
                    None
                }
            };
            let on_error = on_error.or(Some(OnError {
                kind: OnErrorKind::Abort,
                span: None,
            }));
            let do_ = req(l, "do", "add `do: STEP`, run once per item")
                .and_then(|n| l.step(n, "for_each `do` step"));
            let collect = req(
                l,
                "collect",
                "add `collect: {transform: {value: \"pipe\"}}` to keep the list of results",
            )
            .and_then(|n| l.step(n, "for_each `collect` step"));
            StepKind::ForEach(Box::new(ForEachStep {
                source: source?,
                max_parallel,
                on_error: on_error?,
                body: Box::new(do_?),
                collect: Box::new(collect?),
            }))
        }
        _ => {
            let on_error = match body.get("on_error") {
                Some(n) => l.on_error(n, "`parallel.on_error`"),
                None => Some(OnError {
                    kind: OnErrorKind::Abort,
                    span: None,
                }),
            };
            let on_error = on_error.or(Some(OnError {
                kind: OnErrorKind::Abort,
                span: None,
            }));
            let branches = req(l, "branches", "add `branches: {NAME: STEP, …}`")
                .map(|n| branches(l, n))
                .unwrap_or_default();
            let collect = req(
                l,
                "collect",
                "add `collect: {transform: {value: \"pipe\"}}` to keep the map of results",
            )
            .and_then(|n| l.step(n, "parallel `collect` step"));
            StepKind::Parallel {
                on_error: on_error?,
                branches,
                collect: Box::new(collect?),
            }
        }
    };
    Some(Step {
        kind,
        span,
        kind_span: key.span,
        output,
    })
}

/// `a \`KIND\` step` for messages; static because it is built for every step and rarely
/// shown.
fn step_what(kind: &str) -> &'static str {
    match kind {
        "transform" => "a `transform` step",
        "tool" => "a `tool` step",
        "shell" => "a `shell` step",
        "agent" => "a `agent` step",
        "call" => "a `call` step",
        "match" => "a `match` step",
        "fold" => "a `fold` step",
        "for_each" => "a `for_each` step",
        _ => "a `parallel` step",
    }
}

fn arg_value(l: &mut Loader, node: &Node, what: &str) -> Option<ArgValue> {
    match &node.tag {
        Some(t) if t.is_local("expr") => {
            let Some(sc) = node.as_scalar() else {
                l.diags.push(
                    Diagnostic::error(
                        codes::MISPLACED_EXPR,
                        node.span,
                        format!("`!expr` on {} in {what}", node.describe()),
                    )
                    .with_label("`!expr` must tag a string holding an R1 expression")
                    .with_help(
                        "write the structure as one expression, e.g. `!expr \"{key: ctx.x}\"`",
                    ),
                );
                return None;
            };
            // Checked as the untagged value would be (a tagged `3` is still not a string).
            let e = l.scalar_expr(node, sc, false, what)?;
            Some(ArgValue::Expr(e))
        }
        _ => {
            l.literal(node, what);
            Some(ArgValue::Literal(node.clone()))
        }
    }
}

fn prompt(l: &mut Loader, node: &Node) -> Option<Prompt> {
    l.reject_tag(node);
    let Some(s) = node
        .as_scalar()
        .filter(|s| matches!(s.resolve(), ScalarValue::Str(_)))
    else {
        l.wrong_type(node, "`prompt`", "a template string");
        return None;
    };
    match pipewright_r1::template::parse_template(&s.text) {
        Ok(template) => Some(Prompt {
            src: s.text.to_string(),
            span: node.span,
            style: s.style,
            template,
        }),
        Err(errs) => {
            for e in errs {
                let d = e.to_diagnostic(|r| {
                    pipewright_yaml::map_scalar_range(l.source, node.span, s.style, &s.text, r)
                });
                l.diags.push(d.with_note("in the agent prompt: every `{…}` is an R1 expression; a prompt cannot contain literal `{word}` text"));
            }
            None
        }
    }
}

fn capabilities(l: &mut Loader, node: &Node) -> Option<Vec<Name>> {
    let tools = node.as_map().and_then(|_| node.get("tools"));
    let Some(tools) = tools else {
        l.diags.push(
            Diagnostic::error(
                codes::BAD_CAPABILITIES,
                node.span,
                "`capabilities` must be `{tools: [NAME, …]}`",
            )
            .with_label("expected a mapping with `tools`")
            .with_help("for example `capabilities: {tools: [file__read]}`"),
        );
        return None;
    };
    if let Some(m) = node.as_map() {
        for e in m {
            if e.key.key_text() != Some("tools") {
                l.diags.push(
                    Diagnostic::warning(
                        codes::BAD_CAPABILITIES,
                        e.key.span,
                        format!(
                            "`capabilities.{}` is ignored",
                            e.key.key_text().unwrap_or("")
                        ),
                    )
                    .with_label("only `tools` narrows an agent's capabilities")
                    .with_help("remove it"),
                );
            }
        }
    }
    let Some(items) = tools.as_seq() else {
        l.wrong_type(tools, "`capabilities.tools`", "a list of tool names");
        return None;
    };
    Some(
        items
            .iter()
            .filter_map(|n| l.name(n, "a tool name"))
            .collect(),
    )
}

fn target(l: &mut Loader, body: &Node, at: Span, what: &str) -> Option<CallTarget> {
    if let Some(m) = body.as_map() {
        if what != "a `call` step" {
            l.unknown_keys(m, TARGET_KEYS, what, &[]);
        }
    }
    let Some(p) = body.get("pipeline") else {
        l.missing(
            at,
            "pipeline",
            what,
            "name the pipeline to run: `pipeline: NAME` (a literal name, never an expression)",
        );
        return None;
    };
    let pipeline = l.name(p, "the target pipeline")?;
    let pass = match body.get("pass") {
        None => Vec::new(),
        Some(n) if n.is_null() => Vec::new(),
        Some(n) => pass(l, n),
    };
    Some(CallTarget {
        pipeline,
        pass,
        span: body.span,
    })
}

/// Both forms: the spec's `[a, b]` (expose these stores) and the reference's `{a: EXPR}`.
fn pass(l: &mut Loader, node: &Node) -> Vec<Pass> {
    if let Some(items) = node.as_seq() {
        return items
            .iter()
            .filter_map(|n| {
                let name = l.name(n, "a `pass` entry")?;
                let src = format!("ctx.{}", name.text);
                let ast = pipewright_r1::parse(&src).ok()?;
                Some(Pass {
                    value: Expr {
                        src: src.into(),
                        span: n.span,
                        style: pipewright_yaml::ScalarStyle::Plain,
                        ast,
                    },
                    name,
                })
            })
            .collect();
    }
    let Some(m) = node.as_map() else {
        l.wrong_type(
            node,
            "`pass`",
            "a list of store names or a `{NAME: EXPR}` mapping",
        );
        return Vec::new();
    };
    m.iter()
        .filter_map(|e| {
            let name = l.name(&e.key, "a `pass` key")?;
            let value = l.expr(&e.value, &format!("`pass` entry `{}`", name.text))?;
            Some(Pass { name, value })
        })
        .collect()
}

fn match_cases(l: &mut Loader, node: &Node) -> Vec<MatchCase> {
    let Some(m) = node.as_map().filter(|m| !m.is_empty()) else {
        l.diags.push(
            Diagnostic::error(
                codes::EMPTY_LIST,
                node.span,
                format!(
                    "`cases` must be a non-empty mapping, found {}",
                    node.describe()
                ),
            )
            .with_label("expected `{\"LABEL\": {pipeline: NAME}, …}`"),
        );
        return Vec::new();
    };
    m.iter()
        .filter_map(|e| {
            let s = e.key.as_scalar()?;
            let label_is_string = matches!(s.resolve(), ScalarValue::Str(_));
            let label = Name {
                text: s.text.clone(),
                span: e.key.span,
            };
            if e.value.as_map().is_none() {
                l.wrong_type(
                    &e.value,
                    &format!("case `{}`", s.text),
                    "a mapping `{pipeline: NAME, pass: …}`",
                );
                return None;
            }
            let target = target(l, &e.value, e.key.span, &format!("match case `{}`", s.text))?;
            Some(MatchCase {
                label,
                label_is_string,
                target,
            })
        })
        .collect()
}

fn list_source(l: &mut Loader, body: &Node, kind: &str) -> Option<ListSource> {
    match (body.entry("over"), body.entry("items")) {
        (Some(o), Some(i)) => {
            l.diags.push(
                Diagnostic::error(
                    codes::OVER_AND_ITEMS,
                    i.key.span,
                    format!("a `{kind}` step takes `over` or `items`, not both"),
                )
                .with_label("second list source")
                .with_secondary(o.key.span, "first list source")
                .with_help("keep `over:` for a computed list or `items:` for a literal one"),
            );
            None
        }
        (Some(o), None) if o.value.is_null() => Some(ListSource::Pipe),
        (Some(o), None) => Some(ListSource::Over(l.expr(
            &o.value,
            if kind == "fold" {
                "`fold.over`"
            } else {
                "`for_each.over`"
            },
        )?)),
        (None, Some(i)) if i.value.is_null() => Some(ListSource::Pipe),
        (None, Some(i)) => {
            if i.value.as_seq().is_none() {
                l.wrong_type(&i.value, &format!("`{kind}.items`"), "a literal list");
                return None;
            }
            l.literal(&i.value, "a literal `items` list");
            Some(ListSource::Items(i.value.clone()))
        }
        (None, None) => Some(ListSource::Pipe),
    }
}

fn branches(l: &mut Loader, node: &Node) -> Vec<Branch> {
    let Some(m) = node.as_map().filter(|m| !m.is_empty()) else {
        l.diags.push(
            Diagnostic::error(
                codes::EMPTY_LIST,
                node.span,
                format!(
                    "`branches` must be a non-empty mapping, found {}",
                    node.describe()
                ),
            )
            .with_label("expected `{NAME: STEP, …}`"),
        );
        return Vec::new();
    };
    m.iter()
        .filter_map(|e| {
            let name = l.name(&e.key, "a branch name")?;
            if &*name.text == "__branch_errors__" {
                l.diags.push(
                    Diagnostic::error(
                        codes::BAD_BRANCH_NAME,
                        name.span,
                        "the branch name `__branch_errors__` is reserved",
                    )
                    .with_label(
                        "reserved: collect receives the errors of dropped branches under this key",
                    )
                    .with_help("rename this branch"),
                );
            } else if &*name.text == "collect" || name.text.contains('.') {
                l.diags.push(
                    Diagnostic::warning(
                        codes::BAD_BRANCH_NAME,
                        name.span,
                        format!("branch name `{}` collides with run-store keys", name.text),
                    )
                    .with_label("a resumed run could mistake this branch for the collect step")
                    .with_help("rename this branch (avoid `collect` and `.`)"),
                );
            }
            let role = format!("parallel branch `{}`", name.text);
            let step = l.step(&e.value, &role)?;
            Some(Branch { name, step })
        })
        .collect()
}
