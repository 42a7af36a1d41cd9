//! Runtime diagnostic codes (`PW08xx`): a failed run is reported like a compile error.

pipewright_syntax::codes! {
    pub const CODES;

    pub const EVAL = "PW0800": "an expression failed at run time";
    pub const TOOL = "PW0801": "a tool step failed";
    pub const SCHEMA = "PW0802": "a result does not conform to its schema";
    pub const AGENT = "PW0803": "an agent step failed";
    pub const CALL = "PW0804": "a call or match could not select or run its target";
    pub const LIST = "PW0805": "a list source is not a list";
    pub const FAN_OUT = "PW0806": "a fan-out item or branch failed";
    pub const DEPTH = "PW0807": "fan-out nesting exceeds the depth cap";
    pub const SPAWNS = "PW0808": "the run's agent spawn budget is spent";
    pub const UNSUPPORTED = "PW0809": "a step this interpreter cannot run";
    pub const CANCELLED = "PW0810": "the run was cancelled";
    pub const STORE = "PW0811": "the run store could not record the run";
    pub const CALL_DEPTH = "PW0812": "call/match nesting exceeds the depth cap";
    pub const GATE = "PW0813": "an approval gate denied the run";
    pub const BUDGET = "PW0814": "a budget stopped the run before an agent call";
    /// Recipe runtime failures (the pipeline codes above describe pipeline steps).
    pub const RECIPE_BASH = "PW0820": "a recipe's bash step failed";
    pub const RECIPE_AGENT = "PW0821": "a recipe's agent step failed";
    pub const SUB_RECIPE = "PW0822": "a sub-recipe could not run";
    pub const RECIPE_LOOP = "PW0823": "a foreach or while loop failed";
    pub const RECIPE_EXPR = "PW0824": "a condition or template failed at run time";
    pub const RECIPE_BUDGET = "PW0825": "the recipe's agent-turn budget is spent";
    /// MEOW runtime failures.
    pub const MEOW_STEP = "PW0830": "a MEOW step failed";
    pub const MEOW_LIMIT = "PW0831": "a MEOW expansion exceeds the run's limits";
    pub const MEOW_RECOVERY = "PW0832": "MEOW `on_error` recoveries nest too deep";
    /// State-machine runtime failures, one per finer exit code of the spec (§9: 2, 3, 4, 5).
    pub const SM_ORCHESTRATION = "PW0840":
        "a state-machine step reported no usable outcome, even after the reminder";
    pub const SM_GUARDRAIL = "PW0841": "a state-machine guardrail stopped the run";
    pub const SM_BACKEND = "PW0842": "a state-machine agent turn failed";
    pub const SM_CONFIG = "PW0843": "a state-machine run is misconfigured";
}
