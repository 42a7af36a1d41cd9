//! Prints the node tree of a YAML file (or of stdin) with the exact span of every node.
//! `outline --bench fast|saphyr FILE N` instead loads FILE N times through one path (for
//! stable `valgrind --tool=callgrind` instruction counts).

use pipewright_syntax::FileId;
use pipewright_yaml::{load, Limits, Node, NodeKind};
use std::io::Read;

fn node(src: &str, n: &Node, depth: usize) {
    let pad = "  ".repeat(depth);
    let tag = n
        .tag
        .as_ref()
        .map(|t| format!(" {}", t.display()))
        .unwrap_or_default();
    let at = format!("{:?} {:?}", n.span.range(), src.get(n.span.range()));
    match &n.kind {
        NodeKind::Scalar(s) => println!("{pad}scalar{tag} {:?} {:?} @ {at}", s.style, s.text),
        NodeKind::Seq(items) => {
            println!("{pad}seq{tag} flow={} @ {at}", n.flow);
            for it in items {
                node(src, it, depth + 1);
            }
        }
        NodeKind::Map(entries) => {
            println!("{pad}map{tag} flow={} @ {at}", n.flow);
            for e in entries {
                node(src, &e.key, depth + 1);
                node(src, &e.value, depth + 2);
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--bench") {
        let src =
            std::fs::read_to_string(args.get(3).map_or("", String::as_str)).unwrap_or_default();
        let n: usize = args.get(4).and_then(|n| n.parse().ok()).unwrap_or(1);
        let mut nodes = 0usize;
        for _ in 0..n {
            let docs = if args.get(2).map(String::as_str) == Some("saphyr") {
                pipewright_yaml::paths::load_reference(FileId(0), &src, Limits::default()).0
            } else {
                pipewright_yaml::paths::load_fast(FileId(0), &src, Limits::default())
                    .map(|r| r.0)
                    .unwrap_or_default()
            };
            nodes += docs.len();
        }
        println!("{nodes} documents, {} bytes", src.len());
        return;
    }
    let mut src = String::new();
    match args.get(1).map(String::as_str) {
        Some("-") | None => {
            let _ = std::io::stdin().read_to_string(&mut src);
        }
        Some(path) => src = std::fs::read_to_string(path).unwrap_or_default(),
    }
    let fast = pipewright_yaml::paths::load_fast(FileId(0), &src, Limits::default()).is_some();
    println!("fast path: {fast}");
    let (docs, diags) = load(FileId(0), &src, Limits::default());
    for d in &diags {
        println!("diag {} {:?} {}", d.code, d.span().range(), d.message);
    }
    for (i, d) in docs.iter().enumerate() {
        println!("--- doc {i} {:?}", d.span.range());
        if let Some(r) = &d.root {
            node(&src, r, 0);
        }
    }
}
