//! Formats the files named on the command line to stdout (a development aid); YAML files
//! after `--recipe` are recipes, before it pipelines.

use pipewright_fmt::{format_source, Dialect};
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
            Dialect::StateMachine
        } else if path.ends_with(".toml") {
            Dialect::Meow
        } else if recipe {
            Dialect::Recipe
        } else {
            Dialect::Pipeline
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
