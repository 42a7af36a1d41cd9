//! The recipes a run executes, as the loop needs them: steps by name with their prompt, tier,
//! declared outcomes and transitions, and the guardrails.
//!
//! They are built from the checked AST, not from the IR `graph` draws: the IR has no place
//! for `maxStepVisits`, folds the step's tier into the recipe's (which `--model` and the
//! verbose log tell apart) and turns `other` under `exitOnOther` into an exit edge.

use crate::ast::{self, Target};
use indexmap::IndexMap;
use pipewright_syntax::{Diagnostic, FileId, SourceMap, Span};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    Next(String),
    Exit(String),
    Restart(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guardrails {
    pub max_step_visits: u64,
    pub max_total_steps: u64,
    pub exit_on_other: bool,
}

impl Default for Guardrails {
    fn default() -> Guardrails {
        let d = ast::Guardrails::default();
        Guardrails {
            max_step_visits: d.max_step_visits,
            max_total_steps: d.max_total_steps,
            exit_on_other: d.exit_on_other,
        }
    }
}

#[derive(Debug, Clone)]
pub struct StepDef {
    pub name: String,
    pub prompt: String,
    /// What is sent: `prompt` with the outcome block (§2.2), built once, not at every visit.
    pub sent: String,
    pub model: Option<String>,
    /// As declared, without repeats.
    pub outcomes: Vec<String>,
    pub transitions: HashMap<String, Transition>,
    /// The `reason` of the `other` transition, whatever its form: what choosing `other` exits
    /// with under `exitOnOther` (spec §1 guardrails, §8 rule 5).
    pub other_reason: Option<String>,
}

impl StepDef {
    pub fn transition(&self, outcome: &str) -> Option<&Transition> {
        self.transitions.get(outcome)
    }
}

#[derive(Debug, Clone)]
pub struct Machine {
    pub id: String,
    pub label: String,
    pub initial: String,
    pub model: Option<String>,
    pub guardrails: Guardrails,
    pub steps: IndexMap<String, StepDef>,
}

impl Machine {
    pub fn from_ast(r: &ast::Recipe, fallback_id: &str) -> Machine {
        let text = |s: &Option<ast::Str>| s.as_ref().map(|s| s.text.clone());
        let mut steps = IndexMap::new();
        for s in &r.steps {
            let mut outcomes: Vec<String> = Vec::new();
            for o in &s.outcomes {
                if !outcomes.contains(&o.text) {
                    outcomes.push(o.text.clone());
                }
            }
            let transitions = s
                .on_outcome
                .iter()
                .filter_map(|(o, t)| {
                    let t = match &t.target {
                        Target::Next(n) => Transition::Next(n.text.clone()),
                        Target::Exit => Transition::Exit(text(&t.reason).unwrap_or_default()),
                        Target::Restart(id) => Transition::Restart(id.text.clone()),
                        Target::Invalid => return None,
                    };
                    Some((o.text.clone(), t))
                })
                .collect();
            let other_reason = s
                .on_outcome
                .iter()
                .rev()
                .find(|(o, _)| o.text == "other")
                .and_then(|(_, t)| text(&t.reason));
            let prompt = text(&s.prompt).unwrap_or_default();
            steps.insert(
                s.name.text.clone(),
                StepDef {
                    name: s.name.text.clone(),
                    sent: super::semantics::build_prompt(&prompt, &outcomes),
                    prompt,
                    model: text(&s.model),
                    outcomes,
                    transitions,
                    other_reason,
                },
            );
        }
        Machine {
            id: text(&r.id).unwrap_or_else(|| fallback_id.to_string()),
            label: text(&r.label).unwrap_or_default(),
            initial: text(&r.initial_step).unwrap_or_default(),
            model: text(&r.model),
            guardrails: Guardrails {
                max_step_visits: r.guardrails.max_step_visits,
                max_total_steps: r.guardrails.max_total_steps,
                exit_on_other: r.guardrails.exit_on_other,
            },
            steps,
        }
    }

    /// The recipe ids its restarts name.
    pub fn restart_targets(&self) -> impl Iterator<Item = &str> {
        self.steps.values().flat_map(|s| {
            s.transitions.values().filter_map(|t| match t {
                Transition::Restart(id) => Some(id.as_str()),
                _ => None,
            })
        })
    }
}

/// The run's recipes: the one it starts with and every recipe a restart can reach, by id,
/// each with the span of its step names (runtime errors point at them).
#[derive(Debug, Clone, Default)]
pub struct Recipes {
    pub by_id: IndexMap<String, Machine>,
    /// Step-name spans of the starting recipe, an included step's in the file it comes from
    /// (`lower` put that file in the run's source map; the files of the recipes a restart
    /// starts are in none).
    pub spans: HashMap<String, Span>,
    pub root_span: Span,
}

impl Recipes {
    pub fn get(&self, id: &str) -> Option<&Machine> {
        self.by_id.get(id)
    }

    pub fn span_of(&self, recipe: &str, step: &str) -> Span {
        match self.by_id.first() {
            Some((root, _)) if root == recipe => {
                self.spans.get(step).copied().unwrap_or(self.root_span)
            }
            _ => self.root_span,
        }
    }
}

/// Why the recipes a run reaches cannot all be loaded when it starts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("the recipe's source is not loaded")]
    SourceNotLoaded,
    #[error("a restart-new-session names recipe `{id}`, and no `*.json` file in {} has that id", .dir.display())]
    NoSuchRecipe { id: String, dir: PathBuf },
    #[error("recipe `{id}` ({}), which a restart-new-session starts, has errors: run `pipewright check {}`", .path.display(), .path.display())]
    HasErrors { id: String, path: PathBuf },
    /// `message` is the first error loading it reported.
    #[error("{}: {message}", .path.display())]
    Unloadable { path: PathBuf, message: String },
}

impl From<LoadError> for String {
    fn from(e: LoadError) -> String {
        e.to_string()
    }
}

/// The recipe `root`, checked from `file` (`crate::check_and_lower`), and, through the
/// sibling `*.json` files of its directory, every recipe its restarts reach. Those are read
/// here, when the run starts, and must check without errors: a run fails before its first step
/// rather than at a restart.
pub fn load(
    root: &ast::Recipe,
    sources: &SourceMap,
    file: FileId,
    path: Option<&Path>,
) -> Result<Recipes, LoadError> {
    let src = sources.get(file).ok_or(LoadError::SourceNotLoaded)?;
    let path = path
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(&src.name));
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let m = Machine::from_ast(root, &stem);
    let mut out = Recipes {
        root_span: root.span,
        spans: root
            .steps
            .iter()
            .map(|s| (s.name.text.clone(), s.name.span))
            .collect(),
        ..Recipes::default()
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut pending: Vec<String> = m.restart_targets().map(str::to_string).collect();
    out.by_id.insert(m.id.clone(), m);
    let mut siblings: Option<Vec<(PathBuf, String, String)>> = None;
    while let Some(id) = pending.pop() {
        if out.by_id.contains_key(&id) {
            continue;
        }
        let list = siblings.get_or_insert_with(|| sibling_recipes(&dir));
        let Some((p, text, _)) = list.iter().find(|(_, _, i)| *i == id) else {
            return Err(LoadError::NoSuchRecipe { id, dir });
        };
        let mut scratch = SourceMap::new();
        let diags = crate::check_file(&mut scratch, p, text);
        if diags.iter().any(Diagnostic::is_error) {
            return Err(LoadError::HasErrors {
                id,
                path: p.clone(),
            });
        }
        let f = scratch.add(p.display().to_string(), text.as_str());
        let mut sink = Vec::new();
        let r = crate::load(&mut scratch, p, f, text, &mut sink)
            .ok_or_else(|| first_error(&sink, p))?;
        let m = Machine::from_ast(&r, &id);
        pending.extend(m.restart_targets().map(str::to_string));
        out.by_id.insert(id, m);
    }
    Ok(out)
}

fn first_error(diags: &[Diagnostic], path: &Path) -> LoadError {
    let message = match diags.iter().find(|d| d.is_error()) {
        Some(d) => d.message.clone(),
        None => "not a state-machine recipe".to_string(),
    };
    LoadError::Unloadable {
        path: path.to_path_buf(),
        message,
    }
}

/// The state-machine recipes next to the first one: (path, text, id).
fn sibling_recipes(dir: &Path) -> Vec<(PathBuf, String, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for p in paths {
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        if let Some(id) = crate::recipe_id(&text) {
            out.push((p, text, id));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str = r#"{
  "id": "r", "label": "R", "description": "d", "initialStep": "a", "model": "sonnet",
  "guardrails": {"maxStepVisits": 4, "maxTotalSteps": 9, "exitOnOther": false},
  "steps": {
    "a": {"prompt": "A", "model": "haiku", "outcomes": ["go", "go", "stop", "again", "other"],
          "onOutcome": {"go": {"nextStep": "b"}, "stop": {"action": "exit", "reason": "done"},
                        "again": {"action": "restart-new-session", "recipeId": "r"},
                        "other": {"action": "exit", "reason": "why"}}},
    "b": {"prompt": "B", "outcomes": ["back", "other"],
          "onOutcome": {"back": {"nextStep": "a"}, "other": {"action": "exit", "reason": "why"}}}
  }
}"#;

    fn load_text(dir: &Path, name: &str, text: &str) -> Result<Recipes, String> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        let mut sources = SourceMap::new();
        let file = sources.add(path.display().to_string(), text);
        let root = crate::load(&mut sources, &path, file, text, &mut Vec::new())
            .ok_or("the recipe does not load")?;
        Ok(load(&root, &sources, file, Some(&path))?)
    }

    #[test]
    fn the_machine_holds_what_the_loop_needs() {
        let d = tempfile::tempdir().unwrap();
        let rs = load_text(d.path(), "r.json", RECIPE).unwrap();
        assert_eq!(rs.by_id.len(), 1);
        let m = rs.get("r").unwrap();
        assert_eq!(
            (m.initial.as_str(), m.model.as_deref()),
            ("a", Some("sonnet"))
        );
        assert_eq!(
            m.guardrails,
            Guardrails {
                max_step_visits: 4,
                max_total_steps: 9,
                exit_on_other: false
            }
        );
        let a = &m.steps["a"];
        assert_eq!(a.outcomes, ["go", "stop", "again", "other"]);
        assert_eq!(a.model.as_deref(), Some("haiku"));
        assert_eq!(a.transition("go"), Some(&Transition::Next("b".into())));
        assert_eq!(a.transition("stop"), Some(&Transition::Exit("done".into())));
        assert_eq!(
            a.transition("again"),
            Some(&Transition::Restart("r".into()))
        );
        assert_eq!(m.restart_targets().collect::<Vec<_>>(), ["r"]);
        assert_eq!(m.steps["b"].model, None);
        // Errors point at the step's name in the starting recipe.
        let span = rs.span_of("r", "b");
        assert_eq!(&RECIPE[span.start as usize..span.end as usize], "\"b\"");
        assert_eq!(rs.span_of("elsewhere", "b"), rs.root_span);
    }

    #[test]
    fn an_included_step_is_located_in_the_file_that_defines_it() {
        let d = tempfile::tempdir().unwrap();
        let shared = r#"{"b": {"prompt": "B", "outcomes": ["back", "other"],
  "onOutcome": {"back": {"nextStep": "a"}, "other": {"action": "exit", "reason": "why"}}}}"#;
        std::fs::write(d.path().join("shared.json"), shared).unwrap();
        let text = r#"{"id": "r", "label": "R", "description": "d", "initialStep": "a",
  "guardrails": {"maxStepVisits": 1, "maxTotalSteps": 9, "exitOnOther": true},
  "steps": {"a": {"prompt": "A", "outcomes": ["go", "other"],
    "onOutcome": {"go": {"nextStep": "b"}, "other": {"action": "exit", "reason": "why"}}},
    "$include": ["shared.json"]}}"#;
        let path = d.path().join("r.json");
        std::fs::write(&path, text).unwrap();
        let mut sources = SourceMap::new();
        let file = sources.add(path.display().to_string(), text);
        let (_, root) = crate::check_and_lower(&mut sources, &path, file, text).unwrap();
        let rs = load(&root, &sources, file, Some(&path)).unwrap();
        // The checked recipe's spans are in the run's source map, the included file's too.
        let span = rs.span_of("r", "b");
        let f = sources.get(span.file).unwrap();
        assert!(f.name.ends_with("shared.json"), "{}", f.name);
        assert_eq!(&shared[span.start as usize..span.end as usize], "\"b\"");
    }

    #[test]
    fn restart_targets_come_from_sibling_files_and_must_exist() {
        let d = tempfile::tempdir().unwrap();
        let other = RECIPE
            .replace("\"id\": \"r\"", "\"id\": \"s\"")
            .replace("\"recipeId\": \"r\"", "\"recipeId\": \"s\"");
        std::fs::write(d.path().join("s.json"), &other).unwrap();
        let first = RECIPE.replace("\"recipeId\": \"r\"", "\"recipeId\": \"s\"");
        let rs = load_text(d.path(), "r.json", &first).unwrap();
        assert_eq!(rs.by_id.keys().collect::<Vec<_>>(), ["r", "s"]);
        let missing = RECIPE.replace("\"recipeId\": \"r\"", "\"recipeId\": \"t\"");
        let e = load_text(d.path(), "r.json", &missing).unwrap_err();
        assert!(e.contains("names recipe `t`"), "{e}");
        let mut sources = SourceMap::new();
        let path = d.path().join("r.json");
        let file = sources.add(path.display().to_string(), missing.as_str());
        let root = crate::load(&mut sources, &path, file, &missing, &mut Vec::new())
            .ok_or("the recipe does not load")
            .unwrap();
        assert_eq!(
            load(&root, &sources, file, Some(&path)).err(),
            Some(LoadError::NoSuchRecipe {
                id: "t".into(),
                dir: d.path().to_path_buf()
            })
        );
    }
}
