//! `"$include": "shared/steps.json"` inside `steps` (spec §10): the named file, relative to the
//! including recipe, is a JSON object of steps that the recipe gains. A step the recipe defines
//! inline overrides an included step of the same name, wherever either is written: that is the
//! spec's step override (§5.5, §18.1: `implement-and-review-all` inherits the shared steps and
//! replaces `commit`). A step defined by two included files is an error (PW0726): neither is
//! the recipe's own, and JSON gives object members no order a reader may rely on to pick one.

use crate::ast::{self, Recipe, Step, Str, INCLUDE_KEY};
use crate::codes;
use crate::json;
use pipewright_syntax::{Diagnostic, FileId, SourceMap, Span};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Included files, loaded once per check run however many recipes include them, so their own
/// problems are reported once.
#[derive(Default)]
pub(crate) struct Cache {
    files: HashMap<PathBuf, Loaded>,
}

#[derive(Clone)]
enum Loaded {
    Steps(Vec<Step>),
    /// Unreadable, or not a JSON object of steps: the diagnostic to give (at the `$include`).
    Bad(Box<Diagnostic>),
}

impl Cache {
    /// Adds the steps of every `$include` of `recipe` (written in `path`).
    pub(crate) fn resolve(
        &mut self,
        recipe: &mut Recipe,
        path: &Path,
        sources: &mut SourceMap,
        diags: &mut Vec<Diagnostic>,
    ) {
        let dir = path.parent().unwrap_or(Path::new(""));
        let includes = std::mem::take(&mut recipe.includes);
        // Steps already inserted by earlier includes shift the later insertion points.
        let mut inserted = 0;
        for (at, inc) in &includes {
            let target = dir.join(&inc.text);
            let key = std::fs::canonicalize(&target).unwrap_or_else(|_| target.clone());
            let loaded = match self.files.get(&key) {
                Some(l) => l.clone(),
                None => {
                    let l = load(&target, sources, diags);
                    self.files.insert(key, l.clone());
                    l
                }
            };
            match loaded {
                Loaded::Bad(d) => diags.push(relocate(*d, inc)),
                Loaded::Steps(steps) => {
                    for mut s in steps {
                        s.included_by = Some(inc.span);
                        if let Some(prev) = recipe.steps.iter().find(|p| p.name.text == s.name.text)
                        {
                            // Inline steps are all in `recipe.steps` before any include is
                            // resolved, so an inline definition always wins.
                            if prev.included_by.is_some() {
                                diags.push(redefined(&s, prev, inc));
                            }
                            continue;
                        }
                        recipe
                            .steps
                            .insert((at + inserted).min(recipe.steps.len()), s);
                        inserted += 1;
                    }
                }
            }
        }
        recipe.includes = includes;
    }
}

/// A failure to load is reported at each `$include` that names the file; the diagnostic is
/// built with a placeholder span and moved there.
fn relocate(mut d: Diagnostic, inc: &Str) -> Diagnostic {
    d.primary.span = inc.span;
    d
}

fn redefined(s: &Step, prev: &Step, inc: &Str) -> Diagnostic {
    let d = Diagnostic::error(
        codes::INCLUDE_REDEFINES,
        inc.span,
        format!("`{}` defines step `{}` again", inc.text, s.name.text),
    )
    .with_label(format!("redefines `{}`", s.name.text))
    .with_secondary(s.name.span, "defined here by the included file");
    let d = match prev.included_by {
        Some(other) if other != inc.span => {
            d.with_secondary(prev.name.span, "and by an earlier `$include`")
        }
        _ => d.with_secondary(prev.name.span, "and earlier in the same `$include`"),
    };
    d.with_note("a step the recipe defines itself overrides an included one; two included definitions have no order to pick one by")
        .with_help("define the step in the recipe to override both, or include a shared file without it")
}

fn bad(code: &'static str, msg: String, label: &str) -> Loaded {
    Loaded::Bad(Box::new(
        Diagnostic::error(code, Span::default(), msg).with_label(label.to_string()),
    ))
}

fn load(target: &Path, sources: &mut SourceMap, diags: &mut Vec<Diagnostic>) -> Loaded {
    let shown = target.display().to_string();
    let text = match std::fs::read_to_string(target) {
        Ok(t) => t,
        Err(e) => {
            return bad(
                codes::INCLUDE_MISSING,
                format!("cannot read included file `{shown}`: {e}"),
                "included here",
            )
        }
    };
    let file: FileId = sources.add(shown.clone(), text.as_str());
    let root = match json::parse(file, &text) {
        Ok(r) => r,
        Err(e) => {
            let d = Diagnostic::error(
                codes::INCLUDE_NOT_STEPS,
                Span::default(),
                format!("included file `{shown}` is not JSON: {}", e.message),
            )
            .with_label("included here");
            return Loaded::Bad(Box::new(d.with_secondary(e.span, e.message)));
        }
    };
    let Some(members) = root.members() else {
        return bad(
            codes::INCLUDE_NOT_STEPS,
            format!(
                "included file `{shown}` is {}, not an object of steps",
                root.kind()
            ),
            "included here",
        );
    };
    if root.get("initialStep").is_some() {
        return bad(
            codes::INCLUDE_NOT_STEPS,
            format!("included file `{shown}` is a recipe, not an object of steps"),
            "included here",
        );
    }
    let mut steps = Vec::new();
    for (i, m) in members.iter().enumerate() {
        if let Some(first) = members[..i].iter().find(|f| f.key == m.key) {
            diags.push(
                Diagnostic::error(
                    "PW0005",
                    m.key_span,
                    format!("step `{}` is defined twice", m.key),
                )
                .with_label("duplicate key")
                .with_secondary(first.key_span, "first defined here"),
            );
        }
        if m.key == INCLUDE_KEY {
            diags.push(
                Diagnostic::error(
                    codes::INCLUDE_NOT_STEPS,
                    m.key_span,
                    "an included file cannot include another",
                )
                .with_label("nested `$include`")
                .with_help("include both files from the recipe"),
            );
            continue;
        }
        if let Some(s) = ast::step(m, None, diags) {
            steps.push(s);
        }
    }
    Loaded::Steps(steps)
}
