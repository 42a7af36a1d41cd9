//! Every verb goes through the dialect registry: a dialect that cannot do a verb yet is named,
//! in words, and the file is never mistaken for another dialect's.

use crate::common::*;

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("write {name}: {e}"));
}

const MEOW: &str = "[main]\nname = \"m\"\n\n[[main.steps]]\nid = \"a\"\nexecutor = \"shell\"\ncommand = \"true\"\n";

const STATE_MACHINE: &str = "{\"id\": \"s\", \"initialStep\": \"a\", \"steps\": {}}\n";

/// One small file per dialect built in its own crate, for the refusal below.
const SAMPLES: &[(&str, &str, &str)] = &[
    ("meow", "flow.meow.toml", MEOW),
    ("state-machine", "sm.json", STATE_MACHINE),
];

/// Every verb a dialect cannot do is refused in words naming the dialect (`graph` and `run`:
/// exit 2; `check`: PW0007), never as another dialect's error. The (dialect, verb) pairs come
/// from the registry. Every dialect does every verb today; a dialect that stops doing one
/// (or a new one that does not yet) fails here until it has a sample and its refusal is right.
#[test]
fn a_verb_a_dialect_cannot_do_is_refused_in_words() {
    use pipewright_dialect::Verb;
    let d = tempdir();
    for dialect in pipewright_registry::DIALECTS {
        let name = dialect.name();
        let missing: Vec<Verb> = [Verb::Check, Verb::Fmt, Verb::Graph, Verb::Run]
            .into_iter()
            .filter(|v| !dialect.supports(*v))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let Some((_, file, source)) = SAMPLES.iter().find(|(n, _, _)| *n == name) else {
            panic!("dialect {name} cannot {missing:?}: add a sample file to SAMPLES");
        };
        write(d.path(), file, source);
        for verb in missing {
            if verb == Verb::Check {
                let o = run_in(d.path(), &["check", file]);
                assert_eq!(o.status.code(), Some(1), "{}", text(&o));
                assert!(
                    stdout(&o).contains(&format!(
                        "the {name} dialect cannot be checked by this version"
                    )),
                    "{}",
                    text(&o)
                );
                continue;
            }
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
    }
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
