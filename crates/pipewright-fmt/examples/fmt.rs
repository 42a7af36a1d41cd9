//! Formats the files named on the command line to stdout (a development aid); YAML files
//! after `--recipe` are recipes, before it pipelines.

use pipewright_fmt::{format_source, Syntax};
use pipewright_syntax::FileId;

// The allocator the `pipewright` binary ships with, so peak memory measured here matches it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut recipe = false;
    for path in std::env::args().skip(1) {
        if path == "--recipe" {
            // YAML files after this flag are recipes.
            recipe = true;
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            eprintln!("{path}: cannot read");
            continue;
        };
        let dialect = if path.ends_with(".json") {
            Syntax::Json
        } else if path.ends_with(".toml") {
            Syntax::Toml
        } else if recipe {
            Syntax::Yaml(&pipewright_recipe::fmt_rules::RecipeRules)
        } else {
            Syntax::Yaml(&pipewright_pipeline::fmt_rules::PipelineRules)
        };
        match format_source(
            FileId(0),
            &text,
            dialect,
            pipewright_fmt::Options::CANONICAL,
        ) {
            Ok(f) => print!("{}", f.output),
            Err(d) => eprintln!("{path}: {d:#?}"),
        }
    }
}
