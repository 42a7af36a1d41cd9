//! Diagnostic codes of the state-machine dialect (the `PW07xx` range). JSON syntax errors,
//! nesting too deep and duplicate keys use the general PW0001, PW0003 and PW0005.

pipewright_syntax::codes! {
    pub const CODES;

    pub const MISSING_FIELD = "PW0700": "a required recipe field is missing";
    pub const WRONG_TYPE = "PW0701": "a field has the wrong JSON type";
    pub const UNKNOWN_KEY = "PW0702": "an unknown key (ignored)";
    pub const BAD_TRANSITION = "PW0703": "a transition that is not exactly one of the three forms";
    pub const BAD_GUARDRAIL = "PW0704":
        "a guardrail that is not a positive integer (or a boolean for `exitOnOther`)";
    pub const BAD_ID = "PW0705": "a recipe `id` that is not kebab-case";
    pub const DUPLICATE_OUTCOME = "PW0706": "an outcome listed twice";
    // The seven rules of spec §8, in its order.
    pub const INITIAL_STEP_UNKNOWN = "PW0710": "`initialStep` names no step";
    pub const UNDECLARED_OUTCOME = "PW0711":
        "an `onOutcome` key that is not one of the step's outcomes";
    pub const NEXT_STEP_UNKNOWN = "PW0712": "`nextStep` names no step";
    pub const EXIT_WITHOUT_REASON = "PW0713": "an exit transition without a non-empty `reason`";
    pub const OTHER_WITHOUT_REASON = "PW0714": "the `other` outcome's transition has no `reason`";
    pub const BAD_MODEL = "PW0715": "a model that is not `haiku`, `sonnet` or `opus`";
    pub const STEP_FIELD_MISSING = "PW0716": "a step without `prompt`, `outcomes` or `onOutcome`";
    // What the spec implies but does not check.
    pub const OUTCOME_WITHOUT_TRANSITION = "PW0720": "an outcome with no transition";
    pub const UNREACHABLE_STEP = "PW0721": "a step no transition reaches";
    pub const NO_EXIT_REACHABLE = "PW0722": "a step from which no exit can be reached";
    pub const UNKNOWN_RECIPE = "PW0723":
        "`restart-new-session` to a recipe id that cannot be found";
    pub const INCLUDE_MISSING = "PW0724": "an `$include` file that cannot be read";
    pub const INCLUDE_NOT_STEPS = "PW0725": "an `$include` file that is not a JSON object of steps";
    pub const INCLUDE_REDEFINES = "PW0726": "a step defined twice through `$include`";
    pub const OTHER_NEVER_TAKEN = "PW0727":
        "an `other` transition that `exitOnOther` means is never taken";
    pub const DUPLICATE_RECIPE_ID = "PW0728": "two recipes with the same `id`";
}
