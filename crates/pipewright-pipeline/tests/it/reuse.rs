//! Loading an edited file from its previous load gives exactly what loading the new text
//! whole gives, for any edit; and the common edits (inside one step) do reuse.

use pipewright_pipeline::reuse::{load_reusing, try_reuse, Kept};
use pipewright_pipeline::{ast::PipelineFile, load_source};
use pipewright_syntax::FileId;
use proptest::prelude::*;
use std::sync::Arc;

const BASE: &str = r#"# a schema first
schema: Review
fields:
  passed: {type: bool, required: true}
  tags: {type: list, of: {type: string}}
---
pipeline: big
description: steps of every kind
steps:
  - agent:
      prompt: "Review part 1 of {ctx.doc} and list tags."
      schema: Review
      output: review1
  - transform: {value: "ctx.review1.passed and 'OK' or 'NEEDS WORK'", output: verdict1}
  - for_each:
      over: ctx.review1.tags
      max_parallel: 4
      on_error: "retry(2)"
      do: {transform: {value: "item + ' (' + ctx.verdict1 + ')'"}}
      collect: {transform: {value: "join(pipe, ', ')"}}
      output: tagged1
  - tool: {name: file__write, args: {path: "out1.txt", content: !expr ctx.tagged1}, output: written1}
  # a comment between steps
  - agent:
      prompt: "Summarise {ctx.written1}"
      identity: reviewer
      capabilities: {tools: [file__read]}
      model: fast
      output: summary
  - shell: {command: "true", on_error: continue, output: shelled}
  - tool: {name: file__read, args: {path: "x"}, on_error: continue}
  - parallel:
      branches:
        left: {transform: {value: "1"}}
        right: {shell: {command: ["echo", "hi"]}}
      collect: {transform: {value: "pipe"}}
      output: both
  - match:
      on: ctx.verdict1
      cases:
        OK: {pipeline: other, pass: [verdict1]}
      default: {pipeline: other, pass: [verdict1]}
      output: matched
  - fold:
      items: [1, 2, 3]
      init: "0"
      do: {transform: {value: "acc + item"}}
      output: total
  - transform:
      value: >-
        ctx.total + 1
      output: last
---
pipeline: other
steps:
  - transform: {value: "ctx.verdict1"}
  - transform: {value: "pipe"}
"#;

const FILE: FileId = FileId(3);

fn clean_load(text: &str) -> Option<PipelineFile> {
    let mut diags = Vec::new();
    let f = load_source(FileId(0), text, &mut diags);
    diags.is_empty().then_some(f)
}

fn kept(text: &str) -> Kept {
    let file = clean_load(text).unwrap_or_else(|| panic!("the base text loads clean"));
    Kept {
        text: Arc::from(text),
        file,
    }
}

fn assert_same(new: &str, prev: Kept) {
    let mut full_diags = Vec::new();
    let full = load_source(FILE, new, &mut full_diags);
    let mut diags = Vec::new();
    let reused = load_reusing(FILE, new, Some(prev), &mut diags);
    assert_eq!(reused.file, full.file);
    assert!(
        reused.schemas == full.schemas,
        "{new}\n{:#?}\n{:#?}",
        reused.schemas,
        full.schemas
    );
    if reused.pipelines != full.pipelines {
        let (a, b) = (
            format!("{:#?}", reused.pipelines),
            format!("{:#?}", full.pipelines),
        );
        let at = a
            .lines()
            .zip(b.lines())
            .position(|(x, y)| x != y)
            .unwrap_or(0);
        let around = |t: &str| {
            t.lines()
                .skip(at.saturating_sub(8))
                .take(12)
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!("{new}\nreused:\n{}\nwhole:\n{}", around(&a), around(&b));
    }
    assert_eq!(diags, full_diags, "{new}");
}

/// An edit inside one step is loaded by parsing that step alone, and gives the whole load.
#[test]
fn an_edit_inside_a_step_reuses_the_rest() {
    let edits = [
        ("Review part 1", "Look at part 1"),
        ("retry(2)", "retry(3)"),
        ("max_parallel: 4", "max_parallel: 16"),
        ("out1.txt", "out/one.txt"),
        (
            "right: {shell",
            "middle: {transform: {value: \"2\"}}\n        right: {shell",
        ),
        (
            "OK: {pipeline",
            "WAIT: {pipeline: other}\n        OK: {pipeline",
        ),
        ("[1, 2, 3]", "[1, 2, 3, 4]"),
        ("ctx.review1.passed and", "ctx.review1.passed  and"),
        // A comment line at the start of a step's `-` line, and one after a step.
        (
            "  - transform: {value: \"ctx.review1",
            "# note\n  - transform: {value: \"ctx.review1",
        ),
        ("output: written1}\n", "output: written1}\n    # note\n"),
    ];
    for (from, to) in edits {
        let new = BASE.replacen(from, to, 1);
        assert!(
            try_reuse(FILE, &new, kept(BASE)).is_some(),
            "`{from}` → `{to}` reuses"
        );
        assert_same(&new, kept(BASE));
    }
    // A new text equal to the old one moves the AST to the new file id.
    let same = try_reuse(FILE, BASE, kept(BASE)).unwrap_or_else(|| panic!("reused"));
    assert_eq!(same.pipelines[0].span.file, FILE);
}

/// What reuse cannot be sure of is loaded whole: an edit across steps, in the last step, in
/// the pipeline's own keys, one that breaks the step, or an anchor.
#[test]
fn other_edits_load_the_whole_text() {
    let edits = [
        (
            "  # a comment between steps\n",
            "  - transform: {value: \"1\"}\n",
        ),
        ("ctx.total + 1", "ctx.total + 2"),
        ("description: steps", "description: all steps"),
        ("max_parallel: 4", "max_parallel: [4"),
        ("max_parallel: 4", "max_parallel: &n 4"),
        (
            "output: tagged1\n",
            "output: tagged1\n  - transform: {value: \"1\"}\n",
        ),
    ];
    for (from, to) in edits {
        let new = BASE.replacen(from, to, 1);
        assert!(
            try_reuse(FILE, &new, kept(BASE)).is_none(),
            "`{from}` → `{to}` loads whole"
        );
        assert_same(&new, kept(BASE));
    }
}

/// A step nested near the YAML depth limit: alone it would nest a few levels less than in its
/// document, so it is loaded whole, and the result is the whole load's either way.
#[test]
fn a_step_near_the_nesting_limit_is_loaded_whole() {
    for levels in [100, 123, 124, 125, 126, 127, 130] {
        let deep = format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
        let new = BASE.replacen("[1, 2, 3]", &deep, 1);
        assert_same(&new, kept(BASE));
        if levels >= 124 {
            assert!(
                try_reuse(FILE, &new, kept(BASE)).is_none(),
                "{levels} levels"
            );
        }
    }
}

const PIECES: &[&str] = &[
    "x",
    " ",
    "  ",
    "\n",
    "\n  - ",
    "- ",
    "#c",
    ": ",
    "{",
    "}",
    "[",
    "]",
    "'",
    "\"",
    ",",
    "&a ",
    "*a",
    "---\n",
    "ctx.review1",
    "!expr ",
    "      max_parallel: 3\n",
    "transform",
    "é",
    "\t",
    "output: o\n",
    "|\n",
    ">-\n   ",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Any edit: the reusing load equals the whole load (AST and diagnostics).
    #[test]
    fn any_edit_loads_as_the_whole_text(
        at in 0usize..BASE.len(),
        cut in 0usize..12,
        piece in proptest::sample::select(PIECES),
    ) {
        let start = (0..=at).rev().find(|&i| BASE.is_char_boundary(i)).unwrap_or(0);
        let end = (start + cut..=BASE.len()).find(|&i| BASE.is_char_boundary(i)).unwrap_or(BASE.len());
        let new = format!("{}{}{}", &BASE[..start], piece, &BASE[end..]);
        assert_same(&new, kept(BASE));
        // And again from the edited text, when it loads clean.
        if clean_load(&new).is_some() {
            let again = format!("{}{}", &new[..start.min(new.len())], &new[start.min(new.len())..]);
            assert_same(&again, kept(&new));
        }
    }
}
