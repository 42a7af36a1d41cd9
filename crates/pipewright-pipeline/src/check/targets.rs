//! Name resolution for `call`/`match` targets across the file set, and who calls whom.

use crate::ast::{CallTarget, Pipeline, Program, Step, StepKind};
use crate::codes;
use pipewright_syntax::suggest::help_for_unknown;
use pipewright_syntax::Diagnostic;
use std::collections::HashMap;

/// Where a pipeline lives: (file index in the program, pipeline index in the file).
pub(super) type PipelineId = (usize, usize);

pub(super) struct Index<'a> {
    pub program: &'a Program,
    /// Pipelines by declared name, per file.
    by_file: Vec<HashMap<&'a str, usize>>,
    /// The call sites of each pipeline.
    pub callers: HashMap<PipelineId, Vec<(&'a CallTarget, PipelineId)>>,
}

impl<'a> Index<'a> {
    pub(super) fn new(program: &'a Program, diags: &mut Vec<Diagnostic>) -> Index<'a> {
        let mut by_file = Vec::new();
        for f in &program.files {
            let mut names: HashMap<&str, usize> = HashMap::new();
            for (i, p) in f.pipelines.iter().enumerate() {
                if let Some(&first) = names.get(&*p.name.text) {
                    diags.push(
                        Diagnostic::error(
                            codes::DUPLICATE_PIPELINE,
                            p.name.span,
                            format!("duplicate pipeline name `{}`", p.name.text),
                        )
                        .with_label("declared again here")
                        .with_secondary(f.pipelines[first].name.span, "first declared here")
                        .with_help(
                            "rename one of them: a call target must name exactly one pipeline",
                        ),
                    );
                } else {
                    names.insert(&p.name.text, i);
                }
            }
            by_file.push(names);
        }
        let mut index = Index {
            program,
            by_file,
            callers: HashMap::new(),
        };
        for (fi, f) in program.files.iter().enumerate() {
            for (pi, p) in f.pipelines.iter().enumerate() {
                for t in targets_of(p) {
                    if let Some(id) = index.resolve(fi, &t.pipeline.text) {
                        index.callers.entry(id).or_default().push((t, (fi, pi)));
                    }
                }
            }
        }
        index
    }

    /// A dot-less name is a sibling in the same file; otherwise the first file in the set that
    /// declares it. `ns.name` names `name` in the file registered as `ns` (its file stem).
    pub(super) fn resolve(&self, file: usize, name: &str) -> Option<PipelineId> {
        if let Some(&i) = self.by_file.get(file).and_then(|m| m.get(name)) {
            return Some((file, i));
        }
        if let Some((ns, rest)) = name.split_once('.') {
            for (fi, f) in self.program.files.iter().enumerate() {
                if f.namespace.as_deref() == Some(ns) {
                    if let Some(&i) = self.by_file[fi].get(rest) {
                        return Some((fi, i));
                    }
                }
            }
        }
        self.by_file
            .iter()
            .enumerate()
            .find_map(|(fi, m)| m.get(name).map(|&i| (fi, i)))
    }

    pub(super) fn unresolved(&self, file: usize, t: &CallTarget) -> Option<Diagnostic> {
        if self.resolve(file, &t.pipeline.text).is_some() {
            return None;
        }
        let names: Vec<String> = self
            .program
            .files
            .iter()
            .flat_map(|f| f.pipelines.iter().map(|p| p.name.text.to_string()))
            .collect();
        let help = help_for_unknown(&t.pipeline.text, names.iter().map(String::as_str));
        Some(
            Diagnostic::error(codes::UNKNOWN_TARGET, t.pipeline.span, format!("no pipeline named `{}`", t.pipeline.text))
                .with_label("unknown call target")
                .with_optional_help(help)
                .with_note("targets resolve against the pipelines in the checked files and the `-I` search path"),
        )
    }
}

/// Every call/match target in a pipeline, at any depth.
pub(super) fn targets_of(p: &Pipeline) -> Vec<&CallTarget> {
    let mut out = Vec::new();
    let mut stack: Vec<&Step> = p.steps.iter().collect();
    while let Some(s) = stack.pop() {
        match &s.kind {
            StepKind::Call(t) => out.push(t),
            StepKind::Match(m) => {
                out.extend(m.cases.iter().map(|c| &c.target));
                out.extend(m.default.iter());
            }
            _ => {}
        }
        s.each_child(|c| stack.push(c));
    }
    out.sort_by_key(|t| t.span.start);
    out
}
