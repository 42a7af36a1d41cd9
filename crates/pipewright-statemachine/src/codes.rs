//! Diagnostic codes of the state-machine dialect (the `PW07xx` range). JSON syntax errors,
//! nesting too deep and duplicate keys use the general PW0001, PW0003 and PW0005.

use pipewright_syntax::CodeInfo;

pub const MISSING_FIELD: &str = "PW0700";
pub const WRONG_TYPE: &str = "PW0701";
pub const UNKNOWN_KEY: &str = "PW0702";
pub const BAD_TRANSITION: &str = "PW0703";
pub const BAD_GUARDRAIL: &str = "PW0704";
pub const BAD_ID: &str = "PW0705";
pub const DUPLICATE_OUTCOME: &str = "PW0706";
// The seven rules of spec §8, in its order.
pub const INITIAL_STEP_UNKNOWN: &str = "PW0710";
pub const UNDECLARED_OUTCOME: &str = "PW0711";
pub const NEXT_STEP_UNKNOWN: &str = "PW0712";
pub const EXIT_WITHOUT_REASON: &str = "PW0713";
pub const OTHER_WITHOUT_REASON: &str = "PW0714";
pub const BAD_MODEL: &str = "PW0715";
pub const STEP_FIELD_MISSING: &str = "PW0716";
// What the spec implies but does not check.
pub const OUTCOME_WITHOUT_TRANSITION: &str = "PW0720";
pub const UNREACHABLE_STEP: &str = "PW0721";
pub const NO_EXIT_REACHABLE: &str = "PW0722";
pub const UNKNOWN_RECIPE: &str = "PW0723";
pub const INCLUDE_MISSING: &str = "PW0724";
pub const INCLUDE_NOT_STEPS: &str = "PW0725";
pub const INCLUDE_REDEFINES: &str = "PW0726";
pub const OTHER_NEVER_TAKEN: &str = "PW0727";
pub const DUPLICATE_RECIPE_ID: &str = "PW0728";

macro_rules! code {
    ($code:literal, $title:literal) => {
        CodeInfo {
            code: $code,
            title: $title,
            explanation: include_str!(concat!("../explain/", $code, ".md")),
        }
    };
}

pub const CODES: &[CodeInfo] = &[
    code!("PW0700", "a required recipe field is missing"),
    code!("PW0701", "a field has the wrong JSON type"),
    code!("PW0702", "an unknown key (ignored)"),
    code!(
        "PW0703",
        "a transition that is not exactly one of the three forms"
    ),
    code!(
        "PW0704",
        "a guardrail that is not a positive integer (or a boolean for `exitOnOther`)"
    ),
    code!("PW0705", "a recipe `id` that is not kebab-case"),
    code!("PW0706", "an outcome listed twice"),
    code!("PW0710", "`initialStep` names no step"),
    code!(
        "PW0711",
        "an `onOutcome` key that is not one of the step's outcomes"
    ),
    code!("PW0712", "`nextStep` names no step"),
    code!("PW0713", "an exit transition without a non-empty `reason`"),
    code!("PW0714", "the `other` outcome's transition has no `reason`"),
    code!("PW0715", "a model that is not `haiku`, `sonnet` or `opus`"),
    code!(
        "PW0716",
        "a step without `prompt`, `outcomes` or `onOutcome`"
    ),
    code!("PW0720", "an outcome with no transition"),
    code!("PW0721", "a step no transition reaches"),
    code!("PW0722", "a step from which no exit can be reached"),
    code!(
        "PW0723",
        "`restart-new-session` to a recipe id that cannot be found"
    ),
    code!("PW0724", "an `$include` file that cannot be read"),
    code!(
        "PW0725",
        "an `$include` file that is not a JSON object of steps"
    ),
    code!("PW0726", "a step defined twice through `$include`"),
    code!(
        "PW0727",
        "an `other` transition that `exitOnOther` means is never taken"
    ),
    code!("PW0728", "two recipes with the same `id`"),
];
