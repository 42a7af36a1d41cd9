//! The pipeline dialect (`pipewright-pipeline`): YAML with `pipeline:` and `schema:` documents.

use crate::ast::{PipelineFile, Program};
use crate::catalogue::ToolCatalogue;
use crate::CheckOptions;
use pipewright_dialect::{
    Checker, Context, Dialect, EditorFeatures, Kept, Lowered, NearMiss, RunRequest, RunTarget,
    Runtime, Source, Verb,
};
use pipewright_project::ProjectConfig;
use pipewright_runtime::backend::BoxFuture;
use pipewright_runtime::plan::Plan;
use pipewright_runtime::report::{Refusal, Report};
use pipewright_syntax::{Diagnostic, FileId, SourceMap, Span};
use std::path::Path;
use std::sync::Arc;

pub struct Pipeline;

impl Dialect for Pipeline {
    fn name(&self) -> &'static str {
        "pipeline"
    }

    fn noun(&self) -> &'static str {
        "pipeline file"
    }

    fn workflow_noun(&self) -> &'static str {
        "pipeline"
    }

    fn shape(&self) -> &'static str {
        "a pipeline is YAML with `pipeline: NAME` and `steps:` (plus optional `schema: NAME` documents)"
    }

    fn detect(&self, src: &Source) -> bool {
        if !src.is_yaml() {
            return false;
        }
        // The full parse costs as much as the check's own parse, so the common shape (a
        // document opening with `pipeline:`) is recognised from the raw lines first.
        opens_a_document_with_pipeline_key(src.text) || detect_by_parse(src)
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
                    &[&["pipeline"], &["steps"]],
                )
                .or_else(|| {
                    pipewright_dialect::near_miss::by_keys(
                        self.noun(),
                        keys,
                        &[&["schema"], &["fields"]],
                    )
                })
            })
    }

    fn supports(&self, _verb: Verb) -> bool {
        true
    }

    fn codes(&self) -> &'static [pipewright_syntax::CodeInfo] {
        crate::codes::CODES
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

    fn checker(&self, ctx: &Context) -> Box<dyn Checker> {
        Box::new(PipelineChecker {
            program: Program::default(),
            included: Vec::new(),
            opts: options(ctx),
            keep: Vec::new(),
        })
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
            pipewright_fmt::Syntax::Yaml(&crate::fmt_rules::PipelineRules),
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
        ctx: &Context,
    ) -> Result<Lowered, Vec<Diagnostic>> {
        let mut diags = Vec::new();
        let mut loaded = load(path, file, text, &mut diags);
        if path.as_os_str() == "-" {
            loaded.namespace = None;
        }
        if loaded.pipelines.is_empty() && !diags.iter().any(Diagnostic::is_error) {
            // An empty file (or only comments) loads to nothing at all; `graph` and `run` both
            // need a pipeline, and say so the same way.
            diags.push(
                Diagnostic::error(
                    "PW0201",
                    Span::new(file, 0..0),
                    "this file declares no pipeline",
                )
                .with_label("nothing to graph or run")
                .with_help("a pipeline file needs a document with `pipeline: NAME` and `steps:`"),
            );
        }
        let program = Program {
            files: vec![loaded],
        };
        diags.extend(crate::check_program(&program, sources, &options(ctx)));
        if diags.iter().any(Diagnostic::is_error) {
            return Err(diags);
        }
        Ok(Lowered {
            program: if ctx.drawn_only {
                crate::lower::drawn(program)
            } else {
                crate::lower::pipeline(program)
            },
            dot: None,
            ast: None,
        })
    }
}

impl Runtime for Pipeline {
    fn prerun(&self, t: RunTarget<'_>) -> Result<(), String> {
        crate::run::prerun::pipeline(t.program, t.sources, t.workflow, t.input)
    }

    fn plan(&self, t: RunTarget<'_>) -> Result<Plan, String> {
        crate::run::plan::plan(t.program, t.sources, t.workflow, t.input)
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

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn detect_by_parse(src: &Source) -> bool {
    if src.yaml_is_broken() {
        // Unparseable YAML: route by the top-level keys so the user sees the real syntax
        // error from the pipeline loader.
        let top = src.top_keys();
        return top.contains(&"pipeline") || (top.contains(&"schema") && top.contains(&"fields"));
    }
    let found = src.yaml_roots().any(crate::looks_like_pipeline);
    found
}

/// The tools `check` accepts: the built-in catalogue plus the project's declarations.
pub fn catalogue(cfg: &ProjectConfig) -> ToolCatalogue {
    let mut c = ToolCatalogue::default();
    for name in cfg.tools.keys() {
        c.add_project_tool(name.clone(), None);
    }
    c
}

fn options(ctx: &Context) -> CheckOptions {
    CheckOptions {
        tools: catalogue(&ctx.project),
        inline: ctx.inline,
        invoker: ctx.invoker.clone().or(ctx.project.invoker.clone()),
    }
}

/// Loads one pipeline file; its namespace (what `ns.name` call targets use) is its file stem.
fn load(path: &Path, file: FileId, text: &str, diags: &mut Vec<Diagnostic>) -> PipelineFile {
    let mut f = crate::load_source(file, text, diags);
    f.namespace = path.file_stem().map(|s| s.to_string_lossy().to_string());
    f
}

struct PipelineChecker {
    program: Program,
    included: Vec<FileId>,
    opts: CheckOptions,
    /// Open documents that loaded clean: where in `program.files`, their text, and where the
    /// language server keeps their AST for the next check.
    keep: Vec<(usize, Arc<str>, Kept)>,
}

impl Checker for PipelineChecker {
    fn add(
        &mut self,
        path: &Path,
        file: FileId,
        text: &str,
        _sources: &mut SourceMap,
        diags: &mut Vec<Diagnostic>,
    ) {
        self.program.files.push(load(path, file, text, diags));
    }

    fn add_open(
        &mut self,
        path: &Path,
        file: FileId,
        text: &str,
        _sources: &mut SourceMap,
        diags: &mut Vec<Diagnostic>,
        kept: &Kept,
    ) {
        let previous = lock(kept)
            .take()
            .and_then(|k| k.downcast::<crate::reuse::Kept>().ok())
            .map(|k| *k);
        let before = diags.len();
        let mut f = crate::reuse::load_reusing(file, text, previous, diags);
        f.namespace = path.file_stem().map(|s| s.to_string_lossy().to_string());
        if diags.len() == before {
            self.keep
                .push((self.program.files.len(), Arc::from(text), kept.clone()));
        }
        self.program.files.push(f);
    }

    fn include(&mut self, path: &Path, file: FileId, text: &str) {
        self.included.push(file);
        let mut ignored = Vec::new();
        self.program
            .files
            .push(load(path, file, text, &mut ignored));
    }

    fn finish(self: Box<Self>, sources: &SourceMap) -> Vec<Diagnostic> {
        let found = crate::check_program(&self.program, sources, &self.opts);
        let out = found
            .into_iter()
            .filter(|d| !self.included.contains(&d.span().file))
            .collect();
        // Freeing the AST of a large file one node at a time only delays the answer: the CLI
        // exits soon after (the OS takes the memory back at once, as rustc also found), and the
        // language server publishes first. So the AST is freed on a thread of its own, which
        // an exiting process does not wait for; never leaked, since the server lives on. (The
        // YAML trees are already gone: loading consumes them step by step.)
        let mut program = self.program;
        for (i, text, kept) in self.keep {
            if let Some(f) = program.files.get_mut(i) {
                let file = std::mem::replace(f, PipelineFile::empty(f.file));
                *lock(&kept) = Some(Box::new(crate::reuse::Kept { text, file }));
            }
        }
        // A failed spawn drops the closure, which frees the AST here instead.
        let _ = std::thread::Builder::new().spawn(move || drop(program));
        out
    }
}

/// True when some document's first content line is a `pipeline:` key at column 0. Only that
/// position is trusted: nothing earlier in the document can have opened a block scalar, a quoted
/// string or a flow collection that would make the line content rather than a root key, and a
/// column-0 `---` ends any such construct (or is a syntax error, which the by-keys fallback of
/// the full parse also routes to the pipeline dialect). Anything else is left to the full parse.
fn opens_a_document_with_pipeline_key(text: &str) -> bool {
    let mut at_document_start = true;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if is_document_marker(line) {
            at_document_start = true;
            continue;
        }
        if at_document_start {
            if let Some(rest) = line.strip_prefix("pipeline:") {
                if rest.is_empty() || rest.starts_with([' ', '\t', '\r']) {
                    return true;
                }
            }
        }
        at_document_start = false;
    }
    false
}

/// A bare `---` line, optionally followed by blanks or a comment; `--- value` is not trusted.
fn is_document_marker(line: &str) -> bool {
    line.strip_prefix("---").is_some_and(|rest| {
        let rest = rest.trim_start_matches([' ', '\t', '\r']);
        rest.is_empty() || (rest.starts_with('#') && rest.len() < line.len() - 3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_parse(text: &str) -> bool {
        detect_by_parse(&Source::new(Path::new("x.yaml"), text))
    }

    /// The line scan may only ever agree with the full parse; where it cannot tell, it defers.
    #[test]
    fn the_line_scan_agrees_with_the_full_parse() {
        let cases = [
            "pipeline: a\nsteps: []\n",
            "# c\n\npipeline: a\nsteps: []\n",
            "schema: S\nfields: {}\n---\npipeline: a\nsteps: []\n",
            "--- # c\npipeline: a\n",
            "---\r\npipeline: a\r\nsteps: []\r\n",
            "pipeline:\n  a\n",
            "pipeline:x\n",
            "--- |\n pipeline: a\n",
            "--- |\npipeline: a\n",
            "a: |\n  x\n---\npipeline: a\n",
            "a: \"x\n---\npipeline: a\"\n",
            "a: 'x\n---\npipeline: a'\n",
            "a: [x,\n---\npipeline: a]\n",
            "a: b\n---#x\npipeline: a\n",
            "---x\npipeline: a\n",
            "- a\n---\npipeline: a\n",
            "name: r\nsteps: []\n",
            "pipeline: a\n  : bad\n\t- [\n",
            "\u{feff}pipeline: a\n",
            "%YAML 1.2\n---\npipeline: a\n",
            "...\npipeline: a\n",
            "pipeline: [a\n",
        ];
        for text in cases {
            if opens_a_document_with_pipeline_key(text) {
                assert!(by_parse(text), "{text:?}");
            }
        }
        assert!(opens_a_document_with_pipeline_key(cases[2]));
        assert!(!opens_a_document_with_pipeline_key("pipeline:x\n"));
        assert!(!opens_a_document_with_pipeline_key("--- |\npipeline: a\n"));
    }
}
