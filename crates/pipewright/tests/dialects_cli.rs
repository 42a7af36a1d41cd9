//! Every verb goes through the dialect registry: a dialect that cannot do a verb yet is named,
//! in words, and the file is never mistaken for another dialect's.

mod common;
use common::*;

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("write {name}: {e}"));
}

const MEOW: &str = "[main]\nname = \"m\"\n\n[[main.steps]]\nid = \"a\"\nexecutor = \"shell\"\ncommand = \"true\"\n";

/// One small file per dialect that is not built on every verb yet.
const SAMPLES: &[(&str, &str, &str)] = &[("meow", "flow.meow.toml", MEOW)];

/// Every verb a dialect cannot do yet is refused in words naming the dialect (`graph` and `run`:
/// exit 2; `check`: PW0007), never as another dialect's error. The pairs come from the registry,
/// so the test follows the dialects as they grow; while any dialect lacks a verb, it is tested.
#[test]
fn a_verb_a_dialect_cannot_do_yet_is_refused_in_words() {
    use pipewright_dialect::Verb;
    let d = tempdir();
    let mut tested = 0;
    for (name, file, source) in SAMPLES {
        write(d.path(), file, source);
        let dialect = pipewright_dialect::by_name(name).unwrap_or_else(|| panic!("{name}"));
        for verb in [Verb::Graph, Verb::Run] {
            if dialect.supports(verb) {
                continue;
            }
            tested += 1;
            let o = run_in(d.path(), &[verb.name(), file]);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{} {file}: {}",
                verb.name(),
                text(&o)
            );
            let err = stderr(&o);
            assert!(
                err.contains(&format!(
                    "{} does not support {name} files yet",
                    verb.name()
                )),
                "{} {file}: {err}",
                verb.name()
            );
            assert!(!err.contains("YAML"), "{} {file}: {err}", verb.name());
        }
        if !dialect.supports(Verb::Check) {
            tested += 1;
            let o = run_in(d.path(), &["check", file]);
            assert_eq!(o.status.code(), Some(1), "{}", text(&o));
            assert!(
                stdout(&o).contains(&format!(
                    "the {name} dialect cannot be checked by this version"
                )),
                "{}",
                text(&o)
            );
        }
    }
    assert!(
        tested > 0,
        "every dialect does every verb: this test has nothing left to test"
    );
}

#[test]
fn dialect_flag_takes_the_registry_names() {
    let d = tempdir();
    write(d.path(), "r.yaml", "name: r\ndescription: d\nversion: \"1.0.0\"\nsteps:\n  - id: a\n    type: bash\n    command: echo hi\n");
    let o = run_in(d.path(), &["check", "--dialect", "recipe", "r.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run_in(d.path(), &["check", "--dialect", "recipes", "r.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains("unknown dialect `recipes`")
            && err.contains("pipeline, recipe, state-machine, meow"),
        "{err}"
    );
}
