//! Walks each pipeline in execution order, tracking which named stores exist and which scope
//! names (`item`, `acc`) are bound, and checks every expression, template, target, tool and
//! schema reference against that state.

use super::schemas::Registry;
use super::targets::Index;
use super::CheckOptions;
use crate::ast::*;
use crate::catalogue::DENIED_TOOLS;
use crate::codes;
use pipewright_r1::{free_path_views, ObjectType, PathView, Type, TypeEnv};
use pipewright_syntax::suggest::{did_you_mean, help_for_unknown};
use pipewright_syntax::{Diagnostic, Span};
use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

pub(super) struct Env<'a> {
    pub source: &'a str,
    pub registry: &'a Registry<'a>,
    pub index: &'a Index<'a>,
    pub opts: &'a CheckOptions,
}

/// What a step's expressions can see. A nested body (for_each item, branch, fold step) sees
/// its enclosing scope's stores through `parent` and writes only into its own layer, which is
/// exactly the runtime's isolation rule — and costs nothing per nesting, where copying the
/// store map made checking quadratic in the number of stores.
struct Scope<'p, 'a> {
    parent: Option<&'p Scope<'p, 'a>>,
    /// Stores written in this layer: where first written, and the type of the latest value.
    /// Keyed by the names in the AST (no copies); the keys are the program's own store names,
    /// so the fast non-keyed hash is safe here.
    stores: FxHashMap<StoreName<'a>, (Span, Type)>,
    item: Option<Type>,
    acc: Option<Type>,
    pipe: Type,
}

impl<'p, 'a> Scope<'p, 'a> {
    fn nested(&'p self, item: Option<Type>, acc: Option<Type>, pipe: Type) -> Scope<'p, 'a> {
        Scope {
            parent: Some(self),
            stores: FxHashMap::default(),
            item,
            acc,
            pipe,
        }
    }

    fn store(&self, name: &str) -> Option<&(Span, Type)> {
        let mut layer = Some(self);
        while let Some(l) = layer {
            if let Some(s) = l.stores.get(name) {
                return Some(s);
            }
            layer = l.parent;
        }
        None
    }
}

/// A store name borrowed from the AST through its box: 8 bytes where `&str` takes 16, and the
/// two per-store tables of a large pipeline hold one per store. It hashes and compares as the
/// name itself, so the tables are looked up by `&str`.
#[derive(Clone, Copy)]
// The thin pointer is the point: a `&str` key is twice as large.
#[allow(clippy::borrowed_box)]
struct StoreName<'a>(&'a Box<str>);

impl Hash for StoreName<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self.0).hash(state)
    }
}

impl PartialEq for StoreName<'_> {
    fn eq(&self, other: &Self) -> bool {
        **self.0 == **other.0
    }
}

impl Eq for StoreName<'_> {}

impl Borrow<str> for StoreName<'_> {
    fn borrow(&self) -> &str {
        self.0
    }
}

/// Where names that no earlier step wrote come from.
enum Inputs<'a> {
    /// A pipeline launched directly: any store no step writes is an input.
    Launch,
    /// A pipeline only ever called: its stores are exactly what each call site passes.
    Passed {
        sites: Vec<(&'a CallTarget, HashSet<&'a str>)>,
        /// The names every site passes: reading one needs no look at each site, which kept a
        /// pipeline called from many places quadratic (reads × call sites).
        everywhere: FxHashSet<&'a str>,
    },
}

struct Walker<'a, 'd> {
    env: &'a Env<'a>,
    file_idx: usize,
    inputs: Inputs<'a>,
    /// Every store written anywhere in the pipeline (first write), to tell "input" from
    /// "read before written".
    writes: FxHashMap<StoreName<'a>, Span>,
    leaves: super::types::LeafResults<'a>,
    /// For a called pipeline: which call sites (indices into `Inputs::Passed::sites`) do not
    /// pass a name, by name.
    missing: FxHashMap<Box<str>, Vec<usize>>,
    diags: &'d mut Vec<Diagnostic>,
}

/// The calls a PW0254 names; the others are counted in a note.
const SITES_SHOWN: usize = 3;

/// `pid` is the pipeline's (file, pipeline) index in the program.
pub(super) fn check_pipeline(
    env: &Env,
    pid: (usize, usize),
    p: &Pipeline,
    diags: &mut Vec<Diagnostic>,
) {
    let file_idx = pid.0;
    let inputs = match env.index.callers.get(&pid) {
        Some(sites) if !sites.is_empty() => {
            let sites: Vec<(&CallTarget, HashSet<&str>)> = sites
                .iter()
                .map(|(t, _)| (*t, t.pass.iter().map(|x| &*x.name.text).collect()))
                .collect();
            let everywhere = sites
                .first()
                .map(|(_, first)| {
                    first
                        .iter()
                        .copied()
                        .filter(|n| sites.iter().all(|(_, p)| p.contains(n)))
                        .collect()
                })
                .unwrap_or_default();
            Inputs::Passed { sites, everywhere }
        }
        _ => Inputs::Launch,
    };
    let mut writes = FxHashMap::default();
    let mut stack: Vec<&Step> = p.steps.iter().collect();
    while let Some(s) = stack.pop() {
        if let Some(o) = &s.output {
            writes
                .entry(StoreName(&o.text))
                .and_modify(|sp: &mut Span| {
                    if o.span.start < sp.start {
                        *sp = o.span
                    }
                })
                .or_insert(o.span);
        }
        s.each_child(|c| stack.push(c));
    }
    let mut w = Walker {
        env,
        file_idx,
        inputs,
        writes,
        leaves: super::types::LeafResults::default(),
        missing: FxHashMap::default(),
        diags,
    };
    // Sized once: a table that grows by doubling holds its old and new buckets at once, and in
    // a large pipeline that moment was the top of the check's memory.
    let outputs = p.steps.iter().filter(|s| s.output.is_some()).count();
    let mut scope = Scope {
        parent: None,
        stores: FxHashMap::with_capacity_and_hasher(outputs, Default::default()),
        item: None,
        acc: None,
        pipe: Type::Any,
    };
    for s in &p.steps {
        w.step(s, &mut scope);
    }
}

impl<'a> Walker<'a, '_> {
    /// Checks a step and returns the type of its result; records its `output` in `scope`.
    fn step(&mut self, step: &'a Step, scope: &mut Scope<'_, 'a>) -> Type {
        let ty = self.step_kind(step, scope);
        if let Some(o) = &step.output {
            let first = scope.store(&o.text).map_or(o.span, |(s, _)| *s);
            scope.stores.insert(StoreName(&o.text), (first, ty.clone()));
        }
        scope.pipe = ty.clone();
        ty
    }

    fn step_kind(&mut self, step: &'a Step, scope: &mut Scope<'_, 'a>) -> Type {
        let leaf = self.leaves.of(step, self.env.registry);
        match &step.kind {
            StepKind::Transform { value } => return self.expr(value, scope),
            StepKind::Tool(t) => {
                let ToolStep {
                    name, args, schema, ..
                } = &**t;
                self.tool(name);
                for a in args {
                    if let ArgValue::Expr(e) = &a.value {
                        self.expr(e, scope);
                        if &*name.text == "shell" && &*a.name.text == "command" {
                            super::shell::check_command(e, self.env.source, self.diags);
                        }
                    }
                }
                self.schema(schema.as_ref());
            }
            StepKind::Shell(sh) => {
                let ShellStep {
                    command, schema, ..
                } = &**sh;
                if let ArgValue::Expr(e) = command {
                    self.expr(e, scope);
                    super::shell::check_command(e, self.env.source, self.diags);
                }
                self.schema(schema.as_ref());
            }
            StepKind::Agent(a) => {
                let AgentStep {
                    prompt,
                    identity,
                    capabilities,
                    schema,
                    ..
                } = &**a;
                for part in &prompt.template.parts {
                    if let pipewright_r1::TemplatePart::Expr { expr, .. } = part {
                        self.check_expr(expr, scope, &|r| prompt.span_of(self.env.source, r));
                    }
                }
                self.identity(identity.as_ref());
                for t in capabilities.iter().flatten() {
                    self.capability(t);
                }
                self.schema(schema.as_ref());
            }
            StepKind::Call(t) => self.target(t, scope),
            StepKind::Match(m) => {
                let MatchStep { on, cases, default } = &**m;
                self.expr(on, scope);
                for c in cases {
                    self.label(c, on);
                    self.target(&c.target, scope);
                }
                if let Some(d) = default {
                    self.target(d, scope);
                }
            }
            StepKind::Fold(f) => {
                let FoldStep {
                    source, init, body, ..
                } = &**f;
                let item = self.source(source, scope);
                let acc = self.expr(init, scope);
                let mut inner = scope.nested(Some(item), Some(acc), scope.pipe.clone());
                self.step(body, &mut inner);
            }
            StepKind::ForEach(each) => {
                let ForEachStep {
                    source,
                    body,
                    collect,
                    ..
                } = &**each;
                let item = self.source(source, scope);
                let mut inner = scope.nested(Some(item), None, scope.pipe.clone());
                let each = self.step(body, &mut inner);
                let mut coll = scope.nested(None, None, Type::list(each));
                return self.step(collect, &mut coll);
            }
            StepKind::Parallel {
                branches, collect, ..
            } => {
                // Open: `__branch_errors__` appears when a branch was dropped.
                let mut results = ObjectType::open();
                for b in branches {
                    let mut inner = scope.nested(None, None, scope.pipe.clone());
                    let t = self.step(&b.step, &mut inner);
                    results.fields.insert(
                        b.name.text.to_string(),
                        pipewright_r1::FieldType {
                            ty: t,
                            origin: Some(b.name.span),
                        },
                    );
                }
                let mut coll = scope.nested(None, None, Type::object(results));
                return self.step(collect, &mut coll);
            }
        }
        leaf.unwrap_or(Type::Any)
    }

    fn expr(&mut self, e: &'a Expr, scope: &Scope<'_, '_>) -> Type {
        self.check_expr(&e.ast, scope, &|r| e.span_of(self.env.source, r))
    }

    /// Checks every free name an expression reads, then its types; returns its type.
    fn check_expr(
        &mut self,
        ast: &pipewright_r1::Expr,
        scope: &Scope<'_, '_>,
        map: &dyn Fn(std::ops::Range<usize>) -> Span,
    ) -> Type {
        let refs = free_path_views(ast);
        // Only the stores this expression names go into its type environment, so checking
        // stays linear in the size of the pipeline.
        let mut ctx = ObjectType::open();
        for r in &refs {
            if let (true, Some(name)) = (r.root == "ctx", r.first_segment()) {
                if let Some((_, t)) = scope.store(name) {
                    ctx.fields.insert(
                        name.to_string(),
                        pipewright_r1::FieldType {
                            ty: t.clone(),
                            origin: None,
                        },
                    );
                }
            }
        }
        let mut env = TypeEnv::new()
            .with("ctx", Type::object(ctx))
            .with("pipe", scope.pipe.clone());
        if let Some(t) = &scope.item {
            env.insert("item", t.clone());
        }
        if let Some(t) = &scope.acc {
            env.insert("acc", t.clone());
        }
        self.paths(refs, scope, map);
        let (ty, issues) = pipewright_r1::check_types(ast, &env);
        for i in issues {
            self.diags.push(i.to_diagnostic(map));
        }
        ty
    }

    fn paths(
        &mut self,
        refs: Vec<PathView<'_>>,
        scope: &Scope<'_, '_>,
        map: &dyn Fn(std::ops::Range<usize>) -> Span,
    ) {
        for r in refs {
            // Mapping into the file is only needed for a message; most reads are fine.
            let span = || map(r.range.clone());
            match r.root {
                "ctx" => {
                    if let (Some(name), false) = (r.first_segment(), r.via_get()) {
                        if scope.store(name).is_none() {
                            self.store_read(name, span(), scope);
                        }
                    }
                }
                "pipe" => {}
                "item" | "acc" => {
                    let bound = if r.root == "item" {
                        scope.item.is_some()
                    } else {
                        scope.acc.is_some()
                    };
                    if !bound {
                        let where_ = if r.root == "item" {
                            "inside a `fold` or `for_each` `do` step"
                        } else {
                            "inside a `fold` `do` step"
                        };
                        self.diags.push(
                            Diagnostic::error(codes::OUT_OF_SCOPE, span(), format!("`{}` is not in scope here", r.root))
                                .with_label(format!("`{}` only exists {where_}", r.root))
                                .with_help("a value from an enclosing loop must be passed explicitly (e.g. `pass: {cur: item}` on a call)"),
                        );
                    }
                }
                other => {
                    let mut d = Diagnostic::error(
                        codes::UNKNOWN_NAME,
                        span(),
                        format!("unknown name `{other}`"),
                    )
                    .with_label("not in scope");
                    if scope.store(other).is_some() || self.writes.contains_key(other) {
                        d = d.with_help(format!(
                            "named stores are read through `ctx`: write `ctx.{}`",
                            path_text(&r)
                        ));
                    } else {
                        let mut names = vec!["ctx", "pipe"];
                        if scope.item.is_some() {
                            names.push("item");
                        }
                        if scope.acc.is_some() {
                            names.push("acc");
                        }
                        let help = help_for_unknown(other, names.iter().copied())
                            .map(|h| format!("{h} (the names in scope are {})", names.join(", ")));
                        d = d.with_optional_help(help);
                    }
                    self.diags.push(d);
                }
            }
        }
    }

    fn store_read(&mut self, name: &str, span: Span, scope: &Scope<'_, '_>) {
        if scope.store(name).is_some() {
            return;
        }
        if let Some(&w) = self.writes.get(name) {
            let d = Diagnostic::error(codes::READ_BEFORE_WRITE, span, format!("`ctx.{name}` is read before any step writes it"))
                .with_label("read here")
                .with_secondary(w, if w.start > span.start { "first written here, later" } else { "written here, in an isolated scope that does not reach this step" })
                .with_help("move the read after the writing step, or read it safely with `get(ctx, 'NAME', default)`");
            self.diags.push(d);
            return;
        }
        if let Inputs::Passed { sites, everywhere } = &self.inputs {
            if everywhere.contains(name) {
                return;
            }
            // One diagnostic per read, naming a few of the calls that leave the name out: one
            // per (read, call) was reads × call sites diagnostics for a pipeline called from
            // many places. The calls missing a name are found once per name.
            if !self.missing.contains_key(name) {
                let m = (0..sites.len())
                    .filter(|&i| !sites[i].1.contains(name))
                    .collect();
                self.missing.insert(name.into(), m);
            }
            let missing = &self.missing[name];
            let Some(&first) = missing.first() else {
                return;
            };
            let mut d = Diagnostic::error(
                codes::STORE_NOT_PASSED,
                span,
                format!("`ctx.{name}` is not passed to this pipeline"),
            )
            .with_label("read here");
            for &i in missing.iter().take(SITES_SHOWN) {
                d = d.with_secondary(
                    sites[i].0.pipeline.span,
                    format!("called here without `{name}` in `pass`"),
                );
            }
            if missing.len() > SITES_SHOWN {
                d = d.with_note(format!(
                    "{} more calls do not pass `{name}` either",
                    missing.len() - SITES_SHOWN
                ));
            }
            let known = sites[first].1.iter().copied();
            d = match did_you_mean(name, known) {
                Some(k) => d.with_help(format!(
                    "did you mean `ctx.{k}`? Otherwise add `{name}` to the call's `pass`"
                )),
                None => d.with_help(format!(
                    "a callee sees only what `pass` lists: add `{name}` to the call's `pass`"
                )),
            };
            self.diags.push(d);
        }
    }

    /// Checks a list source and returns the type of its elements.
    fn source(&mut self, s: &'a ListSource, scope: &Scope<'_, '_>) -> Type {
        let list = match s {
            ListSource::Over(e) => self.expr(e, scope),
            ListSource::Items(_) => Type::Any,
            ListSource::Pipe => scope.pipe.clone(),
        };
        match list {
            Type::List(inner) => Arc::unwrap_or_clone(inner),
            _ => Type::Any,
        }
    }

    fn target(&mut self, t: &'a CallTarget, scope: &Scope<'_, '_>) {
        for p in &t.pass {
            self.expr(&p.value, scope);
        }
        if let Some(d) = self.env.index.unresolved(self.file_idx, t) {
            self.diags.push(d);
        }
    }

    fn label(&mut self, c: &MatchCase, _on: &Expr) {
        if !c.label_is_string {
            let shown = match &*c.label.text {
                "true" | "True" | "TRUE" => "\"True\"".to_string(),
                "false" | "False" | "FALSE" => "\"False\"".to_string(),
                "null" | "Null" | "NULL" | "~" | "" => "\"None\"".to_string(),
                t => format!("\"{t}\""),
            };
            self.diags.push(
                Diagnostic::warning(
                    codes::UNREACHABLE_LABEL,
                    c.label.span,
                    format!("match label `{}` can never be selected", c.label.text),
                )
                .with_label("YAML reads this label as a non-string; `on` is compared as a string")
                .with_help(format!("quote the label: {shown}")),
            );
        } else if matches!(&*c.label.text, "true" | "false") {
            let cap = if &*c.label.text == "true" {
                "True"
            } else {
                "False"
            };
            self.diags.push(
                Diagnostic::warning(
                    codes::UNREACHABLE_LABEL,
                    c.label.span,
                    format!("match label `{}` never matches a boolean", c.label.text),
                )
                .with_label(format!("a boolean `on` value is rendered as `{cap}`"))
                .with_help(format!("write the label as \"{cap}\"")),
            );
        }
    }

    fn tool(&mut self, name: &Name) {
        if let Some((_, why)) = DENIED_TOOLS.iter().find(|(t, _)| *t == &*name.text) {
            self.diags.push(
                Diagnostic::error(
                    codes::FORBIDDEN_TOOL,
                    name.span,
                    format!("tool `{}` may not be used from a pipeline", name.text),
                )
                .with_label("structurally denied")
                .with_help(why.to_string()),
            );
            return;
        }
        if self.env.opts.tools.get(&name.text).is_none() {
            let help =
                help_for_unknown(&name.text, self.env.opts.tools.names()).unwrap_or_else(|| {
                    "declare it under `[tools.NAME]` in pipewright.toml".to_string()
                });
            self.diags.push(
                Diagnostic::error(codes::UNKNOWN_TOOL, name.span, format!("unknown tool `{}`", name.text))
                    .with_label("not in the tool catalogue")
                    .with_help(help)
                    .with_note("the catalogue is pipewright's built-in tools, the reference runtime's host tools, and `[tools.*]` in pipewright.toml"),
            );
        }
    }

    fn capability(&mut self, t: &Name) {
        if self.env.opts.tools.get(&t.text).is_none() {
            let help = help_for_unknown(&t.text, self.env.opts.tools.names());
            self.diags.push(
                Diagnostic::error(
                    codes::CAPABILITY_UNKNOWN_TOOL,
                    t.span,
                    format!("capability `{}` names no known tool", t.text),
                )
                .with_label("`capabilities.tools` may only narrow to tools in the catalogue")
                .with_optional_help(help),
            );
        }
    }

    fn identity(&mut self, identity: Option<&Name>) {
        let (Some(id), true) = (identity, self.env.opts.inline) else {
            return;
        };
        if self.env.opts.invoker.as_deref() != Some(&*id.text) {
            let d = Diagnostic::error(
                codes::INLINE_AGENT_IDENTITY,
                id.span,
                format!("inline pipeline runs an agent as `{}`", id.text),
            );
            self.diags.push(match self.env.opts.invoker.as_deref() {
                Some(invoker) => d
                    .with_label(format!("not the invoking identity `{invoker}`"))
                    .with_help("an agent-generated pipeline may only use the invoker's own identity: remove `identity`"),
                // Without an invoker no identity can be shown to be the invoker's own.
                None => d
                    .with_label("no invoking identity was given to compare it with")
                    .with_help("name the invoker (`--invoker NAME` or `invoker` under `[check]` in pipewright.toml), or remove `identity`"),
            });
        }
    }

    fn schema(&mut self, schema: Option<&Name>) {
        if let Some(s) = schema {
            if let Some(d) = self.env.registry.unresolved(&s.text, s.span) {
                self.diags.push(d);
            }
        }
    }
}

fn path_text(r: &PathView<'_>) -> String {
    std::iter::once(r.root)
        .chain(r.segment_names())
        .collect::<Vec<_>>()
        .join(".")
}
