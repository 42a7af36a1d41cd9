//! A small two-file project whose diagnostics exercise every feature of every renderer:
//! secondary labels in both files, notes, help, each severity, a multi-line span, non-ASCII text
//! before a span and an empty span at the end of a file.

use crate::codes::CodeInfo;
use crate::diagnostic::Diagnostic;
use crate::source::{FileId, SourceMap, Span};

pub(super) const PIPELINE: &str = "\
name: demo
steps:
  - id: fetch
    run: curl $URL
  - id: fetch
    uses: summarise
    with:
      title: \"Café 東京\"
      model: gpt
";

// No trailing newline: the end-of-file span then sits on the last line.
pub(super) const SCHEMA: &str = "\
inputs:
  text:
    type: string
  title:
    type:";

pub(super) const RULES: &[CodeInfo] = &[
    CodeInfo {
        code: "PW0005",
        title: "duplicate mapping key",
        explanation: "A key appears twice.\n\n```yaml\na: 1\na: 2\n```\n",
    },
    CodeInfo {
        code: "PW0104",
        title: "unknown input",
        explanation: "The step passes an input its action does not declare.\n\nRemove it.\n",
    },
    CodeInfo {
        code: "PW0201",
        title: "non-ASCII text in a title",
        explanation: "Some renderers mangle non-ASCII titles.\n",
    },
    CodeInfo {
        code: "PW0301",
        title: "verbatim mapping",
        explanation: "Informational.\n",
    },
    CodeInfo {
        code: "PW0001",
        title: "the file is not valid YAML, JSON or TOML",
        explanation: "The parser stopped.\n",
    },
    CodeInfo {
        code: "PW0999",
        title: "unused rule",
        explanation: "Never emitted here.\n",
    },
];

/// The `n`th (0-based) occurrence of `needle` in `hay`, as a span.
fn find(file: FileId, hay: &str, needle: &str, n: usize) -> Span {
    let start = hay
        .match_indices(needle)
        .nth(n)
        .map(|(i, _)| i)
        .expect("fixture text");
    Span::new(file, start..start + needle.len())
}

pub(super) fn project() -> (SourceMap, Vec<Diagnostic>) {
    let mut sources = SourceMap::new();
    let a = sources.add("pipeline.yaml", PIPELINE);
    let b = sources.add("schemas/summarise.yaml", SCHEMA);

    let with_block = find(a, PIPELINE, "with:", 0).to(find(a, PIPELINE, "gpt", 0));
    let diags = vec![
        Diagnostic::error(
            "PW0005",
            find(a, PIPELINE, "fetch", 1),
            "duplicate step id `fetch`",
        )
        .with_label("defined again here")
        .with_secondary(find(a, PIPELINE, "fetch", 0), "first defined here")
        .with_help("rename one of the steps"),
        Diagnostic::warning(
            "PW0201",
            find(a, PIPELINE, "東京", 0),
            "title contains non-ASCII text",
        )
        .with_label("these characters"),
        Diagnostic::error(
            "PW0104",
            find(a, PIPELINE, "model", 0),
            "unknown input `model` for `summarise`",
        )
        .with_label("not an input of `summarise`")
        .with_secondary(
            find(a, PIPELINE, "summarise", 0),
            "the action is chosen here",
        )
        .with_secondary(find(b, SCHEMA, "inputs", 0), "its inputs are declared here")
        .with_note("`summarise` accepts: text, title")
        .with_note("inputs are matched case-sensitively,\neven in YAML flow mappings")
        .with_help("remove `model`, or declare it in the schema"),
        Diagnostic::new(
            crate::Severity::Note,
            "PW0301",
            with_block,
            "this mapping is passed verbatim",
        )
        .with_label("passed as-is"),
        Diagnostic::error(
            "PW0001",
            Span::new(b, SCHEMA.len()..SCHEMA.len()),
            "unexpected end of file",
        )
        .with_label("a value was expected here"),
    ];
    (sources, diags)
}
