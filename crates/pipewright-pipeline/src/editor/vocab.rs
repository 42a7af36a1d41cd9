//! What hover and completion say about the pipeline dialect's words. The key lists match the
//! loader's (a test compares them with `step_load`'s table); the texts summarise
//! docs/pipeline.md and the DSL reference.

/// Every step kind with one line on what it does.
pub(super) const STEP_KINDS: &[(&str, &str)] = &[
    ("transform", "A pure step: `value` (an R1 expression) is evaluated against the context; the result is the step's pipe data, and is stored under `output` when set."),
    ("tool", "Calls the tool or action `name` with `args` (literals, or R1 expressions tagged `!expr`); the result may be checked against `schema` and stored under `output`."),
    ("shell", "Sugar for a `tool` step named `shell`: runs `command` (a literal, or an R1 expression tagged `!expr`)."),
    ("agent", "Asks an agent: `prompt` is the task, `identity` and `capabilities` what it may do, `schema` the shape its answer must have, `model` which model to use."),
    ("call", "Runs another pipeline (`pipeline: NAME` or `NAMESPACE.NAME`, a literal target) with the stores listed in `pass`; its result is this step's pipe data."),
    ("match", "Evaluates `on` (R1) and runs the `cases` target whose label equals the result, else `default`."),
    ("fold", "Runs `do` once per item of `over` (R1) / `items`, threading an accumulator from `init`; the final accumulator is stored under `output`."),
    ("for_each", "Runs `do` for every item of `over` (R1) / `items`, up to `max_parallel` at once; `collect` combines the results."),
    ("parallel", "Runs every step of `branches` concurrently on copies of the context; `collect` combines their results."),
];

/// What each key of a step body means.
pub(super) const STEP_KEYS: &[(&str, &str)] = &[
    (
        "value",
        "An R1 expression; its result is the step's result.",
    ),
    (
        "output",
        "The named store the result is written to; later steps read it as `ctx.NAME`.",
    ),
    ("name", "The tool or action to call (a literal name)."),
    (
        "args",
        "A mapping of argument name to value; a value is a literal unless tagged `!expr`.",
    ),
    (
        "schema",
        "A schema (a `schema: NAME` document) the result must conform to.",
    ),
    (
        "on_error",
        "What a failure does: `fail` (the default), `continue`, or `retry(N)`.",
    ),
    (
        "command",
        "The command line: a literal, or an R1 expression tagged `!expr`.",
    ),
    ("prompt", "The agent's task (text, not an R1 expression)."),
    ("identity", "The identity the agent acts as."),
    ("capabilities", "The tools the agent may use."),
    ("model", "The model the agent runs on."),
    (
        "pipeline",
        "The target pipeline: `NAME`, or `NAMESPACE.NAME` for one in another file (its stem).",
    ),
    (
        "pass",
        "The stores handed to the callee: the only context it sees (`{name: R1 expression}`).",
    ),
    ("on", "An R1 expression whose result selects the case."),
    (
        "cases",
        "A mapping of label to call target (`{pipeline: NAME, pass: {...}}`).",
    ),
    ("default", "The call target run when no case label matches."),
    ("over", "An R1 expression giving the list to iterate."),
    ("items", "A literal list to iterate (instead of `over`)."),
    ("init", "An R1 expression: the accumulator's first value."),
    (
        "do",
        "The step run for each item (`item` in its expressions; `acc` in a fold's).",
    ),
    ("max_items", "The most items a fold accepts."),
    ("max_parallel", "How many items run at once."),
    (
        "collect",
        "A step combining the results (`pipe` holds them).",
    ),
    (
        "branches",
        "A mapping of branch name to step, all run concurrently.",
    ),
];

/// The top-level keys of a pipeline and a schema document.
pub(super) const TOP_KEYS: &[(&str, &str)] = &[
    (
        "pipeline",
        "The pipeline's name; other files call it as `FILE_STEM.NAME`.",
    ),
    ("description", "What the pipeline does (free text)."),
    (
        "steps",
        "The steps, run in order; each is a single-key mapping naming its kind.",
    ),
    ("fields", "The schema's fields: name to type."),
];

/// The keys a step kind's body takes (the loader's table).
pub(super) fn keys_of(kind: &str) -> &'static [&'static str] {
    crate::STEP_BODY_KEYS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[], |(_, keys)| keys)
}

pub(super) fn doc(table: &[(&str, &'static str)], word: &str) -> Option<&'static str> {
    table.iter().find(|(w, _)| *w == word).map(|(_, d)| *d)
}

/// The values of a pipeline step's `on_error`.
pub(super) const ON_ERROR: &[&str] = &["fail", "continue", "retry(2)"];

/// R1's word operators and literals.
pub(super) const R1_WORDS: &[(&str, &str)] = &[
    (
        "and",
        "`a and b`: true when both are (short-circuit); binds looser than `not` and comparisons.",
    ),
    (
        "or",
        "`a or b`: the first truthy operand, else the second (short-circuit); binds loosest.",
    ),
    ("not", "`not a`: the negation of a boolean."),
    (
        "ctx",
        "The context: the pipeline's inputs and every named store written so far (`ctx.NAME`).",
    ),
    (
        "pipe",
        "The previous step's result (in a `collect`, the gathered results).",
    ),
    ("item", "The current item of a `for_each` or `fold`."),
    ("acc", "A fold's accumulator."),
    ("true", "The boolean true."),
    ("false", "The boolean false."),
    ("null", "The null value."),
];

/// What one R1 function does, by name (the signature comes from `pipewright_r1`).
pub(super) fn r1_function(name: &str) -> Option<(&'static str, &'static str)> {
    use pipewright_r1::ast::Combinator;
    let c = Combinator::from_name(name)?;
    let what = match c {
        Combinator::Map => "The list of the lambda's results for each item.",
        Combinator::Filter => "The items for which the lambda is true.",
        Combinator::All => "Whether the lambda is true for every item (true for an empty list).",
        Combinator::Any => "Whether the lambda is true for some item.",
        Combinator::Find => "The first item for which the lambda is true, else null.",
        Combinator::Count => "The number of items of a list.",
        Combinator::Sum => "The sum of a list of numbers.",
        Combinator::Join => "The items (strings) joined with the separator.",
        Combinator::Get => "The value at a dotted path of `base`, or `default` (null) when a part is missing: the safe way to read a store that may be absent.",
        Combinator::ParseJson => "The value a JSON text denotes.",
        Combinator::ShellQuote => "The string quoted for a POSIX shell.",
    };
    Some((c.signature(), what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_and_key_is_documented() {
        for (kind, _) in STEP_KINDS {
            assert!(!keys_of(kind).is_empty(), "{kind}");
            for key in keys_of(kind) {
                assert!(doc(STEP_KEYS, key).is_some(), "{kind}.{key}");
            }
        }
        // The same kinds as the loader.
        let kinds: Vec<&str> = STEP_KINDS.iter().map(|(k, _)| *k).collect();
        assert_eq!(kinds, crate::STEP_KINDS);
        for c in pipewright_r1::ast::Combinator::ALL {
            assert!(r1_function(c.name()).is_some(), "{}", c.name());
        }
    }
}
