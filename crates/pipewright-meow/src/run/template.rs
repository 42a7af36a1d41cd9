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

/// Why given variables do not bind to a workflow's declarations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum BindError {
    /// On the command line: the message the other dialects give (`prerun`), said once there.
    #[error("{0}")]
    Run(String),
    #[error("workflow `{workflow}` declares no variables, but `{name}` is given")]
    NoneDeclared { workflow: String, name: String },
    /// `hint` is ` (did you mean …?)` or empty.
    #[error("workflow `{workflow}` does not declare a variable `{name}`{hint}; it declares {}", listed(.declared))]
    Undeclared {
        workflow: String,
        name: String,
        hint: String,
        declared: Vec<String>,
    },
    #[error("variable `{name}`: {error}")]
    Type { name: String, error: CoerceError },
    /// `missing` as listed: `` `a`, `b` ``.
    #[error("workflow `{workflow}` needs {missing} (required, no default): pass them in the expanding step's `variables`")]
    Missing { workflow: String, missing: String },
}

fn listed(names: &[String]) -> String {
    names
        .iter()
        .map(|d| format!("`{d}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl From<BindError> for String {
    fn from(e: BindError) -> String {
        e.to_string()
    }
}

/// Why a value does not have its variable's declared type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum CoerceError {
    #[error("reading file {path}: {error}")]
    File { path: String, error: String },
    #[error("invalid JSON: {0}")]
    Json(String),
    #[error("expected an object (a JSON map)")]
    NotAnObjectText,
    /// The value as JSON.
    #[error("expected an object, got {0}")]
    NotAnObject(String),
    #[error("expected an integer, got `{0}`")]
    NotAnInteger(String),
    #[error("expected true or false, got `{0}`")]
    NotABool(String),
}

/// Why a template reference names no workflow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ResolveError {
    /// In this file (`.name`) or the file found.
    #[error("template `{reference}`: no workflow `{workflow}`")]
    NoWorkflow { reference: String, workflow: String },
    #[error("template `{reference}` still holds a `{{{{…}}}}` reference")]
    Dynamic { reference: String },
    #[error("template `{reference}`: this file has no workflow `{name}`")]
    UnknownLocal { reference: String, name: String },
    #[error("template `{reference}` not found; looked for {}", shown(.searched))]
    FileNotFound {
        reference: String,
        searched: Vec<PathBuf>,
    },
    #[error("template `{reference}`: {} has no workflow `{workflow}` (it has {})", .path.display(), .available.join(", "))]
    WorkflowNotInFile {
        reference: String,
        path: PathBuf,
        workflow: String,
        available: Vec<String>,
    },
}

fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl From<ResolveError> for String {
    fn from(e: ResolveError) -> String {
        e.to_string()
    }
}

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
    ) -> Result<Map<String, Value>, BindError> {
        let declared: Vec<&str> = self.vars.iter().map(|v| v.name.as_str()).collect();
        for k in given.keys() {
            if k.starts_with("__") || declared.contains(&k.as_str()) {
                continue;
            }
            if root {
                return Err(BindError::Run(
                    pipewright_runtime::prerun::undeclared_message(
                        &format!("workflow `{}`", self.name),
                        "variable",
                        k,
                        &declared,
                        &format!(
                            "declare it under `[{}.variables]`: `{k} = {{ required = true }}` \
                         (a value every run must give), or `{k} = {{ default = \"…\" }}`",
                            self.name
                        ),
                    ),
                ));
            }
            let hint = pipewright_syntax::suggest::did_you_mean(k, declared.iter().copied())
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return Err(if declared.is_empty() {
                BindError::NoneDeclared {
                    workflow: self.name.clone(),
                    name: k.clone(),
                }
            } else {
                BindError::Undeclared {
                    workflow: self.name.clone(),
                    name: k.clone(),
                    hint,
                    declared: declared.iter().map(|d| d.to_string()).collect(),
                }
            });
        }
        let mut out = Map::new();
        let mut missing = Vec::new();
        let mut lacks = Vec::new();
        for v in &self.vars {
            match given.get(&v.name) {
                Some(x) => {
                    let x = coerce(v, x.clone()).map_err(|error| BindError::Type {
                        name: v.name.clone(),
                        error,
                    })?;
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
            return Err(BindError::Run(pipewright_runtime::prerun::needs_message(
                &format!("workflow `{}`", self.name),
                &lacks,
            )));
        }
        if !missing.is_empty() {
            return Err(BindError::Missing {
                workflow: self.name.clone(),
                missing: missing.join(", "),
            });
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
fn coerce(v: &VarSpec, x: Value) -> Result<Value, CoerceError> {
    Ok(match (v.ty.as_deref(), x) {
        (Some("file"), Value::String(p)) => match std::fs::read_to_string(&p) {
            Ok(text) => Value::String(text.trim().to_string()),
            Err(e) => {
                return Err(CoerceError::File {
                    path: p,
                    error: e.to_string(),
                })
            }
        },
        (Some("json"), Value::String(s)) => {
            serde_json::from_str(&s).map_err(|e| CoerceError::Json(e.to_string()))?
        }
        (Some("object"), Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(o @ Value::Object(_)) => o,
            _ => return Err(CoerceError::NotAnObjectText),
        },
        (Some("object"), o @ Value::Object(_)) => o,
        (Some("object"), other) => {
            return Err(CoerceError::NotAnObject(other.to_string()));
        }
        (Some("string"), x @ (Value::Object(_) | Value::Array(_))) => Value::String(x.to_string()),
        (Some("int"), Value::String(s)) => s
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| CoerceError::NotAnInteger(s))?,
        (Some("bool"), Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Value::Bool(true),
            "false" | "0" | "no" => Value::Bool(false),
            _ => return Err(CoerceError::NotABool(s)),
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

    /// A reference to workflow `t` that resolves from the file at `from` to the same file on
    /// any checkout of the project: `./PATH#NAME`, PATH from the project's root. `None` when
    /// the file is outside the project (or its path is not UTF-8).
    pub(super) fn reference_from(&mut self, t: &Template, from: &Path) -> Option<String> {
        // A bare file name is in the working directory.
        let dir = from
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let root = std::fs::canonicalize(self.refs.root(dir)).ok()?;
        let file = std::fs::canonicalize(&t.src.path).ok()?;
        let rel = file.strip_prefix(&root).ok()?.to_str()?;
        Some(format!("./{rel}#{}", t.name))
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
    ) -> Result<Arc<Template>, ResolveError> {
        let target = self
            .refs
            .resolve(reference, &from.path, &from.module)
            .map_err(|p| problem(reference, p))?;
        match target {
            Target::Local(name) => {
                self.template(from, &name)
                    .ok_or_else(|| ResolveError::NoWorkflow {
                        reference: reference.to_string(),
                        workflow: name,
                    })
            }
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
                    .ok_or_else(|| ResolveError::NoWorkflow {
                        reference: reference.to_string(),
                        workflow,
                    })
            }
            Target::Dynamic => Err(ResolveError::Dynamic {
                reference: reference.to_string(),
            }),
        }
    }
}

fn problem(reference: &str, p: Problem) -> ResolveError {
    let reference = reference.to_string();
    match p {
        Problem::UnknownLocal { name } => ResolveError::UnknownLocal { reference, name },
        Problem::FileNotFound { searched } => ResolveError::FileNotFound {
            reference,
            searched,
        },
        Problem::WorkflowNotInFile {
            path,
            workflow,
            available,
        } => ResolveError::WorkflowNotInFile {
            reference,
            path,
            workflow,
            available,
        },
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(vars: Vec<VarSpec>) -> Template {
        Template {
            name: "w".into(),
            src: Arc::new(ModuleFile {
                module: Arc::new(Module { workflows: vec![] }),
                path: PathBuf::from("t.meow.toml"),
            }),
            steps: vec![],
            vars,
            cleanup: Cleanup::default(),
            span: Span::default(),
        }
    }

    fn var(name: &str, required: bool, ty: Option<&str>) -> VarSpec {
        VarSpec {
            name: name.into(),
            required,
            default: None,
            ty: ty.map(str::to_string),
        }
    }

    #[test]
    fn binding_says_which_variable_is_wrong_and_how() {
        let given = |pairs: Value| pairs.as_object().cloned().unwrap_or_default();
        let t = template(vec![var("n", false, Some("int")), var("who", true, None)]);
        let e = t.bind(given(json!({"n": "x", "who": "a"})), false);
        assert_eq!(
            e,
            Err(BindError::Type {
                name: "n".into(),
                error: CoerceError::NotAnInteger("x".into())
            })
        );
        assert_eq!(
            t.bind(given(json!({"nn": 1})), false)
                .unwrap_err()
                .to_string(),
            "workflow `w` does not declare a variable `nn` (did you mean `n`?); it declares `n`, `who`"
        );
        assert_eq!(
            t.bind(Map::new(), false).unwrap_err().to_string(),
            "workflow `w` needs `who` (required, no default): pass them in the expanding step's `variables`"
        );
        assert!(matches!(
            template(vec![]).bind(given(json!({"x": 1})), false),
            Err(BindError::NoneDeclared { name, .. }) if name == "x"
        ));
    }

    #[test]
    fn a_reference_still_holding_a_placeholder_resolves_to_nothing() {
        let t = template(vec![]);
        let e = Library::default().resolve("{{which}}", &t.src).err();
        assert_eq!(
            e,
            Some(ResolveError::Dynamic {
                reference: "{{which}}".into()
            })
        );
        assert_eq!(
            e.map(String::from).unwrap_or_default(),
            "template `{{which}}` still holds a `{{…}}` reference"
        );
    }
}
