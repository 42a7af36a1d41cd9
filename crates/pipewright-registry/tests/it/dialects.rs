//! What every registered dialect must bring. A dialect's directories are named by its name
//! without dashes (`state-machine` → `testdata/statemachine/`, fuzz target `statemachine_load`).

use pipewright_dialect::{Dialect, Source, Verb};
use pipewright_registry::DIALECTS;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn dir_name(d: &dyn Dialect) -> String {
    d.name().replace('-', "")
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn names_are_unique_and_usable_as_arguments() {
    let mut seen = BTreeMap::new();
    for d in DIALECTS {
        assert!(
            d.name().chars().all(|c| c.is_ascii_lowercase() || c == '-'),
            "{}: a name is lowercase words joined by dashes",
            d.name()
        );
        assert!(seen.insert(d.name(), ()).is_none(), "{} twice", d.name());
        assert_eq!(
            pipewright_registry::by_name(d.name()).map(|x| x.name()),
            Some(d.name())
        );
    }
    assert_eq!(pipewright_registry::names().len(), DIALECTS.len());
}

#[test]
fn every_code_is_owned_by_one_dialect_and_explained_with_examples() {
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    for d in DIALECTS {
        assert!(!d.codes().is_empty(), "{} declares no code", d.name());
        for c in d.codes() {
            if let Some(other) = owner.insert(c.code, d.name()) {
                panic!("{} is declared by {other} and {}", c.code, d.name());
            }
            assert!(
                c.code.starts_with("PW") && c.code.len() == 6,
                "{}: {}",
                d.name(),
                c.code
            );
            assert!(!c.title.is_empty(), "{} has no title", c.code);
            let e = c.explanation;
            assert!(
                e.starts_with(&format!("# {}", c.code)),
                "{}: the explanation opens with its code",
                c.code
            );
            assert!(
                e.contains("Wrong") && e.contains("Right"),
                "{}: the explanation shows a wrong and a right example",
                c.code
            );
        }
    }
}

#[test]
fn every_dialect_has_its_schema_file_in_step_with_the_code() {
    for d in DIALECTS {
        let path = repo().join(format!("schemas/{}.schema.json", d.name()));
        let on_disk =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut want = serde_json::to_string_pretty(&d.json_schema()).expect("serialises");
        want.push('\n');
        assert_eq!(
            on_disk,
            want,
            "{} is stale: regenerate it with `pipewright schema {}`",
            path.display(),
            d.name()
        );
    }
}

#[test]
fn every_dialect_has_a_loader_fuzz_target() {
    let manifest = std::fs::read_to_string(repo().join("fuzz/Cargo.toml")).expect("fuzz manifest");
    for d in DIALECTS {
        let target = format!("{}_load", dir_name(*d));
        let source = repo().join(format!("fuzz/fuzz_targets/{target}.rs"));
        assert!(source.is_file(), "{}: no {}", d.name(), source.display());
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "{}: fuzz/Cargo.toml has no [[bin]] {target}",
            d.name()
        );
    }
}

/// `testdata/<dialect>/ok` holds files that check clean and `err` files that do not; each is
/// detected as its own dialect, so a detector that claims too little or too much fails here.
#[test]
fn every_dialect_has_fixtures_it_detects_as_its_own() {
    for d in DIALECTS {
        let base = repo().join("testdata").join(dir_name(*d));
        for kind in ["ok", "err"] {
            let files = files_in(&base.join(kind));
            let workflows: Vec<&PathBuf> = files
                .iter()
                .filter(|p| {
                    p.extension()
                        .is_some_and(|e| ["yaml", "yml", "json", "toml"].iter().any(|x| e == *x))
                })
                .collect();
            assert!(
                !workflows.is_empty(),
                "{}: no fixtures in {}",
                d.name(),
                base.join(kind).display()
            );
            let detected = workflows
                .iter()
                .filter(|p| {
                    let text = std::fs::read_to_string(p).unwrap_or_default();
                    pipewright_registry::detect(&Source::new(p, &text))
                        .is_some_and(|x| x.name() == d.name())
                })
                .count();
            assert!(
                detected > 0,
                "{}: none of the fixtures in {} is detected as {}",
                d.name(),
                base.join(kind).display(),
                d.name()
            );
        }
        assert!(
            d.supports(Verb::Check),
            "{}: a registered dialect can at least be checked",
            d.name()
        );
    }
}

/// The CLI declares every dialect's `run` flags and backends on one `run` command: a name
/// two dialects (or a dialect and the shared backends) both claim would be ambiguous there.
#[test]
fn run_flags_and_backends_are_declared_once() {
    let mut flags = BTreeMap::new();
    let mut backends: BTreeMap<&str, &str> = pipewright_runtime::backend::SHARED
        .iter()
        .map(|(name, _)| (*name, "the shared backends"))
        .collect();
    for d in DIALECTS {
        assert_eq!(
            d.supports(Verb::Run),
            d.runtime().is_some(),
            "{}: a dialect that supports `run` has a runtime, and only then",
            d.name()
        );
        let Some(rt) = d.runtime() else { continue };
        for f in rt.flags() {
            if let Some(other) = flags.insert(f.long, d.name()) {
                panic!("--{} is declared by {other} and {}", f.long, d.name());
            }
            assert!(!f.help.is_empty() && !f.help.ends_with('.'), "--{}", f.long);
        }
        for b in rt.backends().map_or(&[][..], |f| f.backends) {
            for name in std::iter::once(&b.name).chain(b.aliases) {
                if let Some(other) = backends.insert(name, d.name()) {
                    panic!("backend `{name}` is declared by {other} and {}", d.name());
                }
            }
        }
    }
}
