//! YAML documents → typed AST, reporting every violation of the document grammar (the spec's
//! EBNF plus the reference parser's rules) instead of stopping at the first.

use crate::ast::*;
use crate::codes;
use crate::schema_load::load_schema;
use pipewright_syntax::suggest::help_for_unknown;
use pipewright_syntax::{Diagnostic, FileId, Span};
use pipewright_yaml::{Document, Entry, Node, NodeKind, Scalar, ScalarValue};

pub const STEP_KINDS: &[&str] = &[
    "transform",
    "tool",
    "shell",
    "agent",
    "call",
    "match",
    "fold",
    "for_each",
    "parallel",
];

/// The keys of a pipeline document; `steps` is required with `pipeline`.
pub(crate) const PIPELINE_KEYS: &[&str] = &["pipeline", "description", "steps"];
/// Keys of the reference's richer grammar that pipelines may not use (PW0208).
pub(crate) const UNSUPPORTED_PIPELINE_KEYS: &[&str] = &["input", "defaults", "refine"];

/// Loads one file's documents. Documents that fail to load are skipped after their
/// diagnostics are recorded, so one bad step does not hide problems in the next one.
///
/// The documents are consumed: each step's part of the YAML tree is freed as soon as its AST
/// exists, so a large file never holds its whole tree and its whole AST at once.
pub(crate) fn load_file(
    file: FileId,
    source: &str,
    docs: Vec<Document>,
    diags: &mut Vec<Diagnostic>,
) -> PipelineFile {
    let mut l = Loader { source, diags };
    let mut out = PipelineFile {
        file,
        namespace: None,
        schemas: Vec::new(),
        pipelines: Vec::new(),
    };
    for doc in docs {
        let Some(mut root) = doc.root else { continue };
        let Some(entries) = root.as_map() else {
            l.diags.push(
                Diagnostic::error(codes::NOT_A_PIPELINE, root.span, format!("a pipeline file's document must be a mapping, found {}", root.describe()))
                    .with_label("expected `pipeline:` or `schema:` here")
                    .with_help("each `---`-separated document is either `pipeline: NAME` with `steps:`, or `schema: NAME` with `fields:`"),
            );
            continue;
        };
        if root.entry("schema").is_some() {
            if let Some(s) = load_schema(&root, l.source, l.diags) {
                out.schemas.push(s);
            }
        } else if root.entry("pipeline").is_some() {
            if let Some(p) = l.pipeline(&mut root) {
                out.pipelines.push(p);
            }
        } else if let Some(e) = ["input", "defaults", "refine"]
            .iter()
            .find_map(|k| root.entry(k))
        {
            l.diags.push(
                Diagnostic::error(codes::UNSUPPORTED_KEY, e.key.span, format!("`{}` is not supported", e.key.key_text().unwrap_or("")))
                    .with_label("not part of the pipeline grammar the runtime implements")
                    .with_help("a document needs `pipeline: NAME`; pipeline inputs are passed at launch (`pipewright run --input`) and read as `ctx.NAME`"),
            );
        } else {
            let keys: Vec<&str> = entries.iter().filter_map(|e| e.key.key_text()).collect();
            let mut d = Diagnostic::error(codes::NOT_A_PIPELINE, root.span.sub(0..first_line_len(l.source, root.span)), "this document is neither a pipeline nor a schema")
                .with_label(format!("found keys {}", keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")))
                .with_help("a document needs a top-level `pipeline: NAME` (with `steps:`) or `schema: NAME` (with `fields:`)");
            if let Some(k) = keys
                .iter()
                .find_map(|k| pipewright_syntax::suggest::did_you_mean(k, ["pipeline", "schema"]))
            {
                d = d.with_help(format!("did you mean `{k}`?"));
            }
            l.diags.push(d);
        }
    }
    out
}

fn first_line_len(source: &str, span: Span) -> usize {
    source
        .get(span.range())
        .map_or(0, |s| s.find('\n').unwrap_or(s.len()))
}

pub(crate) struct Loader<'a> {
    pub source: &'a str,
    pub diags: &'a mut Vec<Diagnostic>,
}

impl Loader<'_> {
    fn pipeline(&mut self, root: &mut Node) -> Option<Pipeline> {
        let entries = root.as_map()?;
        self.unknown_keys(
            entries,
            PIPELINE_KEYS,
            "a pipeline document",
            UNSUPPORTED_PIPELINE_KEYS,
        );
        let name_node = root.get("pipeline")?;
        let name = self.name(name_node, "the pipeline name")?;
        if name.text.contains('.') {
            self.diags.push(
                Diagnostic::error(
                    codes::DOT_IN_NAME,
                    name.span,
                    format!("pipeline name `{}` contains `.`", name.text),
                )
                .with_label("`.` is reserved as the namespace separator")
                .with_help(format!("rename it, e.g. `{}`", name.text.replace('.', "_"))),
            );
        }
        let description = match root.get("description") {
            None => None,
            Some(d) => match d.as_str() {
                Some(s) => Some(s.to_string()),
                None => {
                    self.wrong_type(d, "`description`", "a string");
                    None
                }
            },
        };
        let name_span = name_node.span;
        let span = root.span;
        // The last `steps` entry counts, as for every other key (`Node::entry`).
        let steps_entry = match &mut root.kind {
            NodeKind::Map(entries) => entries
                .iter_mut()
                .rev()
                .find(|e| e.key.key_text() == Some("steps")),
            _ => None,
        };
        let steps = match steps_entry {
            None => {
                self.missing(
                    name_span.to(span.sub(0..0)),
                    "steps",
                    "a pipeline",
                    "add `steps:` with at least one step",
                );
                Vec::new()
            }
            Some(e) => self.step_list(&mut e.value, &e.key),
        };
        Some(Pipeline {
            name,
            description,
            steps,
            span,
        })
    }

    /// Takes the step nodes out of `node` and drops each one once its step is built.
    fn step_list(&mut self, node: &mut Node, key: &Node) -> Vec<Step> {
        let span = node.span;
        let NodeKind::Seq(items) = &mut node.kind else {
            self.wrong_type(node, "`steps`", "a list of steps");
            return Vec::new();
        };
        if items.is_empty() {
            self.diags.push(
                Diagnostic::error(
                    codes::EMPTY_LIST,
                    key.span.to(span),
                    "a pipeline needs at least one step",
                )
                .with_label("empty step list")
                .with_help("add a step, e.g. `- transform: {value: \"pipe\"}`"),
            );
        }
        let items = std::mem::take(items);
        let mut steps = Vec::with_capacity(items.len());
        for n in items {
            steps.extend(self.step(&n, "step"));
        }
        steps
    }

    /// `role` names where the step sits (`step`, `for_each do`, …) for messages.
    pub(crate) fn step(&mut self, node: &Node, role: &str) -> Option<Step> {
        let entries = match node.as_map() {
            Some(e) if e.len() == 1 => e,
            Some(e) if !e.is_empty() => {
                let kinds: Vec<&Entry> = e
                    .iter()
                    .filter(|en| en.key.key_text().is_some_and(|k| STEP_KINDS.contains(&k)))
                    .collect();
                let mut d = Diagnostic::error(
                    codes::STEP_NOT_SINGLE_KEY,
                    node.span.sub(0..first_line_len(self.source, node.span)),
                    format!("a {role} must be a mapping with exactly one key, its kind"),
                )
                .with_label(format!("this {role} has {} keys", e.len()));
                if kinds.len() == 1 {
                    d = d.with_help(format!(
                        "move the other keys inside the `{}:` body",
                        kinds[0].key.key_text().unwrap_or("")
                    ));
                } else {
                    d = d.with_help(format!(
                        "write it as `- KIND: {{…}}` where KIND is one of {}",
                        STEP_KINDS.join(", ")
                    ));
                }
                self.diags.push(d);
                return None;
            }
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        codes::STEP_NOT_SINGLE_KEY,
                        node.span,
                        format!(
                            "a {role} must be a mapping naming its kind, found {}",
                            node.describe()
                        ),
                    )
                    .with_label("expected `KIND: {…}`")
                    .with_help(format!("KIND is one of {}", STEP_KINDS.join(", "))),
                );
                return None;
            }
        };
        let (key, body) = (&entries[0].key, &entries[0].value);
        let kind_name = key.key_text().unwrap_or("");
        if !STEP_KINDS.contains(&kind_name) {
            let mut d = Diagnostic::error(
                codes::UNKNOWN_STEP_KIND,
                key.span,
                format!("unknown step kind `{kind_name}`"),
            )
            .with_label("not a step kind");
            d = d.with_optional_help(help_for_unknown(kind_name, STEP_KINDS.iter().copied()));
            if kind_name == "kind" {
                d = d.with_help("a step names its kind as its only key: `- agent: {prompt: …}`, not `- kind: agent`");
            }
            self.diags.push(d);
            return None;
        }
        self.reject_tag(body);
        let Some(b) = body.as_map() else {
            self.diags.push(
                Diagnostic::error(
                    codes::WRONG_TYPE,
                    body.span,
                    format!(
                        "the body of a `{kind_name}` step must be a mapping, found {}",
                        body.describe()
                    ),
                )
                .with_label("expected `{key: value, …}`")
                .with_help(body_example(kind_name)),
            );
            return None;
        };
        crate::step_load::step_body(self, kind_name, key, body, b, node.span)
    }

    // ---- shared helpers -------------------------------------------------------------------

    /// Reports keys outside `allowed`; `unsupported` keys get a "not supported" message instead
    /// of a did-you-mean.
    pub(crate) fn unknown_keys(
        &mut self,
        entries: &[Entry],
        allowed: &[&str],
        what: &str,
        unsupported: &[&str],
    ) {
        for e in entries {
            let Some(k) = e.key.key_text() else { continue };
            if allowed.contains(&k) {
                continue;
            }
            if unsupported.contains(&k) {
                self.diags.push(
                    Diagnostic::error(codes::UNSUPPORTED_KEY, e.key.span, format!("`{k}` is not supported in {what}"))
                        .with_label("not part of the grammar the runtime implements")
                        .with_help("pipeline inputs are passed at launch and read as `ctx.NAME`; defaults are written with `get(ctx, 'NAME', default)`"),
                );
                continue;
            }
            let d = Diagnostic::error(
                codes::UNKNOWN_KEY,
                e.key.span,
                format!("unknown key `{k}` in {what}"),
            )
            .with_label("unknown key");
            let help = help_for_unknown(k, allowed.iter().copied());
            self.diags.push(d.with_optional_help(help));
        }
    }

    pub(crate) fn missing(&mut self, at: Span, key: &str, what: &str, help: &str) {
        self.diags.push(
            Diagnostic::error(codes::MISSING_KEY, at, format!("{what} needs `{key}`"))
                .with_label(format!("`{key}` is missing here"))
                .with_help(help.to_string()),
        );
    }

    pub(crate) fn wrong_type(&mut self, node: &Node, what: &str, expected: &str) {
        self.diags.push(
            Diagnostic::error(
                codes::WRONG_TYPE,
                node.span,
                format!("{what} must be {expected}, found {}", node.describe()),
            )
            .with_label(format!("expected {expected}")),
        );
    }

    /// A non-empty name string.
    pub(crate) fn name(&mut self, node: &Node, what: &str) -> Option<Name> {
        self.reject_tag(node);
        match node.as_str() {
            Some(s) if !s.trim().is_empty() => Some(Name {
                text: s.into(),
                span: node.span,
            }),
            Some(_) => {
                self.diags.push(
                    Diagnostic::error(
                        codes::WRONG_TYPE,
                        node.span,
                        format!("{what} must not be empty"),
                    )
                    .with_label("empty name"),
                );
                None
            }
            None => {
                let mut d = Diagnostic::error(
                    codes::WRONG_TYPE,
                    node.span,
                    format!("{what} must be a name string, found {}", node.describe()),
                )
                .with_label("expected a name");
                if let Some(s) = node.as_scalar() {
                    d = d.with_help(format!("quote it: \"{}\"", s.text));
                }
                self.diags.push(d);
                None
            }
        }
    }

    /// `!expr` is only meaningful on tool/shell argument values; any other tag is an error.
    pub(crate) fn reject_tag(&mut self, node: &Node) {
        if let Some(t) = &node.tag {
            let d = if t.is_local("expr") {
                Diagnostic::error(codes::MISPLACED_EXPR, node.span, "`!expr` is only allowed as the whole value of a tool argument or shell command")
                    .with_label("`!expr` not allowed here")
                    .with_help("this value is already an expression or a name; remove the tag")
            } else {
                Diagnostic::error(
                    "PW0004",
                    node.span,
                    format!("unknown YAML tag `{}`", t.display()),
                )
                .with_label("unknown tag")
                .with_help("the only tag pipelines use is `!expr`, on tool argument values")
            };
            self.diags.push(d);
        }
    }

    /// An R1 expression in a YAML string; `what` says where it is for messages.
    pub(crate) fn expr(&mut self, node: &Node, what: &str) -> Option<Expr> {
        if node.tag.is_some() {
            self.tag_on_expression(node, what);
        }
        let Some(s) = node.as_scalar() else {
            self.wrong_type(node, what, "an expression string");
            return None;
        };
        // A tagged scalar is still parsed as R1 (the tag is already reported), so the checks
        // after loading see the expression and a tagged `0` gets no second error.
        self.scalar_expr(node, s, node.tag.is_some(), what)
    }

    /// The reference runtime rejects any tag on a field that is already R1 (`!expr` makes
    /// a value that is not a string), so `value: !expr ctx.x` is an error, not a no-op.
    fn tag_on_expression(&mut self, node: &Node, what: &str) {
        let Some(t) = &node.tag else { return };
        let at = self.tag_span(node);
        let quote = node
            .as_scalar()
            .filter(|s| !matches!(s.resolve(), ScalarValue::Str(_)))
            .map(|s| {
                format!(
                    "; quote the value so YAML keeps it a string: `\"{}\"`",
                    s.text
                )
            })
            .unwrap_or_default();
        let d = if t.is_local("expr") {
            Diagnostic::error(
                codes::MISPLACED_EXPR,
                at,
                format!("`!expr` on {what}, which is already an expression"),
            )
            .with_label("`!expr` only marks tool arguments and shell commands")
            .with_help(format!(
                "remove `!expr`: this field is already an expression{quote}"
            ))
        } else {
            Diagnostic::error("PW0004", at, format!("unknown YAML tag `{}`", t.display()))
                .with_label("unknown tag")
                .with_help(format!(
                    "remove the tag: {what} is already an expression{quote}"
                ))
        };
        self.diags.push(d);
    }

    /// The tag as written at the start of a tagged node's span (the whole node when the
    /// source does not start with one).
    pub(crate) fn tag_span(&self, node: &Node) -> Span {
        let src = self.source.get(node.span.range()).unwrap_or("");
        match src.strip_prefix('!') {
            Some(rest) if node.tag.is_some() => {
                let len = 1 + rest.find(char::is_whitespace).unwrap_or(rest.len());
                node.span.sub(0..len)
            }
            _ => node.span,
        }
    }

    /// A node's span without its tag: where the value itself is written.
    pub(crate) fn value_span(&self, node: &Node) -> Span {
        if node.tag.is_none() {
            return node.span;
        }
        let tag = self.tag_span(node);
        if tag == node.span {
            return node.span;
        }
        let src = self.source.get(node.span.range()).unwrap_or("");
        let after = &src[tag.range().len()..];
        let skip = src.len() - after.trim_start().len();
        node.span.sub(skip..src.len())
    }

    /// [`Loader::expr`] of `node`'s scalar `s`; `tagged` (an `!expr` value) makes any scalar
    /// R1 source, where an untagged `true` or `3` is reported as not a string.
    pub(crate) fn scalar_expr(
        &mut self,
        node: &Node,
        s: &Scalar,
        tagged: bool,
        what: &str,
    ) -> Option<Expr> {
        if !matches!(s.resolve(), ScalarValue::Str(_)) && !tagged {
            let quoted = format!("\"{}\"", s.text);
            self.diags.push(
                Diagnostic::error(
                    codes::EXPR_NOT_STRING,
                    node.span,
                    format!(
                        "{what} must be an expression string, found {}",
                        node.describe()
                    ),
                )
                .with_label("YAML reads this as a non-string value")
                .with_help(format!("quote it so YAML keeps it as R1 source: {quoted}")),
            );
            return None;
        }
        let src = s.text.clone();
        // Offsets inside the expression count from the value, past any tag.
        let span = self.value_span(node);
        match pipewright_r1::parse(&src) {
            Ok(ast) => Some(Expr {
                src,
                span,
                style: s.style,
                ast,
            }),
            Err(errs) => {
                for e in errs {
                    let d = e.to_diagnostic(|r| {
                        pipewright_yaml::map_scalar_range(self.source, span, s.style, &src, r)
                    });
                    self.diags.push(d.with_note(format!("in {what}")));
                }
                None
            }
        }
    }

    pub(crate) fn positive_int(&mut self, node: &Node, what: &str) -> Option<u64> {
        match node.as_scalar().map(|s| s.resolve()) {
            Some(ScalarValue::Int(n)) if n > 0 => Some(n as u64),
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        codes::NOT_POSITIVE,
                        node.span,
                        format!("{what} must be a positive integer, found {}", show(node)),
                    )
                    .with_label("expected an integer ≥ 1"),
                );
                None
            }
        }
    }

    pub(crate) fn on_error(&mut self, node: &Node, what: &str) -> Option<OnError> {
        let text = node.as_str().unwrap_or("");
        let kind = match text {
            "continue" => Some(OnErrorKind::Continue),
            "abort" => Some(OnErrorKind::Abort),
            t => t
                .strip_prefix("retry(")
                .and_then(|r| r.strip_suffix(')'))
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<u32>().ok())
                .map(OnErrorKind::Retry),
        };
        match kind {
            Some(OnErrorKind::Retry(0)) => {
                self.diags.push(
                    Diagnostic::warning(codes::BAD_ON_ERROR, node.span, "`retry(0)` never retries")
                        .with_label("zero retries")
                        .with_help("use `abort` for one attempt, or `retry(N)` with N ≥ 1"),
                );
                Some(OnError {
                    kind: OnErrorKind::Retry(0),
                    span: Some(node.span),
                })
            }
            Some(kind) => Some(OnError {
                kind,
                span: Some(node.span),
            }),
            None => {
                let mut d = Diagnostic::error(
                    codes::BAD_ON_ERROR,
                    node.span,
                    format!("invalid {what}: {}", show(node)),
                )
                .with_label("expected `continue`, `abort` or `retry(N)`");
                let trimmed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                if trimmed != text
                    && (trimmed == "continue"
                        || trimmed == "abort"
                        || trimmed.starts_with("retry("))
                {
                    d = d.with_help(format!("remove the spaces: `{trimmed}`"));
                } else {
                    d = d.with_optional_help(help_for_unknown(
                        text,
                        ["continue", "abort", "retry(N)"],
                    ));
                }
                self.diags.push(d);
                None
            }
        }
    }

    /// Literal values may hold any YAML, but no `!expr` anywhere inside.
    pub(crate) fn literal(&mut self, node: &Node, what: &str) {
        node.walk(|n| {
            if let Some(t) = &n.tag {
                let d = if t.is_local("expr") {
                    Diagnostic::error(codes::MISPLACED_EXPR, n.span, format!("`!expr` nested inside {what}"))
                        .with_label("`!expr` must be the whole value of an argument")
                        .with_help("build the whole value as one expression, e.g. `!expr \"{key: ctx.x}\"` or `!expr \"[ctx.a, ctx.b]\"`")
                } else {
                    Diagnostic::error("PW0004", n.span, format!("unknown YAML tag `{}`", t.display())).with_label("unknown tag")
                };
                self.diags.push(d);
            }
        });
    }
}

pub(crate) fn show(node: &Node) -> String {
    match &node.kind {
        NodeKind::Scalar(s) => format!("`{}`", s.text),
        _ => node.describe().to_string(),
    }
}

fn body_example(kind: &str) -> String {
    let ex = match kind {
        "transform" => "transform: {value: \"ctx.x\", output: y}",
        "tool" => "tool: {name: file__read, args: {path: \"a.txt\"}, output: text}",
        "shell" => "shell: {command: \"ls\", output: listing}",
        "agent" => "agent: {prompt: \"Summarise {ctx.doc}\", output: summary}",
        "call" => "call: {pipeline: other, pass: [doc], output: result}",
        "match" => "match: {on: \"ctx.ok\", cases: {\"True\": {pipeline: yes}}}",
        "fold" => "fold: {over: \"ctx.xs\", init: \"0\", do: {transform: {value: \"acc + item\"}}, output: total}",
        "for_each" => "for_each: {over: \"ctx.xs\", on_error: abort, do: {…}, collect: {transform: {value: \"pipe\"}}}",
        _ => "parallel: {branches: {a: {…}, b: {…}}, collect: {transform: {value: \"pipe\"}}}",
    };
    format!("for example `{ex}`")
}
