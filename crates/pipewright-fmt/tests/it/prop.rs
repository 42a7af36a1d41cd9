//! Random pipelines assembled from step fragments, with random spacing, quoting and comments:
//! formatting never fails on valid input, is idempotent and keeps values and comments.

use pipewright_fmt::{format_source, trivia, verify, Syntax};
use pipewright_syntax::FileId;
use pipewright_yaml::Limits;
use proptest::prelude::*;

const STEPS: &[&str] = &[
    "- transform: {value: \"a+b\", output: x}",
    "- transform:\n    value: 'ctx . items'\n    output: items",
    "- agent: {prompt: \"Review {ctx.doc}\", schema: Review}",
    "- agent:\n    output: s\n    prompt: >-\n      two\n      lines",
    "- tool: {name: t, args: {q: !expr \"ctx.q+1\", n: 5, s: \"yes\"}}",
    "- call: {pipeline: p, pass: {d: ctx.d}}",
    "- fold:\n    over: ctx.xs\n    init: \"0\"\n    do: {transform: {value: acc+item}}\n    output: total",
    "- match:\n    on: ctx.k\n    cases:\n      \"True\": {pipeline: a}\n    default: {pipeline: b}",
];

fn indent(s: &str, by: usize) -> String {
    s.lines()
        .map(|l| format!("{}{l}", " ".repeat(by)))
        .collect::<Vec<_>>()
        .join("\n")
}

prop_compose! {
    fn pipeline()(steps in prop::collection::vec((0..STEPS.len(), any::<bool>(), any::<bool>(), 0..3usize), 1..8), ind in 0..3usize, header in any::<bool>()) -> String {
        let mut s = String::new();
        if header {
            s.push_str("# header\n\n");
        }
        s.push_str("pipeline: p   # the name\nsteps:\n");
        for (i, (k, lead, blank, extra)) in steps.into_iter().enumerate() {
            if blank {
                s.push('\n');
            }
            if lead {
                s.push_str(&format!("{}# step {i}\n", " ".repeat(ind)));
            }
            s.push_str(&indent(STEPS[k], ind));
            if extra == 1 {
                s.push_str("   # after");
            }
            s.push('\n');
        }
        s
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn formatting_keeps_everything(src in pipeline()) {
        let first = format_source(FileId(0), &src, Syntax::Yaml(&pipewright_pipeline::fmt_rules::PipelineRules), pipewright_fmt::Options::CANONICAL).map_err(|d| TestCaseError::fail(format!("{d:?}\n{src}")))?;
        let second = format_source(FileId(0), &first.output, Syntax::Yaml(&pipewright_pipeline::fmt_rules::PipelineRules), pipewright_fmt::Options::CANONICAL).map_err(|d| TestCaseError::fail(format!("{d:?}")))?;
        prop_assert_eq!(&second.output, &first.output);
        let (a, _) = pipewright_yaml::load(FileId(0), &src, Limits::default());
        let (b, _) = pipewright_yaml::load(FileId(0), &first.output, Limits::default());
        prop_assert_eq!(trivia::comment_texts(&src, &a), trivia::comment_texts(&first.output, &b));
        let roots: Vec<_> = a.iter().map(|d| d.root.as_ref()).collect();
        prop_assert!(verify::same_docs(&roots, &b, &pipewright_pipeline::fmt_rules::PipelineRules).is_ok());
    }
}
