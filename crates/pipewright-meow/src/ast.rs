//! The typed view of a module: workflows, their variables and steps. Building it reports the
//! module-shape problems (notes §1.1–§1.2); the step rules live in `steps`.

use crate::codes;
use crate::executor::Executor;
use crate::tree::{Kind, Node, Table};
use pipewright_syntax::{Diagnostic, Span};

#[derive(Debug, Clone)]
pub struct Text {
    pub text: String,
    pub span: Span,
}

impl Text {
    /// A string value with its span; `None` for a value of another type.
    pub fn of(n: &Node) -> Option<Text> {
        n.as_str().map(|s| Text {
            text: s.to_string(),
            span: n.span,
        })
    }
}

#[derive(Debug)]
pub struct Module {
    pub workflows: Vec<Workflow>,
}

#[derive(Debug)]
pub struct Workflow {
    /// The table key with a leading dot stripped: what `.name` references resolve to.
    pub name: String,
    pub key_span: Span,
    pub table: Table,
    pub variables: Vec<VarDecl>,
    pub steps: Vec<Step>,
    pub cleanup: Cleanup,
}

/// The scripts run when a run of the workflow ends: done, failed or stopped.
#[derive(Debug, Clone, Default)]
pub struct Cleanup {
    pub on_success: Option<Text>,
    pub on_failure: Option<Text>,
    pub on_stop: Option<Text>,
}

#[derive(Debug)]
pub struct VarDecl {
    pub name: String,
    pub span: Span,
    pub required: bool,
    pub default: Option<Node>,
    /// `type`, as written (only some types coerce a value).
    pub ty: Option<Text>,
}

#[derive(Debug, Clone)]
pub struct Step {
    pub id: Text,
    /// The whole step table (its header, or the inline table).
    pub span: Span,
    /// The `executor` value as written, when it is a string.
    pub executor_text: Option<Text>,
    /// The executor with the fields it reads.
    pub executor: Executor,
    pub needs: Vec<Text>,
    /// Every executor but `kill` reads it (and `check` follows a recovery template it names
    /// on any step).
    pub on_error: Option<Text>,
    pub table: Table,
}

impl Workflow {
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.id.text == id)
    }

    pub fn var(&self, name: &str) -> Option<&VarDecl> {
        self.variables.iter().find(|v| v.name == name)
    }
}

impl Module {
    pub fn workflow(&self, name: &str) -> Option<&Workflow> {
        self.workflows.iter().find(|w| w.name == name)
    }
}

const CLEANUP_KEYS: [&str; 3] = [
    "cleanup_on_success",
    "cleanup_on_failure",
    "cleanup_on_stop",
];

/// The keys of a workflow table the reference reads (notes §1.2); any other is ignored.
pub const WORKFLOW_KEYS: [&str; 8] = [
    "name",
    "description",
    "internal",
    "variables",
    "steps",
    "cleanup_on_success",
    "cleanup_on_failure",
    "cleanup_on_stop",
];

/// Builds the module; `None` when the file is not in the module format at all.
pub fn build(root: &Table, file_span: Span, diags: &mut Vec<Diagnostic>) -> Option<Module> {
    if let Some(d) = legacy(root, file_span) {
        diags.push(d);
        return None;
    }
    let mut workflows = Vec::new();
    for e in &root.entries {
        let Some(table) = e.value.as_table() else {
            diags.push(
                Diagnostic::warning(
                    codes::IGNORED_TOP_KEY,
                    e.key_span,
                    format!("top-level key `{}` is not a workflow table and is ignored", e.key),
                )
                .with_label("not a table")
                .with_note("every top-level table of a MEOW module is a workflow; other top-level keys are dropped"),
            );
            continue;
        };
        workflows.push(workflow(&e.key, e.key_span, table, diags));
    }
    if workflows.is_empty() {
        diags.push(
            Diagnostic::error(
                codes::NO_WORKFLOWS,
                file_span,
                "this module has no workflows",
            )
            .with_label("no top-level table")
            .with_help("define a workflow as a table with steps: `[main]` and `[[main.steps]]`"),
        );
        return None;
    }
    Some(Module { workflows })
}

/// `[meta]` plus top-level `[[steps]]` is the old single-workflow format; `meow run` reads
/// `[meta]` as a workflow without steps.
fn legacy(root: &Table, file_span: Span) -> Option<Diagnostic> {
    let steps = root.entry("steps");
    let meta = root.entry("meta");
    let at = steps.or(meta)?;
    if steps.is_none()
        && meta
            .and_then(|m| m.value.as_table())
            .is_some_and(|t| t.get("steps").is_some())
    {
        return None;
    }
    let span = if at.key_span.is_empty() {
        file_span
    } else {
        at.key_span
    };
    Some(
        Diagnostic::error(
            codes::LEGACY_FORMAT,
            span,
            "this is the legacy `[meta]`/`[[steps]]` template format, which `meow run` no longer reads",
        )
        .with_label("legacy format")
        .with_note("in the module format every top-level table is a workflow: `[main]` holds `name` and `description`, its steps are `[[main.steps]]`, its variables `[main.variables]`")
        .with_help("rename `[meta]` to `[main]`, `[[steps]]` to `[[main.steps]]` and `[variables]` to `[main.variables]`"),
    )
}

fn workflow(key: &str, key_span: Span, table: &Table, diags: &mut Vec<Diagnostic>) -> Workflow {
    let name = key.strip_prefix('.').unwrap_or(key).to_string();
    if let Some(n) = table.get("name") {
        if n.as_str().is_some_and(|s| s.is_empty()) {
            diags.push(
                Diagnostic::error(codes::BAD_WORKFLOW, n.span, format!("workflow `{name}` has an empty `name`"))
                    .with_label("empty")
                    .with_note("the reference rejects `name = \"\"` (\"workflow name is required\"); leave `name` out to default to the table name"),
            );
        } else if n.as_str().is_none() {
            diags.push(wrong_type(n, "name", "a string", true));
        }
    }
    for (k, expected) in [("description", "a string"), ("internal", "a boolean")] {
        if let Some(n) = table.get(k) {
            let ok = if k == "internal" {
                n.as_bool().is_some()
            } else {
                n.as_str().is_some()
            };
            if !ok {
                diags.push(wrong_type(n, k, expected, false));
            }
        }
    }
    for k in CLEANUP_KEYS {
        if let Some(n) = table.get(k) {
            if n.as_str().is_none() {
                diags.push(wrong_type(n, k, "a string", true));
            }
        }
    }
    // The reference ignores other keys silently; `[[main.step]]` would hide every step.
    for e in &table.entries {
        if !WORKFLOW_KEYS.contains(&e.key.as_str()) {
            diags.push(unread(
                e.key_span,
                &e.key,
                &WORKFLOW_KEYS,
                &format!("workflow `{name}`"),
            ));
        }
    }
    let variables = match table.get("variables") {
        Some(v) => match v.as_table() {
            Some(t) => variables(t, diags),
            None => {
                diags.push(wrong_type(v, "variables", "a table", true));
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    let mut steps = Vec::new();
    match table.get("steps") {
        None => diags.push(
            Diagnostic::error(
                codes::BAD_WORKFLOW,
                key_span,
                format!("workflow `{name}` has no steps"),
            )
            .with_label("no `steps`")
            .with_help(format!(
                "add a step: `[[{key}.steps]]` with `id` and `executor`"
            )),
        ),
        Some(n) => match n.as_array() {
            Some([]) => diags.push(
                Diagnostic::error(
                    codes::BAD_WORKFLOW,
                    n.span,
                    format!("workflow `{name}` has no steps"),
                )
                .with_label("empty"),
            ),
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let Some(s) = step(item, i, "step", diags) {
                        steps.push(s);
                    }
                }
            }
            None => diags.push(wrong_type(n, "steps", "an array of tables", true)),
        },
    }
    let script = |key: &str| table.get(key).and_then(Text::of);
    Workflow {
        name,
        key_span,
        table: table.clone(),
        variables,
        steps,
        cleanup: Cleanup {
            on_success: script("cleanup_on_success"),
            on_failure: script("cleanup_on_failure"),
            on_stop: script("cleanup_on_stop"),
        },
    }
}

fn variables(t: &Table, diags: &mut Vec<Diagnostic>) -> Vec<VarDecl> {
    let mut out = Vec::new();
    for e in &t.entries {
        let Some(decl) = e.value.as_table() else {
            if CLEANUP_KEYS.contains(&e.key.as_str()) {
                diags.push(moved_cleanup(e.key.as_str(), e.key_span, "variables"));
            } else {
                diags.push(
                    Diagnostic::warning(
                        codes::BAD_VARIABLE_DECL,
                        e.value.span,
                        format!("variable `{}` is declared with {}, so the reference ignores it", e.key, e.value.type_name()),
                    )
                    .with_label("not a table")
                    .with_note("a declaration is a table: `name = { default = \"…\", required = true, type = \"string\", description = \"…\" }`; a plain value declares nothing")
                    .with_help(format!("write `{} = {{ default = … }}`", e.key)),
                );
            }
            continue;
        };
        let mut required = false;
        for f in &decl.entries {
            match f.key.as_str() {
                "required" => match f.value.as_bool() {
                    Some(b) => required = b,
                    None => diags.push(wrong_type(&f.value, "required", "a boolean", true)),
                },
                "default" => {}
                "description" => {
                    if f.value.as_str().is_none() {
                        diags.push(wrong_type(&f.value, "description", "a string", false));
                    }
                }
                "type" => match f.value.as_str() {
                    Some(ty) if VAR_TYPES.contains(&ty) => {}
                    Some(ty) => diags.push(
                        Diagnostic::warning(codes::BAD_VARIABLE_DECL, f.value.span, format!("unknown variable type `{ty}`"))
                            .with_label("not a variable type")
                            .with_note("the reference accepts any text here but only coerces `file`, `json`, `object` and `string`")
                            .with_optional_help(pipewright_syntax::suggest::help_for_unknown(ty, VAR_TYPES)),
                    ),
                    None => diags.push(wrong_type(&f.value, "type", "a string", true)),
                },
                other => diags.push(unread(
                    f.key_span,
                    other,
                    &VAR_DECL_KEYS,
                    "a variable declaration",
                )),
            }
        }
        out.push(VarDecl {
            name: e.key.clone(),
            span: e.key_span,
            required,
            default: decl.get("default").cloned(),
            ty: decl.get("type").and_then(Text::of),
        });
    }
    out
}

/// The keys of a variable declaration the reference reads.
pub const VAR_DECL_KEYS: [&str; 4] = ["required", "default", "type", "description"];
pub const VAR_TYPES: [&str; 6] = ["string", "int", "bool", "file", "json", "object"];

/// A step or an inline step (`what` names it in messages). `None` when it has no usable id.
pub fn step(item: &Node, index: usize, what: &str, diags: &mut Vec<Diagnostic>) -> Option<Step> {
    let Some(table) = item.as_table() else {
        diags.push(wrong_type(item, what, "a table", true));
        return None;
    };
    let id = match table.get("id") {
        Some(n) => match n.as_str() {
            Some(s) => Text {
                text: s.to_string(),
                span: n.span,
            },
            None => {
                diags.push(
                    Diagnostic::error(
                        codes::MISSING_ID,
                        n.span,
                        format!("{what} {index} has a non-string `id`"),
                    )
                    .with_label(format!("{}, expected a string", n.type_name()))
                    .with_note("the reference rejects the module: \"step missing id\""),
                );
                return None;
            }
        },
        None => {
            diags.push(
                Diagnostic::error(
                    codes::MISSING_ID,
                    item.span,
                    format!("{what} {index} has no `id`"),
                )
                .with_label("no `id`")
                .with_note("the reference rejects the module: \"step missing id\"")
                .with_help("add `id = \"…\"`"),
            );
            return None;
        }
    };
    let executor_text = table.get("executor").and_then(Text::of);
    let executor = Executor::read(executor_text.as_ref().map_or("", |e| &e.text), table);
    let on_error = table.get("on_error").and_then(Text::of);
    let mut needs = Vec::new();
    if let Some(n) = table.get("needs") {
        match n.as_array() {
            Some(items) => {
                for it in items {
                    match it.as_str() {
                        Some(s) => needs.push(Text {
                            text: s.to_string(),
                            span: it.span,
                        }),
                        None => diags.push(wrong_type(it, "needs", "a string", true)),
                    }
                }
            }
            None => diags.push(wrong_type(n, "needs", "an array of strings", true)),
        }
    }
    Some(Step {
        id,
        span: item.span,
        executor_text,
        executor,
        needs,
        on_error,
        table: table.clone(),
    })
}

pub fn moved_cleanup(key: &str, span: Span, table: &str) -> Diagnostic {
    Diagnostic::warning(
        codes::MOVED_CLEANUP,
        span,
        format!("`{key}` is inside `[….{table}]`, so it is not a cleanup script"),
    )
    .with_label(format!("a key of `{table}`"))
    .with_note("a TOML key belongs to the last table header above it; the reference silently drops this script")
    .with_help(format!("move `{key}` above the first `[<workflow>.{table}]` or `[[<workflow>.steps]]` header"))
}

/// The reference silently ignores a wrong-typed value; `error` says whether that loses meaning.
pub fn wrong_type(n: &Node, key: &str, expected: &str, error: bool) -> Diagnostic {
    let msg = format!("`{key}` must be {expected}, found {}", n.type_name());
    let d = if error {
        Diagnostic::error(codes::WRONG_TYPE, n.span, msg)
    } else {
        Diagnostic::warning(codes::WRONG_TYPE, n.span, msg)
    };
    d.with_label(n.type_name().to_string()).with_note(
        "the reference silently ignores a value of the wrong type, as if the key were absent",
    )
}

pub fn unread(span: Span, key: &str, known: &[&str], place: &str) -> Diagnostic {
    Diagnostic::warning(
        codes::UNREAD_KEY,
        span,
        format!("`{key}` is not read in {place}"),
    )
    .with_label("ignored")
    .with_optional_help(
        pipewright_syntax::suggest::did_you_mean(key, known.iter().copied())
            .map(|c| format!("did you mean `{c}`?")),
    )
}

/// Whether a value is a string.
pub fn is_str(n: &Node) -> bool {
    matches!(n.kind, Kind::Str(_))
}
