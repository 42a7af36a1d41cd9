//! The codes of the pipeline dialect (`PW02xx` documents and steps, `PW03xx` schemas).

pipewright_syntax::codes! {
    pub const CODES;

    pub const NOT_A_PIPELINE = "PW0200": "a document is neither a pipeline nor a schema";
    pub const NO_PIPELINE = "PW0201": "a pipeline file declares no pipeline";
    pub const DUPLICATE_PIPELINE = "PW0202": "two pipelines in the file set share a name";
    pub const UNKNOWN_KEY = "PW0203": "unknown key";
    pub const MISSING_KEY = "PW0204": "a required key is missing";
    pub const WRONG_TYPE = "PW0205": "a value has the wrong type";
    pub const STEP_NOT_SINGLE_KEY = "PW0206": "a step is not a single-key mapping";
    pub const UNKNOWN_STEP_KIND = "PW0207": "unknown step kind";
    pub const UNSUPPORTED_KEY = "PW0208": "a key that the runtime does not support";
    pub const DOT_IN_NAME = "PW0209": "a pipeline name contains `.`";
    pub const EXPR_NOT_STRING = "PW0210": "an expression is not a string";
    pub const MISPLACED_EXPR = "PW0211": "`!expr` in the wrong place";
    pub const BAD_ON_ERROR = "PW0212": "an invalid `on_error` policy";
    pub const OVER_AND_ITEMS = "PW0213": "both `over` and `items`";
    pub const NOT_POSITIVE = "PW0214": "a count that must be a positive integer";
    pub const BAD_BRANCH_NAME = "PW0215": "a reserved or hazardous parallel branch name";
    pub const EMPTY_LIST = "PW0216": "an empty list where at least one entry is required";
    pub const BAD_CAPABILITIES = "PW0217": "malformed `capabilities`";
    pub const EMPTY_OUTPUT_NAME = "PW0218": "an empty `output` name: the result is never stored";
    pub const UNKNOWN_SCHEMA = "PW0250": "a `schema:` reference names no schema";
    pub const UNKNOWN_TARGET = "PW0251": "a call or match target names no pipeline";
    pub const RECURSION = "PW0252": "recursion in the call graph";
    pub const READ_BEFORE_WRITE = "PW0253": "a named store is read before it is written";
    pub const STORE_NOT_PASSED = "PW0254":
        "a called pipeline reads a store its caller does not pass";
    pub const OUT_OF_SCOPE = "PW0255": "`item` or `acc` outside the step that binds it";
    pub const UNKNOWN_TOOL = "PW0256": "unknown tool";
    pub const CAPABILITY_UNKNOWN_TOOL = "PW0257": "a capability names no known tool";
    pub const INLINE_AGENT_IDENTITY = "PW0258":
        "an inline pipeline runs an agent under another identity";
    pub const UNREACHABLE_LABEL = "PW0259": "a match label that can never be selected";
    pub const UNKNOWN_NAME = "PW0261": "an unknown name in an expression";
    pub const FORBIDDEN_TOOL = "PW0262": "a tool that pipelines may not use";
    pub const UNQUOTED_SPLICE = "PW0263":
        "a shell command string splices in a value without quoting it";
    pub const BAD_FIELD_TYPE = "PW0300": "an invalid field type";
    pub const MEANINGLESS_ATTRIBUTE = "PW0301":
        "an attribute that has no meaning for the field's type";
    pub const UNSATISFIABLE_BOUNDS = "PW0302": "number bounds that no value satisfies";
    pub const EMPTY_ENUM = "PW0303": "an enum without values";
    pub const BAD_LIST_TYPE = "PW0304": "an untyped list or a list of lists";
    pub const DUPLICATE_SCHEMA = "PW0305": "two schemas share a name";
    pub const RECURSIVE_SCHEMA = "PW0306": "recursive schema";
}
