//! Diagnostic codes of the MEOW dialect (the `PW06xx` range).

pipewright_syntax::codes! {
    pub const CODES;

    pub const LEGACY_FORMAT = "PW0600":
        "legacy `[meta]`/`[[steps]]` template, not the module format";
    pub const NO_WORKFLOWS = "PW0601": "the file defines no workflow";
    pub const BAD_WORKFLOW = "PW0602": "a workflow without steps or with an empty `name`";
    pub const IGNORED_TOP_KEY = "PW0603": "a top-level key that is not a workflow table (ignored)";
    pub const MOVED_CLEANUP = "PW0604": "a `cleanup_on_*` script that TOML put into another table";
    pub const MISSING_ID = "PW0605": "a step without a string `id`";
    pub const DUPLICATE_ID = "PW0606": "two steps with the same id";
    pub const ID_SYNTAX = "PW0607": "a step id outside `[A-Za-z0-9_-]`";
    pub const UNKNOWN_EXECUTOR = "PW0608": "a missing or unknown executor";
    pub const WRONG_TYPE = "PW0609": "a value of the wrong TOML type (the reference ignores it)";
    pub const UNREAD_KEY = "PW0610": "a key this executor does not read";
    pub const MISSING_KEY = "PW0611": "a key this executor requires is missing";
    pub const BAD_VALUE = "PW0612": "a value outside its set of allowed values";
    pub const BAD_DURATION = "PW0613": "a duration that does not parse";
    pub const OUTPUTS_KEY = "PW0614": "`outputs` where `shell_outputs` is read, or both";
    pub const BRANCH_TARGET = "PW0615": "a branch outcome without a valid target";
    pub const INLINE_STEP = "PW0616": "an inline branch step that loses keys or never runs";
    pub const NEEDS_UNKNOWN = "PW0617": "`needs` names a step that does not exist";
    pub const NEEDS_CYCLE = "PW0618": "`needs` forms a cycle";
    pub const NEEDS_PREFIX = "PW0619": "a need into an expansion that the reference cannot satisfy";
    pub const UNKNOWN_LOCAL_WORKFLOW = "PW0620":
        "a local template reference to a workflow not in this file";
    pub const TEMPLATE_NOT_FOUND = "PW0621": "a template file that does not exist";
    pub const WORKFLOW_NOT_IN_FILE = "PW0622": "a template file without the named workflow";
    pub const EXPANSION_CYCLE = "PW0623": "workflows expand each other unconditionally";
    pub const UNDEFINED_VARIABLE = "PW0624": "undefined variable or step in a `{{…}}` reference";
    pub const REQUIRED_NOT_SUPPLIED = "PW0625":
        "a required variable of an expanded workflow is not passed";
    pub const UNDECLARED_PASSED = "PW0626":
        "a variable passed to a workflow that does not declare it";
    pub const OUTPUT_NOT_DEPENDENCY = "PW0627":
        "an output reference to a step that is not a dependency";
    pub const UNDECLARED_OUTPUT = "PW0628":
        "an output reference to a field the step does not declare";
    pub const BAD_VARIABLE_DECL = "PW0629":
        "a variable declaration the reference ignores or misreads";
    pub const AGENT_NOT_SPAWNED = "PW0630": "an agent used or killed without a spawn before it";
    pub const UNKNOWN_ADAPTER = "PW0631": "an adapter that is neither built in nor in the project";
    pub const BAD_PATH = "PW0632":
        "a `{{…}}` path that leaves the value the file gives its variable";
    pub const QUOTED_PLACEHOLDER = "PW0633":
        "a `{{…}}` inside shell quotes, where values are quoted already";
}
