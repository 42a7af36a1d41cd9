//! What a run lacks before it starts: the message shapes every dialect's refusal shares (each
//! dialect's runtime decides what its runs need: `Runtime::prerun`). A run that would
//! certainly fail for want of an input (a pipeline step reading a store that neither the input
//! nor an earlier step gives, a recipe's required context variable, a MEOW workflow's required
//! variable) or that is given an input its workflow does not declare is refused before the run
//! store is opened: exit 2, one message shape for every dialect, naming what to give (`--var`)
//! or what to declare.

use serde_json::Value;
use std::collections::HashSet;

/// One input a run needs and is not given, and why it is needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lack {
    pub name: String,
    pub why: String,
}

/// "`what` needs `a`, which nothing gives it", a line per input saying why, and the `--var`
/// to pass. `what` is "pipeline `main`", "recipe `review`", "workflow `main`".
pub fn needs_message(what: &str, lacks: &[Lack]) -> String {
    let names: Vec<String> = lacks.iter().map(|l| format!("`{}`", l.name)).collect();
    let mut s = format!("{what} needs {}, which nothing gives it", names.join(", "));
    for l in lacks {
        s.push_str(&format!("\n  `{}`: {}", l.name, l.why));
    }
    let vars: Vec<String> = lacks
        .iter()
        .map(|l| format!("--var {}=VALUE", l.name))
        .collect();
    let them = if lacks.len() == 1 { "it" } else { "them" };
    s.push_str(&format!(
        "\nhelp: give {them} with {} (a string), or in --input '{{\"{}\": …}}' (any JSON)",
        vars.join(" "),
        lacks.first().map_or("", |l| l.name.as_str())
    ));
    s
}

/// "`what` declares no `kind` `key`", the near miss or the declared names, and how to declare
/// it (`declare`, the dialect's own syntax).
pub fn undeclared_message(
    what: &str,
    kind: &str,
    key: &str,
    declared: &[&str],
    declare: &str,
) -> String {
    let hint = pipewright_syntax::suggest::did_you_mean(key, declared.iter().copied())
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    let list = if declared.is_empty() {
        "; it declares none".to_string()
    } else {
        let names: Vec<String> = declared.iter().map(|d| format!("`{d}`")).collect();
        format!("; it declares {}", names.join(", "))
    };
    format!("{what} declares no {kind} `{key}`{hint}{list}\nhelp: {declare}")
}

/// The names the input gives.
pub fn given(input: &Value) -> HashSet<&str> {
    input
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}
