//! The generated input shared by the `check` bench and the `check_phases` example, so both
//! measure the same text.

use std::fmt::Write;

/// A realistic mix of step kinds, repeated until the text reaches `bytes`.
pub(crate) fn generate(bytes: usize) -> String {
    let mut s = String::from(
        "schema: Review\nfields:\n  passed: {type: bool, required: true}\n  notes: {type: string}\n  tags: {type: list, of: {type: string}}\n---\npipeline: big\ndescription: generated\nsteps:\n",
    );
    let mut i = 0;
    while s.len() < bytes {
        for line in [
            "  - agent:".to_string(),
            format!("      prompt: \"Review part {i} of {{ctx.doc}} and list tags.\""),
            "      schema: Review".to_string(),
            format!("      output: review{i}"),
            format!("  - transform: {{value: \"ctx.review{i}.passed and 'OK' or 'NEEDS WORK'\", output: verdict{i}}}"),
            "  - for_each:".to_string(),
            format!("      over: ctx.review{i}.tags"),
            "      max_parallel: 4".to_string(),
            "      on_error: \"retry(2)\"".to_string(),
            format!("      do: {{transform: {{value: \"item + ' (' + ctx.verdict{i} + ')'\"}}}}"),
            "      collect: {transform: {value: \"join(pipe, ', ')\"}}".to_string(),
            format!("      output: tagged{i}"),
            format!("  - tool: {{name: file__write, args: {{path: \"out{i}.txt\", content: !expr ctx.tagged{i}}}, output: written{i}}}"),
        ] {
            let _ = writeln!(s, "{line}");
        }
        i += 1;
    }
    s
}
