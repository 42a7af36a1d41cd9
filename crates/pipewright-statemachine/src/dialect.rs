//! The state-machine recipe dialect: JSON with `initialStep` and `steps`. Checked, put in
//! canonical key order and lowered for `graph` by `pipewright-statemachine`; laid out by
//! `pipewright-fmt`'s JSON formatter; run by its own runtime (`run/`).

use pipewright_dialect::{
    CheckedAst, Checker, Context, Dialect, EditorFeatures, Lowered, NearMiss, RunRequest,
    RunTarget, Runtime, Source, Verb,
};
use pipewright_runtime::backend::BoxFuture;
use pipewright_runtime::plan::Plan;
use pipewright_runtime::report::{Refusal, Report};
use pipewright_syntax::{Diagnostic, FileId, SourceMap, Span};
use std::path::Path;
use std::sync::Arc;

pub struct StateMachine;

const SIGNATURE: &[&[&str]] = &[&["initialStep"], &["steps"]];

impl Dialect for StateMachine {
    fn name(&self) -> &'static str {
        "state-machine"
    }

    fn noun(&self) -> &'static str {
        "state-machine recipe"
    }

    fn workflow_noun(&self) -> &'static str {
        "recipe"
    }

    fn shape(&self) -> &'static str {
        "a state-machine recipe is JSON with `initialStep` and `steps`"
    }

    fn detect(&self, src: &Source) -> bool {
        if src.extension() != "json" {
            return false;
        }
        match crate::json::parse(FileId(0), src.text) {
            Ok(root) => root.get("initialStep").is_some() && root.get("steps").is_some(),
            // Broken JSON that names both keys is a recipe with a syntax error: `check`
            // should say where the error is rather than that the file is unrecognised.
            Err(_) => src.text.contains("\"initialStep\"") && src.text.contains("\"steps\""),
        }
    }

    fn near_miss(&self, src: &Source, file: FileId) -> Option<NearMiss> {
        if src.extension() != "json" {
            return None;
        }
        let keys = pipewright_dialect::near_miss::json_keys(src, file);
        let keys: Vec<(&str, Span)> = keys.iter().map(|(k, s)| (k.as_str(), *s)).collect();
        pipewright_dialect::near_miss::by_keys(self.noun(), &keys, SIGNATURE)
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

    fn editor(&self) -> Option<&dyn EditorFeatures> {
        Some(self)
    }

    fn checker(&self, _ctx: &Context) -> Box<dyn Checker> {
        Box::new(StateMachineChecker(crate::Checker::default()))
    }

    /// Canonical key order first (when asked), then the JSON formatter's layout (which also
    /// proves the result reads back as the same value with the same literals).
    fn format(
        &self,
        file: FileId,
        text: &str,
        options: pipewright_fmt::Options,
    ) -> Result<String, Vec<Diagnostic>> {
        let ordered;
        let text = match options.key_order {
            pipewright_fmt::KeyOrder::Canonical => {
                ordered = crate::fmt::format(file, text)?;
                ordered.as_str()
            }
            pipewright_fmt::KeyOrder::Preserve => text,
        };
        pipewright_fmt::format_source(file, text, pipewright_fmt::Syntax::Json, options)
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
        crate::check_and_lower(sources, path, file, text).map(|(program, recipe)| Lowered {
            program,
            dot: None,
            ast: Some(Arc::new(recipe)),
        })
    }
}

impl Runtime for StateMachine {
    fn prerun(&self, t: RunTarget<'_>) -> Result<(), String> {
        if t.input.is_null() {
            Ok(())
        } else {
            Err("a state-machine recipe takes no input (--input, --input-file, --var): its prompts are sent as written".into())
        }
    }

    /// A recipe given an input has no plan: it is refused before anything is planned.
    fn plan(&self, t: RunTarget<'_>) -> Result<Plan, String> {
        self.prerun(t)?;
        let w = t
            .program
            .workflows
            .first()
            .ok_or("the file declares no workflow")?;
        crate::run::plan::plan(w, checked(t.ast)?, t.sources, t.source_path)
    }

    fn flags(&self) -> &'static [pipewright_dialect::RunFlag] {
        crate::run::request::FLAGS
    }

    fn live_lines(&self) -> bool {
        true
    }

    fn backends(&self) -> Option<&'static pipewright_dialect::BackendFamily> {
        Some(&crate::run::request::BACKENDS)
    }

    fn run<'a>(
        &'a self,
        program: Arc<pipewright_ir::Program>,
        sources: &'a SourceMap,
        request: RunRequest,
    ) -> BoxFuture<'a, Result<Box<dyn Report>, Refusal>> {
        Box::pin(crate::run::request::run(program, sources, request))
    }
}

/// The recipe `lower` checked, which the run executes (it is not parsed again).
pub(crate) fn checked(ast: Option<&CheckedAst>) -> Result<&crate::ast::Recipe, String> {
    ast.and_then(|a| a.downcast_ref())
        .ok_or_else(|| "the recipe was not checked before its run".to_string())
}

/// All recipes of a check run together: `restart-new-session` names recipes by id across
/// files.
struct StateMachineChecker(crate::Checker);

impl Checker for StateMachineChecker {
    fn add(
        &mut self,
        path: &Path,
        file: FileId,
        text: &str,
        sources: &mut SourceMap,
        _diags: &mut Vec<Diagnostic>,
    ) {
        self.0.add(sources, path, file, text);
    }

    fn include(&mut self, path: &Path, _file: FileId, text: &str) {
        self.0.include(path, text);
    }

    fn finish(self: Box<Self>, _sources: &SourceMap) -> Vec<Diagnostic> {
        self.0.finish()
    }
}
