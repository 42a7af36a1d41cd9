//! Diagnostic codes of the recipe dialect (the `PW05xx` range).

use pipewright_syntax::CodeInfo;

pub const NOT_A_RECIPE: &str = "PW0500";
pub const MISSING_FIELD: &str = "PW0501";
pub const WRONG_TYPE: &str = "PW0502";
pub const UNKNOWN_TOP_KEY: &str = "PW0503";
pub const UNKNOWN_STEP_KEY: &str = "PW0504";
pub const BAD_NAME: &str = "PW0505";
pub const BAD_VERSION: &str = "PW0506";
pub const STEPS_XOR_STAGES: &str = "PW0507";
pub const DUPLICATE: &str = "PW0508";
pub const BAD_VARIABLE_NAME: &str = "PW0509";
pub const RESERVED_NAME: &str = "PW0510";
pub const SHADOWS_RESERVED: &str = "PW0511";
pub const BAD_STEP_TYPE: &str = "PW0512";
pub const FIELD_NOT_FOR_TYPE: &str = "PW0513";
pub const PROVIDER_PREFERENCES: &str = "PW0514";
pub const LOOP_FIELDS: &str = "PW0515";
pub const INEFFECTIVE_FIELD: &str = "PW0516";
pub const OUT_OF_RANGE: &str = "PW0517";
pub const BAD_ENUM: &str = "PW0518";
pub const DEPENDS_UNKNOWN: &str = "PW0519";
pub const DEPENDS_ORDER: &str = "PW0520";
pub const DEPENDS_CYCLE: &str = "PW0521";
pub const TEMPLATE_NOT_REFERENCE: &str = "PW0522";
pub const TEMPLATE_MALFORMED: &str = "PW0523";
pub const CONDITION_SYNTAX: &str = "PW0524";
pub const NO_VARIABLE: &str = "PW0525";
pub const FOREACH_SOURCE: &str = "PW0526";
pub const UNDEFINED_VARIABLE: &str = "PW0527";
pub const CONDITIONALLY_DEFINED: &str = "PW0528";
pub const UNKNOWN_RESERVED_FIELD: &str = "PW0529";
pub const STATIC_PATH: &str = "PW0530";
pub const SUBRECIPE_NOT_FOUND: &str = "PW0531";
pub const RECIPE_CYCLE: &str = "PW0532";
pub const SUBRECIPE_MISSING_CONTEXT: &str = "PW0533";
pub const SUBRECIPE_EXTRA_CONTEXT: &str = "PW0534";
pub const DYNAMIC_RECIPE_PATH: &str = "PW0535";
pub const PARALLEL_RECIPE: &str = "PW0536";
pub const QUOTED_VARIABLE: &str = "PW0537";
pub const LONG_TEXT: &str = "PW0538";
pub const BARE_AGENT: &str = "PW0539";
pub const BAD_TIMESTAMP: &str = "PW0540";
pub const YAML11_BOOLEAN: &str = "PW0541";

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
    code!("PW0500", "the document is not a recipe"),
    code!("PW0501", "a required recipe field is missing or empty"),
    code!("PW0502", "a recipe field has the wrong YAML type"),
    code!(
        "PW0503",
        "unknown key at the top level or on a stage (ignored by the runner)"
    ),
    code!(
        "PW0504",
        "unknown key on a step or in a nested configuration"
    ),
    code!("PW0505", "invalid recipe name, stage name or step id"),
    code!("PW0506", "recipe version is not MAJOR.MINOR.PATCH"),
    code!(
        "PW0507",
        "a recipe needs exactly one of `steps` and `stages`"
    ),
    code!("PW0508", "duplicate step id, stage name or step field"),
    code!("PW0509", "invalid variable name"),
    code!("PW0510", "a reserved name is used as a variable"),
    code!("PW0511", "a loop variable shadows a reserved variable"),
    code!("PW0512", "unknown step type"),
    code!("PW0513", "a field that does not belong to this step type"),
    code!("PW0514", "invalid `provider_preferences`"),
    code!("PW0515", "loop fields that conflict or lack their loop"),
    code!("PW0516", "a field that has no effect where it is written"),
    code!("PW0517", "a number outside its allowed range"),
    code!("PW0518", "a value outside its set of allowed values"),
    code!("PW0519", "`depends_on` names a step that does not exist"),
    code!(
        "PW0520",
        "`depends_on` names the step itself or a later step"
    ),
    code!("PW0521", "`depends_on` forms a cycle"),
    code!(
        "PW0522",
        "`{{…}}` that is not a variable reference (left as literal text)"
    ),
    code!("PW0523", "malformed variable reference"),
    code!("PW0524", "condition syntax error"),
    code!("PW0525", "an expression field without a variable reference"),
    code!("PW0526", "`foreach` must be a single variable reference"),
    code!("PW0527", "undefined variable"),
    code!("PW0528", "variable defined only on a conditional path"),
    code!("PW0529", "unknown field of a reserved variable"),
    code!(
        "PW0530",
        "path into a static context value that does not have it"
    ),
    code!("PW0531", "sub-recipe file not found or unreadable"),
    code!("PW0532", "recipes call each other in a cycle"),
    code!("PW0533", "sub-recipe input not provided"),
    code!(
        "PW0534",
        "context passed to a sub-recipe that it does not declare"
    ),
    code!(
        "PW0535",
        "sub-recipe path computed at run time (not checked)"
    ),
    code!("PW0536", "parallel `foreach` over a recipe step"),
    code!(
        "PW0537",
        "variable reference inside a quoted string in a condition"
    ),
    code!("PW0538", "text longer than the schema allows"),
    code!("PW0539", "agent name without a bundle namespace"),
    code!("PW0540", "`created`/`updated` is not an ISO 8601 date-time"),
    code!(
        "PW0541",
        "a plain `yes`/`no`/`on`/`off`: a boolean to the runner (YAML 1.1), a string to YAML 1.2"
    ),
];
