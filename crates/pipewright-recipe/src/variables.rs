//! Template and condition syntax, and variable availability: every `{{x}}` must be defined,
//! at the point where the runner substitutes it, by `context`, an earlier step, the loop, or
//! the runner itself (`recipe.*`, `session.*`, `step.*`, …).

use crate::ast::*;
use crate::codes;
use crate::condition::{self, Expr};
use crate::issue::Issue;
use crate::template::{self, VarRef};
use pipewright_syntax::suggest::help_for_unknown;
use pipewright_syntax::{Diagnostic, Span};
use pipewright_yaml::{Node, NodeKind, ScalarValue};
use std::collections::HashMap;

const RECIPE_FIELDS: &[&str] = &["name", "version", "description"];
const SESSION_FIELDS: &[&str] = &["id", "started", "project"];
const STEP_FIELDS: &[&str] = &["id", "index"];
const STAGED_STEP_FIELDS: &[&str] = &["id", "index", "stage"];
const STAGE_FIELDS: &[&str] = &["name", "index"];

#[derive(Debug, Clone)]
enum Def {
    /// A `context:` value known statically (paths into it can be checked).
    Context(usize),
    /// Set by a step; `conditional` holds the step id and its condition when it may be skipped.
    Output { conditional: Option<(String, Span)> },
    /// Set by the runner with a fixed set of fields.
    Reserved(&'static [&'static str]),
    /// Set at run time with unknown shape (loop variables, `_approval_message`).
    Dynamic,
}

#[derive(Debug, Clone, Default)]
struct Scope {
    vars: HashMap<String, Def>,
}

impl Scope {
    fn define_output(&mut self, name: &str, conditional: Option<(String, Span)>) {
        let merged = match (self.vars.get(name), conditional) {
            // Already defined on every path: stays so, but its shape is now unknown.
            (
                Some(Def::Output {
                    conditional: Some(_),
                }),
                c @ Some(_),
            ) => Def::Output { conditional: c },
            (Some(_), Some(_)) => Def::Output { conditional: None },
            (_, c) => Def::Output { conditional: c },
        };
        self.vars.insert(name.to_owned(), merged);
    }
}

pub struct Variables<'a> {
    src: &'a str,
    pub diags: Vec<Diagnostic>,
    /// Every variable some step sets, with that step's id (for "defined later" hints).
    setters: HashMap<String, String>,
    /// The recipe's `context` values, indexed by `Def::Context` (scopes are cloned per step, so
    /// they must not own node trees).
    context_nodes: Vec<Node>,
}

fn issue_to_diag(src: &str, text: &Text, issue: Issue) -> Diagnostic {
    let span = text.sub_span(src, issue.range.clone());
    Diagnostic::new(issue.severity, issue.code, span, issue.message)
        .with_label(issue.label)
        .with_optional_help(issue.help)
}

impl<'a> Variables<'a> {
    pub fn new(src: &'a str) -> Variables<'a> {
        Variables {
            src,
            diags: Vec::new(),
            setters: HashMap::new(),
            context_nodes: Vec::new(),
        }
    }

    pub fn recipe(&mut self, r: &Recipe) {
        for (_, s) in r.all_steps() {
            self.collect_setters(s);
        }
        let mut scope = Scope::default();
        for c in &r.context {
            scope
                .vars
                .insert(c.key.value.clone(), Def::Context(self.context_nodes.len()));
            self.context_nodes.push(c.value.clone());
        }
        scope
            .vars
            .insert("recipe".into(), Def::Reserved(RECIPE_FIELDS));
        scope
            .vars
            .insert("session".into(), Def::Reserved(SESSION_FIELDS));
        if let Some(steps) = &r.steps {
            scope.vars.insert("step".into(), Def::Reserved(STEP_FIELDS));
            for s in &steps.value {
                self.step(s, &mut scope);
            }
        }
        if let Some(stages) = &r.stages {
            scope
                .vars
                .insert("step".into(), Def::Reserved(STAGED_STEP_FIELDS));
            scope
                .vars
                .insert("stage".into(), Def::Reserved(STAGE_FIELDS));
            for (i, st) in stages.value.iter().enumerate() {
                for s in &st.steps {
                    self.step(s, &mut scope);
                }
                if let Some(p) = st.approval.as_ref().and_then(|a| a.prompt.as_ref()) {
                    self.template(p, &scope);
                }
                // The runner sets it after every stage (empty when the stage has no gate).
                if i == 0 {
                    scope.vars.insert("_approval_message".into(), Def::Dynamic);
                }
            }
        }
    }

    fn collect_setters(&mut self, s: &Step) {
        let id = s.id_str().to_owned();
        for t in [&s.output, &s.collect, &s.output_exit_code]
            .into_iter()
            .flatten()
        {
            self.setters
                .entry(t.value.clone())
                .or_insert_with(|| id.clone());
        }
        for e in s.update_context.iter().flatten() {
            self.setters
                .entry(e.key.value.clone())
                .or_insert_with(|| id.clone());
        }
        for sub in s.while_steps.iter().flat_map(|b| &b.value) {
            self.collect_setters(sub);
        }
    }

    fn step(&mut self, s: &Step, scope: &mut Scope) {
        if let Some(c) = &s.condition {
            self.condition(c, scope, "condition", true);
        }
        if let Some(f) = &s.foreach {
            self.foreach(f, scope);
        }
        if let Some(w) = &s.while_condition {
            self.condition(w, scope, "while_condition", true);
        }
        let mut body = scope.clone();
        if s.foreach.is_some() {
            let name = s.as_var.as_ref().map_or("item", |t| t.value.as_str());
            body.vars.insert(name.to_owned(), Def::Dynamic);
        }
        if s.while_condition.is_some() {
            body.vars.insert("_loop_index".into(), Def::Dynamic);
            body.vars.insert("_loop_iteration".into(), Def::Dynamic);
        }
        for t in [&s.prompt, &s.command, &s.cwd, &s.recipe]
            .into_iter()
            .flatten()
        {
            self.template(t, &body);
        }
        for e in s.env.iter().flatten() {
            if let Some(v) = &e.value {
                self.template(v, &body);
            }
        }
        if let Some(ctx) = &s.context {
            for c in &ctx.value {
                c.value.walk(|n| {
                    if let NodeKind::Scalar(sc) = &n.kind {
                        if matches!(sc.resolve(), ScalarValue::Str(_)) {
                            let t = Text {
                                value: sc.text.clone(),
                                span: n.span,
                                style: sc.style,
                            };
                            self.template(&t, &body);
                        }
                    }
                });
            }
        }
        if let Some(b) = &s.while_steps {
            for sub in &b.value {
                self.step(sub, &mut body);
            }
        }
        // After each iteration's body: the step's own results exist.
        for t in [&s.output, &s.collect, &s.output_exit_code]
            .into_iter()
            .flatten()
        {
            body.define_output(&t.value, None);
        }
        for e in s.update_context.iter().flatten() {
            if let Some(v) = &e.value {
                self.template(v, &body);
            }
        }
        for e in s.update_context.iter().flatten() {
            body.define_output(&e.key.value, None);
        }
        if let Some(b) = &s.break_when {
            self.condition(b, &body, "break_when", false);
        }
        let conditional = s
            .condition
            .as_ref()
            .map(|c| (s.id_str().to_owned(), c.span));
        let mut defined: Vec<&str> = [&s.output, &s.collect, &s.output_exit_code]
            .into_iter()
            .flatten()
            .map(|t| t.value.as_str())
            .collect();
        defined.extend(
            s.update_context
                .iter()
                .flatten()
                .map(|e| e.key.value.as_str()),
        );
        for name in defined {
            scope.define_output(name, conditional.clone());
        }
        // Sub-step outputs land in the live context too.
        for sub in s.while_steps.iter().flat_map(|b| &b.value) {
            self.define_nested(sub, scope, conditional.clone());
        }
    }

    fn define_nested(&self, s: &Step, scope: &mut Scope, outer: Option<(String, Span)>) {
        let cond = outer.or_else(|| {
            s.condition
                .as_ref()
                .map(|c| (s.id_str().to_owned(), c.span))
        });
        for t in [&s.output, &s.collect, &s.output_exit_code]
            .into_iter()
            .flatten()
        {
            scope.define_output(&t.value, cond.clone());
        }
        for sub in s.while_steps.iter().flat_map(|b| &b.value) {
            self.define_nested(sub, scope, cond.clone());
        }
    }

    fn template(&mut self, t: &Text, scope: &Scope) {
        let (tpl, issues) = template::parse(&t.value);
        for i in issues {
            self.diags.push(issue_to_diag(self.src, t, i));
        }
        for v in tpl.vars() {
            self.reference(v, t, scope);
        }
    }

    fn condition(&mut self, t: &Text, scope: &Scope, field: &str, need_var: bool) {
        let (expr, issues) = condition::parse(&t.value);
        for i in issues {
            self.diags.push(issue_to_diag(self.src, t, i));
        }
        let Some(e) = expr else { return };
        let vars = e.vars();
        let literal_true =
            matches!(e, Expr::Bool { value: true, .. }) && field == "while_condition";
        if need_var && vars.is_empty() && !literal_true {
            self.diags.push(
                Diagnostic::error(
                    codes::NO_VARIABLE,
                    t.span,
                    format!("`{field}` does not refer to any variable"),
                )
                .with_label("its value is fixed when the recipe is written")
                .with_help("compare a `{{variable}}`, or remove the field"),
            );
        }
        for v in vars {
            self.reference(v, t, scope);
        }
    }

    fn foreach(&mut self, t: &Text, scope: &Scope) {
        let (tpl, _) = template::parse(&t.value);
        let vars: Vec<&VarRef> = tpl.vars().collect();
        let Some(first) = vars.first() else {
            self.diags.push(
                Diagnostic::error(
                    codes::NO_VARIABLE,
                    t.span,
                    "`foreach` must be a variable reference",
                )
                .with_label("no `{{variable}}` here")
                .with_help(format!(
                    "write `foreach: \"{{{{{}}}}}\"` with the list variable",
                    t.value.trim()
                )),
            );
            return;
        };
        let lead = &t.value[..first.range.start];
        let trail = &t.value[first.range.end..];
        if !lead.trim().is_empty() || !trail.trim().is_empty() {
            let (range, what) = if !lead.trim().is_empty() {
                (0..first.range.start, "before")
            } else {
                (first.range.end..t.value.len(), "after")
            };
            self.diags.push(
                Diagnostic::error(
                    codes::FOREACH_SOURCE,
                    t.sub_span(self.src, range),
                    format!("text {what} the variable in `foreach`"),
                )
                .with_label("`foreach` takes exactly one `{{list}}` reference")
                .with_help(format!("write `foreach: \"{{{{{}}}}}\"`", first.dotted())),
            );
        }
        self.reference(first, t, scope);
    }

    fn reference(&mut self, v: &VarRef, t: &Text, scope: &Scope) {
        let root = v.path[0].as_str();
        // Mapping into block scalars is linear in their length: only done for a diagnostic.
        let span = || t.sub_span(self.src, v.path_range.clone());
        match scope.vars.get(root) {
            None => {
                let mut d = Diagnostic::error(codes::UNDEFINED_VARIABLE, span(), format!("undefined variable `{root}`"))
                    .with_label("not defined at this point");
                let mut names: Vec<&str> = scope.vars.keys().map(String::as_str).filter(|k| !k.starts_with('_')).collect();
                names.sort_unstable();
                let help = help_for_unknown(root, names);
                d = d.with_optional_help(help);
                if let Some(setter) = self.setters.get(root) {
                    d = d.with_note(format!("`{root}` is set by step `{setter}`, which does not run before this point"));
                } else if root.starts_with("_loop_") {
                    d = d.with_note("`_loop_index` and `_loop_iteration` exist only inside while loops");
                } else {
                    d = d.with_note("define it in `context:`, or as the `output` of an earlier step");
                }
                self.diags.push(d);
            }
            Some(Def::Output { conditional: Some((step, cond)) }) => self.diags.push(
                Diagnostic::warning(codes::CONDITIONALLY_DEFINED, span(), format!("`{root}` may be undefined here"))
                    .with_label("only set when an earlier conditional step runs")
                    .with_secondary(*cond, format!("step `{step}` is skipped when this is false"))
                    .with_help(format!("give `{root}` a default in `context:`, or guard this step with the same condition")),
            ),
            Some(Def::Reserved(fields)) => {
                if let Some(field) = v.path.get(1) {
                    if !fields.contains(&field.as_str()) || v.path.len() > 2 {
                        let bad = if fields.contains(&field.as_str()) { v.dotted() } else { format!("{root}.{field}") };
                        self.diags.push(
                            Diagnostic::error(codes::UNKNOWN_RESERVED_FIELD, span(), format!("`{{{{{bad}}}}}` is not set by the runner"))
                                .with_label(format!("`{root}` has only {}", fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")))
                                .with_optional_help(help_for_unknown(field, fields.iter().copied())),
                        );
                    }
                }
            }
            Some(Def::Context(i)) if v.path.len() > 1 => {
                if let Some(node) = self.context_nodes.get(*i).cloned() {
                    self.static_path(v, &node, span);
                }
            }
            Some(_) => {}
        }
    }

    fn static_path(&mut self, v: &VarRef, node: &Node, span: impl Fn() -> Span) {
        let mut cur = node;
        for (i, part) in v.path.iter().enumerate().skip(1) {
            let parent = v.path[..i].join(".");
            match &cur.kind {
                NodeKind::Map(_) => match cur.get(part) {
                    Some(next) => cur = next,
                    None => {
                        let keys: Vec<&str> = cur
                            .as_map()
                            .unwrap_or(&[])
                            .iter()
                            .filter_map(|e| e.key.key_text())
                            .collect();
                        self.diags.push(
                            Diagnostic::warning(
                                codes::STATIC_PATH,
                                span(),
                                format!("`{parent}` in `context` has no key `{part}`"),
                            )
                            .with_label(
                                "unless the caller passes a different value, this is undefined",
                            )
                            .with_secondary(cur.span, format!("`{parent}` is defined here"))
                            .with_optional_help(help_for_unknown(part, keys.iter().copied())),
                        );
                        return;
                    }
                },
                _ => {
                    self.diags.push(
                        Diagnostic::warning(codes::STATIC_PATH, span(), format!("`{parent}` is {} in `context`, so `.{part}` cannot be read from it", cur.describe()))
                            .with_label("unless the caller passes a mapping, this is undefined")
                            .with_secondary(cur.span, format!("`{parent}` is defined here"))
                            .with_help(format!("declare `{parent}` as a mapping with a `{part}` key in `context:`")),
                    );
                    return;
                }
            }
        }
    }
}
