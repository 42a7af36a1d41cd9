//! The JSON Schemas (`pipewright schema DIALECT`, schemas/): the committed files are current,
//! they are valid draft 2020-12 schemas, every corpus and testdata file `check` accepts
//! validates against its dialect's schema, and files with structural errors do not.
//!
//! The files are converted to JSON the way editors see them: YAML by pipewright's YAML loader
//! (YAML 1.2 core scalars, one value per `---` document), TOML by the MEOW loader's tree.

use crate::common::{bin, stdout, text};
use pipewright_syntax::FileId;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const DIALECTS: [&str; 4] = ["pipeline", "recipe", "state-machine", "meow"];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schema_text(dialect: &str) -> String {
    let o = bin()
        .args(["schema", dialect])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(o.status.success(), "{}", text(&o));
    stdout(&o)
}

/// The dialect's schema as a draft 2020-12 validator, a draft 7 one and a draft 4 one: taplo
/// and older editors read schemas with draft 7 or even draft 4 semantics. The schemas use only
/// keywords that mean the same under draft 7; under draft 4 (no `if`, `then`, `const`) they are
/// looser, but must still accept every file the 2020-12 reading accepts.
fn validators(dialect: &str) -> [jsonschema::Validator; 3] {
    let schema: Value =
        serde_json::from_str(&schema_text(dialect)).unwrap_or_else(|e| panic!("{dialect}: {e}"));
    [
        jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{dialect}: {e}")),
        jsonschema::draft7::new(&schema).unwrap_or_else(|e| panic!("{dialect} as draft 7: {e}")),
        jsonschema::draft4::new(&schema).unwrap_or_else(|e| panic!("{dialect} as draft 4: {e}")),
    ]
}

#[test]
fn committed_schemas_are_current() {
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    for d in DIALECTS {
        let path = repo_root().join(format!("schemas/{d}.schema.json"));
        let now = schema_text(d);
        if update {
            std::fs::write(&path, &now).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(now.as_str()) {
            stale.push(format!("schemas/{d}.schema.json"));
        }
    }
    assert!(
        stale.is_empty(),
        "stale: {stale:?}; regenerate with `UPDATE_SCHEMAS=1 cargo test -p pipewright --test schemas` \
         (or `pipewright schema DIALECT > schemas/DIALECT.schema.json`)"
    );
}

#[test]
fn schemas_are_valid_draft_2020_12_schemas() {
    for d in DIALECTS {
        let schema: Value = serde_json::from_str(&schema_text(d)).unwrap_or_else(|e| panic!("{e}"));
        assert!(jsonschema::meta::is_valid(&schema), "{d}");
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
    }
}

#[test]
fn an_unknown_dialect_is_refused() {
    let o = bin()
        .args(["schema", "makefile"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("possible values: pipeline, recipe, state-machine, meow"));
}

fn toml_value(v: &toml_edit::Value) -> Value {
    match v {
        toml_edit::Value::String(s) => Value::from(s.value().as_str()),
        toml_edit::Value::Integer(i) => Value::from(*i.value()),
        toml_edit::Value::Float(f) => Value::from(*f.value()),
        toml_edit::Value::Boolean(b) => Value::from(*b.value()),
        toml_edit::Value::Datetime(d) => Value::from(d.value().to_string()),
        toml_edit::Value::Array(a) => a.iter().map(toml_value).collect(),
        toml_edit::Value::InlineTable(t) => t
            .iter()
            .map(|(k, v)| (k.to_string(), toml_value(v)))
            .collect(),
    }
}

fn toml_item(i: &toml_edit::Item) -> Value {
    match i {
        toml_edit::Item::None => Value::Null,
        toml_edit::Item::Value(v) => toml_value(v),
        toml_edit::Item::Table(t) => t
            .iter()
            .map(|(k, v)| (k.to_string(), toml_item(v)))
            .collect(),
        toml_edit::Item::ArrayOfTables(a) => a
            .iter()
            .map(|t| {
                t.iter()
                    .map(|(k, v)| (k.to_string(), toml_item(v)))
                    .collect::<Value>()
            })
            .collect(),
    }
}

/// The file's documents as JSON values (a YAML stream may hold several); `None` when the file
/// does not parse.
fn documents(path: &Path) -> Option<Vec<Value>> {
    let src = std::fs::read_to_string(path).ok()?;
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => serde_json::from_str(&src).ok().map(|v| vec![v]),
        Some("toml") => src
            .parse::<toml_edit::DocumentMut>()
            .ok()
            .map(|d| vec![toml_item(d.as_item())]),
        _ => {
            let (docs, diags) =
                pipewright_yaml::load(FileId(0), &src, pipewright_yaml::Limits::default());
            if diags.iter().any(|d| d.is_error()) {
                return None;
            }
            Some(
                docs.iter()
                    .filter_map(|d| d.root.as_ref().map(pipewright_yaml::to_json))
                    .collect(),
            )
        }
    }
}

fn dialect_of(path: &Path) -> Option<&'static str> {
    let src = std::fs::read_to_string(path).ok()?;
    pipewright_registry::detect(&pipewright_dialect::Source::new(path, &src)).map(|d| d.name())
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json" | "toml")
        ) {
            out.push(p);
        }
    }
}

/// The diagnostic codes a schema expresses, per dialect: unknown or ignored keys, wrong types,
/// missing required keys, values outside an enumeration. A file `check` reports one of these
/// in must fail its schema (an editor then marks what `check` would); a file without errors
/// and without these must pass it.
fn structural(dialect: &str) -> &'static [&'static str] {
    match dialect {
        "pipeline" => &[
            "PW0203", "PW0204", "PW0205", "PW0206", "PW0207", "PW0208", "PW0209", "PW0210",
            "PW0212", "PW0213", "PW0214", "PW0216", "PW0217", "PW0218", "PW0300", "PW0301",
            "PW0303", "PW0304",
        ],
        "recipe" => &["PW0502", "PW0503", "PW0504", "PW0512", "PW0518"],
        "state-machine" => &["PW0700", "PW0701", "PW0702", "PW0703", "PW0704", "PW0716"],
        "meow" => &[
            "PW0601", "PW0603", "PW0604", "PW0605", "PW0608", "PW0609", "PW0610", "PW0611",
            "PW0612", "PW0614", "PW0629",
        ],
        _ => &[],
    }
}

/// What `check --format json .` run in `dir` reports, by file: (code, severity) pairs.
fn check_dir(dir: &Path) -> BTreeMap<PathBuf, Vec<(String, String)>> {
    let o = bin()
        .current_dir(dir)
        .args(["check", "--format", "json", "."])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "check --format json in {}: {e}: {}",
            dir.display(),
            text(&o)
        )
    });
    let mut out: BTreeMap<PathBuf, Vec<(String, String)>> = BTreeMap::new();
    for d in report["diagnostics"].as_array().into_iter().flatten() {
        let Some(f) = d["file"].as_str() else {
            continue;
        };
        let Ok(path) = dir.join(f).canonicalize() else {
            continue;
        };
        out.entry(path).or_default().push((
            d["code"].as_str().unwrap_or("").to_string(),
            d["severity"].as_str().unwrap_or("").to_string(),
        ));
    }
    out
}

type Validators = Vec<(&'static str, [jsonschema::Validator; 3])>;

/// Validates every document of `path` against its dialect's schema: the dialect and the
/// errors; `None` for a file of no dialect, or one that does not parse. Panics when the
/// draft 2020-12 and the draft 7 verdicts differ, or draft 4 rejects a valid file.
fn schema_errors(path: &Path, validators: &Validators) -> Option<(&'static str, Vec<String>)> {
    let dialect = dialect_of(path)?;
    let [v, v7, v4] = &validators.iter().find(|(d, _)| *d == dialect)?.1;
    let docs = documents(path)?;
    let errors: Vec<String> = docs
        .iter()
        .flat_map(|doc| {
            v.iter_errors(doc)
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect::<Vec<_>>()
        })
        .collect();
    let valid7 = docs.iter().all(|doc| v7.is_valid(doc));
    assert_eq!(
        errors.is_empty(),
        valid7,
        "{}: the draft 7 reading of the {dialect} schema disagrees: {errors:?}",
        path.display()
    );
    if errors.is_empty() {
        assert!(
            docs.iter().all(|doc| v4.is_valid(doc)),
            "{}: valid, yet not under the draft 4 reading of the {dialect} schema",
            path.display()
        );
    }
    Some((dialect, errors))
}

fn all_validators() -> Validators {
    DIALECTS.iter().map(|d| (*d, validators(d))).collect()
}

/// Checks each directory under `root` holding workflow files (a directory at a time, so
/// references between files resolve), then compares each file's verdict with its schema's.
/// Returns how many files were clean and how many structurally wrong.
fn agree(root: &Path, dirs_of: impl Fn(&Path) -> PathBuf) -> (usize, usize) {
    let validators = all_validators();
    let mut all = Vec::new();
    files(root, &mut all);
    let dirs: BTreeSet<PathBuf> = all.iter().map(|p| dirs_of(p)).collect();
    let mut diags = BTreeMap::new();
    for d in &dirs {
        diags.extend(check_dir(d));
    }
    let (mut clean, mut wrong) = (0, 0);
    let mut failures = Vec::new();
    for p in &all {
        let Some((dialect, errors)) = schema_errors(p, &validators) else {
            continue;
        };
        let canon = p.canonicalize().unwrap_or_else(|_| p.clone());
        let found = diags.get(&canon).cloned().unwrap_or_default();
        let structural: Vec<&str> = found
            .iter()
            .map(|(c, _)| c.as_str())
            .filter(|c| structural(dialect).contains(c))
            .collect();
        let rejected = found.iter().any(|(_, s)| s == "error");
        if !structural.is_empty() {
            wrong += 1;
            if errors.is_empty() {
                failures.push(format!(
                    "{}: check reports {structural:?}, yet it matches the {dialect} schema",
                    p.display()
                ));
            }
        } else if !rejected {
            clean += 1;
            if !errors.is_empty() {
                failures.push(format!(
                    "{}: check accepts it, yet the {dialect} schema does not:\n  {}",
                    p.display(),
                    errors.join("\n  ")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    (clean, wrong)
}

#[test]
fn testdata_verdicts_agree_with_the_schemas() {
    let (clean, wrong) = agree(&repo_root().join("testdata"), |p| {
        p.parent()
            .map_or_else(|| p.to_path_buf(), Path::to_path_buf)
    });
    eprintln!("testdata: {clean} clean files validate, {wrong} structurally wrong ones fail");
    assert!(clean > 50 && wrong > 50, "{clean} clean, {wrong} wrong");
}

/// The corpus is checked a dialect folder at a time (its README: references resolve against
/// the dialect's folder).
#[test]
fn corpus_verdicts_agree_with_the_schemas() {
    let corpus = repo_root().join("../shared/corpus");
    if !corpus.is_dir() {
        eprintln!(
            "no corpus at {} (../shared/corpus); skipped",
            corpus.display()
        );
        return;
    }
    let (clean, wrong) = agree(&corpus, |p| {
        let rel = p.strip_prefix(&corpus).unwrap_or(p);
        rel.components()
            .next()
            .map_or_else(|| corpus.clone(), |c| corpus.join(c))
    });
    eprintln!("corpus: {clean} clean files validate, {wrong} structurally wrong ones fail");
    assert!(clean > 50, "{clean} clean, {wrong} wrong");
}
