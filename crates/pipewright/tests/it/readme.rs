//! The README's dialect table says what each dialect supports, and the dialect registry
//! decides it: the two must agree.

use pipewright_dialect::Verb;
use pipewright_registry::DIALECTS;
use std::collections::BTreeSet;
use std::path::Path;

const VERBS: [Verb; 4] = [Verb::Check, Verb::Fmt, Verb::Graph, Verb::Run];

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rows of the table under `## Dialects`, as cells.
fn dialect_rows(text: &str) -> Vec<Vec<String>> {
    let section = text
        .split("\n## Dialects")
        .nth(1)
        .unwrap_or_else(|| panic!("the README has no `## Dialects` section"));
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2) // the header and its rule
        .map(|l| {
            // `\|` is a pipe inside a cell.
            l.replace("\\|", "\u{1}")
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().replace('\u{1}', "|"))
                .collect()
        })
        .collect()
}

/// The items of a status cell outside parentheses: `check (PW07xx), fmt, graph; not run (…)`
/// is `check`, `fmt`, `graph`, `not run`.
fn items(status: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for c in status.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' | ';' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
            }
            c if depth == 0 => cur.push(c),
            _ => {}
        }
    }
    out.push(cur.trim().to_string());
    out.retain(|i| !i.is_empty());
    out
}

#[test]
fn the_readme_dialect_table_says_what_each_dialect_supports() {
    let text = readme();
    let rows = dialect_rows(&text);
    let mut named = BTreeSet::new();
    let mut problems = Vec::new();
    for row in &rows {
        let [first, _files, status] = row.as_slice() else {
            panic!("a dialect row has three cells: {row:?}");
        };
        // The row names its dialect as `--dialect` takes it, in backticks.
        let name = first
            .split('`')
            .nth(1)
            .unwrap_or_else(|| panic!("row `{first}` names no dialect in backticks"));
        let Some(d) = DIALECTS.iter().find(|d| d.name() == name) else {
            panic!("row `{first}`: `{name}` is not a dialect of the registry");
        };
        named.insert(name.to_string());
        let items = items(status);
        let said: BTreeSet<&str> = items
            .iter()
            .filter_map(|i| i.split_whitespace().next())
            .collect();
        let denied: BTreeSet<&str> = items
            .iter()
            .filter_map(|i| i.strip_prefix("not "))
            .filter_map(|i| i.split_whitespace().next())
            .collect();
        for v in VERBS {
            let (supported, listed, negated) = (
                d.supports(v),
                said.contains(v.name()),
                denied.contains(v.name()),
            );
            if supported && (!listed || negated) {
                problems.push(format!(
                    "{name}: supports `{}` but the README says `{status}`",
                    v.name()
                ));
            }
            if !supported && listed {
                problems.push(format!(
                    "{name}: does not support `{}` but the README lists it",
                    v.name()
                ));
            }
        }
    }
    for d in DIALECTS {
        if !named.contains(d.name()) {
            problems.push(format!(
                "the README's dialect table has no row for `{}`",
                d.name()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn status_items_are_read_outside_parentheses() {
    assert_eq!(
        items("check (PW07xx, more), fmt, graph; not run (docs/x.md)"),
        ["check", "fmt", "graph", "not run"]
    );
}
