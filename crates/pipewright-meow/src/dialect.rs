//! The MEOW template dialect: TOML modules with workflow tables (`[main]`, `[[main.steps]]`).
//! Checked and lowered by `pipewright-meow`, formatted by `pipewright-fmt`, run by
//! its own runtime (`run/`).

use pipewright_dialect::{
    CheckedAst, Checker, Context, Dialect, EditorFeatures, Lowered, NearMiss, RunRequest,
    RunTarget, Runtime, Source, Verb,
};
use pipewright_runtime::backend::BoxFuture;
use pipewright_runtime::members::MemberReport;
use pipewright_runtime::plan::Plan;
use pipewright_runtime::report::{Refusal, Report};
use pipewright_syntax::{Diagnostic, FileId, SourceMap, Span};
use std::path::Path;
use std::sync::Arc;

pub struct Meow;

impl Dialect for Meow {
    fn name(&self) -> &'static str {
        "meow"
    }

    fn noun(&self) -> &'static str {
        "MEOW template"
    }

    fn shape(&self) -> &'static str {
        "a MEOW template is TOML with workflow tables such as `[main]` and `[[main.steps]]`"
    }

    fn detect(&self, src: &Source) -> bool {
        // A quick look for a table header that owns `steps` is enough to route the file.
        // `.meow.toml` is MEOW's own file name; legacy `[meta]` files are routed here too so
        // that check can say what the module format is.
        src.path.to_string_lossy().ends_with(".meow.toml")
            || src.extension() == "toml"
                && src.text.lines().any(|l| {
                    let l = l.trim();
                    l.starts_with("[[") && l.ends_with(".steps]]") || l == "[main]"
                })
    }

    /// Workflows own a `steps` array of tables; `[[main.step]]` is the near miss.
    fn near_miss(&self, src: &Source, file: FileId) -> Option<NearMiss> {
        if src.extension() != "toml" {
            return None;
        }
        let mut offset = 0;
        for line in src.text.split_inclusive('\n') {
            let start = offset;
            offset += line.len();
            let t = line.trim();
            let Some(inner) = t.strip_prefix("[[").and_then(|t| t.strip_suffix("]]")) else {
                continue;
            };
            let Some((_, last)) = inner.rsplit_once('.') else {
                continue;
            };
            let last = last.trim();
            if last != "steps"
                && pipewright_syntax::suggest::did_you_mean(last, ["steps"]).is_some()
            {
                let at = start + line.find(last).unwrap_or(0);
                return Some(NearMiss {
                    noun: self.noun(),
                    found: last.to_string(),
                    span: Span::new(file, at..at + last.len()),
                    expected: "steps",
                });
            }
        }
        None
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

    fn command(&self) -> Option<&dyn pipewright_dialect::DialectCommand> {
        Some(&crate::run::command::Meow)
    }

    fn editor(&self) -> Option<&dyn EditorFeatures> {
        Some(self)
    }

    fn lower(
        &self,
        path: &Path,
        file: FileId,
        text: &str,
        _sources: &mut SourceMap,
        _ctx: &Context,
    ) -> Result<Lowered, Vec<Diagnostic>> {
        crate::check_and_lower(file, path, text).map(|(program, module)| Lowered {
            program,
            dot: None,
            ast: Some(Arc::new(module)),
        })
    }

    fn checker(&self, _ctx: &Context) -> Box<dyn Checker> {
        Box::new(MeowChecker(crate::Session::default(), Vec::new()))
    }

    fn format(
        &self,
        file: FileId,
        text: &str,
        options: pipewright_fmt::Options,
    ) -> Result<String, Vec<Diagnostic>> {
        pipewright_fmt::format_source(file, text, pipewright_fmt::Syntax::Toml, options)
            .map(|f| f.output)
    }
}

impl Runtime for Meow {
    fn waiting(
        &self,
        run: &pipewright_dialect::RecordedRun<'_>,
    ) -> Option<Vec<pipewright_dialect::Waiting>> {
        crate::run::approval::waiting(run)
    }

    fn decide(
        &self,
        run: &pipewright_dialect::RecordedRun<'_>,
        step: Option<&str>,
        decision: &pipewright_runtime::approval::Decision,
    ) -> Option<pipewright_dialect::Decided> {
        crate::run::approval::decide(run, step, decision)
    }

    fn prerun(&self, t: RunTarget<'_>) -> Result<(), String> {
        let module = checked(t.ast)?;
        crate::run::prerun(
            t.program,
            module,
            t.sources,
            t.workflow,
            t.input,
            t.source_path,
        )
    }

    fn plan(&self, t: RunTarget<'_>) -> Result<Plan, String> {
        let module = checked(t.ast)?;
        crate::run::plan(
            t.program,
            module,
            t.sources,
            t.workflow,
            t.input,
            t.source_path,
        )
    }

    fn run<'a>(
        &'a self,
        program: Arc<pipewright_ir::Program>,
        sources: &'a SourceMap,
        request: RunRequest,
    ) -> BoxFuture<'a, Result<Box<dyn Report>, Refusal>> {
        Box::pin(async move {
            let module = checked(request.ast.as_ref())?;
            let opts = request.into_options(tmux_agents)?;
            let outcome = crate::run::run(program, module, sources, opts).await?;
            Ok(Box::new(outcome) as Box<dyn Report>)
        })
    }

    fn run_member<'a>(
        &'a self,
        program: Arc<pipewright_ir::Program>,
        sources: &'a SourceMap,
        request: RunRequest,
        member: pipewright_dialect::Member,
    ) -> BoxFuture<'a, MemberReport> {
        Box::pin(async move {
            let module = match checked(request.ast.as_ref()) {
                Ok(m) => m,
                Err(e) => return MemberReport::broken(e),
            };
            match request.into_options(tmux_agents) {
                Ok(opts) => crate::run::member(program, module, sources, opts, member).await,
                Err(refusal) => MemberReport::broken(refusal.message),
            }
        })
    }
}

/// MEOW agents under `--backend command` run in tmux through adapters: `[backend.command]` is
/// not needed there.
fn tmux_agents(
    name: &str,
    opts: &pipewright_runtime::session::RunOptions,
) -> Option<Arc<dyn pipewright_runtime::backend::AgentBackend>> {
    (name == "command" && opts.config.command.is_none())
        .then(|| pipewright_runtime::backend::tmux_agents(&opts.tools.workdir))
}

/// The module `lower` checked, which the run executes (it is not parsed again).
fn checked(ast: Option<&CheckedAst>) -> Result<Arc<crate::ast::Module>, String> {
    ast.and_then(|a| Arc::clone(a).downcast().ok())
        .ok_or_else(|| "the MEOW module was not checked before its run".to_string())
}

/// Each module is checked on its own as it is added; the templates the files reference are
/// read from disk once per run, for their interface (workflows, steps, variables).
struct MeowChecker(crate::Session, Vec<Diagnostic>);

impl Checker for MeowChecker {
    fn add(
        &mut self,
        path: &Path,
        file: FileId,
        text: &str,
        _sources: &mut SourceMap,
        _diags: &mut Vec<Diagnostic>,
    ) {
        let found = self.0.check(file, path, text);
        self.1.extend(found);
    }

    fn finish(self: Box<Self>, _sources: &SourceMap) -> Vec<Diagnostic> {
        self.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meow_files_are_routed_here_even_in_the_legacy_format() {
        let legacy = "[meta]\nname = \"x\"\n\n[[steps]]\nid = \"a\"\n";
        assert!(Meow.detect(&Source::new(Path::new("w.meow.toml"), legacy)));
        assert!(!Meow.detect(&Source::new(Path::new("Cargo.toml"), legacy)));
        assert!(Meow.detect(&Source::new(
            Path::new("w.toml"),
            "[main]\n[[main.steps]]\nid = \"a\"\n"
        )));
        assert!(
            Meow.supports(Verb::Check) && Meow.supports(Verb::Graph) && Meow.supports(Verb::Run)
        );
    }
}
