//! The formatter's round-trip property for the YAML dialects (pipeline and recipe rules, both on
//! every input): whatever formats, formats again to the same text (idempotence), and re-loads
//! to the same values as the input. A refusal is fine, a PW0900 ("the formatter could not
//! rewrite this file faithfully", which its help calls a formatter bug) is a finding. The
//! property is `pipewright_fmt::round_trip::check`, which the minimiser
//! (`crates/pipewright-fmt/examples/fuzz_minimize.rs`) shares. Both key orders (`[fmt]
//! key_order`) are checked.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipewright_fmt::round_trip::{check, Failure};
use pipewright_fmt::rules::DialectRules;
use pipewright_fmt::Options;
use pipewright_syntax::SourceMap;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let modes = [Options::CANONICAL, Options::PRESERVE];
    let dialects: [(&str, &dyn DialectRules); 2] = [
        ("pipeline", &pipewright_pipeline::fmt_rules::PipelineRules),
        ("recipe", &pipewright_recipe::fmt_rules::RecipeRules),
    ];
    for ((dialect, rules), options) in dialects
        .into_iter()
        .flat_map(|d| modes.map(|o| (d, o)))
    {
        match check(text, rules, options) {
            Ok(Ok(())) => {}
            Ok(Err(diags)) => {
                let mut sources = SourceMap::new();
                sources.add("fuzz.yaml", text);
                pipewright_fuzz::render_all(&diags, &sources);
            }
            // A known PW0900 may be let through so a campaign looks for other failures.
            Err(Failure::Unfaithful { .. }) if pipewright_fuzz::pw0900_allowed() => {}
            Err(f) => panic!("{dialect}, {options:?}, {}: {text:?}\n{f:#?}", f.kind()),
        }
    }
});
