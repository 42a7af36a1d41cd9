//! Diagnostic codes of the MEOW dialect (the `PW06xx` range).

use pipewright_syntax::CodeInfo;

pub const LEGACY_FORMAT: &str = "PW0600";
pub const NO_WORKFLOWS: &str = "PW0601";
pub const BAD_WORKFLOW: &str = "PW0602";
pub const IGNORED_TOP_KEY: &str = "PW0603";
pub const MOVED_CLEANUP: &str = "PW0604";
pub const MISSING_ID: &str = "PW0605";
pub const DUPLICATE_ID: &str = "PW0606";
pub const ID_SYNTAX: &str = "PW0607";
pub const UNKNOWN_EXECUTOR: &str = "PW0608";
pub const WRONG_TYPE: &str = "PW0609";
pub const UNREAD_KEY: &str = "PW0610";
pub const MISSING_KEY: &str = "PW0611";
pub const BAD_VALUE: &str = "PW0612";
pub const BAD_DURATION: &str = "PW0613";
pub const OUTPUTS_KEY: &str = "PW0614";
pub const BRANCH_TARGET: &str = "PW0615";
pub const INLINE_STEP: &str = "PW0616";
pub const NEEDS_UNKNOWN: &str = "PW0617";
pub const NEEDS_CYCLE: &str = "PW0618";
pub const NEEDS_PREFIX: &str = "PW0619";
pub const UNKNOWN_LOCAL_WORKFLOW: &str = "PW0620";
pub const TEMPLATE_NOT_FOUND: &str = "PW0621";
pub const WORKFLOW_NOT_IN_FILE: &str = "PW0622";
pub const EXPANSION_CYCLE: &str = "PW0623";
pub const UNDEFINED_VARIABLE: &str = "PW0624";
pub const REQUIRED_NOT_SUPPLIED: &str = "PW0625";
pub const UNDECLARED_PASSED: &str = "PW0626";
pub const OUTPUT_NOT_DEPENDENCY: &str = "PW0627";
pub const UNDECLARED_OUTPUT: &str = "PW0628";
pub const BAD_VARIABLE_DECL: &str = "PW0629";
pub const AGENT_NOT_SPAWNED: &str = "PW0630";
pub const UNKNOWN_ADAPTER: &str = "PW0631";
pub const BAD_PATH: &str = "PW0632";
pub const QUOTED_PLACEHOLDER: &str = "PW0633";

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
    code!(
        "PW0600",
        "legacy `[meta]`/`[[steps]]` template, not the module format"
    ),
    code!("PW0601", "the file defines no workflow"),
    code!("PW0602", "a workflow without steps or with an empty `name`"),
    code!(
        "PW0603",
        "a top-level key that is not a workflow table (ignored)"
    ),
    code!(
        "PW0604",
        "a `cleanup_on_*` script that TOML put into another table"
    ),
    code!("PW0605", "a step without a string `id`"),
    code!("PW0606", "two steps with the same id"),
    code!("PW0607", "a step id outside `[A-Za-z0-9_-]`"),
    code!("PW0608", "a missing or unknown executor"),
    code!(
        "PW0609",
        "a value of the wrong TOML type (the reference ignores it)"
    ),
    code!("PW0610", "a key this executor does not read"),
    code!("PW0611", "a key this executor requires is missing"),
    code!("PW0612", "a value outside its set of allowed values"),
    code!("PW0613", "a duration that does not parse"),
    code!("PW0614", "`outputs` where `shell_outputs` is read, or both"),
    code!("PW0615", "a branch outcome without a valid target"),
    code!(
        "PW0616",
        "an inline branch step that loses keys or never runs"
    ),
    code!("PW0617", "`needs` names a step that does not exist"),
    code!("PW0618", "`needs` forms a cycle"),
    code!(
        "PW0619",
        "a need into an expansion that the reference cannot satisfy"
    ),
    code!(
        "PW0620",
        "a local template reference to a workflow not in this file"
    ),
    code!("PW0621", "a template file that does not exist"),
    code!("PW0622", "a template file without the named workflow"),
    code!("PW0623", "workflows expand each other unconditionally"),
    code!(
        "PW0624",
        "undefined variable or step in a `{{…}}` reference"
    ),
    code!(
        "PW0625",
        "a required variable of an expanded workflow is not passed"
    ),
    code!(
        "PW0626",
        "a variable passed to a workflow that does not declare it"
    ),
    code!(
        "PW0627",
        "an output reference to a step that is not a dependency"
    ),
    code!(
        "PW0628",
        "an output reference to a field the step does not declare"
    ),
    code!(
        "PW0629",
        "a variable declaration the reference ignores or misreads"
    ),
    code!(
        "PW0630",
        "an agent used or killed without a spawn before it"
    ),
    code!(
        "PW0631",
        "an adapter that is neither built in nor in the project"
    ),
    code!(
        "PW0632",
        "a `{{…}}` path that leaves the value the file gives its variable"
    ),
    code!(
        "PW0633",
        "a `{{…}}` inside shell quotes, where values are quoted already"
    ),
];
