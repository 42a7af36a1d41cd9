//! Shrinks an input that breaks the formatter's round-trip property (a `fmt_yaml` fuzz
//! finding) to a small one that breaks it the same way: same dialect, same kind of failure.
//!
//!   cargo run --release -p pipewright-fmt --example fuzz_minimize -- FILE [pipeline|recipe]
//!   cargo run --release -p pipewright-fmt --example fuzz_minimize -- --sweep DIR...
//!
//! `--sweep` checks every file under the directories (another target's fuzz corpus, say) and
//! prints those that break the property, each with its shrunk form.
//!
//! Prints the shrunk input (as a Rust string literal) and how it fails. Deletes chunks of
//! lines, then of characters, halving the chunk size, until no deletion keeps the failure
//! (delta debugging), then tries to make each remaining character a plain `x`.

use pipewright_fmt::round_trip::{check, Failure};
use pipewright_fmt::rules::DialectRules;

/// The YAML dialects the fuzz target formats with.
#[derive(Debug, Clone, Copy)]
enum Dialect {
    Pipeline,
    Recipe,
}

impl Dialect {
    fn rules(self) -> &'static dyn DialectRules {
        match self {
            Dialect::Pipeline => &pipewright_pipeline::fmt_rules::PipelineRules,
            Dialect::Recipe => &pipewright_recipe::fmt_rules::RecipeRules,
        }
    }
}

fn failure(text: &str, dialect: Dialect) -> Option<Failure> {
    check(text, dialect.rules(), pipewright_fmt::Options::CANONICAL).err()
}

/// Deletes chunks of `units`, from halves down to single units, while the failure stays of
/// `kind`; returns whether anything was deleted.
fn shrink(units: &mut Vec<String>, keeps: &dyn Fn(&str) -> bool) -> bool {
    let mut any = false;
    let mut size = units.len().div_ceil(2).max(1);
    loop {
        let mut at = 0;
        while at < units.len() {
            let end = (at + size).min(units.len());
            let candidate: String = units[..at].iter().chain(&units[end..]).cloned().collect();
            if keeps(&candidate) {
                units.drain(at..end);
                any = true;
            } else {
                at += size;
            }
        }
        if size == 1 {
            return any;
        }
        size = size.div_ceil(2);
    }
}

fn files_under(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn sweep(dirs: &[String]) {
    let mut files = Vec::new();
    for d in dirs {
        files_under(std::path::Path::new(d), &mut files);
    }
    files.sort();
    let mut broken = 0;
    for f in &files {
        let Ok(bytes) = std::fs::read(f) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        // A file that takes long is a finding of its own (the last name printed when a sweep
        // seems stuck).
        let started = std::time::Instant::now();
        if std::env::var_os("SWEEP_TRACE").is_some() {
            eprintln!("{}", f.display());
        }
        for dialect in [Dialect::Pipeline, Dialect::Recipe] {
            if let Some(found) = failure(&text, dialect) {
                broken += 1;
                let kind = found.kind();
                let small = minimize(text.clone(), dialect, kind);
                println!("{}: {dialect:?}, {kind}: {small:?}", f.display());
                break;
            }
        }
        let took = started.elapsed();
        if took > std::time::Duration::from_millis(500) {
            println!("{}: slow, {took:?}", f.display());
        }
    }
    println!("{} files, {broken} break the property", files.len());
}

fn main() {
    let all: Vec<String> = std::env::args().skip(1).collect();
    if all.first().map(String::as_str) == Some("--sweep") {
        sweep(&all[1..]);
        return;
    }
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: fuzz_minimize FILE [pipeline|recipe]");
        std::process::exit(2);
    };
    let text = match std::fs::read(&path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    let dialects: Vec<Dialect> = match args.next().as_deref() {
        Some("pipeline") => vec![Dialect::Pipeline],
        Some("recipe") => vec![Dialect::Recipe],
        _ => vec![Dialect::Pipeline, Dialect::Recipe],
    };
    let Some((dialect, kind)) = dialects
        .iter()
        .find_map(|&d| failure(&text, d).map(|f| (d, f.kind())))
    else {
        println!("{path}: formats and reformats the same in every dialect tried");
        return;
    };
    let current = minimize(text, dialect, kind);
    println!("{dialect:?}, {kind}: {current:?}");
    if let Some(f) = failure(&current, dialect) {
        println!("{f:#?}");
    }
}

/// Shrinks `text` while it fails in `dialect` with a failure of `kind`.
fn minimize(text: String, dialect: Dialect, kind: &str) -> String {
    let keeps = |t: &str| failure(t, dialect).is_some_and(|f| f.kind() == kind);
    let mut current = text;
    loop {
        let before = current.clone();
        let mut lines: Vec<String> = current.split_inclusive('\n').map(String::from).collect();
        shrink(&mut lines, &keeps);
        let mut chars: Vec<String> = lines.concat().chars().map(String::from).collect();
        shrink(&mut chars, &keeps);
        for i in 0..chars.len() {
            let c = chars[i].clone();
            if c.chars().all(|c| c == 'x' || c.is_ascii_whitespace()) {
                continue;
            }
            chars[i] = "x".into();
            if !keeps(&chars.concat()) {
                chars[i] = c;
            }
        }
        current = chars.concat();
        if current == before {
            return current;
        }
    }
}
