//! Rules on one step (notes §1.3): executor, the keys it reads and their types, required keys,
//! enumerated values, durations, output captures, branch targets and inline steps.

use crate::ast::{self, moved_cleanup, unread, wrong_type, Step};
use crate::codes;
use crate::tree::{Kind, Node};
use pipewright_syntax::{Diagnostic, Span};

pub(crate) const EXECUTORS: [&str; 7] = [
    "shell", "spawn", "kill", "expand", "branch", "foreach", "agent",
];

/// The values the reference gives a meaning; besides them `on_error` takes a template
/// reference ([`on_error_template`]); anything else warns and behaves as `fail`.
pub(crate) const ON_ERROR_VALUES: [&str; 2] = ["continue", "fail"];

/// Whether an `on_error` value names a recovery template (the spec's third kind of value):
/// written as a reference (`.name`, `#name`, `path#wf`, `lib/x`, `x.toml`). A bare word is not
/// one: `ignore` or `retry` read as modes, and would otherwise be looked up as files.
pub fn on_error_template(v: &str) -> bool {
    !ON_ERROR_VALUES.contains(&v)
        && (v.starts_with('.') || v.contains('#') || v.contains('/') || v.ends_with(".toml"))
}
pub(crate) const AGENT_MODES: [&str; 3] = ["autonomous", "interactive", "fire_forget"];

pub(crate) const COMMON: [&str; 4] = ["id", "executor", "needs", "description"];

/// The keys each executor reads, besides [`COMMON`].
pub(crate) fn reads(executor: &str) -> &'static [&'static str] {
    match executor {
        "shell" => &[
            "command",
            "workdir",
            "env",
            "on_error",
            "shell_outputs",
            "outputs",
        ],
        "spawn" => &[
            "agent",
            "adapter",
            "workdir",
            "env",
            "resume_session",
            "spawn_args",
            "on_error",
        ],
        "kill" => &["agent", "graceful"],
        "expand" => &["template", "variables", "on_error"],
        "branch" => &[
            "condition",
            "on_true",
            "on_false",
            "on_timeout",
            "timeout",
            "on_error",
            "shell_outputs",
            "workdir",
            "env",
        ],
        "foreach" => &[
            "items",
            "items_file",
            "item_var",
            "index_var",
            "template",
            "variables",
            "parallel",
            "max_concurrent",
            "join",
            "on_error",
        ],
        "agent" => &["agent", "prompt", "mode", "timeout", "outputs", "on_error"],
        _ => &[],
    }
}

pub(crate) fn required(executor: &str) -> &'static [&'static str] {
    match executor {
        "shell" => &["command"],
        "spawn" | "kill" => &["agent"],
        "expand" => &["template"],
        "branch" => &["condition"],
        "foreach" => &["item_var", "template"],
        "agent" => &["agent", "prompt"],
        _ => &[],
    }
}

/// The TOML type a key must have; `None` for keys whose values are free.
/// A type's name for messages, and the test a value of that type passes.
type Expected = (&'static str, fn(&Node) -> bool);

pub(crate) fn expected(key: &str) -> Option<Expected> {
    fn table(n: &Node) -> bool {
        n.as_table().is_some()
    }
    fn boolean(n: &Node) -> bool {
        n.as_bool().is_some()
    }
    fn bool_or_str(n: &Node) -> bool {
        n.as_bool().is_some() || ast::is_str(n)
    }
    fn int_or_str(n: &Node) -> bool {
        matches!(n.kind, Kind::Int(_)) || ast::is_str(n)
    }
    Some(match key {
        "command" | "workdir" | "agent" | "adapter" | "template" | "condition" | "items"
        | "items_file" | "item_var" | "index_var" | "prompt" | "mode" | "timeout" | "on_error"
        | "resume_session" | "spawn_args" | "executor" | "description" => ("a string", ast::is_str),
        "env" | "variables" | "shell_outputs" | "outputs" | "on_true" | "on_false"
        | "on_timeout" => ("a table", table),
        "graceful" | "join" => ("a boolean", boolean),
        "parallel" => ("a boolean or a string", bool_or_str),
        "max_concurrent" => ("an integer or a string", int_or_str),
        _ => return None,
    })
}

pub(crate) fn check(step: &Step, diags: &mut Vec<Diagnostic>) {
    let ex = match &step.executor_text {
        Some(e) if EXECUTORS.contains(&e.text.as_str()) => e.text.as_str(),
        Some(e) => {
            diags.push(unknown_executor(e.span, &e.text));
            return;
        }
        None => {
            match step.table.get("executor") {
                Some(n) => diags.push(wrong_type(n, "executor", "a string", true)),
                None => diags.push(
                    Diagnostic::error(
                        codes::UNKNOWN_EXECUTOR,
                        step.id.span,
                        format!("step `{}` has no `executor`", step.id.text),
                    )
                    .with_label("no executor")
                    .with_note(
                        "the reference fails when it bakes the step: \"unknown executor type: \"",
                    )
                    .with_help(format!(
                        "add `executor = …`, one of: {}",
                        EXECUTORS.join(", ")
                    )),
                ),
            }
            return;
        }
    };
    let reads = reads(ex);
    for e in &step.table.entries {
        let k = e.key.as_str();
        if COMMON.contains(&k) || reads.contains(&k) {
            if let Some((what, ok)) = expected(k) {
                if !ok(&e.value) {
                    diags.push(wrong_type(&e.value, k, what, k != "description"));
                }
            }
            continue;
        }
        if k.starts_with("cleanup_on_") {
            diags.push(moved_cleanup(k, e.key_span, "steps"));
        } else if k == "outputs" && ex == "branch" {
            diags.push(
                Diagnostic::warning(
                    codes::OUTPUTS_KEY,
                    e.key_span,
                    "a branch step does not read `outputs`",
                )
                .with_label("ignored")
                .with_note("the `outputs` alias of `shell_outputs` is honoured only by shell steps")
                .with_help("rename it to `shell_outputs`"),
            );
        } else {
            let known: Vec<&str> = COMMON.iter().chain(reads.iter()).copied().collect();
            diags.push(unread(e.key_span, k, &known, &format!("a `{ex}` step")));
        }
    }
    for k in required(ex) {
        let present = step
            .table
            .get(k)
            .is_some_and(|n| n.as_str().is_some_and(|s| !s.trim().is_empty()));
        if !present && step.table.get(k).is_none_or(ast::is_str) {
            diags.push(missing(step, ex, k));
        }
    }
    if reads.contains(&"on_error") {
        check_on_error(step, diags);
    }
    match ex {
        "shell" => {
            if let (Some(_), Some(o)) =
                (step.table.get("shell_outputs"), step.table.entry("outputs"))
            {
                diags.push(
                    Diagnostic::warning(codes::OUTPUTS_KEY, o.key_span, "`outputs` is ignored because `shell_outputs` is present")
                        .with_label("ignored")
                        .with_note("the reference reads the `outputs` alias only when `shell_outputs` is absent")
                        .with_help("merge the captures into `shell_outputs`"),
                );
            }
            captures(step, diags);
        }
        "branch" => {
            duration(step, true, diags);
            captures(step, diags);
            branch_targets(step, diags);
        }
        "agent" => {
            duration(step, false, diags);
            agent_mode_and_outputs(step, diags);
        }
        "kill" => {}
        "foreach" => foreach(step, diags),
        _ => {}
    }
}

pub(crate) fn unknown_executor(span: Span, name: &str) -> Diagnostic {
    let d = Diagnostic::error(codes::UNKNOWN_EXECUTOR, span, format!("unknown executor `{name}`"))
        .with_label("not an executor")
        .with_note("`meow validate` accepts it, but the step fails when it is baked: \"unknown executor type\"");
    match pipewright_syntax::suggest::did_you_mean(name, EXECUTORS) {
        Some(c) => d.with_help(format!("did you mean `{c}`?")),
        None => d.with_help(format!("expected one of: {}", EXECUTORS.join(", "))),
    }
}

fn missing(step: &Step, ex: &str, key: &str) -> Diagnostic {
    let span = step.table.get(key).map_or(step.id.span, |n| n.span);
    let why = match (ex, key) {
        ("shell", _) => "an empty command runs `sh -c \"\"` and succeeds, doing nothing",
        ("agent", _) => "the step fails when it is dispatched",
        ("foreach", _) => "the step fails when it is dispatched",
        ("expand", _) => "the step fails: there is no template to expand",
        ("branch", _) => "an empty condition is `sh -c \"\"`: always true",
        _ => "the step cannot do anything without it",
    };
    Diagnostic::error(
        codes::MISSING_KEY,
        span,
        format!("`{ex}` step `{}` needs a non-empty `{key}`", step.id.text),
    )
    .with_label(format!("no `{key}`"))
    .with_note(format!("without it {why}"))
}

fn check_on_error(step: &Step, diags: &mut Vec<Diagnostic>) {
    if let Some(n) = step.table.get("on_error") {
        if let Some(s) = n.as_str() {
            if !ON_ERROR_VALUES.contains(&s) && !on_error_template(s) {
                let d = bad_value(
                    n.span,
                    "on_error",
                    s,
                    &ON_ERROR_VALUES,
                    false,
                    "anything but `continue` or a template reference behaves as `fail`",
                );
                let typo = pipewright_syntax::suggest::did_you_mean(s, ON_ERROR_VALUES).is_some();
                diags.push(match typo {
                    true => d,
                    false => d.with_help(format!(
                        "a recovery template is written as a reference, such as `.{s}` for a workflow of this file"
                    )),
                });
            }
        }
    }
}

pub(crate) fn bad_value(
    span: Span,
    key: &str,
    v: &str,
    allowed: &[&str],
    error: bool,
    why: &str,
) -> Diagnostic {
    let msg = format!("`{v}` is not a valid `{key}`");
    let d = if error {
        Diagnostic::error(codes::BAD_VALUE, span, msg)
    } else {
        Diagnostic::warning(codes::BAD_VALUE, span, msg)
    };
    d.with_label(format!("expected one of: {}", allowed.join(", ")))
        .with_note(why.to_string())
        .with_optional_help(
            pipewright_syntax::suggest::did_you_mean(v, allowed.iter().copied())
                .map(|c| format!("did you mean `{c}`?")),
        )
}

/// Go's `time.ParseDuration`: an optional sign, then one or more decimal numbers each with a
/// unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`); a bare `0` is allowed.
pub(crate) fn parses_as_duration(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_len];
        if num.is_empty() || num == "." {
            return false;
        }
        rest = &rest[num_len..];
        let unit = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .iter()
            .filter(|u| rest.starts_with(**u))
            .max_by_key(|u| u.len());
        match unit {
            Some(u) => rest = &rest[u.len()..],
            None => return false,
        }
    }
    true
}

fn duration(step: &Step, error: bool, diags: &mut Vec<Diagnostic>) {
    let Some(n) = step.table.get("timeout") else {
        return;
    };
    let Some(s) = n.as_str() else { return };
    if parses_as_duration(s) {
        return;
    }
    let msg = format!("`{s}` is not a duration");
    let d = if error {
        Diagnostic::error(codes::BAD_DURATION, n.span, msg)
            .with_note("a branch step with this timeout fails when it is dispatched")
    } else {
        Diagnostic::warning(codes::BAD_DURATION, n.span, msg).with_note(
            "the reference ignores an agent timeout it cannot parse: the step has no timeout",
        )
    };
    let d = if s.contains("{{") {
        d.with_note("`timeout` is not `{{…}}`-substituted: the text is parsed as written")
    } else {
        d
    };
    diags.push(
        d.with_label("not a duration")
            .with_help("write a Go duration: a number and a unit, e.g. `30s`, `5m`, `1h30m`"),
    );
}

fn captures(step: &Step, diags: &mut Vec<Diagnostic>) {
    let key = if step.table.get("shell_outputs").is_some() || step.executor.name() == "branch" {
        "shell_outputs"
    } else {
        "outputs"
    };
    let Some(t) = step.table.get(key).and_then(Node::as_table) else {
        return;
    };
    for e in &t.entries {
        let Some(c) = e.value.as_table() else {
            diags.push(wrong_type(&e.value, &e.key, "a table with `source`", true));
            continue;
        };
        for f in &c.entries {
            match f.key.as_str() {
                "source" => match f.value.as_str() {
                    Some(s)
                        if ["stdout", "stderr", "exit_code"].contains(&s)
                            || s.starts_with("file:") => {}
                    Some(s) => diags.push(bad_value(
                        f.value.span,
                        "source",
                        s,
                        &["stdout", "stderr", "exit_code", "file:<path>"],
                        true,
                        "a capture from an unknown source always stores null",
                    )),
                    None => diags.push(wrong_type(&f.value, "source", "a string", true)),
                },
                "type" => match f.value.as_str() {
                    Some("json") | Some("string") => {}
                    Some(s) => diags.push(bad_value(
                        f.value.span,
                        "type",
                        s,
                        &["json", "string"],
                        false,
                        "only `json` changes how a capture is stored; anything else keeps the text",
                    )),
                    None => diags.push(wrong_type(&f.value, "type", "a string", true)),
                },
                "description" => {}
                other => diags.push(unread(
                    f.key_span,
                    other,
                    &["source", "type", "description"],
                    "an output capture",
                )),
            }
        }
        if c.get("source").is_none() {
            diags.push(
                Diagnostic::error(
                    codes::MISSING_KEY,
                    e.key_span,
                    format!("capture `{}` has no `source`", e.key),
                )
                .with_label("no `source`")
                .with_note("a capture without a source always stores null")
                .with_help("add `source = \"stdout\"` (or `stderr`, `exit_code`, `file:<path>`)"),
            );
        }
    }
}

const OUTPUT_TYPES: [&str; 5] = ["string", "number", "boolean", "json", "file_path"];

fn agent_mode_and_outputs(step: &Step, diags: &mut Vec<Diagnostic>) {
    let mode = step.table.get("mode");
    if let Some(n) = mode {
        if let Some(s) = n.as_str() {
            if !AGENT_MODES.contains(&s) {
                diags.push(bad_value(
                    n.span,
                    "mode",
                    s,
                    &AGENT_MODES,
                    false,
                    "the reference runs any other mode as `autonomous`",
                ));
            }
        }
    }
    let Some(out) = step.table.entry("outputs") else {
        return;
    };
    if mode.and_then(Node::as_str) == Some("fire_forget") {
        diags.push(
            Diagnostic::error(
                codes::BAD_VALUE,
                out.key_span,
                "a `fire_forget` agent step cannot declare outputs",
            )
            .with_label("outputs of a step nobody waits for")
            .with_note("the reference fails the step when it is dispatched"),
        );
    }
    let Some(t) = out.value.as_table() else {
        return;
    };
    for e in &t.entries {
        let Some(decl) = e.value.as_table() else {
            diags.push(wrong_type(
                &e.value,
                &e.key,
                "a table (`{ required = …, type = … }`)",
                true,
            ));
            continue;
        };
        for f in &decl.entries {
            match f.key.as_str() {
                "required" => {
                    if f.value.as_bool().is_none() {
                        diags.push(wrong_type(&f.value, "required", "a boolean", true));
                    }
                }
                "type" => match f.value.as_str() {
                    Some(s) if OUTPUT_TYPES.contains(&s) => {}
                    Some(s) => diags.push(bad_value(
                        f.value.span,
                        "type",
                        s,
                        &OUTPUT_TYPES,
                        true,
                        "`meow done` validates outputs against these types",
                    )),
                    None => diags.push(wrong_type(&f.value, "type", "a string", true)),
                },
                "description" => {}
                other => diags.push(unread(
                    f.key_span,
                    other,
                    &["required", "type", "description"],
                    "an agent output declaration",
                )),
            }
        }
    }
}

fn foreach(step: &Step, diags: &mut Vec<Diagnostic>) {
    let items = step.table.entry("items");
    let file = step.table.entry("items_file");
    match (items, file) {
        (Some(a), Some(b)) => diags.push(
            Diagnostic::error(
                codes::MISSING_KEY,
                b.key_span,
                "a foreach step takes `items` or `items_file`, not both",
            )
            .with_label("second source")
            .with_secondary(a.key_span, "first source")
            .with_note("the reference fails the step when it is dispatched"),
        ),
        (None, None) => diags.push(
            Diagnostic::error(
                codes::MISSING_KEY,
                step.id.span,
                format!(
                    "foreach step `{}` has neither `items` nor `items_file`",
                    step.id.text
                ),
            )
            .with_label("nothing to iterate")
            .with_note("the reference fails the step when it is dispatched"),
        ),
        (Some(a), None) => {
            if let Some(s) = a.value.as_str() {
                if !s.contains("{{")
                    && !matches!(
                        serde_json::from_str::<serde_json::Value>(s),
                        Ok(serde_json::Value::Array(_))
                    )
                {
                    diags.push(
                        Diagnostic::error(
                            codes::BAD_VALUE,
                            a.value.span,
                            "`items` is neither a JSON array nor a `{{…}}` reference",
                        )
                        .with_label("not a JSON array")
                        .with_note("the reference fails the step when it is dispatched"),
                    );
                }
            }
        }
        _ => {}
    }
    if let Some(n) = step.table.get("parallel") {
        if let Some(s) = n.as_str() {
            let ok =
                ["true", "1", "yes", "false", "0", "no"].contains(&s.to_ascii_lowercase().as_str());
            if !ok && !s.contains("{{") {
                diags.push(bad_value(
                    n.span,
                    "parallel",
                    s,
                    &["true", "false"],
                    true,
                    "the reference fails to bake a `parallel` that is not true/1/yes/false/0/no",
                ));
            }
        }
    }
    if let Some(n) = step.table.get("max_concurrent") {
        let bad = match &n.kind {
            Kind::Int(i) => *i < 0,
            Kind::Str(s) => {
                !s.contains("{{") && !s.trim().is_empty() && s.trim().parse::<u64>().is_err()
            }
            _ => false,
        };
        if bad {
            diags.push(
                Diagnostic::warning(
                    codes::BAD_VALUE,
                    n.span,
                    "`max_concurrent` is not a non-negative integer",
                )
                .with_label("means unlimited")
                .with_note(
                    "the reference treats an empty, non-numeric or negative value as unlimited",
                ),
            );
        }
    }
}

const TARGET_KEYS: [&str; 3] = ["template", "variables", "inline"];

fn branch_targets(step: &Step, diags: &mut Vec<Diagnostic>) {
    let mut any = false;
    for key in ["on_true", "on_false", "on_timeout"] {
        let Some(e) = step.table.entry(key) else {
            continue;
        };
        any = true;
        let Some(t) = e.value.as_table() else {
            continue;
        };
        for f in &t.entries {
            if !TARGET_KEYS.contains(&f.key.as_str()) {
                diags.push(unread(
                    f.key_span,
                    &f.key,
                    &TARGET_KEYS,
                    &format!("`{key}`"),
                ));
            }
        }
        match (t.entry("template"), t.entry("inline")) {
            (Some(tpl), Some(inl)) => diags.push(
                Diagnostic::warning(
                    codes::BRANCH_TARGET,
                    inl.key_span,
                    format!("`{key}` has both `template` and `inline`; `inline` is ignored"),
                )
                .with_label("ignored")
                .with_secondary(tpl.key_span, "this wins"),
            ),
            (None, None) => diags.push(
                Diagnostic::error(
                    codes::BRANCH_TARGET,
                    e.key_span,
                    format!("`{key}` has neither `template` nor `inline`"),
                )
                .with_label("no target")
                .with_help("write `{ template = \".workflow\" }` or `{ inline = [] }` for nothing"),
            ),
            (Some(tpl), None) => {
                if !ast::is_str(&tpl.value) {
                    diags.push(wrong_type(&tpl.value, "template", "a string", true));
                }
                if let Some(v) = t.get("variables") {
                    if v.as_table().is_none() {
                        diags.push(wrong_type(v, "variables", "a table", true));
                    }
                }
            }
            (None, Some(inl)) => {
                if let Some(v) = t.entry("variables") {
                    diags.push(
                        Diagnostic::warning(
                            codes::INLINE_STEP,
                            v.key_span,
                            "`variables` has no effect on inline steps",
                        )
                        .with_label("ignored")
                        .with_note("inline steps get no `{{variable}}` substitution at all"),
                    );
                }
                inline_steps(&inl.value, diags);
            }
        }
    }
    if !any {
        diags.push(
            Diagnostic::warning(codes::BRANCH_TARGET, step.id.span, format!("branch step `{}` has no `on_true`, `on_false` or `on_timeout`", step.id.text))
                .with_label("no outcome target")
                .with_note("a false condition or a timeout without a target fails the step (unless `on_error = \"continue\"`)")
                .with_help("add `on_false = { inline = [] }` to accept a false condition"),
        );
    }
}

/// The keys an inline step keeps when it becomes a run step.
const INLINE_KEPT: [&str; 6] = ["id", "executor", "command", "prompt", "agent", "needs"];

fn inline_steps(n: &Node, diags: &mut Vec<Diagnostic>) {
    let Some(items) = n.as_array() else {
        diags.push(wrong_type(n, "inline", "an array of step tables", true));
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let Some(s) = ast::step(item, i, "inline step", diags) else {
            continue;
        };
        check_inline(&s, diags);
    }
}

pub(crate) fn inline_steps_of(step: &Step) -> Vec<Step> {
    let mut sink = Vec::new();
    let mut out = Vec::new();
    for key in ["on_true", "on_false", "on_timeout"] {
        let Some(t) = step.table.get(key).and_then(Node::as_table) else {
            continue;
        };
        if t.get("template").is_some() {
            continue;
        }
        if let Some(items) = t.get("inline").and_then(Node::as_array) {
            for (i, item) in items.iter().enumerate() {
                out.extend(ast::step(item, i, "inline step", &mut sink));
            }
        }
    }
    out
}

fn check_inline(s: &Step, diags: &mut Vec<Diagnostic>) {
    match s.executor.name() {
        "shell" | "agent" => {}
        "" if s.executor_text.is_none() => {
            diags.push(
                Diagnostic::error(
                    codes::INLINE_STEP,
                    s.id.span,
                    format!("inline step `{}` has no `executor`", s.id.text),
                )
                .with_label("no executor")
                .with_help("inline steps run as `shell` or `agent`"),
            );
        }
        ex if EXECUTORS.contains(&ex) => {
            let span = s.executor_text.as_ref().map_or(s.id.span, |e| e.span);
            diags.push(
                Diagnostic::error(codes::INLINE_STEP, span, format!("an inline `{ex}` step never runs"))
                    .with_label("only shell and agent work inline")
                    .with_note("inline steps keep only id, executor, command, prompt, agent and needs; a step of this executor has no configuration and is retried forever")
                    .with_help("move the step into a workflow and use `template = \".name\"`"),
            );
        }
        ex => {
            let span = s.executor_text.as_ref().map_or(s.id.span, |e| e.span);
            diags.push(unknown_executor(span, ex));
        }
    }
    for e in &s.table.entries {
        if !INLINE_KEPT.contains(&e.key.as_str()) && e.key != "description" {
            diags.push(
                Diagnostic::warning(
                    codes::INLINE_STEP,
                    e.key_span,
                    format!("`{}` is dropped from inline steps", e.key),
                )
                .with_label("dropped")
                .with_note("inline steps keep only id, executor, command, prompt, agent and needs")
                .with_help(
                    "move the step into a workflow and use `template = \".name\"` to keep it",
                ),
            );
        }
    }
    for k in ["command", "prompt", "agent"] {
        if let Some(n) = s.table.get(k) {
            if !ast::is_str(n) {
                diags.push(wrong_type(n, k, "a string", true));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parses_as_duration;

    #[test]
    fn go_durations() {
        for ok in [
            "30s", "5m", "1h30m", "1.5h", "0", "-2m", "300ms", "10us", "2µs",
        ] {
            assert!(parses_as_duration(ok), "{ok}");
        }
        for bad in ["", "5", "5 minutes", "m", "1hour", ".s", "1h 30m", "+"] {
            assert!(!parses_as_duration(bad), "{bad}");
        }
    }
}
