//! Variables (notes §1.4, §2): what an expansion passes against what its target declares, and
//! every `{{…}}` reference against what is in scope where it is written.

use crate::ast::{moved_cleanup, Step, Workflow};
use crate::check::{strings, Ctx, Expansion};
use crate::codes;
use crate::executor::Executor;
use crate::steps;
use crate::tree::{Kind, Node};
use pipewright_syntax::suggest::did_you_mean;
use pipewright_syntax::{Diagnostic, Severity, Span};
use std::collections::{BTreeSet, HashMap};

/// Names the reference defines itself.
pub(crate) const BUILTINS: [&str; 6] = [
    "workflow_id",
    "step_id",
    "timestamp",
    "date",
    "time",
    "__step_prefix__",
];

/// What a recovery template (`on_error = ".name"`) reads its failure from.
pub(crate) const FAILED_STEP: &str = "_failed_step";

pub(crate) struct Scope<'a> {
    pub wf: &'a Workflow,
    /// Names a foreach of this file binds in this workflow (`item_var`, `index_var`).
    pub extra: &'a [String],
    pub closure: &'a HashMap<String, BTreeSet<String>>,
    /// The workflows of this file that expand this one.
    pub callers: &'a [&'a Workflow],
    /// The variables those expansions give this workflow.
    pub given: Option<&'a BTreeSet<String>>,
}

impl Scope<'_> {
    /// The value of `name` when the file fixes it: its default, which no expansion of this
    /// file replaces and no declared `json`/`object` type turns into structure.
    /// A `--var` value is text, so it does not give a string default fields or a list
    /// default more items either.
    fn known(&self, name: &str) -> Option<&Node> {
        let v = self.wf.var(name)?;
        let default = v.default.as_ref()?;
        if self.extra.iter().any(|e| e == name) || self.given.is_some_and(|g| g.contains(name)) {
            return None;
        }
        if matches!(
            v.ty.as_ref().map(|t| t.text.as_str()),
            Some("json" | "object")
        ) {
            return None;
        }
        Some(default)
    }
}

/// The variables an expansion passes must be declared by its target, and the target's
/// required variables without default must be passed.
/// Across files these are warnings: the project's copy of a library may lag the one `meow`
/// finds first (a collection, `~/.meow/workflows`).
/// A recovery passes no table: it receives the variables of `caller`, the failing workflow.
pub(crate) fn passed(
    cx: &mut Ctx,
    x: &Expansion,
    caller: &Workflow,
    wf: &Workflow,
    same_file: bool,
) {
    let severity = if same_file {
        Severity::Error
    } else {
        Severity::Warning
    };
    let across = |d: Diagnostic| {
        if same_file {
            d
        } else {
            d.with_note("the workflow is in another file: a warning, since `meow` may load a different copy of it")
        }
    };
    let mut given: Vec<&str> = Vec::new();
    if x.is_recovery() {
        given.extend(caller.variables.iter().map(|v| v.name.as_str()));
    }
    if let Executor::Foreach(f) = &x.step.executor {
        given.extend(
            [&f.item_var, &f.index_var]
                .into_iter()
                .flatten()
                .map(|t| t.text.as_str()),
        );
    }
    if let Some(vars) = x.variables {
        for e in &vars.entries {
            given.push(&e.key);
            if e.key.starts_with("__") || wf.var(&e.key).is_some() {
                continue;
            }
            if e.key.starts_with("cleanup_on_") {
                cx.diags
                    .push(moved_cleanup(&e.key, e.key_span, "steps.variables"));
                continue;
            }
            let declared: Vec<&str> = wf.variables.iter().map(|v| v.name.as_str()).collect();
            let d = Diagnostic::new(
                severity,
                codes::UNDECLARED_PASSED,
                e.key_span,
                format!(
                    "workflow `{}` does not declare a variable `{}`",
                    wf.name, e.key
                ),
            )
            .with_label("not declared by the target")
            .with_secondary(x.template.span, "expanded here")
            .with_note(
                "the reference rejects the expansion: every variable passed must be declared",
            );
            cx.diags.push(across(
                match did_you_mean(&e.key, declared.iter().copied()) {
                    Some(c) => d.with_help(format!("did you mean `{c}`?")),
                    None if declared.is_empty() => {
                        d.with_help(format!("declare it in `[{}.variables]`", wf.name))
                    }
                    None => d.with_help(format!("declared: {}", declared.join(", "))),
                },
            ));
        }
    }
    for v in &wf.variables {
        if v.required && v.default.is_none() && !given.contains(&v.name.as_str()) {
            if x.is_recovery() {
                cx.diags.push(across(
                    Diagnostic::new(severity, codes::REQUIRED_NOT_SUPPLIED, x.template.span, format!("required variable `{}` of recovery workflow `{}` is not a variable of workflow `{}`", v.name, wf.name, caller.name))
                        .with_label(format!("recovers with `{}` but without `{}`", wf.name, v.name))
                        .with_note("a recovery receives the variables of the workflow whose step failed; it takes no `variables` table")
                        .with_help(format!("declare `{}` in `[{}.variables]`, or give it a default in `{}`", v.name, caller.name, wf.name)),
                ));
                continue;
            }
            cx.diags.push(across(
                Diagnostic::new(severity, codes::REQUIRED_NOT_SUPPLIED, x.template.span, format!("required variable `{}` of workflow `{}` is not passed", v.name, wf.name))
                    .with_label(format!("expands `{}` without `{}`", wf.name, v.name))
                    .with_note("an expansion passes only the variables it names; the caller's variables are not inherited")
                    .with_help(format!("pass it: `variables = {{ {} = \"…\" }}`", v.name)),
            ));
        }
    }
}

/// One `{{…}}` in a string.
pub(crate) struct Reference<'t> {
    pub inner: &'t str,
    /// Byte offset of `{{` in the string's value.
    pub at: usize,
}

pub(crate) fn references_in(s: &str) -> Vec<Reference<'_>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = s[from..].find("{{") {
        let start = from + open;
        let body = &s[start + 2..];
        let Some(close) = body.find("}}") else { break };
        let inner = &body[..close];
        if !inner.is_empty() && !inner.contains(['{', '}']) {
            out.push(Reference { inner, at: start });
            from = start + 2 + close + 2;
        } else {
            // `{{{x}}}` holds `{{x}}` one byte later.
            from = start + 1;
        }
    }
    out
}

/// The span of the `n`-th occurrence of `needle` in the source text of `node`, else the node.
fn span_of(text: &str, node: &Node, needle: &str, nth: usize) -> Span {
    let raw = text.get(node.span.range()).unwrap_or("");
    let mut from = 0;
    for i in 0.. {
        let Some(p) = raw[from..].find(needle) else {
            break;
        };
        if i == nth {
            let s = node.span.start as usize + from + p;
            return Span::new(node.span.file, s..s + needle.len());
        }
        from += p + needle.len();
    }
    node.span
}

/// Keys whose text is never substituted.
const NOT_SUBSTITUTED: [&str; 3] = ["description", "timeout", "mode"];

pub(crate) fn references(cx: &mut Ctx, scope: &Scope, step: &Step) {
    let mut nodes = Vec::new();
    // A foreach binds its `item_var` and `index_var` for its own `variables` and `template`
    // (spec, foreach: "can reference `item_var` and `index_var`").
    let mut per_item = Vec::new();
    for e in &step.table.entries {
        if step.executor.name() == "foreach" && (e.key == "variables" || e.key == "template") {
            strings(&e.value, &mut per_item);
            continue;
        }
        if NOT_SUBSTITUTED.contains(&e.key.as_str()) {
            continue;
        }
        if step.executor.name() == "branch" && e.key.starts_with("on_") {
            // Inline steps are checked below; only a template target's variables are baked.
            if let Some(t) = e.value.as_table() {
                if let Some(v) = t.get("variables") {
                    if t.get("template").is_some() {
                        strings(v, &mut nodes);
                    }
                }
                if let Some(tpl) = t.get("template") {
                    strings(tpl, &mut nodes);
                }
            }
            continue;
        }
        if e.key == "items_file" {
            if let Some(n) = e.value.as_str().map(|_| &e.value) {
                check_string(cx, scope, step, n, Where::ItemsFile);
            }
            continue;
        }
        if e.key == "outputs" && step.executor.name() == "agent" {
            continue;
        }
        strings(&e.value, &mut nodes);
    }
    for n in nodes {
        check_string(cx, scope, step, n, Where::Baked);
    }
    if !per_item.is_empty() {
        let mut extra = scope.extra.to_vec();
        if let Executor::Foreach(f) = &step.executor {
            extra.extend(
                [&f.item_var, &f.index_var]
                    .into_iter()
                    .flatten()
                    .map(|t| t.text.clone()),
            );
        }
        let inner = Scope {
            extra: &extra,
            ..*scope
        };
        for n in per_item {
            check_string(cx, &inner, step, n, Where::Baked);
        }
    }
    for inline in steps::inline_steps_of(step) {
        let mut nodes = Vec::new();
        for k in ["command", "prompt", "agent"] {
            if let Some(n) = inline.table.get(k) {
                strings(n, &mut nodes);
            }
        }
        for n in nodes {
            check_string(cx, scope, step, n, Where::Inline);
        }
    }
}

/// What the reference does with a string's `{{variable}}` references.
#[derive(Clone, Copy, PartialEq)]
enum Where {
    /// Substituted when the step is baked.
    Baked,
    /// An inline branch step: never substituted.
    Inline,
    /// `items_file`: only step outputs are filled in.
    ItemsFile,
}

/// Cleanup scripts are never `{{…}}`-substituted.
pub(crate) fn cleanup_scripts(cx: &mut Ctx, wf: &Workflow) {
    for k in [
        "cleanup_on_success",
        "cleanup_on_failure",
        "cleanup_on_stop",
    ] {
        let Some(n) = wf.table.get(k) else { continue };
        let Some(s) = n.as_str() else { continue };
        for r in references_in(s) {
            let whole = &s[r.at..r.at + r.inner.len() + 4];
            let span = span_of(cx.text, n, whole, 0);
            let name = r.inner.trim();
            cx.diags.push(
                Diagnostic::warning(codes::UNDEFINED_VARIABLE, span, format!("`{{{{{name}}}}}` is not substituted in a cleanup script"))
                    .with_label("stays literal")
                    .with_note("cleanup scripts run as written; the variables given with `--var` are exported as environment variables")
                    .with_help(format!("write `${}` to read a `--var` value", name.split('.').next().unwrap_or(name))),
            );
        }
    }
}

fn check_string(cx: &mut Ctx, scope: &Scope, step: &Step, n: &Node, place: Where) {
    let Some(s) = n.as_str() else { return };
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for r in references_in(s) {
        let _ = r.at;
        let whole = &s[r.at..r.at + r.inner.len() + 4];
        let nth = counts.entry(whole).or_default();
        let span = span_of(cx.text, n, whole, *nth);
        *nth += 1;
        let inner = r.inner.trim();
        let segs: Vec<&str> = inner.split('.').collect();
        let out_at = (1..segs.len().saturating_sub(1)).find(|&i| segs[i] == "outputs");
        match out_at {
            Some(i) => output_ref(cx, scope, step, &segs[..i].join("."), segs[i + 1], span, inner != r.inner),
            None if place == Where::ItemsFile => cx.diags.push(
                Diagnostic::warning(codes::UNDEFINED_VARIABLE, span, format!("`{{{{{inner}}}}}` is not substituted in `items_file`"))
                    .with_label("stays literal")
                    .with_note("the reference fills only `{{step.outputs.field}}` into `items_file`; variables are not substituted there")
                    .with_help("use `items = \"{{…}}\"` for a variable that holds the list"),
            ),
            None if place == Where::Inline => cx.diags.push(
                Diagnostic::warning(codes::INLINE_STEP, span, format!("`{{{{{inner}}}}}` is not substituted in an inline step"))
                    .with_label("stays literal")
                    .with_note("inline branch steps get no `{{variable}}` substitution; only `{{step.outputs.field}}` is filled in")
                    .with_help("move the step into a workflow and use `template = \".name\"` with `variables`"),
            ),
            None => variable_ref(cx, scope, &segs, span),
        }
    }
}

fn variable_ref(cx: &mut Ctx, scope: &Scope, segs: &[&str], span: Span) {
    let root = segs[0].trim();
    if scope.wf.var(root).is_some()
        || BUILTINS.contains(&root)
        || scope.extra.iter().any(|e| e == root)
    {
        if let Some(v) = scope.known(root) {
            path_into(cx, root, v, &segs[1..], span);
        }
        return;
    }
    if root == FAILED_STEP {
        // Another file's `on_error` may name this workflow: not certainly wrong.
        cx.diags.push(
            Diagnostic::warning(codes::UNDEFINED_VARIABLE, span, format!("`{FAILED_STEP}` is set only in a recovery, and no `on_error` of this file leads to workflow `{}`", scope.wf.name))
                .with_label("set only in a recovery")
                .with_note("a failed step's `on_error = \".name\"` runs that workflow with `_failed_step` describing the failure; the workflows it expands see it too")
                .with_help(format!("name it from the failing step: `on_error = \".{}\"`", scope.wf.name)),
        );
        return;
    }
    let mut names: Vec<&str> = scope.wf.variables.iter().map(|v| v.name.as_str()).collect();
    names.extend(scope.extra.iter().map(String::as_str));
    let wf = &scope.wf.name;
    let d = Diagnostic::error(codes::UNDEFINED_VARIABLE, span, format!("undefined variable `{root}` in workflow `{wf}`", ))
        .with_label("not declared")
        .with_note("a workflow sees only its own declared variables, what a foreach binds and the built-ins; an expansion does not inherit the caller's variables");
    if let Some(c) = did_you_mean(root, names.iter().copied().chain(BUILTINS)) {
        cx.diags.push(d.with_help(format!("did you mean `{c}`?")));
        return;
    }
    // A foreach of this workflow binds the name, but not here.
    let binder = scope.wf.steps.iter().find_map(|s| {
        let Executor::Foreach(f) = &s.executor else {
            return None;
        };
        [("item_var", &f.item_var), ("index_var", &f.index_var)]
            .into_iter()
            .find(|(_, name)| name.as_ref().is_some_and(|n| n.text == root))
            .map(|(key, _)| (s, f, key))
    });
    if let Some((s, f, key)) = binder {
        let target = f
            .template
            .as_ref()
            .map_or_else(String::new, |t| format!(" (`{}`)", t.text));
        cx.diags.push(
            d.with_secondary(s.id.span, format!("`{root}` is the `{key}` of this foreach"))
                .with_help(format!("`{root}` is bound only in the `variables` and `template` of foreach `{}` and in the workflow it expands{target}; use it there, or pass what this step needs through `variables`", s.id.text)),
        );
        return;
    }
    let declare = format!("declare it: `[{wf}.variables]` `{root} = {{ required = true }}`");
    let help = match scope.callers.iter().find(|c| c.var(root).is_some()) {
        Some(c) => format!("workflow `{}` has a variable `{root}`, but an expansion does not inherit it: {declare}, and pass it where `{}` expands `{wf}`: `variables = {{ {root} = \"{{{{{root}}}}}\" }}`", c.name, c.name),
        None if scope.callers.is_empty() && wf == "main" => format!("{declare}, given with `--var {root}=…` when the file is run, or `{root} = {{ default = \"…\" }}`"),
        None => format!("{declare}, and pass it from every expansion"),
    };
    cx.diags.push(d.with_help(help));
}

/// `{{name.a.0}}` against the value the file gives `name`: the reference fails the step on an
/// index past the end of a list, a field of a scalar, or a key a table lacks.
fn path_into(cx: &mut Ctx, root: &str, value: &Node, path: &[&str], span: Span) {
    let mut at = value;
    let mut walked = root.to_string();
    for seg in path {
        let seg = seg.trim();
        let next = match &at.kind {
            Kind::Array(items) => match seg.parse::<usize>() {
                Ok(i) if i < items.len() => Ok(&items[i]),
                Ok(i) => Err((
                    format!(
                        "index {i} is past the end of `{walked}`, a list of {} item{}",
                        items.len(),
                        if items.len() == 1 { "" } else { "s" }
                    ),
                    format!(
                        "indexes of `{walked}` run from 0 to {}",
                        items.len().saturating_sub(1)
                    ),
                )),
                Err(_) => Err((
                    format!("`{walked}` is a list; `{seg}` is not an index"),
                    format!("a list takes a 0-based index: `{{{{{walked}.0}}}}`"),
                )),
            },
            Kind::Table(t) => t.get(seg).ok_or_else(|| {
                let keys: Vec<&str> = t.entries.iter().map(|e| e.key.as_str()).collect();
                (
                    format!("`{walked}` has no field `{seg}`"),
                    match did_you_mean(seg, keys.iter().copied()) {
                        Some(c) => format!("did you mean `{c}`?"),
                        None => format!("its fields: {}", keys.join(", ")),
                    },
                )
            }),
            _ => Err((
                format!(
                    "`{walked}` is {}, which has no field `{seg}`",
                    at.type_name()
                ),
                format!("write `{{{{{walked}}}}}`, or give `{root}` a table or list value"),
            )),
        };
        match next {
            Ok(n) => {
                at = n;
                walked = format!("{walked}.{seg}");
            }
            Err((message, help)) => {
                cx.diags.push(
                    Diagnostic::error(codes::BAD_PATH, span, message)
                        .with_label("the substitution fails")
                        .with_secondary(value.span, format!("the value of `{root}`"))
                        .with_note("substitution stops the step when a path leaves the value")
                        .with_help(help),
                );
                return;
            }
        }
    }
}

fn output_ref(
    cx: &mut Ctx,
    scope: &Scope,
    step: &Step,
    target: &str,
    field: &str,
    span: Span,
    spaced: bool,
) {
    if spaced {
        cx.diags.push(
            Diagnostic::warning(
                codes::UNDEFINED_VARIABLE,
                span,
                "an output reference with spaces inside the braces is never filled in",
            )
            .with_label("stays literal")
            .with_note("the reference matches output references without spaces only"),
        );
    }
    let wf = scope.wf;
    let deps = scope.closure.get(&step.id.text);
    let known = wf.step(target);
    let head = target.split('.').next().unwrap_or(target);
    let into_expansion = known.is_none()
        && target.contains('.')
        && wf
            .step(head)
            .is_some_and(|h| matches!(h.executor, Executor::Expand(_)));
    if known.is_none() && !into_expansion {
        let ids = wf.steps.iter().map(|s| s.id.text.as_str());
        cx.diags.push(
            Diagnostic::error(
                codes::UNDEFINED_VARIABLE,
                span,
                format!(
                    "no step `{target}` in workflow `{}` for this output reference",
                    wf.name
                ),
            )
            .with_label("unknown step")
            .with_note("an unresolved output reference is left in the text literally")
            .with_optional_help(did_you_mean(target, ids).map(|c| format!("did you mean `{c}`?"))),
        );
        return;
    }
    if target != step.id.text && !deps.is_some_and(|d| d.contains(target)) {
        cx.diags.push(
            Diagnostic::warning(codes::OUTPUT_NOT_DEPENDENCY, span, format!("step `{}` reads outputs of `{target}` without needing it", step.id.text))
                .with_label("may not have run yet")
                .with_note(format!("outputs are filled in when the step is dispatched; if `{target}` has not finished, the reference stays literal"))
                .with_help(format!("add `\"{target}\"` to the `needs` of `{}`", step.id.text)),
        );
    }
    let Some(src) = known else { return };
    let declared: Option<Vec<&str>> = match src.executor.name() {
        "shell" | "branch" => {
            let key = if src.executor.name() == "shell" && src.table.get("shell_outputs").is_none()
            {
                "outputs"
            } else {
                "shell_outputs"
            };
            let mut v: Vec<&str> = vec!["outcome", "exit_code", "error"];
            if let Some(t) = src.table.get(key).and_then(Node::as_table) {
                v.extend(t.entries.iter().map(|e| e.key.as_str()));
            }
            Some(v)
        }
        // Agents record whatever `meow done` sends; undeclared keys are kept.
        "agent" => src
            .table
            .get("outputs")
            .and_then(Node::as_table)
            .map(|t| t.entries.iter().map(|e| e.key.as_str()).collect()),
        // The session id the agent runs under, for a later spawn's `resume_session`.
        "spawn" => Some(vec!["session_id"]),
        _ => Some(Vec::new()),
    };
    let Some(declared) = declared else { return };
    if !declared.contains(&field) {
        let d = Diagnostic::warning(
            codes::UNDECLARED_OUTPUT,
            span,
            format!("step `{target}` does not declare an output `{field}`"),
        )
        .with_label("undeclared output");
        cx.diags.push(if declared.is_empty() {
            d.with_note(format!(
                "a `{}` step records no outputs",
                src.executor.name()
            ))
        } else {
            d.with_note(format!("it declares: {}", declared.join(", ")))
                .with_optional_help(
                    did_you_mean(field, declared.iter().copied())
                        .map(|c| format!("did you mean `{c}`?")),
                )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::references_in;

    fn inners(s: &str) -> Vec<&str> {
        references_in(s).iter().map(|r| r.inner).collect()
    }

    #[test]
    fn references_follow_the_reference_syntax() {
        assert_eq!(inners("a {{x}} b {{ y.z }}"), ["x", " y.z "]);
        assert_eq!(inners("{{}} {{a{b}} {{c}}"), ["c"]);
        assert_eq!(inners("{{{x}}}"), ["x"]);
        assert_eq!(inners("{{open"), Vec::<&str>::new());
        assert_eq!(inners("{{s.outputs.f}}"), ["s.outputs.f"]);
    }
}
