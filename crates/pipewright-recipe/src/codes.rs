//! Diagnostic codes of the recipe dialect (the `PW05xx` range).

pipewright_syntax::codes! {
    pub const CODES;

    pub const NOT_A_RECIPE = "PW0500": "the document is not a recipe";
    pub const MISSING_FIELD = "PW0501": "a required recipe field is missing or empty";
    pub const WRONG_TYPE = "PW0502": "a recipe field has the wrong YAML type";
    pub const UNKNOWN_TOP_KEY = "PW0503":
        "unknown key at the top level or on a stage (ignored by the runner)";
    pub const UNKNOWN_STEP_KEY = "PW0504": "unknown key on a step or in a nested configuration";
    pub const BAD_NAME = "PW0505": "invalid recipe name, stage name or step id";
    pub const BAD_VERSION = "PW0506": "recipe version is not MAJOR.MINOR.PATCH";
    pub const STEPS_XOR_STAGES = "PW0507": "a recipe needs exactly one of `steps` and `stages`";
    pub const DUPLICATE = "PW0508": "duplicate step id, stage name or step field";
    pub const BAD_VARIABLE_NAME = "PW0509": "invalid variable name";
    pub const RESERVED_NAME = "PW0510": "a reserved name is used as a variable";
    pub const SHADOWS_RESERVED = "PW0511": "a loop variable shadows a reserved variable";
    pub const BAD_STEP_TYPE = "PW0512": "unknown step type";
    pub const FIELD_NOT_FOR_TYPE = "PW0513": "a field that does not belong to this step type";
    pub const PROVIDER_PREFERENCES = "PW0514": "invalid `provider_preferences`";
    pub const LOOP_FIELDS = "PW0515": "loop fields that conflict or lack their loop";
    pub const INEFFECTIVE_FIELD = "PW0516": "a field that has no effect where it is written";
    pub const OUT_OF_RANGE = "PW0517": "a number outside its allowed range";
    pub const BAD_ENUM = "PW0518": "a value outside its set of allowed values";
    pub const DEPENDS_UNKNOWN = "PW0519": "`depends_on` names a step that does not exist";
    pub const DEPENDS_ORDER = "PW0520": "`depends_on` names the step itself or a later step";
    pub const DEPENDS_CYCLE = "PW0521": "`depends_on` forms a cycle";
    pub const TEMPLATE_NOT_REFERENCE = "PW0522":
        "`{{…}}` that is not a variable reference (left as literal text)";
    pub const TEMPLATE_MALFORMED = "PW0523": "malformed variable reference";
    pub const CONDITION_SYNTAX = "PW0524": "condition syntax error";
    pub const NO_VARIABLE = "PW0525": "an expression field without a variable reference";
    pub const FOREACH_SOURCE = "PW0526": "`foreach` must be a single variable reference";
    pub const UNDEFINED_VARIABLE = "PW0527": "undefined variable";
    pub const CONDITIONALLY_DEFINED = "PW0528": "variable defined only on a conditional path";
    pub const UNKNOWN_RESERVED_FIELD = "PW0529": "unknown field of a reserved variable";
    pub const STATIC_PATH = "PW0530": "path into a static context value that does not have it";
    pub const SUBRECIPE_NOT_FOUND = "PW0531": "sub-recipe file not found or unreadable";
    pub const RECIPE_CYCLE = "PW0532": "recipes call each other in a cycle";
    pub const SUBRECIPE_MISSING_CONTEXT = "PW0533": "sub-recipe input not provided";
    pub const SUBRECIPE_EXTRA_CONTEXT = "PW0534":
        "context passed to a sub-recipe that it does not declare";
    pub const DYNAMIC_RECIPE_PATH = "PW0535": "sub-recipe path computed at run time (not checked)";
    pub const PARALLEL_RECIPE = "PW0536": "parallel `foreach` over a recipe step";
    pub const QUOTED_VARIABLE = "PW0537":
        "variable reference inside a quoted string in a condition";
    pub const LONG_TEXT = "PW0538": "text longer than the schema allows";
    pub const BARE_AGENT = "PW0539": "agent name without a bundle namespace";
    pub const BAD_TIMESTAMP = "PW0540": "`created`/`updated` is not an ISO 8601 date-time";
    pub const YAML11_BOOLEAN = "PW0541":
        "a plain `yes`/`no`/`on`/`off`: a boolean to the runner (YAML 1.1), a string to YAML 1.2";
}
