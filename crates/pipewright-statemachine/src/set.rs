//! The recipes of one `check` run, checked together: recipes name each other by `id`
//! (`restart-new-session`), so the ids of every checked file, of `-I` files and of the sibling
//! `*.json` recipes of each checked file's directory are known before references are resolved.

use crate::ast::{Recipe, Target};
use crate::{codes, include, json, rules};
use pipewright_syntax::{suggest, Diagnostic, FileId, SourceMap, Span};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

#[derive(Default)]
pub struct Checker {
    recipes: Vec<Recipe>,
    diags: Vec<Diagnostic>,
    includes: include::Cache,
    /// Ids of recipes not being checked (siblings, `-I`), by file.
    other_ids: HashMap<PathBuf, String>,
    checked_paths: HashSet<PathBuf>,
    scanned_dirs: HashSet<PathBuf>,
}

fn key(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The `id` of a state-machine recipe, read without checking anything else.
pub fn recipe_id(text: &str) -> Option<String> {
    let root = json::parse(FileId(0), text).ok()?;
    root.get("initialStep")?;
    root.get("steps")?;
    root.get("id")?.as_str().map(str::to_string)
}

impl Checker {
    pub fn add(&mut self, sources: &mut SourceMap, path: &Path, file: FileId, text: &str) {
        self.checked_paths.insert(key(path));
        self.scan_siblings(path);
        let mut diags = Vec::new();
        if let Some(r) = crate::load_with(&mut self.includes, sources, path, file, text, &mut diags)
        {
            rules::check(&r, &mut diags);
            self.recipes.push(r);
        }
        self.diags.extend(diags);
    }

    /// A recipe from an include directory: only its id matters here.
    pub fn include(&mut self, path: &Path, text: &str) {
        if let Some(id) = recipe_id(text) {
            self.other_ids.insert(key(path), id);
        }
    }

    fn scan_siblings(&mut self, path: &Path) {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !self.scanned_dirs.insert(key(&dir)) {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_none_or(|x| x != "json") {
                continue;
            }
            if let Some(id) = std::fs::read_to_string(&p)
                .ok()
                .as_deref()
                .and_then(recipe_id)
            {
                self.other_ids.insert(key(&p), id);
            }
        }
    }

    pub fn finish(mut self) -> Vec<Diagnostic> {
        let mut ids: HashMap<&str, Span> = HashMap::new();
        for r in &self.recipes {
            let Some(id) = &r.id else { continue };
            if let Some(first) = ids.get(id.text.as_str()) {
                self.diags.push(
                    Diagnostic::error(
                        codes::DUPLICATE_RECIPE_ID,
                        id.span,
                        format!("another recipe already has the id `{}`", id.text),
                    )
                    .with_label("duplicate id")
                    .with_secondary(*first, "first used here")
                    .with_note(
                        "`restart-new-session` names a recipe by its id: ids must be unique",
                    ),
                );
            } else {
                ids.insert(id.text.as_str(), id.span);
            }
        }
        let mut known: Vec<&str> = ids.keys().copied().collect();
        for (p, id) in &self.other_ids {
            if !self.checked_paths.contains(p) {
                known.push(id);
            }
        }
        known.sort_unstable();
        known.dedup();
        for r in &self.recipes {
            for s in &r.steps {
                for (_, t) in &s.on_outcome {
                    let Target::Restart(target) = &t.target else {
                        continue;
                    };
                    if known.binary_search(&target.text.as_str()).is_ok() {
                        continue;
                    }
                    self.diags.push(
                        Diagnostic::error(
                            codes::UNKNOWN_RECIPE,
                            target.span,
                            format!("no recipe has the id `{}`", target.text),
                        )
                        .with_label("unknown recipe")
                        .with_note("recipes are found among the checked files, the `*.json` files next to this one and `-I` directories")
                        .with_optional_help(suggest::did_you_mean(&target.text, known.iter().copied()).map(|c| format!("did you mean `{c}`?"))),
                    );
                }
            }
        }
        pipewright_syntax::diagnostic::sort(&mut self.diags);
        self.diags.dedup();
        self.diags
    }
}
