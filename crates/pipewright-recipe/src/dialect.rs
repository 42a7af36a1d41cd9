//! The recipe dialect (`pipewright-recipe`): YAML with `name` and `steps` or `stages`.

use pipewright_dialect::{
    Checker, Context, Dialect, EditorFeatures, Lowered, NearMiss, RunRequest, RunTarget, Runtime,
    Source, Verb,
};
use pipewright_runtime::backend::BoxFuture;
use pipewright_runtime::plan::Plan;
use pipewright_runtime::report::{Refusal, Report};
use pipewright_syntax::{Diagnostic, FileId, SourceMap, Span};
use std::path::Path;
use std::sync::Arc;

pub struct Recipe;

impl Dialect for Recipe {
    fn name(&self) -> &'static str {
        "recipe"
    }

    fn noun(&self) -> &'static str {
        "recipe"
    }

    fn workflow_noun(&self) -> &'static str {
        "recipe"
    }

    fn shape(&self) -> &'static str {
        "a recipe is YAML with `name`, `version` and `steps` or `stages`"
    }

    fn detect(&self, src: &Source) -> bool {
        if !src.is_yaml() {
            return false;
        }
        if src.yaml_is_broken() {
            let top = src.top_keys();
            return top.contains(&"name") && (top.contains(&"steps") || top.contains(&"stages"));
        }
        // A recipe is one document: the first decides.
        src.yaml_roots()
            .next()
            .is_some_and(crate::looks_like_recipe)
    }

    fn near_miss(&self, src: &Source, file: FileId) -> Option<NearMiss> {
        if !src.is_yaml() {
            return None;
        }
        pipewright_dialect::near_miss::yaml_keys(src, file)
            .iter()
            .find_map(|keys| {
                pipewright_dialect::near_miss::by_keys(
                    self.noun(),
                    keys,
                    &[&["name"], &["steps", "stages"]],
                )
            })
    }

    fn supports(&self, verb: Verb) -> bool {
        matches!(verb, Verb::Check | Verb::Fmt | Verb::Graph | Verb::Run)
    }

    fn codes(&self) -> &'static [pipewright_syntax::CodeInfo] {
        crate::CODES
    }

    fn json_schema(&self) -> serde_json::Value {
        crate::schema::json_schema()
    }

    fn runtime(&self) -> Option<&dyn Runtime> {
        Some(self)
    }

    fn eval_languages(&self) -> &'static [pipewright_dialect::EvalLanguage] {
        EVAL_LANGUAGES
    }

    fn editor(&self) -> Option<&dyn EditorFeatures> {
        Some(self)
    }

    fn checker(&self, _ctx: &Context) -> Box<dyn Checker> {
        Box::new(RecipeChecker(Vec::new()))
    }

    fn format(
        &self,
        file: FileId,
        text: &str,
        options: pipewright_fmt::Options,
    ) -> Result<String, Vec<Diagnostic>> {
        pipewright_fmt::format_source(
            file,
            text,
            pipewright_fmt::Syntax::Yaml(&crate::fmt_rules::RecipeRules),
            options,
        )
        .map(|f| f.output)
    }

    fn lower(
        &self,
        path: &Path,
        file: FileId,
        text: &str,
        sources: &mut SourceMap,
        _ctx: &Context,
    ) -> Result<Lowered, Vec<Diagnostic>> {
        self.lower_checked(path, file, text, sources)
    }
}

impl Runtime for Recipe {
    /// A paused run's pending gates (decided in the store, then `run --resume`).
    fn waiting(
        &self,
        run: &pipewright_dialect::RecordedRun<'_>,
    ) -> Option<Vec<pipewright_dialect::Waiting>> {
        if !crate::run::has_gates(run.record) {
            return None;
        }
        Some(
            crate::run::pending_gates(run.record)
                .into_iter()
                .map(|(key, st)| pipewright_dialect::Waiting {
                    step_key: key,
                    kind: "gate",
                    prompt: st["prompt"].as_str().unwrap_or_default().to_string(),
                    continues: "resume",
                })
                .collect(),
        )
    }

    /// A run that reached a gate: its pending gate is decided in the store (then `run
    /// --resume`).
    fn decide(
        &self,
        run: &pipewright_dialect::RecordedRun<'_>,
        step: Option<&str>,
        decision: &pipewright_runtime::approval::Decision,
    ) -> Option<pipewright_dialect::Decided> {
        if !crate::run::has_gates(run.record) {
            return None;
        }
        let id = run.run_id;
        Some(
            crate::run::decide(run.store, id, step, decision)
                .map(|stage| {
                    format!(
                        "{} stage '{stage}' of run {id}; continue with `pipewright run --resume {id}`",
                        decision.past_tense()
                    )
                })
                .map_err(|e| (1, e.into())),
        )
    }

    fn prerun(&self, t: RunTarget<'_>) -> Result<(), String> {
        match t.program.workflows.first() {
            Some(w) => crate::run::prerun::recipe(w, t.input),
            None => Ok(()),
        }
    }

    fn plan(&self, t: RunTarget<'_>) -> Result<Plan, String> {
        let w = t
            .program
            .workflows
            .first()
            .ok_or("the file declares no workflow")?;
        crate::run::plan::plan(w, t.sources, t.input)
    }

    fn run<'a>(
        &'a self,
        program: Arc<pipewright_ir::Program>,
        sources: &'a SourceMap,
        request: RunRequest,
    ) -> BoxFuture<'a, Result<Box<dyn Report>, Refusal>> {
        Box::pin(async move {
            let opts = request.into_options(|_, _| None)?;
            let outcome = crate::run::run(program, sources, opts).await?;
            Ok(Box::new(outcome) as Box<dyn Report>)
        })
    }

    fn run_member<'a>(
        &'a self,
        program: Arc<pipewright_ir::Program>,
        sources: &'a SourceMap,
        request: RunRequest,
        member: pipewright_dialect::Member,
    ) -> BoxFuture<'a, pipewright_runtime::members::MemberReport> {
        Box::pin(async move {
            match request.into_options(|_, _| None) {
                Ok(opts) => crate::run::member(program, sources, opts, member).await,
                Err(refusal) => pipewright_runtime::members::MemberReport::broken(refusal.message),
            }
        })
    }
}

impl Recipe {
    /// `graph` and `run` take a recipe that checks without errors (with its sub-recipes).
    pub(crate) fn lower_checked(
        &self,
        path: &Path,
        file: FileId,
        text: &str,
        sources: &mut SourceMap,
    ) -> Result<Lowered, Vec<Diagnostic>> {
        let diags = crate::check_file(sources, path, text);
        if diags.iter().any(Diagnostic::is_error) {
            return Err(diags);
        }
        let (docs, _) = pipewright_yaml::load(file, text, pipewright_yaml::Limits::default());
        let Some(root) = docs.iter().find_map(|d| d.root.as_ref()) else {
            return Err(vec![Diagnostic::error(
                "PW0002",
                Span::new(file, 0..0),
                "this file holds no recipe",
            )]);
        };
        let mut loader = crate::load::Loader::new();
        let recipe = loader.recipe(root);
        Ok(Lowered {
            program: crate::lower::recipe(&recipe, file),
            dot: crate::dot::recipe_to_dot(root).ok(),
            ast: None,
        })
    }
}

/// Recipes are checked one by one as they are added (each with the sub-recipes it names).
struct RecipeChecker(Vec<Diagnostic>);

impl Checker for RecipeChecker {
    fn add(
        &mut self,
        path: &Path,
        _file: FileId,
        text: &str,
        sources: &mut SourceMap,
        _diags: &mut Vec<Diagnostic>,
    ) {
        self.0.extend(crate::check_file(sources, path, text));
    }

    fn finish(self: Box<Self>, _sources: &SourceMap) -> Vec<Diagnostic> {
        self.0
    }
}

/// A recipe's `condition:` language and its `{{var}}` templates, as the runner evaluates them.
const EVAL_LANGUAGES: &[pipewright_dialect::EvalLanguage] = &[
    pipewright_dialect::EvalLanguage {
        name: "condition",
        eval: eval_condition,
    },
    pipewright_dialect::EvalLanguage {
        name: "template",
        eval: eval_template,
    },
];

fn eval_condition(i: &pipewright_dialect::EvalInput<'_>) -> Result<String, Vec<Diagnostic>> {
    let site = if i.in_loop {
        crate::condition::Site::Rendered
    } else {
        crate::condition::Site::TopLevel
    };
    crate::condition::eval_at(i.expr, i.vars, site)
        .map(|v| v.to_string())
        .map_err(|issue| vec![issue.to_diagnostic(i.at)])
}

/// From the text: a parsed `serde_json::Value` has lost the digits of big integers.
fn eval_template(i: &pipewright_dialect::EvalInput<'_>) -> Result<String, Vec<Diagnostic>> {
    crate::template::render_json(i.expr, i.vars_text)
        .map(|s| serde_json::Value::String(s).to_string())
        .map_err(|issue| vec![issue.to_diagnostic(i.at)])
}
