//! The reference runtimes read workflow files with PyYAML (YAML 1.1); pipewright reads them as
//! YAML 1.2. `fmt` must write what both read the same way.
//!
//! The property, for every input: PyYAML loads the *formatted* text, and the value it sees equals
//! the value pipewright's own loader sees in it (compared as JSON, with the types JSON lacks
//! spelled out — see `tests/it/pyyaml_load.py`), which in turn is the value pipewright sees in the
//! *input*, R1 expressions compared in canonical form (`verify::same_docs`, asserted here too).
//! The input's YAML 1.2 meaning is the reference, not PyYAML's reading of it: where the two
//! loaders disagree about an input, the formatter keeps what `check` verified and writes it so
//! that the runtime reads that too (`010` is respelled `10`); an input PyYAML cannot load at all
//! must still come out loadable. Such inputs are listed on stderr for information. One
//! exception: a plain `yes`/`no`/`on`/`off` in a recipe (True/False to the runner, a string to
//! pipewright) stays plain, so each reader keeps its own value (PW0541 reports it; quoting
//! would change the runner's).
//!
//! Each dialect is read with its runtime's loader: recipes with `yaml.safe_load_all`, pipelines
//! with SafeLoader minus the `yes/no/on/off` booleans (the pipeline runtime's change).
//!
//! PyYAML is required, not optional: without it these tests fail (`.ci/run` installs it).

use crate::common::yaml_files;
use crate::common::{format_source, yaml_rules, Dialect};
use pipewright_fmt::verify;
use pipewright_syntax::FileId;
use pipewright_yaml::{Limits, Node, NodeKind, ScalarValue};
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn loader(d: Dialect) -> &'static str {
    match d {
        Dialect::Recipe => "recipe",
        _ => "pipeline",
    }
}

/// What PyYAML makes of each text: `Ok(documents)` or `Err(message)`. One python process for
/// the whole batch (starting one per text would dominate the run time).
fn pyyaml(jobs: &[(&str, &'static str)]) -> Vec<Result<Value, String>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/pyyaml_load.py");
    let input: Vec<Value> = jobs
        .iter()
        .map(|(text, l)| json!({"text": text, "loader": l}))
        .collect();
    let mut child = Command::new("python3")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run python3 ({e}): these tests need python3 with PyYAML; .ci/run installs them (apt-get install python3-yaml)")
        });
    let payload = serde_json::to_vec(&input).expect("JSON of strings");
    // A script that stops early (PyYAML missing) closes its input: its status says why.
    let wrote = child.stdin.take().expect("piped stdin").write_all(&payload);
    let out = child.wait_with_output().expect("python3 runs");
    assert!(
        out.status.code() != Some(3),
        "PyYAML is not installed for python3: these tests need it; .ci/run installs it (apt-get install python3-yaml, or pip install pyyaml)"
    );
    wrote.expect("python3 reads its input");
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    assert_eq!(results.len(), jobs.len());
    results
        .into_iter()
        .map(|r| match (r.get("ok"), r.get("error")) {
            (Some(v), _) => Ok(v.clone()),
            (_, Some(e)) => Err(e.as_str().unwrap_or("?").to_string()),
            _ => Err(format!("unexpected answer {r}")),
        })
        .collect()
}

/// JSON for an integer the way the script encodes Python's (exact beyond 2^53 as text).
fn int(i: i64) -> Value {
    if i.unsigned_abs() <= 1 << 53 {
        json!(i)
    } else {
        json!({"!int": i.to_string()})
    }
}

fn float(f: f64) -> Value {
    if f.is_nan() {
        json!({"!float": "nan"})
    } else if f.is_infinite() {
        json!({"!float": if f > 0.0 { "inf" } else { "-inf" }})
    } else {
        // By its bits, as the script writes it (decimal JSON numbers were read back rounded).
        json!({"!float": format!("{:016x}", f.to_bits())})
    }
}

/// The value pipewright's YAML 1.2 loader sees, in the script's encoding.
fn meaning(n: &Node) -> Value {
    let local = n
        .tag
        .as_ref()
        .filter(|t| t.handle == "!")
        .map(|t| format!("!{}", t.suffix));
    let core_str = n
        .tag
        .as_ref()
        .is_some_and(|t| t.handle == "tag:yaml.org,2002:" && t.suffix == "str");
    let v = match &n.kind {
        NodeKind::Scalar(s) if local.is_some() || core_str => Value::String(s.text.to_string()),
        NodeKind::Scalar(s) => match s.resolve() {
            ScalarValue::Null => Value::Null,
            ScalarValue::Bool(b) => json!(b),
            ScalarValue::Int(i) => int(i),
            ScalarValue::Float(f) => float(f),
            ScalarValue::Str(t) => json!(t),
        },
        NodeKind::Seq(items) => Value::Array(items.iter().map(meaning).collect()),
        NodeKind::Map(entries) => {
            let mut m = Map::new();
            for e in entries {
                // Duplicate keys: the last one wins, as in PyYAML.
                m.insert(key(&e.key), meaning(&e.value));
            }
            Value::Object(m)
        }
    };
    match local {
        Some(tag) => json!({ tag: v }),
        None => v,
    }
}

fn key(n: &Node) -> String {
    match meaning(n) {
        Value::String(s) => s,
        Value::Bool(b) => format!("!bool:{b}"),
        Value::Null => "!null:".into(),
        other => match n.as_scalar().map(|s| s.resolve()) {
            Some(ScalarValue::Int(i)) => format!("!int:{i}"),
            Some(ScalarValue::Float(f)) => float_key(f),
            _ => format!("!key:{other}"),
        },
    }
}

/// A float key as the script writes one (its bits: no decimal spelling to agree on).
fn float_key(f: f64) -> String {
    if f.is_nan() {
        "!float:nan".into()
    } else {
        format!("!float:{:016x}", f.to_bits())
    }
}

/// Whether pipewright reads the same values in `before` and `after` (expressions canonical).
fn same_to_pipewright(before: &str, after: &str, d: Dialect) -> Result<(), String> {
    let (a, _) = pipewright_yaml::load(FileId(0), before, Limits::default());
    let (b, _) = pipewright_yaml::load(FileId(0), after, Limits::default());
    let roots: Vec<_> = a.iter().map(|d| d.root.as_ref()).collect();
    verify::same_docs(&roots, &b, yaml_rules(d).ok_or("not a YAML dialect")?)
}

fn meaning_of_text(text: &str) -> Value {
    let (docs, _) = pipewright_yaml::load(FileId(0), text, Limits::default());
    Value::Array(
        docs.iter()
            .map(|d| d.root.as_ref().map_or(Value::Null, meaning))
            .collect(),
    )
}

/// Equal values; an integer beyond 2^53 pipewright keeps as a float (it has no big integers)
/// equals the integer with the same value.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Number(p), Value::Number(q)) => p.as_f64() == q.as_f64(),
        (Value::Number(p), Value::Object(o)) | (Value::Object(o), Value::Number(p)) => {
            let big = o.get("!int").and_then(|s| s.as_str()?.parse::<f64>().ok());
            let bits = o
                .get("!float")
                .and_then(|s| u64::from_str_radix(s.as_str()?, 16).ok())
                .map(f64::from_bits);
            (big.is_some() && big == p.as_f64()) || (bits.is_some() && bits == p.as_f64())
        }
        _ => a == b,
    }
}

/// [`same`], where a string of `want` that PyYAML reads as a boolean when written plain
/// (`yes`, `Off`: a recipe's plain `no` is kept plain by fmt, PW0541 reports it) may also be
/// read as that boolean: each reader keeps its own value of such a word.
fn same_or_bool_word(v: &Value, want: &Value) -> bool {
    match (v, want) {
        (Value::Bool(b), Value::String(w)) if pipewright_fmt::quote::pyyaml_bool_word(w) => {
            *b == pyyaml_truth(w)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_or_bool_word(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            // PyYAML's boolean key (`!bool:true`, see `meaning_of_text`) may be a plain word.
            let key_of = |k: &str| {
                y.get(k).or_else(|| {
                    let b = k.strip_prefix("!bool:")?;
                    y.iter()
                        .find(|(w, _)| {
                            pipewright_fmt::quote::pyyaml_bool_word(w)
                                && b == pyyaml_truth(w).to_string()
                        })
                        .map(|(_, q)| q)
                })
            };
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| key_of(k).is_some_and(|q| same_or_bool_word(p, q)))
        }
        _ => same(v, want),
    }
}

/// PyYAML's value of a boolean word (`yes`, `On`: true).
fn pyyaml_truth(w: &str) -> bool {
    matches!(w.to_ascii_lowercase().as_str(), "yes" | "on")
}

/// Every file the differential test formats, with its dialect: the fmt fixtures (inputs and
/// expected outputs), the other YAML fixtures, the examples, and the shared corpus read in
/// place.
fn files() -> Vec<(PathBuf, Dialect)> {
    let mut out = Vec::new();
    let r = root();
    for (dir, d) in [
        (r.join("testdata/fmt/pipeline"), Dialect::Pipeline),
        (r.join("testdata/fmt/cli"), Dialect::Pipeline),
        (r.join("testdata/fmt/recipe"), Dialect::Recipe),
        // The checker's and runner's fixtures too: more shapes, and wrong values on purpose.
        (r.join("testdata/pipeline"), Dialect::Pipeline),
        (r.join("testdata/run"), Dialect::Pipeline),
        (r.join("testdata/recipe"), Dialect::Recipe),
        (r.join("examples"), Dialect::Pipeline),
        (PathBuf::from("/work/shared/corpus/reyn"), Dialect::Pipeline),
        (
            PathBuf::from("/work/shared/corpus/amplifier"),
            Dialect::Recipe,
        ),
    ] {
        let mut v = Vec::new();
        yaml_files(&dir, &mut v);
        out.extend(v.into_iter().map(|p| (p, d)));
    }
    out
}

#[test]
fn formatted_files_mean_to_pyyaml_what_their_input_means_to_pipewright() {
    let mut cases = Vec::new();
    for (path, dialect) in files() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        // Files that do not parse (a CLI fixture) are not formatted: nothing to compare.
        let Ok(f) = format_source(
            FileId(0),
            &text,
            dialect,
            pipewright_fmt::Options::CANONICAL,
        ) else {
            continue;
        };
        cases.push((path, dialect, text, f.output));
    }
    assert!(cases.len() > 40, "fixtures or corpus missing");
    let mut jobs = Vec::new();
    for (_, d, text, out) in &cases {
        jobs.push((text.as_str(), loader(*d)));
        jobs.push((out.as_str(), loader(*d)));
    }
    let loaded = pyyaml(&jobs);
    let mut failures = Vec::new();
    for ((path, d, text, out), pair) in cases.iter().zip(loaded.chunks(2)) {
        match &pair[0] {
            Ok(v) if same(v, &meaning_of_text(text)) => {}
            Ok(_) => eprintln!(
                "note: PyYAML reads the input {} differently",
                path.display()
            ),
            Err(e) => eprintln!("note: PyYAML cannot load the input {}: {e}", path.display()),
        }
        if let Err(e) = same_to_pipewright(text, out, *d) {
            failures.push(format!(
                "{}: the output means something else: {e}",
                path.display()
            ));
        }
        let want = meaning_of_text(out);
        match &pair[1] {
            // A plain `no` in a recipe is False to PyYAML and "no" to pipewright, in the input
            // and the output alike: fmt keeps each reader's value (PW0541 reports the
            // disagreement).
            Ok(v) if same_or_bool_word(v, &want) => {}
            Ok(v) => failures.push(format!(
                "{}: PyYAML reads the output as\n{v}\nbut the input means\n{want}\n--- output\n{out}",
                path.display()
            )),
            Err(e) => failures.push(format!(
                "{}: PyYAML cannot load the output: {e}\n--- output\n{out}",
                path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn fuzz_inputs_pyyaml_reads_as_pipewright_does_format_to_the_same_for_pyyaml() {
    // The fmt_yaml fuzz target's reproducers and seeds are odd YAML (tags, anchors, empty keys,
    // block scalars of blanks), and the target does not ask PyYAML. Where PyYAML reads an
    // input as pipewright does, it must read the output the same way too.
    // `PW_PYYAML_SWEEP=DIR` adds every file of DIR (on demand: a fuzz corpus, thousands of
    // files, which `fuzz/run.sh` grows in fuzz/corpus/fmt_yaml).
    let mut files = Vec::new();
    for dir in ["fuzz/regressions/fmt_yaml", "fuzz/seeds/fmt_yaml"] {
        all_files(&root().join(dir), &mut files);
    }
    if let Some(dir) = std::env::var_os("PW_PYYAML_SWEEP") {
        all_files(Path::new(&dir), &mut files);
    }
    let mut cases = Vec::new();
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for d in [Dialect::Pipeline, Dialect::Recipe] {
            if let Ok(f) = format_source(FileId(0), &text, d, pipewright_fmt::Options::CANONICAL) {
                cases.push((path.clone(), d, text.clone(), f.output));
            }
        }
    }
    let mut jobs = Vec::new();
    for (_, d, text, out) in &cases {
        jobs.push((text.as_str(), loader(*d)));
        jobs.push((out.as_str(), loader(*d)));
    }
    let loaded = pyyaml(&jobs);
    let mut compared = 0;
    let mut failures = Vec::new();
    for ((path, _, text, out), pair) in cases.iter().zip(loaded.chunks(2)) {
        if !matches!(&pair[0], Ok(v) if same(v, &meaning_of_text(text))) {
            continue;
        }
        compared += 1;
        match &pair[1] {
            Ok(v) if same(v, &meaning_of_text(out)) => {}
            other => failures.push(format!(
                "{}: PyYAML reads the output as {other:?}\n--- output\n{out}",
                path.display()
            )),
        }
    }
    eprintln!(
        "{compared} of {} formatted inputs read the same by PyYAML",
        cases.len()
    );
    assert!(compared >= 10, "only {compared} inputs compared");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Every file under `dir` (fuzz inputs have no extension).
fn all_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            all_files(&p, out);
        } else {
            out.push(p);
        }
    }
    out.sort();
}

/// Scalars rich in what YAML 1.1 and 1.2 read differently: indicators, `:`, `?`, `#`, flow
/// punctuation, digits and number punctuation, and the 1.1 keywords whole or as prefixes.
fn scalar() -> impl Strategy<Value = String> {
    let words = prop::sample::select(vec![
        "yes",
        "No",
        "ON",
        "off",
        "y",
        "n",
        "Y",
        "~",
        "null",
        "true",
        "010",
        "0o10",
        "08",
        "1_000",
        "1:30",
        "1:30.5",
        "12:30:45",
        ".5",
        "-.5",
        "+1",
        "0x1F",
        "0b11",
        "1e3",
        "1.5e3",
        "1.0",
        "2001-12-14",
        "2001-12-14 21:59:43.10 -5",
        "=",
        "<<",
        ".inf",
        "-.inf",
        ".NaN",
        "Ship it?",
        "echo ok?",
        "- x",
        "a: b",
        "a #b",
        "? k",
        "%x",
        "@x",
        "---",
        "...",
    ]);
    prop_oneof![
        3 => words.clone().prop_map(str::to_string),
        4 => "[a-z0-9 :?#,\\[\\]{}._+=<>~'\"!&*|%@`yYnNeEx-]{0,8}",
        2 => (words, "[a-z0-9 :?#,._-]{0,3}").prop_map(|(w, s)| format!("{w}{s}")),
        1 => "[ -~\t\n\u{85}\u{a0}\u{2028}é]{0,6}",
    ]
}

/// `v` as the input writes it: plain when asked and pipewright reads the plain text back as
/// the same scalar text (whatever type it resolves to), otherwise double-quoted.
fn write_input(v: &str, plain: bool, in_flow: bool) -> String {
    if plain && !v.is_empty() {
        let probe = if in_flow {
            format!("k: [{v}]\n")
        } else {
            format!("k: {v}\n")
        };
        let (docs, diags) = pipewright_yaml::load(FileId(0), &probe, Limits::default());
        let text = docs
            .first()
            .and_then(|d| d.root.as_ref()?.get("k"))
            .and_then(|n| {
                if in_flow {
                    n.as_seq()?.first()
                } else {
                    Some(n)
                }
            })
            .and_then(|n| n.as_scalar().filter(|_| n.tag.is_none()))
            .map(|s| &*s.text);
        if diags.is_empty() && text == Some(v) {
            return v.to_string();
        }
    }
    pipewright_fmt::quote::double(v)
}

prop_compose! {
    /// A document with generated scalars as block mapping values and keys, block sequence
    /// items, and flow mapping values, keys and flow sequence items.
    fn document()(
        recipe in any::<bool>(),
        vals in prop::collection::vec((scalar(), any::<bool>()), 6),
    ) -> (Dialect, String) {
        let w = |i: usize, flow: bool| write_input(&vals[i].0, vals[i].1, flow);
        let body = format!(
            "  value: {}\n  {}: key\n  list:\n    - {}\n  flow: {{v: {}, {}: k, l: [{}]}}\n",
            w(0, false), w(1, false), w(2, false), w(3, true), w(4, true), w(5, true),
        );
        if recipe {
            (Dialect::Recipe, format!("name: gen\ncontext:\n{body}"))
        } else {
            (Dialect::Pipeline, format!("pipeline: gen\nsteps: []\nextra:\n{body}"))
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// One python process per case, each case a batch of documents.
    #[test]
    fn generated_scalars_mean_the_same_to_pyyaml_and_format_idempotently(
        docs in prop::collection::vec(document(), 16),
    ) {
        let mut outs = Vec::new();
        for (d, text) in &docs {
            // Duplicate keys (two equal generated keys) are kept; anything else must load.
            let (_, diags) = pipewright_yaml::load(FileId(0), text, Limits::default());
            prop_assume!(diags.iter().all(|x| !x.is_error() || x.code == "PW0005"));
            let first = format_source(FileId(0), text, *d, pipewright_fmt::Options::CANONICAL)
                .map_err(|e| TestCaseError::fail(format!("{e:?}\n{text}")))?;
            let second = format_source(FileId(0), &first.output, *d, pipewright_fmt::Options::CANONICAL)
                .map_err(|e| TestCaseError::fail(format!("{e:?}\n{}", first.output)))?;
            prop_assert_eq!(&second.output, &first.output, "not idempotent:\n{}", text);
            same_to_pipewright(text, &first.output, *d)
                .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            outs.push((first.output, loader(*d)));
        }
        let jobs: Vec<(&str, &'static str)> = outs
            .iter()
            .zip(&docs)
            .flat_map(|((o, l), (_, text))| [(text.as_str(), *l), (o.as_str(), *l)])
            .collect();
        let loaded = pyyaml(&jobs);
        for ((out, _), pair) in outs.iter().zip(loaded.chunks(2)) {
            let want = meaning_of_text(out);
            // PyYAML's reading of the output is pipewright's, but for a plain `no` in a recipe,
            // kept plain: neither reader's value changes.
            match pair[1].clone() {
                Ok(v) => prop_assert!(same_or_bool_word(&v, &want), "PyYAML reads\n{}\nas {} but pipewright as {}", out, v, want),
                Err(e) => prop_assert!(false, "PyYAML cannot load\n{}\n{}", out, e),
            }
        }
    }
}

#[test]
fn a_plain_yaml11_boolean_keeps_its_value_for_both_readers() {
    // `parallel: no` is False to the recipe runner and "no" to pipewright: fmt must change
    // neither, so it stays plain; a quoted "no" (a string to both) stays quoted.
    let src = "name: r\nsteps:\n  - id: a\n    agent: foundation:x\n    prompt: hi\n    foreach: \"{{xs}}\"\n    parallel: no\n    description:   Yes\ncontext:\n  flags: [on, OFF, \"no\", 'yes', y]\n";
    for options in [
        pipewright_fmt::Options::CANONICAL,
        pipewright_fmt::Options::PRESERVE,
    ] {
        let out = format_source(FileId(0), src, Dialect::Recipe, options)
            .expect("formats")
            .output;
        assert!(out.contains("parallel: no\n"), "{out}");
        assert!(out.contains("description: Yes\n"), "{out}");
        assert!(out.contains("flags: [on, OFF, \"no\", "), "{out}");
        let again = format_source(FileId(0), &out, Dialect::Recipe, options).expect("formats");
        assert!(!again.changed, "idempotent: {out}");
        same_to_pipewright(src, &out, Dialect::Recipe).expect("same to pipewright");
        let loaded = pyyaml(&[(src, "recipe"), (out.as_str(), "recipe")]);
        match (&loaded[0], &loaded[1]) {
            (Ok(a), Ok(b)) => assert!(same(a, b), "PyYAML reads {a} then {b}"),
            other => panic!("{other:?}"),
        }
    }
}
