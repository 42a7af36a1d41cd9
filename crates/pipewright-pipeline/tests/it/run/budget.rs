//! The evaluation budget in a run (issue 11): `acc + acc` in a fold used to double until an
//! allocation failed and the process aborted (exit 134). Now the step fails with a diagnostic
//! at the expression.

use crate::run::common::*;
use pipewright_runtime::EvalLimits;

const DOUBLING: &str = "pipeline: p\nsteps:\n  - transform: {value: \"[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48]\", output: xs}\n  - fold:\n      over: ctx.xs\n      init: \"'ab'\"\n      do: {transform: {value: \"acc + acc\"}}\n      output: doubled\n";

#[test]
fn a_doubling_fold_fails_the_step_at_the_expression() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.caps.eval = EvalLimits {
        max_bytes: 1 << 20,
        ..EvalLimits::default()
    };
    let (out, s) = exec(DOUBLING, o);
    let v = out.to_json(&s);
    assert_eq!(v["status"], "failed", "{}", v["error"]);
    assert_eq!(v["error"]["code"], "PW0800", "{v}");
    let message = v["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("max_eval_bytes"), "{message}");
    let diag = out.diagnostic().unwrap_or_else(|| panic!("no diagnostic"));
    let file = s
        .get(diag.primary.span.file)
        .unwrap_or_else(|| panic!("file"));
    assert_eq!(file.slice(diag.primary.span), "acc + acc");
}

/// pipewright-project states the defaults without depending on the R1 crate.
#[test]
fn the_config_defaults_are_the_evaluators() {
    assert_eq!(
        EvalLimits::default(),
        EvalLimits {
            max_steps: pipewright_runtime::config::DEFAULT_MAX_EVAL_STEPS,
            max_bytes: pipewright_runtime::config::DEFAULT_MAX_EVAL_BYTES,
        }
    );
}
