//! The `--help` texts stay complete and true: every command and argument says what it is, and a
//! verb every dialect supports does not describe itself in terms of some of them.

use pipewright_dialect::Verb;
use pipewright_registry::DIALECTS;

/// Every command under `cmd` (itself included) with its path, `help` left out.
fn commands(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Command)>) {
    out.push((path.clone(), cmd.clone()));
    for s in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        commands(s, format!("{path} {}", s.get_name()), out);
    }
}

fn all() -> Vec<(String, clap::Command)> {
    let mut out = Vec::new();
    let mut root = super::command();
    root.build();
    commands(&root, "pipewright".into(), &mut out);
    out
}

fn help_of(a: &clap::Arg) -> String {
    a.get_long_help()
        .or(a.get_help())
        .map(ToString::to_string)
        .unwrap_or_default()
}

#[test]
fn every_command_and_argument_has_a_description() {
    let mut missing = Vec::new();
    for (path, cmd) in all() {
        if cmd.get_about().is_none() && path != "pipewright" {
            missing.push(format!("`{path}` has no description"));
        }
        for a in cmd.get_arguments() {
            let id = a.get_id().as_str();
            if a.is_hide_set() || matches!(id, "help" | "version") || a.is_global_set() {
                continue;
            }
            if help_of(a).trim().is_empty() {
                missing.push(format!("`{path}`: `{id}` has no description"));
            }
            // A value list where some values are explained explains them all.
            let values = a.get_possible_values();
            if values.iter().any(|v| v.get_help().is_some()) {
                for v in values.iter().filter(|v| v.get_help().is_none()) {
                    missing.push(format!(
                        "`{path}`: value `{}` of `{id}` has no description",
                        v.get_name()
                    ));
                }
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn no_two_arguments_of_a_command_share_a_description() {
    for (path, cmd) in all() {
        let mut seen: Vec<(String, String)> = Vec::new();
        for a in cmd.get_arguments() {
            let text = help_of(a);
            if text.is_empty() {
                continue;
            }
            let id = a.get_id().to_string();
            for (other, t) in &seen {
                // One sentence of another argument's help is another argument's text.
                let first = t.split(". ").next().unwrap_or(t);
                assert!(
                    !text.contains(first),
                    "`{path}`: `{id}` repeats the help of `{other}`: {text}"
                );
            }
            seen.push((id, text));
        }
    }
}

/// The words that name one dialect in a help text.
fn dialect_words() -> Vec<String> {
    let mut w: Vec<String> = DIALECTS
        .iter()
        .flat_map(|d| [d.name().to_lowercase(), d.noun().to_lowercase()])
        .collect();
    w.sort();
    w.dedup();
    w
}

#[test]
fn verbs_every_dialect_supports_do_not_describe_themselves_by_some() {
    for (verb, name) in [(Verb::Graph, "graph"), (Verb::Run, "run")] {
        if !DIALECTS.iter().all(|d| d.supports(verb)) {
            continue;
        }
        let cmd = all()
            .into_iter()
            .find(|(p, _)| p == &format!("pipewright {name}"))
            .map(|(_, c)| c)
            .unwrap_or_else(|| panic!("no `{name}` command"));
        let about = cmd
            .get_about()
            .map(ToString::to_string)
            .unwrap_or_default()
            .to_lowercase();
        let file = cmd
            .get_arguments()
            .find(|a| a.get_id() == "file")
            .map(help_of)
            .unwrap_or_default()
            .to_lowercase();
        for word in dialect_words() {
            assert!(
                !about.contains(&word),
                "`{name}` runs every dialect; its description names `{word}`: {about}"
            );
            assert!(
                !file.contains(&word),
                "`{name}` takes every dialect's file; FILE names `{word}`: {file}"
            );
        }
    }
}

#[test]
fn approve_and_deny_are_not_described_as_for_one_dialect() {
    for (path, cmd) in all() {
        if !matches!(path.as_str(), "pipewright approve" | "pipewright deny") {
            continue;
        }
        let about = cmd.get_about().map(ToString::to_string).unwrap_or_default();
        assert!(!about.is_empty(), "`{path}` has no description");
        assert!(
            !about.to_lowercase().contains("recipe"),
            "`{path}`: {about}"
        );
    }
}
