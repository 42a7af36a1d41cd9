//! The plan of a recipe: its stages and steps in order, templates rendered with the context
//! known before the run (the `context:` defaults under the input, the `recipe` metadata), a
//! marker for what steps write.

use crate::runtime::{self as rt, Context};
use crate::value::Value;
use pipewright_ir::{ErrorPolicy, LoopMode, Node, NodeKind, Region, Workflow};
use pipewright_runtime::plan::{line_of, Plan, PlanStep};
use pipewright_syntax::SourceMap;
use std::collections::HashMap;

struct Env {
    known: Context,
    /// Variables set at run time, with where from.
    unknown: HashMap<String, String>,
}

impl Env {
    fn render(&self, src: &str) -> String {
        crate::template::substitute::<()>(src, |v, out| {
            let root = v.path.first().map(String::as_str).unwrap_or("");
            match (self.unknown.get(root), rt::resolve(&self.known, &v.path)) {
                (Some(why), _) => out.push_str(&format!("<{{{{{}}}}}: {why}>", v.dotted())),
                (None, Ok(val)) => rt::render_value_text(val, out),
                (None, Err(_)) if !self.known.contains_key(root) => out.push_str(&format!(
                    "<{{{{{}}}}}: not defined before the run>",
                    v.dotted()
                )),
                (None, Err(e)) => out.push_str(&format!("<{{{{{}}}}}: {e}>", v.dotted())),
            }
            Ok(())
        })
        .unwrap_or_else(|()| src.to_string())
    }

    fn set_unknown(&mut self, name: &str, why: String) {
        self.known.shift_remove(name);
        self.unknown.insert(name.to_string(), why);
    }
}

pub fn plan(w: &Workflow, sources: &SourceMap, input: &serde_json::Value) -> Result<Plan, String> {
    let mut known: Context = w
        .params
        .iter()
        .filter(|p| !p.required)
        .map(|p| (p.name.clone(), Value::from(&p.default)))
        .collect();
    if let Some(m) = input.as_object() {
        for (k, v) in m {
            known.insert(k.clone(), Value::from(v));
        }
    }
    known.insert(
        "recipe".into(),
        rt::recipe_meta(
            &w.name,
            w.version.as_deref().unwrap_or(""),
            w.description.as_deref().unwrap_or(""),
        ),
    );
    let mut env = Env {
        known,
        unknown: HashMap::from([("session".to_string(), "set when the run starts".to_string())]),
    };
    let given: std::collections::HashSet<&str> = input
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let missing = crate::run::prerun::recipe_lacks(w, &given);
    for l in &missing {
        env.set_unknown(&l.name, "not given".into());
    }
    let mut about = Vec::new();
    if let Some(v) = &w.version {
        about.push(("version".to_string(), v.clone()));
    }
    if let Some(d) = w.description.as_ref().filter(|d| !d.is_empty()) {
        about.push(("description".to_string(), d.clone()));
    }
    let steps = region(&w.body, &mut env, sources, "", None);
    Ok(Plan {
        workflow: w.name.clone(),
        about,
        steps,
        missing,
        ..Plan::default()
    })
}

fn region(
    r: &Region,
    env: &mut Env,
    sources: &SourceMap,
    prefix: &str,
    stage: Option<&str>,
) -> Vec<PlanStep> {
    let mut out = Vec::new();
    for (i, n) in r.sequence().into_iter().enumerate() {
        let Some(node) = r.node(n) else { continue };
        let key = match &node.id {
            Some(id) => format!("{prefix}{id}"),
            None => format!("{prefix}{}", i + 1),
        };
        if let Some(id) = &node.id {
            env.known.insert("step".into(), rt::step_meta(id, i, stage));
        }
        out.push(step(node, env, sources, &key, stage));
    }
    out
}

fn policy(s: &mut PlanStep, p: ErrorPolicy) {
    if p != ErrorPolicy::Fail {
        s.field("on_error", p.name());
    }
}

fn step(
    node: &Node,
    env: &mut Env,
    sources: &SourceMap,
    key: &str,
    stage: Option<&str>,
) -> PlanStep {
    let mut s = PlanStep {
        key: key.to_string(),
        kind: node.kind.name().to_string(),
        line: line_of(sources, node.span),
        title: node.kind.name().to_string(),
        ..PlanStep::default()
    };
    if let Some(c) = &node.condition {
        s.field("condition", env.render(&c.src));
    }
    match &node.kind {
        NodeKind::Stage { name, body } => {
            s.title = format!("stage `{name}`");
            env.known.insert("stage".into(), rt::stage_meta(name, 0));
            let inner = region(body, env, sources, &format!("{key}."), Some(name));
            s.regions.push(("steps".into(), inner));
        }
        NodeKind::Gate(gate) => {
            let pipewright_ir::Gate {
                stage,
                prompt,
                timeout_secs,
                default_approve,
            } = &**gate;
            env.set_unknown(
                "_approval_message",
                format!("the approver's message at `{key}`"),
            );
            s.title = format!("approval gate after stage `{stage}`");
            if let Some(p) = prompt {
                s.field("prompt", env.render(&p.src));
            }
            if *timeout_secs > 0 {
                let d = if *default_approve { "approve" } else { "deny" };
                s.field("timeout", format!("{timeout_secs}s, then {d}"));
            }
        }
        NodeKind::Command(c) => {
            s.title = "bash".into();
            s.field("command", env.render(&c.command.src));
            if let Some(cwd) = &c.cwd {
                s.field("cwd", env.render(&cwd.src));
            }
            for (k, v) in &c.env {
                s.field(&format!("env {k}"), env.render(&v.src));
            }
            if let Some(t) = c.timeout_secs {
                s.field("timeout", format!("{t}s"));
            }
            policy(&mut s, c.on_error);
            if let Some(x) = &c.exit_code_to {
                env.set_unknown(x, format!("exit code of step `{key}`"));
                s.field("exit_code", x.clone());
            }
        }
        NodeKind::Ask(a) => {
            s.title = format!("agent `{}`", a.agent);
            for (k, v) in [
                ("mode", &a.mode),
                ("provider", &a.provider),
                ("model", &a.model),
            ] {
                if let Some(v) = v {
                    s.field(k, v.clone());
                }
            }
            s.field("prompt", env.render(&a.prompt.src));
            policy(&mut s, a.on_error);
        }
        NodeKind::SubWorkflow(w) => {
            s.title = "recipe".into();
            s.field("recipe", env.render(&w.path.src));
            for (k, v) in &w.context {
                let shown = match v {
                    serde_json::Value::String(t) => env.render(t),
                    other => other.to_string(),
                };
                s.field(&format!("context {k}"), shown);
            }
            policy(&mut s, w.on_error);
        }
        NodeKind::Loop(l) => {
            let mut saved = None;
            match &l.mode {
                LoopMode::Each {
                    source,
                    var,
                    max_items,
                    parallel,
                    ..
                } => {
                    s.title = format!("foreach {} as `{var}`", source.src.trim());
                    s.field("items", env.render(&source.src));
                    if let Some(p) = parallel {
                        let shown = match p {
                            0 => "all at once".to_string(),
                            n => format!("at most {n} at once"),
                        };
                        s.field("parallel", shown);
                    }
                    if let Some(m) = max_items {
                        s.field("max_items", m.to_string());
                    }
                    saved = Some((var.clone(), env.known.get(var).cloned()));
                    env.set_unknown(var, format!("each item of step `{key}`"));
                }
                LoopMode::While {
                    condition,
                    break_when,
                    update,
                    max_iterations,
                } => {
                    s.title = "while".into();
                    s.field("while", env.render(&condition.src));
                    if let Some(b) = break_when {
                        s.field("break_when", env.render(&b.src));
                    }
                    for (k, v) in update {
                        s.field(&format!("update {k}"), v.src.clone());
                    }
                    s.field("max_iterations", max_iterations.to_string());
                    for (k, _) in update {
                        env.set_unknown(k, format!("updated by each iteration of step `{key}`"));
                    }
                    for k in ["_loop_index", "_loop_iteration"] {
                        env.set_unknown(k, format!("the iteration of step `{key}`"));
                    }
                }
            }
            let inner = region(&l.body, env, sources, &format!("{key}."), stage);
            s.regions.push(("do".into(), inner));
            if let Some((var, _)) = saved {
                env.set_unknown(&var, format!("the last item of step `{key}`"));
            }
            if let Some(c) = &l.collect {
                env.set_unknown(c, format!("the results of step `{key}`"));
                s.field("collect", c.clone());
            }
        }
        _ => s.field("summary", node.summary()),
    }
    if let Some(o) = &node.output {
        env.set_unknown(o, format!("output of step `{key}`"));
        s.field("output", o.clone());
    }
    s
}
