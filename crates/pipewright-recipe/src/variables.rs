//! Template and condition syntax, and variable availability: every `{{x}}` must be defined,
//! at the point where the runner substitutes it, by `context`, an earlier step, the loop, or
//! the runner itself (`recipe.*`, `session.*`, `step.*`, …).

use crate::ast::*;
use crate::codes;
use crate::condition::{self, Expr, Site};
use crate::issue::Issue;
use crate::template::{self, VarRef};
use pipewright_syntax::suggest::{did_you_mean, help_for_unknown};
use pipewright_syntax::{Diagnostic, Span};
use pipewright_yaml::{Node, NodeKind, ScalarValue};
use std::collections::HashMap;
use std::rc::Rc;

const RECIPE_FIELDS: &[&str] = &["name", "version", "description"];
const SESSION_FIELDS: &[&str] = &["id", "started", "project"];
const STEP_FIELDS: &[&str] = &["id", "index"];
const STAGED_STEP_FIELDS: &[&str] = &["id", "index", "stage"];
const STAGE_FIELDS: &[&str] = &["name", "index"];

/// Runner-set variables whose value changes from step to step (or iteration to iteration): a
/// condition reading them is never "the same condition" at two different steps.
const VOLATILE: &[&str] = &["step", "stage", "_loop_index", "_loop_iteration"];
/// How many distinct conditions a variable's definition remembers; more setters fall back to
/// "may be undefined" for conditions beyond these, which keeps each lookup cheap.
const MAX_GUARDS: usize = 16;

/// One conjunct of a condition as it was evaluated: its canonical text and which definition
/// of each variable it read. Equal atoms are the same test on the same values.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Atom {
    canonical: String,
    generations: Vec<u64>,
}

/// The conditions under which a step ran (its own and those of the loops around it): a
/// variable it sets is defined wherever all of these atoms are known to hold again.
#[derive(Debug)]
struct Guard {
    step: String,
    span: Span,
    atoms: Vec<Atom>,
}

#[derive(Debug, Clone)]
enum Def {
    /// A `context:` value known statically (paths into it can be checked).
    Context(usize),
    /// Set by a step; `guards` lists the conditions of the steps that may set it when every
    /// setter may be skipped (`None`: defined on every path).
    Output { guards: Option<Rc<Vec<Rc<Guard>>>> },
    /// Set by the runner with a fixed set of fields.
    Reserved(&'static [&'static str]),
    /// Set at run time with unknown shape (loop variables, `_approval_message`).
    Dynamic,
}

#[derive(Debug, Clone)]
struct Binding {
    def: Def,
    /// Unique per definition, so a condition can tell whether a variable was redefined since.
    generation: u64,
}

/// The variables defined at the current point. Loop bodies add bindings that must vanish after
/// the loop; instead of copying the scope per step (quadratic in the number of outputs), every
/// change made under an open [`Scope::mark`] is logged and undone by [`Scope::undo_to`].
#[derive(Debug, Default)]
struct Scope {
    vars: HashMap<String, Binding>,
    undo: Vec<(String, Option<Binding>)>,
    open_marks: usize,
    next_generation: u64,
}

impl Scope {
    fn set(&mut self, name: &str, def: Def) {
        self.next_generation += 1;
        let old = self.vars.insert(
            name.to_owned(),
            Binding {
                def,
                generation: self.next_generation,
            },
        );
        if self.open_marks > 0 {
            self.undo.push((name.to_owned(), old));
        }
    }

    fn get(&self, name: &str) -> Option<&Def> {
        self.vars.get(name).map(|b| &b.def)
    }

    fn mark(&mut self) -> usize {
        self.open_marks += 1;
        self.undo.len()
    }

    fn undo_to(&mut self, mark: usize) {
        while self.undo.len() > mark {
            let Some((name, old)) = self.undo.pop() else {
                break;
            };
            match old {
                Some(b) => self.vars.insert(name, b),
                None => self.vars.remove(&name),
            };
        }
        self.open_marks = self.open_marks.saturating_sub(1);
    }

    fn define_output(&mut self, name: &str, guard: Option<Rc<Guard>>) {
        let guards = match (self.get(name), guard) {
            (_, None) => None,
            // Set on one more conditional path: defined when any of the conditions held.
            (Some(Def::Output { guards: Some(old) }), Some(g)) => {
                let mut list: Vec<Rc<Guard>> =
                    old.iter().filter(|o| o.atoms != g.atoms).cloned().collect();
                if list.len() >= MAX_GUARDS {
                    list.remove(0);
                }
                list.push(g);
                Some(Rc::new(list))
            }
            // Already defined on every path: stays so, but its shape is now unknown.
            (Some(_), Some(_)) => None,
            (None, Some(g)) => Some(Rc::new(vec![g])),
        };
        self.set(name, Def::Output { guards });
    }

    /// The atoms of a parsed condition evaluated now.
    fn atoms(&mut self, e: &Expr) -> Vec<Atom> {
        condition::conjuncts(e)
            .into_iter()
            .map(|c| {
                let generations = c
                    .roots
                    .iter()
                    .map(|r| {
                        if VOLATILE.contains(&r.as_str()) {
                            self.next_generation += 1;
                            self.next_generation
                        } else {
                            self.vars.get(r).map_or(0, |b| b.generation)
                        }
                    })
                    .collect();
                Atom {
                    canonical: c.canonical,
                    generations,
                }
            })
            .collect()
    }
}

pub struct Variables<'a> {
    src: &'a str,
    pub diags: Vec<Diagnostic>,
    /// Every variable some step sets, with that step's id (for "defined later" hints).
    setters: HashMap<String, String>,
    /// The recipe's `context` values, indexed by `Def::Context`.
    context_nodes: Vec<Node>,
    /// The atoms of the conditions of the step being checked and of the loops around it: known
    /// to hold wherever that step's fields are evaluated.
    holding: Vec<Atom>,
    /// The guard of the step being checked (`None` when it runs unconditionally).
    guard: Option<Rc<Guard>>,
    /// How many loop `steps:` bodies enclose the step being checked: their conditions are
    /// rendered before evaluation.
    body_depth: usize,
}

fn issue_to_diag(src: &str, text: &Text, issue: Issue) -> Diagnostic {
    issue.to_diagnostic(|r| text.sub_span(src, r))
}

impl<'a> Variables<'a> {
    pub fn new(src: &'a str) -> Variables<'a> {
        Variables {
            src,
            diags: Vec::new(),
            setters: HashMap::new(),
            context_nodes: Vec::new(),
            holding: Vec::new(),
            guard: None,
            body_depth: 0,
        }
    }

    pub fn recipe(&mut self, r: &Recipe) {
        for (_, s) in r.all_steps() {
            self.collect_setters(s);
        }
        let mut scope = Scope::default();
        for c in &r.context {
            scope.set(&c.key.value, Def::Context(self.context_nodes.len()));
            self.context_nodes.push(c.value.clone());
        }
        scope.set("recipe", Def::Reserved(RECIPE_FIELDS));
        scope.set("session", Def::Reserved(SESSION_FIELDS));
        if let Some(steps) = &r.steps {
            scope.set("step", Def::Reserved(STEP_FIELDS));
            for s in &steps.value {
                self.step(s, &mut scope);
            }
        }
        if let Some(stages) = &r.stages {
            scope.set("step", Def::Reserved(STAGED_STEP_FIELDS));
            scope.set("stage", Def::Reserved(STAGE_FIELDS));
            for st in &stages.value {
                for s in &st.steps {
                    self.step(s, &mut scope);
                }
                if let Some(p) = st.approval.as_ref().and_then(|a| a.prompt.as_ref()) {
                    self.template(p, &scope);
                }
                // The runner sets it after every stage (empty when the stage has no gate).
                scope.set("_approval_message", Def::Dynamic);
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

    /// Checks a step and defines what it sets in `scope`; returns those definitions (its own
    /// and its loop body's) so that an enclosing loop can define them again after its body.
    fn step(&mut self, s: &Step, scope: &mut Scope) -> Vec<(String, Option<Rc<Guard>>)> {
        let held = self.holding.len();
        let outer_guard = self.guard.clone();
        if let Some(c) = &s.condition {
            let site = if self.body_depth > 0 {
                Site::Rendered
            } else {
                Site::TopLevel
            };
            let parsed = self.condition(c, scope, "condition", site, true);
            // Checked with the values of the condition's variables as they are now, before the
            // step (or its loop body) can change them.
            let atoms = match &parsed {
                Some(e) => scope.atoms(e),
                // Unparsable: a test that matches no other.
                None => {
                    scope.next_generation += 1;
                    vec![Atom {
                        canonical: String::new(),
                        generations: vec![scope.next_generation],
                    }]
                }
            };
            self.holding.extend(atoms);
            self.guard = Some(Rc::new(Guard {
                step: s.id_str().to_owned(),
                span: c.span,
                atoms: self.holding.clone(),
            }));
        }
        if let Some(f) = &s.foreach {
            self.foreach(f, scope);
        }
        if let Some(w) = &s.while_condition {
            self.condition(w, scope, "while_condition", Site::Rendered, true);
        }
        let mark = scope.mark();
        if s.foreach.is_some() {
            let name = s.as_var.as_ref().map_or("item", |t| t.value.as_str());
            scope.set(name, Def::Dynamic);
        }
        if s.while_condition.is_some() {
            scope.set("_loop_index", Def::Dynamic);
            scope.set("_loop_iteration", Def::Dynamic);
        }
        for t in [&s.prompt, &s.command, &s.cwd, &s.recipe]
            .into_iter()
            .flatten()
        {
            self.template(t, scope);
        }
        for e in s.env.iter().flatten() {
            if let Some(v) = &e.value {
                self.template(v, scope);
            }
        }
        if let Some(ctx) = &s.context {
            for c in &ctx.value {
                c.value.walk(|n| {
                    if let NodeKind::Scalar(sc) = &n.kind {
                        if matches!(sc.resolve(), ScalarValue::Str(_)) {
                            let t = Text {
                                value: sc.text.to_string(),
                                span: n.span,
                                style: sc.style,
                            };
                            self.template(&t, scope);
                        }
                    }
                });
            }
        }
        let mut nested = Vec::new();
        if let Some(b) = &s.while_steps {
            self.body_depth += 1;
            for sub in &b.value {
                nested.extend(self.step(sub, scope));
            }
            self.body_depth -= 1;
        }
        // After each iteration's body: the step's own results exist.
        for t in [&s.output, &s.collect, &s.output_exit_code]
            .into_iter()
            .flatten()
        {
            scope.define_output(&t.value, None);
        }
        for e in s.update_context.iter().flatten() {
            if let Some(v) = &e.value {
                self.template(v, scope);
            }
        }
        for e in s.update_context.iter().flatten() {
            scope.define_output(&e.key.value, None);
        }
        if let Some(b) = &s.break_when {
            self.condition(b, scope, "break_when", Site::Rendered, false);
        }
        scope.undo_to(mark);
        let mut defined: Vec<(String, Option<Rc<Guard>>)> =
            [&s.output, &s.collect, &s.output_exit_code]
                .into_iter()
                .flatten()
                .map(|t| t.value.clone())
                .chain(
                    s.update_context
                        .iter()
                        .flatten()
                        .map(|e| e.key.value.clone()),
                )
                .map(|name| (name, self.guard.clone()))
                .collect();
        // Sub-step outputs land in the live context too.
        defined.extend(nested);
        for (name, guard) in &defined {
            scope.define_output(name, guard.clone());
        }
        self.holding.truncate(held);
        self.guard = outer_guard;
        defined
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

    fn condition(
        &mut self,
        t: &Text,
        scope: &Scope,
        field: &str,
        site: Site,
        need_var: bool,
    ) -> Option<Expr> {
        let (expr, issues) = condition::parse_at(&t.value, site);
        // A quoted reference at the top level is reported as such (PW0537); the condition
        // does read that variable.
        let quoted_ref = issues.iter().any(|i| i.code == codes::QUOTED_VARIABLE);
        for i in issues {
            self.diags.push(issue_to_diag(self.src, t, i));
        }
        let e = expr?;
        // A rendered condition reads every reference in its text, quoted ones included.
        let rendered = template::parse(&t.value).0;
        let vars: Vec<&VarRef> = match site {
            Site::Rendered => rendered.vars().collect(),
            Site::TopLevel => e.vars(),
        };
        let literal_true =
            matches!(e, Expr::Bool { value: true, .. }) && field == "while_condition";
        if need_var && vars.is_empty() && !literal_true && !quoted_ref {
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
        Some(e)
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
        match scope.get(root) {
            None if v.path.len() == 1 && root == "else" && !self.setters.contains_key(root) => self.diags.push(
                Diagnostic::error(codes::UNDEFINED_VARIABLE, span(), "undefined variable `else`")
                    .with_label("the runner substitutes this as a variable and fails")
                    .with_note("recipe templates have no block helpers (`{{#if}}`, `{{else}}`, `{{/if}}`, `{{#each}}`): the runner substitutes `{{name}}` and `{{name.field}}` only")
                    .with_help("choose between texts with separate steps that carry a `condition:`"),
            ),
            None => {
                let mut d = Diagnostic::error(codes::UNDEFINED_VARIABLE, span(), format!("undefined variable `{root}`"))
                    .with_label("not defined at this point");
                let mut names: Vec<&str> = scope.vars.keys().map(String::as_str).filter(|k| !k.starts_with('_')).collect();
                names.sort_unstable();
                let near = did_you_mean(root, names.iter().copied());
                // No near miss: the name is new, and a caller's `--var` only reaches a
                // variable the recipe declares, so say how to declare it (issue 22).
                let declare = near.is_none() && !self.setters.contains_key(root) && !root.starts_with("_loop_");
                d = match near {
                    Some(c) => d.with_help(format!("did you mean `{c}`?")),
                    None if declare => d.with_help(format!(
                        "declare it under `context:`: `{root}: \"\"` (a default that `--var {root}=…` replaces), or `{root}: {{type: string, required: true}}` (a value every run must give)"
                    )),
                    None => d,
                };
                if let Some(setter) = self.setters.get(root) {
                    d = d.with_note(format!("`{root}` is set by step `{setter}`, which does not run before this point"));
                } else if root.starts_with("_loop_") {
                    d = d.with_note("`_loop_index` and `_loop_iteration` exist only inside while loops");
                } else {
                    d = d.with_note("define it in `context:`, or as the `output` of an earlier step");
                }
                self.diags.push(d);
            }
            Some(Def::Output { guards: Some(guards) }) => {
                // Safe where every condition one of the setters ran under holds again, on the
                // same values.
                let guarded = guards
                    .iter()
                    .any(|g| g.atoms.iter().all(|a| self.holding.contains(a)));
                if let (false, Some(last)) = (guarded, guards.last()) {
                    self.diags.push(
                        Diagnostic::warning(codes::CONDITIONALLY_DEFINED, span(), format!("`{root}` may be undefined here"))
                            .with_label("only set when an earlier conditional step runs")
                            .with_secondary(last.span, format!("step `{}` is skipped when this is false", last.step))
                            .with_help(format!("give `{root}` a default in `context:`, or guard this step with the same condition")),
                    );
                }
            }
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
                if let Some(node) = self.context_nodes.get(*i) {
                    static_path(v, node, span, &mut self.diags);
                }
            }
            Some(_) => {}
        }
    }
}

fn static_path(v: &VarRef, node: &Node, span: impl Fn() -> Span, diags: &mut Vec<Diagnostic>) {
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
                    diags.push(
                        Diagnostic::warning(
                            codes::STATIC_PATH,
                            span(),
                            format!("`{parent}` in `context` has no key `{part}`"),
                        )
                        .with_label("unless the caller passes a different value, this is undefined")
                        .with_secondary(cur.span, format!("`{parent}` is defined here"))
                        .with_optional_help(help_for_unknown(part, keys.iter().copied())),
                    );
                    return;
                }
            },
            _ => {
                diags.push(
                    Diagnostic::warning(
                        codes::STATIC_PATH,
                        span(),
                        format!(
                            "`{parent}` is {} in `context`, so `.{part}` cannot be read from it",
                            cur.describe()
                        ),
                    )
                    .with_label("unless the caller passes a mapping, this is undefined")
                    .with_secondary(cur.span, format!("`{parent}` is defined here"))
                    .with_help(format!(
                        "declare `{parent}` as a mapping with a `{part}` key in `context:`"
                    )),
                );
                return;
            }
        }
    }
}
