//! Differential tests: wherever the fast path accepts an input, its documents and diagnostics
//! must equal those of the `saphyr-parser` reference path exactly.

use pipewright_syntax::FileId;
use pipewright_yaml::paths::{load_fast, load_reference};
use pipewright_yaml::{Document, Limits, Node, NodeKind};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

/// Runs both paths; panics on any difference. Returns whether the fast path was taken.
fn same(src: &str) -> bool {
    match compare(src) {
        Ok(taken) => taken,
        Err(msg) => panic!("{msg}"),
    }
}

fn compare(src: &str) -> Result<bool, String> {
    let reference = load_reference(FileId(0), src, Limits::default());
    match load_fast(FileId(0), src, Limits::default()) {
        None => Ok(false),
        Some(fast) => {
            if fast != reference {
                let (f, r) = (outline(&fast), outline(&reference));
                let at = f
                    .lines()
                    .zip(r.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                return Err(format!(
                    "fast path differs on {src:?} at line {at}\n--- fast:\n{f}\n--- reference:\n{r}"
                ));
            }
            Ok(true)
        }
    }
}

type Loaded = (Vec<Document>, Vec<pipewright_syntax::Diagnostic>);

fn outline((docs, diags): &Loaded) -> String {
    let mut out = String::new();
    for d in diags {
        out += &format!("diag {} {:?} {}\n", d.code, d.span().range(), d.message);
    }
    for d in docs {
        out += &format!("doc {:?}\n", d.span.range());
        let mut stack: Vec<(&Node, usize, &str)> = d.root.iter().map(|r| (r, 1, "")).collect();
        while let Some((n, depth, role)) = stack.pop() {
            let head = match &n.kind {
                NodeKind::Scalar(s) => format!("scalar {:?} {:?}", s.style, s.text),
                NodeKind::Seq(_) => "seq".to_string(),
                NodeKind::Map(_) => "map".to_string(),
            };
            out += &format!(
                "{}{role}{head} {:?} tag={:?} flow={}\n",
                "  ".repeat(depth),
                n.span.range(),
                n.tag.as_ref().map(|t| (&t.handle, &t.suffix)),
                n.flow
            );
            match &n.kind {
                NodeKind::Scalar(_) => {}
                NodeKind::Seq(items) => {
                    stack.extend(items.iter().rev().map(|i| (i, depth + 1, "- ")));
                }
                NodeKind::Map(entries) => {
                    for e in entries.iter().rev() {
                        stack.push((&e.value, depth + 2, "v "));
                        stack.push((&e.key, depth + 1, "k "));
                    }
                }
            }
        }
    }
    out
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            yaml_files(&p, out);
        } else if matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")) {
            out.push(p);
        }
    }
}

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// (files, fast-path hits, the paths that fell back)
fn run_dir(dir: &Path) -> (usize, usize, Vec<PathBuf>) {
    let mut files = Vec::new();
    yaml_files(dir, &mut files);
    let mut hits = 0;
    let mut missed = Vec::new();
    for f in &files {
        let Ok(src) = std::fs::read_to_string(f) else {
            continue;
        };
        if same(&src) {
            hits += 1;
        } else {
            missed.push(f.clone());
        }
    }
    (files.len(), hits, missed)
}

/// Whether the reference path reports a YAML-level problem (syntax, nesting, anchors), or the
/// text uses a construct the fast path leaves to it on purpose.
fn needs_reference(src: &str) -> bool {
    let (_, diags) = load_reference(FileId(0), src, Limits::default());
    diags
        .iter()
        .any(|d| matches!(d.code, "PW0001" | "PW0003" | "PW0004"))
        || src.contains('\t')
        || src.contains(" &")
        || src.contains(" *")
}

#[test]
fn testdata_agrees_and_pipelines_take_the_fast_path() {
    let root = manifest().join("../../testdata");
    let (n, hits, missed) = run_dir(&root);
    eprintln!("testdata: {hits}/{n} files on the fast path; fell back: {missed:#?}");
    assert!(n > 50, "testdata not found under {}", root.display());
    for f in &missed {
        let rel = f.strip_prefix(&root).unwrap_or(f);
        let src = std::fs::read_to_string(f).unwrap_or_default();
        if rel.starts_with("pipeline") || rel.starts_with("recipe") || rel.starts_with("run") {
            assert!(
                needs_reference(&src),
                "{} should take the fast path",
                rel.display()
            );
        }
    }
}

#[test]
fn corpus_agrees() {
    let root = manifest().join("../../../shared/corpus");
    if !root.is_dir() {
        eprintln!("no corpus at {}; skipped", root.display());
        return;
    }
    let (n, hits, missed) = run_dir(&root);
    eprintln!(
        "corpus: {hits}/{n} files on the fast path ({:.1}%); fell back: {missed:#?}",
        100.0 * hits as f64 / n.max(1) as f64
    );
}

/// Texts to edit: the snippets, a generated pipeline, and every testdata and corpus file.
fn bases() -> &'static Vec<String> {
    static BASES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    BASES.get_or_init(|| {
        let mut out: Vec<String> = SNIPPETS.iter().map(|(s, _)| s.to_string()).collect();
        out.push(generated(3000));
        let mut files = Vec::new();
        yaml_files(&manifest().join("../../testdata"), &mut files);
        yaml_files(&manifest().join("../../../shared/corpus"), &mut files);
        out.extend(files.iter().filter_map(|f| std::fs::read_to_string(f).ok()));
        out
    })
}

/// A pipeline like the benchmark's, about `bytes` long.
fn generated(bytes: usize) -> String {
    let mut s = String::from(
        "schema: Review\nfields:\n  passed: {type: bool, required: true}\n  notes: {type: string}\n---\npipeline: big\nsteps:\n",
    );
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(&format!(
            "  - agent:\n      prompt: \"Review part {i} of {{ctx.doc}}.\"\n      schema: Review\n      output: review{i}\n  - transform: {{value: \"ctx.review{i}.passed and 'OK' or 'NO'\", output: verdict{i}}}\n  # a comment\n  - for_each:\n      over: ctx.review{i}.tags\n      do: {{transform: {{value: \"item + ' (' + ctx.verdict{i} + ')'\"}}}}\n      notes: |\n        line one {i}\n          indented\n\n        last\n  - tool: {{name: file__write, args: {{path: 'out{i}.txt', content: !expr ctx.tagged{i}}}, output: written{i}}}\n"
        ));
        i += 1;
    }
    s
}

#[test]
fn generated_pipeline_takes_the_fast_path() {
    let src = generated(200_000);
    assert!(same(&src), "the generated pipeline must take the fast path");
}

/// Every construct the fast path claims, and the edges around it. Each must either agree or
/// fall back; the ones marked `true` must take the fast path.
const SNIPPETS: &[(&str, bool)] = &[
    ("a: 1\n", true),
    ("a:\nb: \n- x\n", false),
    ("a:\nb:   # c\nc: 1", true),
    ("a:\n  - x\n  -\n  - \n  - y\n", true),
    ("a:\n  - x\n  -   # c\n  - y\n", true),
    ("k:\n- a\n- b\nz: 1\n", true),
    ("k:\n-\n- b\n", true),
    ("k:\n- # c\n- b\n", true),
    ("k:\n- a: 1\n  b: 2\n- c\n", true),
    ("# c\n\n  a: 1\n", true),
    ("---\na: 1\n...\n---\n--- x\n---\n", true),
    ("---\n...\n", true),
    ("--- # c\n---\n", true),
    ("a: 1\n...\nb: 2\n", true),
    ("", true),
    ("# only\n", true),
    ("x", true),
    ("x\n", true),
    ("\"x\"\n", true),
    ("!tag\na: 1\n", true),
    ("a: !tag\n  b: 1\n", true),
    ("a: !tag\n  - 1\n", true),
    ("a: !!str\nb: !x\n", true),
    ("a: !!str\n  x\n", true),
    ("a: !!int 3\nb: !expr ctx.a # c\n", true),
    ("a: !expr \"x\"   # c\nb: !e 'y'\n", true),
    ("- - x\n  - y\n- a: 1\n  b: 2\n", true),
    ("- - - deep\n", true),
    ("a: {}\nb: []\nc: {x}\nd: [a: 1]\ne: {a: , b: }\n", true),
    ("a: [1, 2,]\nb: { x: 1, }\n", true),
    ("a: {x, y}\nb: {x , y: 1}\n", true),
    ("a: { x: 1,   }\n", true),
    ("a: { x: 1, # c\n  }\n", true),
    ("a: [\n  1,\n  2\n]\n", true),
    ("a: {\n  b: 1,\n  c: [x, y],\n}\n", true),
    ("a: {b: {c: {d: [1, [2, [3]]]}}}\n", true),
    ("a: [b, {c: d}, [e]]\n", true),
    ("a: {q: !expr ctx.é, n: 'it''s'}\n", true),
    ("a: [!t x, !t [y], !t {z: 1}, !t ]\n", true),
    ("a: [\"x\" , 'y']\n", true),
    ("a: [a: \"x\", b: c]\n", true),
    ("a: [a: [1], b: {c: d}]\n", true),
    ("key with spaces: v\n", true),
    ("a: b:c\nd: http://x.y/z\n", true),
    ("a: x#y\nb: x # y\nc: '#'\nd: \"#\"\n", true),
    ("a: \"x \\\" y\" # note\nb: 'it''s' # other\n", true),
    (
        "a: \"\\t\\n\\\\\\/\\x41\\u00e9\\U0001F600\\N\\_\\L\\P\\0\\a\\b\\v\\f\\r\\e\\ \"\n",
        true,
    ),
    ("a: \"bad \\q\"\n", false),
    ("a: \"\\ud800\"\n", false),
    ("a: \"one\n  two\n\n  three  \n  \"\n", true),
    ("a: \"one \\\n  two\"\n", true),
    ("a: 'one\n  two\n\n\n  three'\n", true),
    ("- \"x\n  y\"\n", true),
    ("a: plain\n  continued\n\n  more\n", true),
    ("a: plain\n  continued: no\n", false),
    ("a: plain # c\n  continued\n", false),
    ("- a\n  b\n- c\n", true),
    ("a:\n  b\n  c\n", true),
    ("a: |\n  x\n  y\n", true),
    ("a: |-\n  x\n\n", true),
    ("a: |+\n  x\n\n\n", true),
    ("a: >\n  x\n  y\n\n  z\n   more\n  w\n", true),
    ("a: >-\n  hello\n  {ctx.x}\n", true),
    ("a: >+\n  x\n", true),
    ("a: |2\n    x\n   y\n", true),
    ("a: |1-\n  x\n", true),
    ("a: |-2\n   x\n", true),
    ("- |\n  x\n- >\n  y\n", true),
    ("- |2\n   x\n", true),
    ("a: |\n  x", true),
    ("a: |+\n  x", true),
    ("a: |-\n  x", true),
    ("a: |\n\n  x\n", true),
    ("a: |\n  x\n  # not a comment\n# comment\nb: 1\n", true),
    ("a: |  # c\n  x\n", true),
    ("a: |\n    x\n  y\n", false),
    ("a: |\nb: 1\n", false),
    ("a: |\n  x\n   \n  y\n", true),
    ("a: |\n  x\n \nb: 1\n", true),
    ("a: >\n  x\n\n\n", true),
    ("a: |\n  é\nb: ü\n", true),
    ("--- |\n  x\n", true),
    ("--- >\n x\n", true),
    ("|\n x\n", true),
    (
        "a: 1\r\nb:\r\n  - x\r\n  - \"y\r\n    z\"\r\nc: |\r\n  l1\r\n  l2\r\n",
        true,
    ),
    ("\u{feff}a: 1\n", true),
    ("\u{feff}# c\n- x\n", true),
    ("é: ü\nñ: [ö, 'ä']\nx: \"€\" # ß\n", true),
    ("a: 1\nb: 2\na: 3\n", true),
    ("a: {x: 1, x: 2}\nb:\n  c: 1\n  c: 2\n", true),
    ("a: &x 1\nb: *x\n", false),
    ("%YAML 1.2\n---\na: 1\n", false),
    ("? a\n: b\n", false),
    ("a:\tb\n", false),
    ("a: [1, 2\n", false),
    ("a: b: c\n", false),
    ("a: 1\n b: 2\n", false),
    ("a: 1\n- x\n", false),
    ("- x\na: 1\n", false),
    ("[a]: 1\n", false),
    ("a: \"x\"y\n", false),
    ("a: \"x\"#y\n", false),
    ("a: 'x\n", false),
    ("a: - b\n", false),
    ("a:\n  - x\n - y\n", false),
    ("a: {b: [}\n", false),
    ("a: !<tag:x> y\n", false),
    ("a: ! x\n", false),
    ("a: !a!b x\n", false),
    ("a: -1\nb: -\n", false),
    ("a: ~\nb: null\nc: true\nd: 0x10\ne: 1.5\n", true),
    ("- -x\n- ?y\n- :z\n", true),
    ("a:    \n\n\nb: 1\n", true),
    ("a:\n\n  b: 1\n", true),
    ("a: x   \nb: 'y'   \n", true),
    ("---\n# c\n...\n", true),
    ("...\na: 1\n", true),
    ("--- x\n...\n--- y\n", true),
    ("--- {a: 1}\n", true),
    ("--- [a]\n--- 'q'\n", true),
    ("a: [a,\n  b]\n", true),
    ("a: [a\n  b]\n", false),
    ("a: {b: 1\n  , c: 2}\n", true),
    ("a: x\n\n\n", true),
    ("- x\n\n- y\n\n\n", true),
    ("a:\n- x\n-\n", true),
    ("a:\n  -\n", true),
    ("a:\n  - b:\n    c: 1\n", true),
    ("a:\n  - b:\n      c: 1\n    d: 2\n", true),
    ("'a b': 1\n\"c\": 2\n'it''s':\n", true),
    ("\"a\" : 1\n", true),
    ("a : 1\n", true),
    ("k:\n- |2\n    x\n- >-\n  y\n", false),
    ("k: !t\n- a\n", false),
    ("k: !t\n  - a\n", true),
    ("- !t\n  a: 1\n- !t\n  - x\n", true),
    ("- ! a\n", false),
    ("\"a\\tb\": 1\n'x''y': 2\n", true),
    ("a: [[1, 2], [3, [4, {b: c}]]]  # c\n", true),
    ("a: {b: [1,\n    2], c: {d: e}} # c\nf: g\n", true),
    ("a: [1, # one\n  2, # two\n  ]\n", true),
    ("a: {b: c}   \nd: [e]   \n", true),
    ("a: !t []\nb: !t {}\nc: !t [] # c\n", true),
    ("a: {x}  # c\n", true),
    ("a: {x, y  # c\n  }\n", false),
    ("a: [x: y  # c\n  ]\n", false),
    ("a: \"x\"  # c\nb: 'y'  # c\n", true),
    ("- \"a\": 1\n  'b': 2\n", true),
    ("- - - a: 1\n      b: 2\n    - c\n  - d\n- e\n", true),
    ("a:\n  b:\n    c:\n      d: 1\n  e: 2\nf: 3\n", true),
    ("a: |\n  x\n\n\n\nb: 1\n", true),
    ("a: |+\n  x\n\n\n\nb: 1\n", true),
    ("a: >\n\n  x\n\n  y\n", true),
    ("a: >\n  x\n\n   y\n  z\n", true),
    ("a: >-\n   x\n   y\n", true),
    ("a: |\n  x\n  ---\n  y\n", true),
    ("a: |\n  x\n---\nb: 1\n", true),
    ("a: plain\n---\nb: 1\n", true),
    ("a: 'q\n---\n'\n", false),
    ("a: \"x\\\n\n  y\"\n", true),
    ("a: \"x \n \t y\"\n", false),
    ("a: \"\\x4g\"\n", false),
    ("a: \"\\u00\"\n", false),
    ("a:  \"x\"\n", true),
    ("a: x:y\nb: x: y\n", false),
    ("a: -x\nb: ?y\nc: :z\n", true),
    ("a: 1 # c\n# c2\n  # c3\nb: 2\n", true),
    ("a: b\n  # deeper comment\nc: d\n", true),
    ("- a\n  # c\n- b\n", true),
    ("a: [b, c]x\n", false),
    ("a: [b]: c\n", false),
    ("{a: 1}\n", true),
    ("[a, b]\n", true),
    ("[a, b]\n# c\n", true),
    ("- {a: 1, b: [2, 3]}\n- [x, {y: z}]\n", true),
    ("a: 1\n\n\n...\n\n---\nb: 2\n...\n", true),
    ("\u{feff}---\na: 1\n", true),
    ("a: \u{feff}x\n", false),
    ("a: é\u{3000}\nb: |\n  x\u{a0}\n", true),
    (
        "a:\r\n  b: >\r\n    x\r\n    y\r\n\r\n    z\r\n  c: 'p\r\n    q'\r\n",
        true,
    ),
    ("a: x\ry\n", false),
    ("a: !expr\n \"x\"   # c\nb: !e\n  'y'\n", true),
    ("- !t\n  \"x\" # c\n", true),
];

#[test]
fn snippets_agree() {
    let mut wrong = Vec::new();
    let mut differ = Vec::new();
    for (src, must) in SNIPPETS {
        match compare(src) {
            Ok(taken) => {
                if *must && !taken {
                    wrong.push(*src);
                }
            }
            Err(msg) => differ.push(msg),
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n\n"));
    assert!(
        wrong.is_empty(),
        "these should take the fast path: {wrong:#?}"
    );
}

#[test]
fn deep_nesting_falls_back_to_the_reference_diagnostic() {
    for src in [
        format!("{}{}", "[".repeat(300), "]".repeat(300)),
        format!("{}{}", "{a: ".repeat(300), "}".repeat(300)),
        (0..300)
            .map(|i| format!("{}k:\n", "  ".repeat(i)))
            .collect::<String>(),
        format!("{}x\n", "- ".repeat(300)),
    ] {
        assert!(!same(&src));
        let (_, diags) = pipewright_yaml::load(FileId(0), &src, Limits::default());
        assert!(diags.iter().any(|d| d.code == "PW0003"), "{diags:?}");
    }
}

#[test]
fn custom_depth_limits_agree() {
    for max_depth in 0..5 {
        let limits = Limits {
            max_depth,
            ..Limits::default()
        };
        for src in [
            "x\n",
            "a: 1\n",
            "a: {b: [c]}\n",
            "a:\n  b:\n    c: [d]\n",
            "- - - x\n",
            "[[[[x]]]]\n",
        ] {
            let reference = load_reference(FileId(0), src, limits);
            if let Some(fast) = load_fast(FileId(0), src, limits) {
                assert_eq!(fast, reference, "{src:?} with max_depth {max_depth}");
            }
        }
    }
}

#[test]
fn deepest_fast_nesting_fits_a_small_stack() {
    let docs = [
        format!("{}{}", "[".repeat(64), "]".repeat(64)),
        format!("{}x{}", "{a: ".repeat(64), "}".repeat(64)),
        (0..64)
            .map(|i| format!("{}k:\n", "  ".repeat(i)))
            .collect::<String>()
            + &"  ".repeat(64)
            + "v\n",
        format!("{}x\n", "- ".repeat(64)),
        format!("{}x\n", "- [".repeat(32)) + &"]".repeat(32),
    ];
    let handle = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || {
            let mut taken = 0;
            for d in &docs {
                if same(d) {
                    taken += 1;
                }
            }
            taken
        })
        .expect("spawn");
    let taken = handle.join().expect("no stack overflow");
    assert!(taken >= 3, "only {taken} deep documents took the fast path");
}

// ---- generated documents -----------------------------------------------------------------

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9_.]{0,8}",
        "[a-z]{1,4}( [a-z#:]{1,4}){0,3}",
        Just("true".to_string()),
        Just("~".to_string()),
        Just("-1".to_string()),
        Just("é ü".to_string()),
        "\"[a-z \\\\'\"#:]{0,6}\"".prop_map(|s| s),
        "'[a-z \"#:]{0,6}'",
        "'[a-z]{0,3}''[a-z]{0,3}'",
        "\"[a-z]{0,3}\\\\[nt\"\\\\][a-z]{0,3}\"",
        Just("!expr ctx.a".to_string()),
        Just("!!str 3".to_string()),
        Just("[a, b]".to_string()),
        Just("{k: v, w: [1, 2]}".to_string()),
        Just("[x: 1, {y}]".to_string()),
        Just("".to_string()),
    ]
}

#[derive(Debug, Clone)]
enum Tree {
    Leaf(String),
    Block(String, u8),
    Map(Vec<(String, Tree)>),
    Seq(Vec<Tree>),
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        4 => scalar().prop_map(Tree::Leaf),
        1 => ("[a-z ]{0,8}( [a-z]{1,5}){0,2}", 0u8..12).prop_map(|(s, m)| Tree::Block(s, m)),
    ];
    leaf.prop_recursive(5, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(("[a-z]{1,3}|'[a-z ]{1,3}'", inner.clone()), 1..5)
                .prop_map(Tree::Map),
            prop::collection::vec(inner, 1..5).prop_map(Tree::Seq),
        ]
    })
}

/// Renders in block style with `ind` spaces of indentation; `decor` picks variations
/// (comments, blank lines, indentless sequences, CRLF later).
fn render(t: &Tree, ind: usize, out: &mut String, decor: &mut impl Iterator<Item = u8>) {
    let pad = " ".repeat(ind);
    match t {
        Tree::Leaf(s) => {
            out.push_str(s);
            if decor.next().unwrap_or(0).is_multiple_of(5) {
                out.push_str("  # c");
            }
            out.push('\n');
        }
        Tree::Block(s, m) => {
            let head = ["|", ">", "|-", ">+", "|+", ">-", "|2", ">1-"][usize::from(*m % 8)];
            out.push_str(head);
            out.push('\n');
            let extra = if head.contains('2') { 2 } else { 1 };
            for (i, w) in s.split(' ').enumerate() {
                if i % 3 == 2 {
                    out.push('\n');
                }
                out.push_str(&" ".repeat(ind + extra + usize::from(i % 4 == 3)));
                out.push_str(w);
                out.push('\n');
            }
            if m % 3 == 0 {
                out.push('\n');
            }
        }
        Tree::Map(entries) => {
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(&pad);
                }
                out.push_str(k);
                out.push(':');
                match v {
                    Tree::Leaf(_) | Tree::Block(..) => {
                        out.push(' ');
                        render(v, ind, out, decor);
                    }
                    Tree::Seq(_) if decor.next().unwrap_or(0).is_multiple_of(2) => {
                        out.push('\n');
                        out.push_str(&pad);
                        render(v, ind, out, decor);
                    }
                    _ => {
                        out.push('\n');
                        if decor.next().unwrap_or(0).is_multiple_of(4) {
                            out.push_str("\n# between\n");
                        }
                        out.push_str(&pad);
                        out.push_str("  ");
                        render(v, ind + 2, out, decor);
                    }
                }
            }
        }
        Tree::Seq(items) => {
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&pad);
                }
                out.push_str("- ");
                render(v, ind + 2, out, decor);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn generated_documents_agree(
        t in tree(),
        decor in prop::collection::vec(any::<u8>(), 64),
        crlf in any::<bool>(),
        docs in 1usize..3,
    ) {
        let mut src = String::new();
        for d in 0..docs {
            if d > 0 || decor[0] % 3 == 0 {
                src.push_str("---\n");
            }
            let mut it = decor.iter().copied().cycle();
            render(&t, 0, &mut src, &mut it);
        }
        if crlf {
            src = src.replace('\n', "\r\n");
        }
        same(&src);
    }

    /// Small random edits of valid documents: near-misses exercise the give-up paths.
    #[test]
    fn edited_documents_agree(
        base in any::<prop::sample::Index>(),
        window in any::<prop::sample::Index>(),
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), 0u8..3, prop::sample::select(
                b" \n\r\t-:#'\"[]{},|>!?&*%.ab1\\".to_vec(),
            )),
            1..8,
        ),
    ) {
        let all = bases();
        let text = &all[base.index(all.len())];
        // A window of at most ~1500 bytes starting at a line.
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .filter(|&i| i < text.len())
            .collect();
        let from = if starts.is_empty() { 0 } else { starts[window.index(starts.len())] };
        let mut to = (from + 1500).min(text.len());
        while !text.is_char_boundary(to) {
            to -= 1;
        }
        let mut src: Vec<u8> = text.as_bytes()[from..to].to_vec();
        for (at, op, b) in edits {
            let i = if src.is_empty() { 0 } else { at.index(src.len()) };
            match op {
                0 => src.insert(i, b),
                1 if i < src.len() => {
                    src.remove(i);
                }
                _ if i < src.len() => src[i] = b,
                _ => src.push(b),
            }
        }
        if let Ok(text) = String::from_utf8(src) {
            same(&text);
        }
    }

    #[test]
    fn arbitrary_text_agrees_or_falls_back(
        src in "[a-c1.:\\-#'\" \n\\[\\]{},!|>?&*%é\t\r\\\\]{0,60}"
    ) {
        same(&src);
    }
}
