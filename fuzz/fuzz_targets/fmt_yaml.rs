//! The formatter's round-trip property for the YAML dialects (pipeline and recipe rules, both on
//! every input): whatever formats, formats again to the same text (idempotence), and re-loads
//! to the same values as the input. A refusal is fine, a PW0900 ("the formatter could not
//! rewrite this file faithfully", which its help calls a formatter bug) is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipewright_fmt::{format_source, verify, yaml_rules, Dialect};
use pipewright_syntax::{FileId, SourceMap};
use pipewright_yaml::{load, Limits, Node};

fn body(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for dialect in [Dialect::Pipeline, Dialect::Recipe] {
        let Some(rules) = yaml_rules(dialect) else {
            return;
        };
        let formatted = match format_source(FileId(0), text, dialect) {
            Ok(f) => f,
            Err(diags) => {
                pipewright_fuzz::no_internal_error(&diags, text, dialect);
                let mut sources = SourceMap::new();
                sources.add("fuzz.yaml", text);
                pipewright_fuzz::render_all(&diags, &sources);
                continue;
            }
        };
        let out = &formatted.output;
        match format_source(FileId(0), out, dialect) {
            Ok(again) => assert!(
                again.output == *out && !again.changed,
                "{dialect:?}: not idempotent on {text:?}\nfirst: {out:?}\nsecond: {:?}",
                again.output
            ),
            Err(d) => {
                panic!("{dialect:?}: the output of {text:?} does not format: {out:?}\n{d:#?}")
            }
        }
        let (before, _) = load(FileId(0), body(text), Limits::default());
        let (after, _) = load(FileId(0), body(out), Limits::default());
        let roots: Vec<Option<&Node>> = before.iter().map(|d| d.root.as_ref()).collect();
        if let Err(why) = verify::same_docs(&roots, &after, rules) {
            panic!("{dialect:?}: {text:?} formatted as {out:?} loads differently: {why}");
        }
    }
});
