//! The checks of one module: step ids, per-step rules, the `needs` graph, template references,
//! expansions and the variables they pass, `{{…}}` references, agents and adapters.

use crate::ast::{Module, Step, Text, Workflow};
use crate::codes;
use crate::executor::{AgentUse, BranchTarget, Executor, Expand, Foreach, Spawn};
use crate::refs::{Library, Problem, Target};
use crate::steps;
use crate::tree::{Kind, Node, Table};
use crate::vars::{self, Scope};
use pipewright_syntax::suggest::did_you_mean;
use pipewright_syntax::{Diagnostic, Span};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

pub(crate) struct Ctx<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    pub module: &'a Module,
    pub lib: &'a mut Library,
    pub diags: &'a mut Vec<Diagnostic>,
}

/// One template reference of a step: where it is written and what it passes.
pub(crate) struct Expansion<'m> {
    pub step: &'m Step,
    pub template: Text,
    /// The table of variables passed, if any.
    pub variables: Option<&'m Table>,
    /// `on_true` etc. for branch targets, `on_error` for a recovery; expansions through it
    /// are conditional.
    pub outcome: Option<&'static str>,
}

impl Expansion<'_> {
    /// A recovery receives the failing workflow's variables rather than a `variables` table.
    pub(crate) fn is_recovery(&self) -> bool {
        self.outcome == Some("on_error")
    }
}

pub(crate) fn expansions(step: &Step) -> Vec<Expansion<'_>> {
    let mut out = Vec::new();
    match &step.executor {
        Executor::Expand(Expand {
            template,
            variables,
        })
        | Executor::Foreach(Foreach {
            template,
            variables,
            ..
        }) => {
            if let Some(t) = template {
                out.push(Expansion {
                    step,
                    template: t.clone(),
                    variables: variables.as_ref().and_then(Node::as_table),
                    outcome: None,
                });
            }
        }
        Executor::Branch(branch) => {
            for (key, target) in branch.targets() {
                if let Some(BranchTarget::Template {
                    template,
                    variables,
                    ..
                }) = target
                {
                    out.push(Expansion {
                        step,
                        template: template.clone(),
                        variables: variables.as_ref().and_then(Node::as_table),
                        outcome: Some(key),
                    });
                }
            }
        }
        _ => {}
    }
    if let Some(t) = step
        .on_error
        .as_ref()
        .filter(|t| steps::on_error_template(&t.text))
    {
        out.push(Expansion {
            step,
            template: t.clone(),
            variables: None,
            outcome: Some("on_error"),
        });
    }
    out
}

pub(crate) fn module(cx: &mut Ctx) {
    let module = cx.module;
    // Names a foreach binds in the local workflow it instantiates.
    let mut bound: HashMap<&str, Vec<String>> = HashMap::new();
    let mut edges: Vec<(&str, String, Span)> = Vec::new();
    // Every local expansion, and the workflows an `on_error` names: those and what they
    // expand see `_failed_step`.
    let mut all_edges: Vec<(&str, String)> = Vec::new();
    let mut recoveries: Vec<String> = Vec::new();
    // Per local target: the workflows that expand it, and the variables they give it (whose
    // values are then not the declared defaults).
    let mut callers: HashMap<&str, Vec<&Workflow>> = HashMap::new();
    let mut given: HashMap<&str, BTreeSet<String>> = HashMap::new();
    for wf in &module.workflows {
        ids(wf, cx.diags);
        for s in &wf.steps {
            steps::check(s, cx.diags);
        }
        for s in &wf.steps {
            for x in expansions(s) {
                let target = resolve(cx, &x.template);
                if let Some(Target::Local(name)) = &target {
                    if let Executor::Foreach(f) = &s.executor {
                        let names = [&f.item_var, &f.index_var]
                            .into_iter()
                            .flatten()
                            .map(|t| t.text.clone());
                        bound
                            .entry(module.workflow(name).map_or("", |w| w.name.as_str()))
                            .or_default()
                            .extend(names);
                    }
                    if x.outcome.is_none() {
                        edges.push((wf.name.as_str(), name.clone(), x.template.span));
                    }
                    if let Some(t) = module.workflow(name) {
                        let to = t.name.as_str();
                        let list = callers.entry(to).or_default();
                        if !list.iter().any(|w| w.name == wf.name) {
                            list.push(wf);
                        }
                        let names = given.entry(to).or_default();
                        names.extend(
                            x.variables
                                .iter()
                                .flat_map(|v| v.entries.iter().map(|e| e.key.clone())),
                        );
                        if x.is_recovery() {
                            names.extend(wf.variables.iter().map(|v| v.name.clone()));
                        }
                    }
                    all_edges.push((wf.name.as_str(), name.clone()));
                    if x.is_recovery() {
                        recoveries.push(name.clone());
                        let target = module.workflow(name).map_or("", |w| w.name.as_str());
                        bound
                            .entry(target)
                            .or_default()
                            .extend(wf.variables.iter().map(|v| v.name.clone()));
                    }
                }
                let target_wf = match &target {
                    Some(Target::Local(name)) => module.workflow(name).map(|w| (w, true)),
                    Some(Target::File {
                        module, workflow, ..
                    }) => module.workflow(workflow).map(|w| (w, false)),
                    _ => None,
                };
                if let Some((target, same_file)) = target_wf {
                    vars::passed(cx, &x, wf, target, same_file);
                }
            }
        }
    }
    let mut seen: HashSet<String> = HashSet::new();
    while let Some(name) = recoveries.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(w) = module.workflow(&name) {
            bound
                .entry(w.name.as_str())
                .or_default()
                .push(vars::FAILED_STEP.to_string());
        }
        recoveries.extend(
            all_edges
                .iter()
                .filter(|(from, _)| *from == name)
                .map(|(_, to)| to.clone()),
        );
    }
    expansion_cycles(&edges, cx.diags);
    for wf in &module.workflows {
        let extra = bound.get(wf.name.as_str()).cloned().unwrap_or_default();
        let closure = needs(cx, wf);
        let scope = Scope {
            wf,
            extra: &extra,
            closure: &closure,
            callers: callers.get(wf.name.as_str()).map_or(&[][..], Vec::as_slice),
            given: given.get(wf.name.as_str()),
        };
        for s in &wf.steps {
            vars::references(cx, &scope, s);
            crate::shell_quotes::check(cx, s);
        }
        agents(cx, wf, &closure);
        vars::cleanup_scripts(cx, wf);
    }
}

fn resolve(cx: &mut Ctx, t: &Text) -> Option<Target> {
    match cx.lib.resolve(&t.text, cx.path, cx.module) {
        Ok(target) => Some(target),
        Err(p) => {
            cx.diags.push(problem(cx.module, t, p));
            None
        }
    }
}

fn problem(module: &Module, t: &Text, p: Problem) -> Diagnostic {
    match p {
        Problem::UnknownLocal { name } => {
            let names = module.workflows.iter().map(|w| w.name.as_str());
            let d = Diagnostic::error(
                codes::UNKNOWN_LOCAL_WORKFLOW,
                t.span,
                format!("this file has no workflow `{name}`"),
            )
            .with_label("unknown workflow");
            let d = if name.contains('.') {
                d.with_note("`.workflow.step` passes `meow validate` but fails at run time: a reference names a whole workflow")
            } else {
                d
            };
            d.with_optional_help(
                did_you_mean(&name, names).map(|c| format!("did you mean `.{c}`?")),
            )
        }
        Problem::FileNotFound { searched } => {
            let mut d = Diagnostic::error(
                codes::TEMPLATE_NOT_FOUND,
                t.span,
                format!("template `{}` does not exist", t.text),
            )
            .with_label("no such file");
            for s in &searched {
                d = d.with_note(format!("looked for {}", s.display()));
            }
            let bare = !t.text.contains('#') && !t.text.contains('/') && !t.text.starts_with('.');
            if bare && module.workflow(&t.text).is_some() {
                d = d.with_help(format!(
                    "a bare name is a file; for the workflow of this file write `.{}`",
                    t.text
                ));
            } else if bare || !t.text.starts_with('.') {
                d = d.with_help("bare references resolve in the project's `.meow/workflows/`; pipewright does not look in `~/.meow/workflows` or the templates built into `meow`");
            }
            d
        }
        Problem::WorkflowNotInFile {
            path,
            workflow,
            available,
        } => Diagnostic::error(
            codes::WORKFLOW_NOT_IN_FILE,
            t.span,
            format!("{} has no workflow `{workflow}`", path.display()),
        )
        .with_label("unknown workflow")
        .with_note(format!("it defines: {}", available.join(", ")))
        .with_optional_help(
            did_you_mean(&workflow, available.iter().map(String::as_str))
                .map(|c| format!("did you mean `{c}`?")),
        ),
    }
}

fn ids(wf: &Workflow, diags: &mut Vec<Diagnostic>) {
    let mut seen: HashMap<&str, Span> = HashMap::new();
    for s in &wf.steps {
        let id = s.id.text.as_str();
        if id.is_empty() {
            diags.push(
                Diagnostic::error(codes::MISSING_ID, s.id.span, "a step id is empty")
                    .with_label("empty id"),
            );
        } else if !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            let d = Diagnostic::warning(
                codes::ID_SYNTAX,
                s.id.span,
                format!("step id `{id}` has characters outside `[A-Za-z0-9_-]`"),
            )
            .with_label("unusual id");
            diags.push(if id.contains('.') {
                d.with_note("dots separate expansion prefixes (`expand-step.child`): a need on this id reads as a need into an expansion")
            } else {
                d.with_note("the reference runs it, but its own documentation forbids it")
            });
        }
        if let Some(first) = seen.get(id) {
            diags.push(
                Diagnostic::error(
                    codes::DUPLICATE_ID,
                    s.id.span,
                    format!("duplicate step id `{id}` in workflow `{}`", wf.name),
                )
                .with_label("second definition")
                .with_secondary(*first, "first defined here"),
            );
        } else {
            seen.insert(id, s.id.span);
        }
    }
}

/// Checks every need of the workflow and returns, per step id, every need it reaches (its
/// transitive dependencies, dotted expansion children included as written).
fn needs(cx: &mut Ctx, wf: &Workflow) -> HashMap<String, BTreeSet<String>> {
    let ids: Vec<&str> = wf.steps.iter().map(|s| s.id.text.as_str()).collect();
    for s in &wf.steps {
        for n in &s.needs {
            need(cx, wf, &ids, n);
        }
        for inline in steps::inline_steps_of(s) {
            let siblings: Vec<String> = steps::inline_steps_of(s)
                .iter()
                .map(|i| i.id.text.clone())
                .collect();
            for n in &inline.needs {
                if siblings.contains(&n.text) {
                    continue;
                }
                need(cx, wf, &ids, n);
            }
        }
    }
    cycles(wf, cx.diags);
    let mut closure = HashMap::new();
    for s in &wf.steps {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&str> = s.needs.iter().map(|n| n.text.as_str()).collect();
        while let Some(n) = stack.pop() {
            if !seen.insert(n.to_string()) {
                continue;
            }
            // A child of an expansion exists only once its expand step ran, so it comes
            // after that step's needs too.
            let head = n.split_once('.').map_or(n, |(h, _)| h);
            if let Some(d) = wf.step(n).or_else(|| wf.step(head)) {
                stack.extend(d.needs.iter().map(|n| n.text.as_str()));
            }
        }
        closure.insert(s.id.text.clone(), seen);
    }
    closure
}

fn need(cx: &mut Ctx, wf: &Workflow, ids: &[&str], n: &Text) {
    if ids.contains(&n.text.as_str()) {
        return;
    }
    if n.text.contains('*') {
        cx.diags.push(
            Diagnostic::warning(codes::NEEDS_PREFIX, n.span, format!("wildcard need `{}` is never satisfied by `meow`", n.text))
                .with_label("wildcard")
                .with_note("wildcard needs are specified but the reference looks needs up exactly, so under `meow run` the step waits forever; `pipewright run` matches them against the run's step ids")
                .with_help("for `meow`, need the specific steps, or the last step of an expansion (`expand-step.last-child`)"),
        );
        return;
    }
    if let Some((head, rest)) = n.text.split_once('.') {
        if let Some(h) = wf.step(head) {
            match h.executor.name() {
                "expand" => child_need(cx, h, rest, n),
                ex => cx.diags.push(
                    Diagnostic::error(codes::NEEDS_PREFIX, n.span, format!("`{head}` is a `{ex}` step, so `{}` is not a step its expansion creates", n.text))
                        .with_label("not an expand step")
                        .with_note("the reference accepts a need of the form `<step>.<child>` only when `<step>` is an `expand` step of the same workflow")
                        .with_help(format!("need `{head}` itself")),
                ),
            }
            return;
        }
    }
    cx.diags.push(
        Diagnostic::error(
            codes::NEEDS_UNKNOWN,
            n.span,
            format!(
                "`needs` names `{}`, which is no step of workflow `{}`",
                n.text, wf.name
            ),
        )
        .with_label("unknown step")
        .with_optional_help(
            did_you_mean(&n.text, ids.iter().copied()).map(|c| format!("did you mean `{c}`?")),
        ),
    );
}

/// `E.child`: `child` must be a step of the workflow `E` expands (when that can be known).
fn child_need(cx: &mut Ctx, expand: &Step, rest: &str, n: &Text) {
    let Executor::Expand(Expand {
        template: Some(t), ..
    }) = &expand.executor
    else {
        return;
    };
    let Ok(target) = cx.lib.resolve(&t.text, cx.path, cx.module) else {
        return;
    };
    let child = rest.split('.').next().unwrap_or(rest);
    let check = |wf: &Workflow| -> Option<Diagnostic> {
        if wf.step(child).is_some() {
            return None;
        }
        Some(
            Diagnostic::error(
                codes::NEEDS_PREFIX,
                n.span,
                format!(
                    "workflow `{}` (expanded by `{}`) has no step `{child}`",
                    wf.name, expand.id.text
                ),
            )
            .with_label("not a child of the expansion")
            .with_secondary(t.span, "expands this")
            .with_note("the step would wait forever for a child that is never created")
            .with_optional_help(
                did_you_mean(child, wf.steps.iter().map(|s| s.id.text.as_str()))
                    .map(|c| format!("did you mean `{}.{c}`?", expand.id.text)),
            ),
        )
    };
    let d = match &target {
        Target::Local(name) => cx.module.workflow(name).and_then(check),
        Target::File {
            module, workflow, ..
        } => module.workflow(workflow).and_then(check),
        Target::Dynamic => None,
    };
    cx.diags.extend(d);
}

fn cycles(wf: &Workflow, diags: &mut Vec<Diagnostic>) {
    // Colours: 0 unseen, 1 on the current path, 2 done.
    let mut colour: HashMap<&str, u8> = HashMap::new();
    let mut reported: HashSet<Vec<String>> = HashSet::new();
    for s in &wf.steps {
        let mut path: Vec<(&Step, usize)> = Vec::new();
        if colour.get(s.id.text.as_str()).copied().unwrap_or(0) != 0 {
            continue;
        }
        colour.insert(&s.id.text, 1);
        path.push((s, 0));
        while let Some((cur, i)) = path.last_mut() {
            let cur: &Step = cur;
            if *i >= cur.needs.len() {
                colour.insert(&cur.id.text, 2);
                path.pop();
                continue;
            }
            let n = &cur.needs[*i];
            *i += 1;
            let Some(next) = wf.step(&n.text) else {
                continue;
            };
            match colour.get(next.id.text.as_str()).copied().unwrap_or(0) {
                0 => {
                    colour.insert(&next.id.text, 1);
                    path.push((next, 0));
                }
                1 => {
                    let start = path
                        .iter()
                        .position(|(p, _)| p.id.text == next.id.text)
                        .unwrap_or(0);
                    let mut ring: Vec<String> = path[start..]
                        .iter()
                        .map(|(p, _)| p.id.text.clone())
                        .collect();
                    let mut key = ring.clone();
                    key.sort();
                    if reported.insert(key) {
                        ring.push(next.id.text.clone());
                        let mut d = Diagnostic::error(
                            codes::NEEDS_CYCLE,
                            n.span,
                            format!("`needs` forms a cycle: {}", ring.join(" → ")),
                        )
                        .with_label("closes the cycle");
                        for (p, _) in &path[start..] {
                            if p.id.text != cur.id.text {
                                d = d.with_secondary(
                                    p.id.span,
                                    format!("`{}` is on the cycle", p.id.text),
                                );
                            }
                        }
                        diags.push(d.with_note("no step on a cycle can ever start"));
                    }
                }
                _ => {}
            }
        }
    }
}

/// Workflows that expand each other through expand or foreach steps (not through a branch,
/// whose condition ends the recursion) never stop expanding.
fn expansion_cycles(edges: &[(&str, String, Span)], diags: &mut Vec<Diagnostic>) {
    let mut reported = HashSet::new();
    for (from, to, span) in edges {
        // Walk from `to`; reaching `from` closes a cycle through this edge.
        let mut stack = vec![(to.as_str(), vec![from.to_string(), to.clone()])];
        let mut seen = HashSet::new();
        while let Some((at, path)) = stack.pop() {
            if at == *from {
                let mut key = path.clone();
                key.pop();
                key.sort();
                if reported.insert(key) {
                    diags.push(
                        Diagnostic::error(codes::EXPANSION_CYCLE, *span, format!("workflows expand each other without end: {}", path.join(" → ")))
                            .with_label("unconditional expansion")
                            .with_note("recursion needs a branch whose condition can stop it; expand and foreach always expand")
                            .with_help("put the recursive expansion behind a branch step's `on_true`/`on_false`"),
                    );
                }
                break;
            }
            if !seen.insert(at) {
                continue;
            }
            for (f, t, _) in edges {
                if *f == at {
                    let mut p = path.clone();
                    p.push(t.clone());
                    stack.push((t.as_str(), p));
                }
            }
        }
    }
}

/// Built-in adapters shipped with `meow`.
const ADAPTERS: [&str; 6] = [
    "claude",
    "claude-haiku",
    "claude-opus",
    "claude-sonnet",
    "codex",
    "opencode",
];

fn agents(cx: &mut Ctx, wf: &Workflow, closure: &HashMap<String, BTreeSet<String>>) {
    let spawns: Vec<(&str, &str)> = wf
        .steps
        .iter()
        .filter_map(|s| match &s.executor {
            Executor::Spawn(Spawn { agent: Some(a), .. }) => {
                Some((a.text.as_str(), s.id.text.as_str()))
            }
            _ => None,
        })
        .collect();
    let root = cx.lib.root(cx.path.parent().unwrap_or(Path::new(".")));
    for s in &wf.steps {
        if let Executor::Spawn(Spawn {
            adapter: Some(a), ..
        }) = &s.executor
        {
            let local = root
                .join(".meow")
                .join("adapters")
                .join(&a.text)
                .join("adapter.toml");
            if !a.text.contains("{{") && !ADAPTERS.contains(&a.text.as_str()) && !local.is_file() {
                cx.diags.push(
                    Diagnostic::warning(
                        codes::UNKNOWN_ADAPTER,
                        a.span,
                        format!(
                            "adapter `{}` is neither built in nor in the project",
                            a.text
                        ),
                    )
                    .with_label("unknown adapter")
                    .with_note(format!(
                        "built in: {}; project adapters live in .meow/adapters/<name>/adapter.toml",
                        ADAPTERS.join(", ")
                    ))
                    .with_optional_help(
                        did_you_mean(&a.text, ADAPTERS).map(|c| format!("did you mean `{c}`?")),
                    ),
                );
            }
        }
        let (agent, what) = match s.executor.agent_named() {
            Some((agent, AgentUse::Ask)) => (agent, "talks to"),
            Some((agent, AgentUse::Kill)) => (agent, "kills"),
            _ => continue,
        };
        // Without any spawn, the workflow is a template run inside a caller's agent session.
        if spawns.is_empty() {
            continue;
        }
        let Some(a) = agent else { continue };
        let deps = closure.get(&s.id.text);
        let before = spawns
            .iter()
            .any(|(agent, id)| *agent == a.text && deps.is_some_and(|d| d.contains(*id)));
        if before {
            continue;
        }
        let mut d = Diagnostic::warning(
            codes::AGENT_NOT_SPAWNED,
            a.span,
            format!(
                "step `{}` {what} agent `{}`, which no spawn step it needs starts",
                s.id.text, a.text
            ),
        )
        .with_label("not spawned before this step");
        if let Some((_, id)) = spawns.iter().find(|(agent, _)| *agent == a.text) {
            d = d.with_help(format!(
                "add `needs = [\"{id}\"]` so the spawn happens first"
            ));
        } else {
            d = d.with_note("the reference fails the step: the agent is unknown");
        }
        cx.diags.push(d);
    }
}

/// Every string in a value, with the node it is in.
pub(crate) fn strings<'n>(n: &'n Node, out: &mut Vec<&'n Node>) {
    match &n.kind {
        Kind::Str(_) => out.push(n),
        Kind::Array(a) => a.iter().for_each(|n| strings(n, out)),
        Kind::Table(t) => t.entries.iter().for_each(|e| strings(&e.value, out)),
        _ => {}
    }
}
