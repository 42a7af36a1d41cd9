//! Issue 9 finding 12: a tag on a field that is already R1, and `output: ""`.

use pipewright_pipeline::load_source;
use pipewright_syntax::{Diagnostic, SourceMap};

fn load(text: &str) -> Vec<Diagnostic> {
    let mut sources = SourceMap::new();
    let id = sources.add("t.yaml", text);
    let mut diags = Vec::new();
    load_source(id, text, &mut diags);
    diags
}

/// `(code, is_error, primary text)` of each diagnostic.
fn summary(text: &str) -> Vec<(&'static str, bool, String)> {
    load(text)
        .iter()
        .map(|d| {
            let s = d.primary.span;
            let at = text.get(s.start as usize..s.end as usize).unwrap_or("");
            (d.code, d.is_error(), at.to_string())
        })
        .collect()
}

#[test]
fn expr_on_every_field_that_is_already_r1_is_an_error_on_the_tag() {
    let fields = [
        "  - transform: {value: !expr ctx.a}\n",
        "  - match: {on: !expr ctx.a, cases: {\"x\": {pipeline: q}}}\n",
        "  - match: {on: ctx.a, cases: {\"x\": {pipeline: q, pass: {b: !expr ctx.a}}}}\n",
        "  - match: {on: ctx.a, cases: {\"x\": {pipeline: q}}, default: {pipeline: q, pass: {b: !expr ctx.a}}}\n",
        "  - call: {pipeline: q, pass: {b: !expr ctx.a}}\n",
        "  - fold: {over: !expr ctx.a, init: \"0\", do: {transform: {value: acc}}, output: t}\n",
        "  - fold: {over: ctx.a, init: !expr \"0\", do: {transform: {value: acc}}, output: t}\n",
        "  - for_each: {over: !expr ctx.a, on_error: abort, do: {transform: {value: item}}, collect: {transform: {value: pipe}}}\n",
    ];
    for step in fields {
        let text = format!(
            "pipeline: p\nsteps:\n{step}---\npipeline: q\nsteps:\n  - transform: {{value: pipe}}\n"
        );
        let diags = load(&text);
        assert_eq!(
            summary(&text),
            [("PW0211", true, "!expr".to_string())],
            "{step}"
        );
        let help = diags[0].help.as_deref().unwrap_or("");
        assert!(
            help.starts_with("remove `!expr`: this field is already an expression"),
            "{step}: {help}"
        );
    }
}

#[test]
fn tagged_non_string_gets_one_error_and_a_quoting_hint() {
    let text = "pipeline: p\nsteps:\n  - fold: {items: [1], init: !expr 0, do: {transform: {value: acc}}, output: t}\n";
    let diags = load(text);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert!(
        diags[0].help.as_deref().unwrap_or("").contains("`\"0\"`"),
        "{diags:#?}"
    );
}

#[test]
fn unknown_tag_on_an_expression_is_reported() {
    let text = "pipeline: p\nsteps:\n  - transform: {value: !py ctx.a}\n";
    assert_eq!(summary(text), [("PW0004", true, "!py".to_string())]);
}

#[test]
fn expr_stays_allowed_on_tool_arguments_and_shell_commands() {
    let text = "pipeline: p\nsteps:\n  - tool: {name: file__read, args: {path: !expr ctx.a}}\n  - shell: {command: !expr \"['ls', ctx.a]\"}\n";
    assert_eq!(summary(text), []);
}

#[test]
fn r1_errors_inside_a_tagged_value_point_past_the_tag() {
    let text =
        "pipeline: p\nsteps:\n  - tool: {name: file__read, args: {path: !expr \"ctx. + 1\"}}\n";
    let s = summary(text);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0].2, "+", "{s:?}");
}

#[test]
fn empty_output_is_a_warning_except_on_fold() {
    for step in [
        "transform: {value: pipe, output: \"\"}",
        "tool: {name: file__read, args: {path: a}, output: ''}",
        "agent: {prompt: hi, output: \"\"}",
        "call: {pipeline: q, output: \"\"}",
        "for_each: {items: [1], on_error: abort, do: {transform: {value: item}}, collect: {transform: {value: pipe}}, output: \"\"}",
    ] {
        let text = format!("pipeline: p\nsteps:\n  - {step}\n---\npipeline: q\nsteps:\n  - transform: {{value: pipe}}\n");
        assert_eq!(
            summary(&text),
            [("PW0218", false, "\"\"".to_string())]
                .map(|(c, e, s)| (c, e, if step.contains("''") { "''".into() } else { s })),
            "{step}"
        );
    }
    // The reference requires a fold's name (`expected a non-empty store-name string`).
    let text = "pipeline: p\nsteps:\n  - fold: {items: [1], init: \"0\", do: {transform: {value: acc}}, output: \"\"}\n";
    assert_eq!(summary(text), [("PW0205", true, "\"\"".to_string())]);
}
