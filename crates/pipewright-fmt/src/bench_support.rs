//! The generated input shared by `benches/fmt.rs` and `examples/profile.rs` (not part of the
//! API): a pipeline file of a given size, built by repeating steps that exercise comments,
//! flow/block choices, expressions and block scalars.

const STEPS: &str = r#"
  # a commented step
  - transform: {value: "a+b*2", output: x}   # trailing
  - agent:
      prompt: >-
        Summarize {ctx.doc}
        in two sentences.
      output: summary
  - tool:
      name: very_long_tool_name_for_testing
      args: {first_argument: "some value", second_argument: "another value", third: !expr "ctx.n+1"}
      output: result
  - for_each:
      over: ctx.reviewers
      on_error: "retry(2)"
      do: {agent: {prompt: "Review as {item}: {ctx.doc}", schema: Review}}
      collect: {transform: {value: "pipe"}}
  - match:
      on: "ctx.x>1"
      cases:
        "True": {pipeline: big, pass: {x: "ctx.x+1"}}
      default: {pipeline: small}
"#;

/// A pipeline file of at least `bytes` bytes (a schema document, then one pipeline).
pub fn pipeline_file(bytes: usize) -> String {
    let mut s = String::from(
        "schema: Review\nfields:\n  passed: {type: bool}\n---\npipeline: big\nsteps:\n",
    );
    while s.len() < bytes {
        s.push_str(STEPS);
    }
    s
}
