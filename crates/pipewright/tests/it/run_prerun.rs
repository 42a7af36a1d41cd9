//! A run says what it lacks before it starts (issue 22, item 3): a pipeline step that reads a
//! store nothing gives, a recipe's required context variable, a `--var` the workflow does not
//! declare. Exit 2, one message shape, nothing executed and no run store created.

use crate::common::*;
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("write {name}: {e}"));
}

/// Nothing ran: the file a step would write is absent, and there is no run store.
fn assert_nothing_ran(dir: &Path, made: &str) {
    assert!(!dir.join(made).exists(), "{made} was written");
    assert!(!dir.join(".pipewright").exists(), "a run store was created");
}

const DOC: &str = r#"pipeline: summarise
steps:
  - shell: {command: "echo started > started.txt"}
  - shell: {command: !expr "'echo ' + shell_quote(ctx.doc) + ' > made.txt'", output: made}
  - agent: {prompt: "Summarise {ctx.doc}"}
"#;

#[test]
fn a_pipeline_reading_a_store_nothing_gives_is_refused_before_it_starts() {
    let d = tempdir();
    write(d.path(), "doc.yaml", DOC);
    let o = run_in(d.path(), &["run", "doc.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains("error: pipeline `summarise` needs `doc`, which nothing gives it"),
        "{err}"
    );
    // Which step reads it, where, and what to pass.
    assert!(
        err.contains("`doc`: read as `ctx.doc` by the `shell` step at doc.yaml:4:"),
        "{err}"
    );
    assert!(err.contains("help: give it with --var doc=VALUE"), "{err}");
    assert_nothing_ran(d.path(), "started.txt");

    let o = run_in(d.path(), &["run", "doc.yaml", "--var", "doc=hello"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(read(&d.path().join("made.txt")), "hello\n");
}

#[test]
fn a_pipeline_store_that_is_written_defaulted_or_guarded_is_not_demanded() {
    let d = tempdir();
    write(
        d.path(),
        "guarded.yaml",
        r#"pipeline: guarded
steps:
  - transform: {value: "'early'", output: early}
  - transform: {value: "ctx.early + '!'"}
  - transform: {value: "get(ctx, 'title', 'untitled')", output: title}
  - transform: {value: "get(ctx, 'on', false) and ctx.never"}
  - transform: {value: "count(map([], x -> ctx.never))"}
  - for_each:
      over: "[]"
      on_error: abort
      do: {transform: {value: "ctx.never"}}
      collect: {transform: {value: "pipe"}}
  - shell: {command: !expr "'echo ' + ctx.never", on_error: continue}
  - transform: {value: "ctx.title"}
"#,
    );
    let o = run_in(d.path(), &["run", "guarded.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(stdout(&o).trim(), "\"untitled\"", "{}", text(&o));
}

#[test]
fn a_recipe_missing_a_required_input_is_refused_before_the_store_opens() {
    let d = tempdir();
    write(
        d.path(),
        "inputs.yaml",
        r#"name: inputs
description: declared inputs
version: "1.0.0"
context:
  topic: {type: string, required: true, description: "What to write about"}
  depth: {type: string, default: "shallow", description: "How deep"}
steps:
  - id: say
    type: bash
    command: "echo {{topic}}-{{depth}} > said.txt"
"#,
    );
    let o = run_in(d.path(), &["run", "inputs.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains("error: recipe `inputs` needs `topic`, which nothing gives it"),
        "{err}"
    );
    assert!(
        err.contains("help: give it with --var topic=VALUE"),
        "{err}"
    );
    assert!(!err.contains("`depth`"), "{err}");
    assert_nothing_ran(d.path(), "said.txt");
}

#[test]
fn a_var_the_recipe_does_not_declare_says_what_to_declare() {
    let d = tempdir();
    write(
        d.path(),
        "plain.yaml",
        r#"name: plain
description: declares one input
version: "1.0.0"
context:
  topic: "owls"
steps:
  - id: say
    type: bash
    command: "echo {{topic}} > said.txt"
"#,
    );
    let o = run_in(d.path(), &["run", "plain.yaml", "--var", "input=foo"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "error: recipe `plain` declares no context variable `input`; it declares `topic`"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "help: declare it under `context:` so the steps can read `{{input}}`: `input: \"\"`"
        ),
        "{err}"
    );
    assert_nothing_ran(d.path(), "said.txt");
    let o = run_in(d.path(), &["run", "plain.yaml", "--var", "topc=x"]);
    assert!(
        stderr(&o).contains("(did you mean `topic`?)"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_recipe_reading_an_undeclared_variable_says_to_declare_it_not_a_list_of_reserved_names() {
    let d = tempdir();
    write(
        d.path(),
        "undeclared.yaml",
        r#"name: undeclared
description: reads an input it does not declare
version: "1.0.0"
steps:
  - id: say
    type: bash
    command: "echo {{input}}"
"#,
    );
    let o = run_in(d.path(), &["run", "undeclared.yaml", "--var", "input=foo"]);
    // A file that does not check could not start: exit 2.
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = stderr(&o);
    assert!(!err.contains("expected one of"), "{err}");
    assert!(
        err.contains("help: declare it under `context:`: `input: \"\"`"),
        "{err}"
    );
}

#[test]
fn meow_shares_the_message_shape() {
    let d = tempdir();
    write(
        d.path(),
        "req.meow.toml",
        r#"[main]
[main.variables]
target = { required = true }

[[main.steps]]
id = "marker"
executor = "shell"
command = "touch started-{{target}}"
"#,
    );
    let o = run_in(d.path(), &["run", "req.meow.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains("error: workflow `main` needs `target`, which nothing gives it"),
        "{err}"
    );
    assert!(
        err.contains("help: give it with --var target=VALUE"),
        "{err}"
    );
    assert!(!d.path().join(".pipewright").exists(), "{err}");
    let o = run_in(d.path(), &["run", "req.meow.toml", "--var", "other=1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("declares no variable `other`; it declares `target`\nhelp: declare it under `[main.variables]`"),
        "{}",
        text(&o)
    );
}
