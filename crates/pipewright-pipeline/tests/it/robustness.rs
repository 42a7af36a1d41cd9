//! Hostile and random documents: the loader and the checks never panic and always finish.

use pipewright_pipeline::ast::Program;
use pipewright_pipeline::{check_program, load_source, CheckOptions};
use pipewright_syntax::SourceMap;
use proptest::prelude::*;

fn check(text: &str) -> usize {
    let mut sources = SourceMap::new();
    let id = sources.add("t.yaml", text);
    let mut diags = Vec::new();
    let file = load_source(id, text, &mut diags);
    diags.extend(check_program(
        &Program { files: vec![file] },
        &sources,
        &CheckOptions::default(),
    ));
    diags.len()
}

/// Fragments that look like pipelines, so random sequences reach deep into the loader.
const FRAGMENTS: &[&str] = &[
    "pipeline: p\n", "schema: S\n", "fields:\n", "steps:\n", "---\n", "  - ", "    ", "transform: ",
    "{value: \"ctx.a + 1\", output: a}", "tool: {name: file__read, args: {path: !expr ctx.a}}",
    "agent: {prompt: \"{ctx.a} {item}\", schema: S}", "call: {pipeline: p, pass: [a]}",
    "match: {on: \"ctx.a\", cases: {\"True\": {pipeline: p}}}", "for_each:\n", "do: ", "collect: ",
    "on_error: abort\n", "over: ctx.a\n", "items: [1, 2]\n", "fold: {init: \"0\", do: {transform: {value: \"acc\"}}, output: t}",
    "parallel: {branches: {a: {transform: {value: \"1\"}}}, collect: {transform: {value: \"pipe\"}}}",
    "  a: {type: ref, schema: S}\n", "  b: {type: list, of: {type: list}}\n", "[", "]", "{", "}", "\"", "'", ":", "\n",
    "!expr ", "&x ", "*x ", "# c\n", "\t", "é", "ctx.", "((", "))",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_fragment_sequences_never_panic(parts in proptest::collection::vec(0..FRAGMENTS.len(), 0..60)) {
        let text: String = parts.iter().map(|&i| FRAGMENTS[i]).collect();
        check(&text);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        check(&text);
    }
}

#[test]
fn deep_nesting_is_reported_not_crashed() {
    let deep_flow = format!(
        "pipeline: p\nsteps:\n  - tool: {{name: file__write, args: {{x: {}{}}}}}\n",
        "[".repeat(50_000),
        "]".repeat(50_000)
    );
    assert!(check(&deep_flow) > 0);
    let mut nested = String::from("pipeline: p\nsteps:\n  - ");
    for _ in 0..300 {
        nested.push_str("fold: {init: \"0\", output: t, do: {");
    }
    assert!(check(&nested) > 0);
    let deep_expr = format!(
        "pipeline: p\nsteps:\n  - transform: {{value: \"{}1{}\"}}\n",
        "(".repeat(20_000),
        ")".repeat(20_000)
    );
    assert!(check(&deep_expr) > 0);
}
