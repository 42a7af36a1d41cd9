//! Checking a recipe file and, recursively, every sub-recipe it calls (each file once), with
//! call cycles and the context contract between caller and callee.

use crate::ast::*;
use crate::codes;
use crate::load::{Loader, TOP_KEYS};
use crate::validate::Validator;
use crate::variables::Variables;
use pipewright_syntax::suggest::did_you_mean;
use pipewright_syntax::{Diagnostic, SourceMap, Span};
use pipewright_yaml::{load, Limits, Node, NodeKind};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Deeper call chains than this are not followed (every file is still checked once).
const MAX_CALL_DEPTH: usize = 64;

/// What a caller needs to know about a sub-recipe.
#[derive(Debug, Clone, Default)]
struct Summary {
    declared: Vec<String>,
    /// Inputs without a default: `null`, or a declaration mapping with `required: true` and
    /// no `default`.
    required: Vec<String>,
    name: String,
}

pub struct Session<'s> {
    sources: &'s mut SourceMap,
    pub diags: Vec<Diagnostic>,
    done: HashMap<PathBuf, Summary>,
    /// The chain of files being checked (canonical path, display name).
    stack: Vec<(PathBuf, String)>,
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| normalize(p))
}

/// Lexical normalization (`a/./b/../c` → `a/c`) for display paths.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

impl<'s> Session<'s> {
    pub fn new(sources: &'s mut SourceMap) -> Session<'s> {
        Session {
            sources,
            diags: Vec::new(),
            done: HashMap::new(),
            stack: Vec::new(),
        }
    }

    pub fn check_root(&mut self, path: &Path, text: &str) {
        let display = path.display().to_string();
        self.check(&display, canonical(path), path, text);
    }

    fn check(&mut self, display: &str, canon: PathBuf, real: &Path, text: &str) -> Summary {
        let file = match self.sources.find(display) {
            Some(id) if self.sources.get(id).is_some_and(|f| &*f.text == text) => id,
            _ => self.sources.add(display, text),
        };
        let (docs, ydiags) = load(file, text, Limits::default());
        self.diags.extend(ydiags);
        let whole = Span::new(file, 0..text.len().min(1));
        let mut roots = docs.iter().filter_map(|d| d.root.as_ref());
        let Some(root) = roots.next() else {
            if !self
                .diags
                .iter()
                .any(|d| d.span().file == file && d.is_error())
            {
                self.diags.push(
                    Diagnostic::error(
                        codes::NOT_A_RECIPE,
                        whole,
                        "the file is empty, not a recipe",
                    )
                    .with_label("no YAML document")
                    .with_help(
                        "a recipe is a mapping with `name`, `description`, `version` and `steps`",
                    ),
                );
            }
            return Summary::default();
        };
        if let Some(extra) = roots.next() {
            self.diags.push(
                Diagnostic::error(
                    codes::NOT_A_RECIPE,
                    extra.span,
                    "a recipe file holds exactly one YAML document",
                )
                .with_label("a second document starts here")
                .with_help("move it to its own file"),
            );
        }
        if !is_recipe_shaped(root) {
            self.diags.push(not_a_recipe(root));
            return Summary::default();
        }
        self.stack.push((canon.clone(), display.to_owned()));
        let mut loader = Loader::new();
        let recipe = loader.recipe(root);
        self.diags.extend(loader.diags);
        let anchor = root
            .as_map()
            .and_then(|m| m.first())
            .map_or(root.span, |e| e.key.span);
        let mut v = Validator::new(anchor);
        v.recipe(&recipe);
        self.diags.extend(v.diags);
        let mut vars = Variables::new(text);
        vars.recipe(&recipe);
        self.diags.extend(vars.diags);
        let summary = summarize(&recipe);
        // Known before following calls, so a cycle back here can still check its context.
        self.done.insert(canon.clone(), summary.clone());
        let base = real.parent().map(Path::to_path_buf).unwrap_or_default();
        let display_base = Path::new(display)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut calls = Vec::new();
        for (_, s) in recipe.all_steps() {
            collect_calls(s, &mut calls);
        }
        for s in calls {
            self.call(s, &base, &display_base);
        }
        self.stack.pop();
        summary
    }

    fn call(&mut self, s: &Step, base: &Path, display_base: &Path) {
        let Some(r) = &s.recipe else { return };
        let rel = r.value.trim();
        if rel.is_empty() {
            return;
        }
        if rel.contains("{{") || rel.starts_with('@') {
            let why = if rel.starts_with('@') {
                "is resolved by the host's @mention resolver"
            } else {
                "is computed at run time"
            };
            self.diags.push(
                Diagnostic::warning(
                    codes::DYNAMIC_RECIPE_PATH,
                    r.span,
                    format!("sub-recipe path `{rel}` {why}"),
                )
                .with_label("this sub-recipe is not checked")
                .with_help("use a path relative to this file to have the sub-recipe checked too"),
            );
            return;
        }
        let real = base.join(rel);
        let canon = canonical(&real);
        if let Some(pos) = self.stack.iter().position(|(c, _)| *c == canon) {
            let mut chain: Vec<&str> = self.stack[pos..].iter().map(|(_, d)| d.as_str()).collect();
            chain.push(self.stack[pos].1.as_str());
            self.diags.push(
                Diagnostic::error(codes::RECIPE_CYCLE, r.span, format!("recipe call cycle: {}", chain.join(" → ")))
                    .with_label("this call closes the cycle")
                    .with_help("the runner stops at `recursion.max_depth`; break the cycle or bound it with a condition in a sub-recipe"),
            );
            let summary = self.done.get(&canon).cloned().unwrap_or_default();
            self.contract(s, &summary);
            return;
        }
        let summary = if let Some(sm) = self.done.get(&canon) {
            sm.clone()
        } else {
            let text = match std::fs::read_to_string(&real) {
                Ok(t) => t,
                Err(e) => {
                    let what = if real.exists() {
                        format!("cannot be read: {e}")
                    } else {
                        "does not exist".to_string()
                    };
                    self.diags.push(
                        Diagnostic::error(codes::SUBRECIPE_NOT_FOUND, r.span, format!("sub-recipe `{rel}` {what}"))
                            .with_label(format!("resolved to {}", real.display()))
                            .with_help("sub-recipe paths are relative to the directory of the file that calls them"),
                    );
                    return;
                }
            };
            if self.stack.len() >= MAX_CALL_DEPTH {
                return;
            }
            let display = normalize(&display_base.join(rel)).display().to_string();
            self.check(&display, canon, &real, &text)
        };
        self.contract(s, &summary);
    }

    fn contract(&mut self, s: &Step, sub: &Summary) {
        let Some(r) = &s.recipe else { return };
        let passed: Vec<&ContextEntry> = s.context.iter().flat_map(|c| &c.value).collect();
        for need in &sub.required {
            if !passed.iter().any(|c| c.key.value == *need) {
                let at = s.context.as_ref().map_or(r.span, |c| c.span);
                self.diags.push(
                    Diagnostic::error(
                        codes::SUBRECIPE_MISSING_CONTEXT,
                        at,
                        format!(
                            "sub-recipe `{}` needs `{need}`, which is not passed",
                            sub.name
                        ),
                    )
                    .with_label(format!("`{need}` missing from this context"))
                    .with_secondary(r.span, "sub-recipe called here")
                    .with_help(format!("add `{need}: …` to the step's `context:`")),
                );
            }
        }
        if sub.declared.is_empty() && sub.name.is_empty() {
            return;
        }
        for c in passed {
            if !sub.declared.contains(&c.key.value) {
                self.diags.push(
                    Diagnostic::warning(codes::SUBRECIPE_EXTRA_CONTEXT, c.key.span, format!("sub-recipe `{}` does not declare `{}` in its context", sub.name, c.key.value))
                        .with_label("passed but not declared")
                        .with_optional_help(did_you_mean(&c.key.value, sub.declared.iter().map(String::as_str)).map(|d| format!("did you mean `{d}`?")))
                        .with_note("declare every input in the sub-recipe's `context:` so it is documented and checked there"),
                );
            }
        }
    }
}

fn collect_calls<'r>(s: &'r Step, out: &mut Vec<&'r Step>) {
    if s.effective_type() == Some(StepType::Recipe) {
        out.push(s);
    }
    for sub in s.while_steps.iter().flat_map(|b| &b.value) {
        collect_calls(sub, out);
    }
}

fn summarize(r: &Recipe) -> Summary {
    let mut sm = Summary {
        name: r.name.as_ref().map_or(String::new(), |n| n.value.clone()),
        ..Summary::default()
    };
    for c in &r.context {
        sm.declared.push(c.key.value.clone());
        let required = c.value.is_null()
            || (matches!(c.value.kind, NodeKind::Map(_))
                && c.value
                    .get("required")
                    .and_then(|n| n.as_scalar())
                    .is_some_and(|s| &*s.text == "true")
                && c.value.get("default").is_none());
        if required {
            sm.required.push(c.key.value.clone());
        }
    }
    sm
}

/// A mapping that is recognisably meant as a recipe (even a broken one): it has `steps` or
/// `stages`, or a `name`. Anything else gets one clear "not a recipe" diagnostic instead of a
/// list of missing fields.
fn is_recipe_shaped(root: &Node) -> bool {
    root.as_map().is_some()
        && (root.get("steps").is_some()
            || root.get("stages").is_some()
            || root.entry("name").is_some())
}

fn not_a_recipe(root: &Node) -> Diagnostic {
    let anchor = root
        .as_map()
        .and_then(|m| m.first())
        .map_or(root.span, |e| e.key.span);
    let d = Diagnostic::error(
        codes::NOT_A_RECIPE,
        anchor,
        match root.as_map() {
            Some(_) => {
                "this YAML mapping is not a recipe: it has no `name` and no `steps` or `stages`"
                    .to_string()
            }
            None => format!("a recipe must be a YAML mapping, found {}", root.describe()),
        },
    )
    .with_label("not a recipe");
    let typo = root
        .as_map()
        .unwrap_or(&[])
        .iter()
        .filter_map(|e| e.key.key_text())
        .find_map(|k| did_you_mean(k, ["name", "steps", "stages"]).map(|c| (k, c)));
    match typo {
        Some((k, c)) => d.with_help(format!("`{k}` looks like a misspelt `{c}`")),
        None => d
            .with_help("a recipe has `name`, `description`, `version` and `steps` (or `stages`)")
            .with_note(format!("recipe top-level keys: {}", TOP_KEYS.join(", "))),
    }
}
