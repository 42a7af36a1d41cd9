//! Rough timing of the formatter's phases on a ~1 MB file (a development aid).

use pipewright_syntax::FileId;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).unwrap_or_default();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let t = Instant::now();
    let (docs, _) = pipewright_yaml::load(FileId(0), &text, Default::default());
    println!("load: {:?} ({} docs)", t.elapsed(), docs.len());
    let t = Instant::now();
    let mut n = 0;
    for _ in 0..2000 {
        n += pipewright_r1::parse("ctx.x + 1")
            .map(|e| e.to_string().len())
            .unwrap_or(0);
    }
    println!("2000 r1 parses: {:?} {n}", t.elapsed());
    let t = Instant::now();
    let f = pipewright_fmt::format_source(FileId(0), &text, pipewright_fmt::Dialect::Pipeline);
    println!(
        "format: {:?} {}",
        t.elapsed(),
        f.map(|f| f.output.len()).unwrap_or(0)
    );
    phases(&text);
}

fn phases(text: &str) {
    let rules = pipewright_fmt::rules::pipeline::PipelineRules;
    let t = Instant::now();
    let Ok(mut cst) = pipewright_fmt::cst::build(FileId(0), text) else {
        return;
    };
    println!("build: {:?}", t.elapsed());
    let t = Instant::now();
    let out = pipewright_fmt::print::print(&mut cst, &rules);
    println!("print: {:?}", t.elapsed());
    let t = Instant::now();
    let (docs, _) = pipewright_yaml::load(FileId(0), &out, Default::default());
    println!("reload: {:?}", t.elapsed());
    let t = Instant::now();
    let c = pipewright_fmt::trivia::comment_texts(&out, &docs);
    println!("comments: {:?} {}", t.elapsed(), c.len());
    let t = Instant::now();
    let roots: Vec<_> = cst.docs.iter().map(|d| d.root.as_ref()).collect();
    let r = pipewright_fmt::verify::same_docs(&roots, &docs, &rules);
    println!("compare: {:?} {:?}", t.elapsed(), r.is_ok());
}
