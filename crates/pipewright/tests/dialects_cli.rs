//! Every verb goes through the dialect registry: a dialect that cannot do a verb yet is named,
//! in words, and the file is never mistaken for another dialect's.

mod common;
use common::*;

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("write {name}: {e}"));
}

const MEOW: &str = "[main]\nname = \"m\"\n\n[[main.steps]]\nid = \"a\"\nexecutor = \"shell\"\ncommand = \"true\"\n";
const STATE_MACHINE: &str = "{\"id\": \"s\", \"initialStep\": \"a\", \"steps\": {}}\n";

#[test]
fn graph_and_run_name_the_dialect_they_cannot_handle_yet() {
    let d = tempdir();
    write(d.path(), "flow.meow.toml", MEOW);
    write(d.path(), "sm.json", STATE_MACHINE);
    for (file, dialect) in [("flow.meow.toml", "meow"), ("sm.json", "state-machine")] {
        for verb in ["graph", "run"] {
            let o = run_in(d.path(), &[verb, file]);
            assert_eq!(o.status.code(), Some(2), "{verb} {file}: {}", text(&o));
            let err = stderr(&o);
            assert!(
                err.contains(&format!("{verb} does not support {dialect} files yet")),
                "{verb} {file}: {err}"
            );
            assert!(!err.contains("YAML"), "{verb} {file}: {err}");
        }
    }
}

#[test]
fn check_reports_a_recognised_dialect_it_cannot_check() {
    let d = tempdir();
    write(d.path(), "flow.meow.toml", MEOW);
    let o = run_in(d.path(), &["check", "flow.meow.toml"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stdout(&o).contains("the meow dialect cannot be checked by this version"),
        "{}",
        text(&o)
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
