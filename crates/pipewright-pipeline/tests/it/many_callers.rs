//! Pipelines called from many places: diagnostics stay linear in the size of the file.

use pipewright_pipeline::ast::Program;
use pipewright_pipeline::{check_program, load_source, CheckOptions};
use pipewright_syntax::{Diagnostic, SourceMap};

/// A pipeline called from many places that reads a store no call passes: one PW0254 per read
/// (naming three calls and counting the rest), not one per read and call.
#[test]
fn a_name_missing_from_many_calls_is_one_diagnostic_per_read() {
    let mut text = String::from("pipeline: main\nsteps:\n");
    for _ in 0..10 {
        text.push_str("  - call: {pipeline: helper}\n");
    }
    text.push_str("---\npipeline: helper\nsteps:\n  - transform: {value: \"ctx.doc\"}\n  - transform: {value: \"ctx.doc + 1\"}\n");
    let mut sources = SourceMap::new();
    let id = sources.add("t.yaml", text.as_str());
    let mut diags = Vec::new();
    let file = load_source(id, &text, &mut diags);
    diags.extend(check_program(
        &Program { files: vec![file] },
        &sources,
        &CheckOptions::default(),
    ));
    let found: Vec<&Diagnostic> = diags.iter().filter(|d| d.code == "PW0254").collect();
    assert_eq!(found.len(), 2, "{diags:#?}");
    for d in found {
        assert_eq!(d.secondary.len(), 3, "{d:#?}");
        assert_eq!(
            d.notes,
            vec!["7 more calls do not pass `doc` either".to_string()]
        );
    }
}
