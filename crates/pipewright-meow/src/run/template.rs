//! Workflows as the runtime expands them: their steps shared between every expansion, their
//! variable declarations, and the references between them resolved by the same rules `check`
//! uses (`crate::refs`).

use crate::ast::{Cleanup, Module, Text, Workflow};
use crate::refs::{Library as Refs, Problem, Target};
use crate::tree::Node;
use crate::Executor;
use pipewright_syntax::Span;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file a step came from: its own `.name` references resolve in it.
pub(super) struct ModuleFile {
    pub module: Arc<Module>,
    pub path: PathBuf,
}

/// A step as written, shared by every expansion of its workflow.
#[derive(Clone)]
pub(super) struct TemplateStep {
    pub id: String,
    pub executor: Executor,
    pub on_error: Option<Text>,
    pub needs: Vec<String>,
    pub span: Span,
}

impl TemplateStep {
    pub(super) fn from_ast(s: &crate::ast::Step) -> TemplateStep {
        TemplateStep {
            id: s.id.text.clone(),
            executor: s.executor.clone(),
            on_error: s.on_error.clone(),
            needs: s.needs.iter().map(|n| n.text.clone()).collect(),
            span: s.span,
        }
    }
}

pub(super) struct VarSpec {
    pub name: String,
    pub required: bool,
    pub default: Option<Value>,
    pub ty: Option<String>,
}

/// A workflow ready to expand.
pub(super) struct Template {
    pub name: String,
    pub src: Arc<ModuleFile>,
    pub steps: Vec<Arc<TemplateStep>>,
    pub vars: Vec<VarSpec>,
    pub cleanup: Cleanup,
    pub span: Span,
}

impl Template {
    pub(super) fn new(src: Arc<ModuleFile>, w: &Workflow) -> Template {
        Template {
            name: w.name.clone(),
            steps: w
                .steps
                .iter()
                .map(|s| Arc::new(TemplateStep::from_ast(s)))
                .collect(),
            vars: w
                .variables
                .iter()
                .map(|v| VarSpec {
                    name: v.name.clone(),
                    required: v.required,
                    default: v.default.as_ref().map(Node::to_json),
                    ty: v.ty.as_ref().map(|t| t.text.clone()),
                })
                .collect(),
            cleanup: w.cleanup.clone(),
            span: w.key_span,
            src,
        }
    }

    /// The variables of one instance: `given` checked against the declarations, coerced by
    /// declared type, completed with defaults. `root` names the command line in messages.
    pub(super) fn bind(
        &self,
        given: Map<String, Value>,
        root: bool,
    ) -> Result<Map<String, Value>, String> {
        let declared: Vec<&str> = self.vars.iter().map(|v| v.name.as_str()).collect();
        for k in given.keys() {
            if k.starts_with("__") || declared.contains(&k.as_str()) {
                continue;
            }
            if root {
                return Err(pipewright_runtime::prerun::undeclared_message(
                    &format!("workflow `{}`", self.name),
                    "variable",
                    k,
                    &declared,
                    &format!(
                        "declare it under `[{}.variables]`: `{k} = {{ required = true }}` \
                         (a value every run must give), or `{k} = {{ default = \"…\" }}`",
                        self.name
                    ),
                ));
            }
            let hint = pipewright_syntax::suggest::did_you_mean(k, declared.iter().copied())
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return Err(if declared.is_empty() {
                format!(
                    "workflow `{}` declares no variables, but `{k}` is given",
                    self.name
                )
            } else {
                format!(
                    "workflow `{}` does not declare a variable `{k}`{hint}; it declares {}",
                    self.name,
                    declared
                        .iter()
                        .map(|d| format!("`{d}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
        }
        let mut out = Map::new();
        let mut missing = Vec::new();
        let mut lacks = Vec::new();
        for v in &self.vars {
            match given.get(&v.name) {
                Some(x) => {
                    let x =
                        coerce(v, x.clone()).map_err(|e| format!("variable `{}`: {e}", v.name))?;
                    out.insert(v.name.clone(), x);
                }
                None => match &v.default {
                    Some(d) => {
                        out.insert(v.name.clone(), d.clone());
                    }
                    None if v.required => {
                        missing.push(format!("`{}`", v.name));
                        lacks.push(pipewright_runtime::prerun::Lack {
                            name: v.name.clone(),
                            why: format!(
                                "declared under `[{}.variables]` with `required = true` and no default",
                                self.name
                            ),
                        });
                    }
                    None => {}
                },
            }
        }
        if root && !lacks.is_empty() {
            return Err(pipewright_runtime::prerun::needs_message(
                &format!("workflow `{}`", self.name),
                &lacks,
            ));
        }
        if !missing.is_empty() {
            return Err(format!(
                "workflow `{}` needs {} (required, no default): pass them in the expanding step's `variables`",
                self.name,
                missing.join(", ")
            ));
        }
        for (k, x) in given {
            if k.starts_with("__") {
                out.insert(k, x);
            }
        }
        Ok(out)
    }
}

/// Declared types applied to a supplied value (notes §2.5; `int` and `bool` are coerced too,
/// where the reference passes the text through).
fn coerce(v: &VarSpec, x: Value) -> Result<Value, String> {
    Ok(match (v.ty.as_deref(), x) {
        (Some("file"), Value::String(p)) => Value::String(
            std::fs::read_to_string(&p)
                .map_err(|e| format!("reading file {p}: {e}"))?
                .trim()
                .to_string(),
        ),
        (Some("json"), Value::String(s)) => {
            serde_json::from_str(&s).map_err(|e| format!("invalid JSON: {e}"))?
        }
        (Some("object"), Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(o @ Value::Object(_)) => o,
            _ => return Err("expected an object (a JSON map)".into()),
        },
        (Some("object"), o @ Value::Object(_)) => o,
        (Some("object"), other) => {
            return Err(format!("expected an object, got {other}"));
        }
        (Some("string"), x @ (Value::Object(_) | Value::Array(_))) => Value::String(x.to_string()),
        (Some("int"), Value::String(s)) => s
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("expected an integer, got `{s}`"))?,
        (Some("bool"), Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Value::Bool(true),
            "false" | "0" | "no" => Value::Bool(false),
            _ => return Err(format!("expected true or false, got `{s}`")),
        },
        (_, x) => x,
    })
}

/// Template references resolved and loaded once per run.
#[derive(Default)]
pub(super) struct Library {
    refs: Refs,
    cache: HashMap<(PathBuf, String), Arc<Template>>,
    srcs: HashMap<PathBuf, Arc<ModuleFile>>,
}

impl Library {
    pub(super) fn register(&mut self, src: Arc<ModuleFile>) {
        self.srcs.insert(src.path.clone(), src);
    }

    pub(super) fn template(&mut self, src: &Arc<ModuleFile>, name: &str) -> Option<Arc<Template>> {
        let key = (src.path.clone(), name.to_string());
        if let Some(t) = self.cache.get(&key) {
            return Some(t.clone());
        }
        let w = src.module.workflow(name)?;
        let t = Arc::new(Template::new(src.clone(), w));
        self.cache.insert(key, t.clone());
        Some(t)
    }

    /// The workflow `reference` names, written in a step from `from`.
    pub(super) fn resolve(
        &mut self,
        reference: &str,
        from: &Arc<ModuleFile>,
    ) -> Result<Arc<Template>, String> {
        let target = self
            .refs
            .resolve(reference, &from.path, &from.module)
            .map_err(|p| problem(reference, p))?;
        match target {
            Target::Local(name) => self
                .template(from, &name)
                .ok_or_else(|| format!("template `{reference}`: no workflow `{name}`")),
            Target::File {
                module,
                workflow,
                path,
            } => {
                let src = self
                    .srcs
                    .entry(path.clone())
                    .or_insert_with(|| Arc::new(ModuleFile { module, path }))
                    .clone();
                self.template(&src, &workflow)
                    .ok_or_else(|| format!("template `{reference}`: no workflow `{workflow}`"))
            }
            Target::Dynamic => Err(format!(
                "template `{reference}` still holds a `{{{{…}}}}` reference"
            )),
        }
    }
}

fn problem(reference: &str, p: Problem) -> String {
    match p {
        Problem::UnknownLocal { name } => {
            format!("template `{reference}`: this file has no workflow `{name}`")
        }
        Problem::FileNotFound { searched } => format!(
            "template `{reference}` not found; looked for {}",
            searched
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Problem::WorkflowNotInFile {
            path,
            workflow,
            available,
        } => format!(
            "template `{reference}`: {} has no workflow `{workflow}` (it has {})",
            path.display(),
            available.join(", ")
        ),
    }
}

/// A relative path against the project directory.
pub(super) fn under(project: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        project.join(p)
    }
}
