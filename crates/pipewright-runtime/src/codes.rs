//! Runtime diagnostic codes (`PW08xx`): a failed run is reported like a compile error.

use pipewright_syntax::CodeInfo;

pub const CODES: &[CodeInfo] = &[
    CodeInfo {
        code: "PW0800",
        title: "an expression failed at run time",
        explanation: include_str!("../explain/PW0800.md"),
    },
    CodeInfo {
        code: "PW0801",
        title: "a tool step failed",
        explanation: include_str!("../explain/PW0801.md"),
    },
    CodeInfo {
        code: "PW0802",
        title: "a result does not conform to its schema",
        explanation: include_str!("../explain/PW0802.md"),
    },
    CodeInfo {
        code: "PW0803",
        title: "an agent step failed",
        explanation: include_str!("../explain/PW0803.md"),
    },
    CodeInfo {
        code: "PW0804",
        title: "a call or match could not select or run its target",
        explanation: include_str!("../explain/PW0804.md"),
    },
    CodeInfo {
        code: "PW0805",
        title: "a list source is not a list",
        explanation: include_str!("../explain/PW0805.md"),
    },
    CodeInfo {
        code: "PW0806",
        title: "a fan-out item or branch failed",
        explanation: include_str!("../explain/PW0806.md"),
    },
    CodeInfo {
        code: "PW0807",
        title: "fan-out nesting exceeds the depth cap",
        explanation: include_str!("../explain/PW0807.md"),
    },
    CodeInfo {
        code: "PW0808",
        title: "the run's agent spawn budget is spent",
        explanation: include_str!("../explain/PW0808.md"),
    },
    CodeInfo {
        code: "PW0809",
        title: "a step this interpreter cannot run",
        explanation: include_str!("../explain/PW0809.md"),
    },
    CodeInfo {
        code: "PW0810",
        title: "the run was cancelled",
        explanation: include_str!("../explain/PW0810.md"),
    },
    CodeInfo {
        code: "PW0811",
        title: "the run store could not record the run",
        explanation: include_str!("../explain/PW0811.md"),
    },
    CodeInfo {
        code: "PW0812",
        title: "call/match nesting exceeds the depth cap",
        explanation: include_str!("../explain/PW0812.md"),
    },
    CodeInfo {
        code: "PW0813",
        title: "an approval gate denied the run",
        explanation: include_str!("../explain/PW0813.md"),
    },
    CodeInfo {
        code: "PW0820",
        title: "a recipe's bash step failed",
        explanation: include_str!("../explain/PW0820.md"),
    },
    CodeInfo {
        code: "PW0821",
        title: "a recipe's agent step failed",
        explanation: include_str!("../explain/PW0821.md"),
    },
    CodeInfo {
        code: "PW0822",
        title: "a sub-recipe could not run",
        explanation: include_str!("../explain/PW0822.md"),
    },
    CodeInfo {
        code: "PW0823",
        title: "a foreach or while loop failed",
        explanation: include_str!("../explain/PW0823.md"),
    },
    CodeInfo {
        code: "PW0824",
        title: "a condition or template failed at run time",
        explanation: include_str!("../explain/PW0824.md"),
    },
    CodeInfo {
        code: "PW0825",
        title: "the recipe's agent-turn budget is spent",
        explanation: include_str!("../explain/PW0825.md"),
    },
    CodeInfo {
        code: "PW0830",
        title: "a MEOW step failed",
        explanation: include_str!("../explain/PW0830.md"),
    },
    CodeInfo {
        code: "PW0831",
        title: "a MEOW expansion exceeds the run's limits",
        explanation: include_str!("../explain/PW0831.md"),
    },
    CodeInfo {
        code: "PW0832",
        title: "MEOW `on_error` recoveries nest too deep",
        explanation: include_str!("../explain/PW0832.md"),
    },
    CodeInfo {
        code: "PW0840",
        title: "a state-machine step reported no usable outcome, even after the reminder",
        explanation: include_str!("../explain/PW0840.md"),
    },
    CodeInfo {
        code: "PW0841",
        title: "a state-machine guardrail stopped the run",
        explanation: include_str!("../explain/PW0841.md"),
    },
    CodeInfo {
        code: "PW0842",
        title: "a state-machine agent turn failed",
        explanation: include_str!("../explain/PW0842.md"),
    },
    CodeInfo {
        code: "PW0843",
        title: "a state-machine run is misconfigured",
        explanation: include_str!("../explain/PW0843.md"),
    },
];

pub const EVAL: &str = "PW0800";
pub const TOOL: &str = "PW0801";
pub const SCHEMA: &str = "PW0802";
pub const AGENT: &str = "PW0803";
pub const CALL: &str = "PW0804";
pub const LIST: &str = "PW0805";
pub const FAN_OUT: &str = "PW0806";
pub const DEPTH: &str = "PW0807";
pub const SPAWNS: &str = "PW0808";
pub const UNSUPPORTED: &str = "PW0809";
pub const CANCELLED: &str = "PW0810";
pub const STORE: &str = "PW0811";
pub const CALL_DEPTH: &str = "PW0812";
pub const GATE: &str = "PW0813";
/// Recipe runtime failures (the pipeline codes above describe pipeline steps).
pub const RECIPE_BASH: &str = "PW0820";
pub const RECIPE_AGENT: &str = "PW0821";
pub const SUB_RECIPE: &str = "PW0822";
pub const RECIPE_LOOP: &str = "PW0823";
pub const RECIPE_EXPR: &str = "PW0824";
pub const RECIPE_BUDGET: &str = "PW0825";
/// MEOW runtime failures.
pub const MEOW_STEP: &str = "PW0830";
pub const MEOW_LIMIT: &str = "PW0831";
pub const MEOW_RECOVERY: &str = "PW0832";
/// State-machine runtime failures, one per finer exit code of the spec (§9: 2, 3, 4, 5).
pub const SM_ORCHESTRATION: &str = "PW0840";
pub const SM_GUARDRAIL: &str = "PW0841";
pub const SM_BACKEND: &str = "PW0842";
pub const SM_CONFIG: &str = "PW0843";
