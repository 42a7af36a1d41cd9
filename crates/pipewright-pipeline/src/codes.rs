//! The codes of the pipeline dialect (`PW02xx` documents and steps, `PW03xx` schemas).

use pipewright_syntax::CodeInfo;

pub const CODES: &[CodeInfo] = &[
    CodeInfo {
        code: "PW0200",
        title: "a document is neither a pipeline nor a schema",
        explanation: include_str!("../explain/PW0200.md"),
    },
    CodeInfo {
        code: "PW0201",
        title: "a pipeline file declares no pipeline",
        explanation: include_str!("../explain/PW0201.md"),
    },
    CodeInfo {
        code: "PW0202",
        title: "two pipelines in the file set share a name",
        explanation: include_str!("../explain/PW0202.md"),
    },
    CodeInfo {
        code: "PW0203",
        title: "unknown key",
        explanation: include_str!("../explain/PW0203.md"),
    },
    CodeInfo {
        code: "PW0204",
        title: "a required key is missing",
        explanation: include_str!("../explain/PW0204.md"),
    },
    CodeInfo {
        code: "PW0205",
        title: "a value has the wrong type",
        explanation: include_str!("../explain/PW0205.md"),
    },
    CodeInfo {
        code: "PW0206",
        title: "a step is not a single-key mapping",
        explanation: include_str!("../explain/PW0206.md"),
    },
    CodeInfo {
        code: "PW0207",
        title: "unknown step kind",
        explanation: include_str!("../explain/PW0207.md"),
    },
    CodeInfo {
        code: "PW0208",
        title: "a key that the runtime does not support",
        explanation: include_str!("../explain/PW0208.md"),
    },
    CodeInfo {
        code: "PW0209",
        title: "a pipeline name contains `.`",
        explanation: include_str!("../explain/PW0209.md"),
    },
    CodeInfo {
        code: "PW0210",
        title: "an expression is not a string",
        explanation: include_str!("../explain/PW0210.md"),
    },
    CodeInfo {
        code: "PW0211",
        title: "`!expr` in the wrong place",
        explanation: include_str!("../explain/PW0211.md"),
    },
    CodeInfo {
        code: "PW0212",
        title: "an invalid `on_error` policy",
        explanation: include_str!("../explain/PW0212.md"),
    },
    CodeInfo {
        code: "PW0213",
        title: "both `over` and `items`",
        explanation: include_str!("../explain/PW0213.md"),
    },
    CodeInfo {
        code: "PW0214",
        title: "a count that must be a positive integer",
        explanation: include_str!("../explain/PW0214.md"),
    },
    CodeInfo {
        code: "PW0215",
        title: "a reserved or hazardous parallel branch name",
        explanation: include_str!("../explain/PW0215.md"),
    },
    CodeInfo {
        code: "PW0216",
        title: "an empty list where at least one entry is required",
        explanation: include_str!("../explain/PW0216.md"),
    },
    CodeInfo {
        code: "PW0217",
        title: "malformed `capabilities`",
        explanation: include_str!("../explain/PW0217.md"),
    },
    CodeInfo {
        code: "PW0218",
        title: "an empty `output` name: the result is never stored",
        explanation: include_str!("../explain/PW0218.md"),
    },
    CodeInfo {
        code: "PW0250",
        title: "a `schema:` reference names no schema",
        explanation: include_str!("../explain/PW0250.md"),
    },
    CodeInfo {
        code: "PW0251",
        title: "a call or match target names no pipeline",
        explanation: include_str!("../explain/PW0251.md"),
    },
    CodeInfo {
        code: "PW0252",
        title: "recursion in the call graph",
        explanation: include_str!("../explain/PW0252.md"),
    },
    CodeInfo {
        code: "PW0253",
        title: "a named store is read before it is written",
        explanation: include_str!("../explain/PW0253.md"),
    },
    CodeInfo {
        code: "PW0254",
        title: "a called pipeline reads a store its caller does not pass",
        explanation: include_str!("../explain/PW0254.md"),
    },
    CodeInfo {
        code: "PW0255",
        title: "`item` or `acc` outside the step that binds it",
        explanation: include_str!("../explain/PW0255.md"),
    },
    CodeInfo {
        code: "PW0256",
        title: "unknown tool",
        explanation: include_str!("../explain/PW0256.md"),
    },
    CodeInfo {
        code: "PW0257",
        title: "a capability names no known tool",
        explanation: include_str!("../explain/PW0257.md"),
    },
    CodeInfo {
        code: "PW0258",
        title: "an inline pipeline runs an agent under another identity",
        explanation: include_str!("../explain/PW0258.md"),
    },
    CodeInfo {
        code: "PW0259",
        title: "a match label that can never be selected",
        explanation: include_str!("../explain/PW0259.md"),
    },
    CodeInfo {
        code: "PW0261",
        title: "an unknown name in an expression",
        explanation: include_str!("../explain/PW0261.md"),
    },
    CodeInfo {
        code: "PW0262",
        title: "a tool that pipelines may not use",
        explanation: include_str!("../explain/PW0262.md"),
    },
    CodeInfo {
        code: "PW0263",
        title: "a shell command string splices in a value without quoting it",
        explanation: include_str!("../explain/PW0263.md"),
    },
    CodeInfo {
        code: "PW0300",
        title: "an invalid field type",
        explanation: include_str!("../explain/PW0300.md"),
    },
    CodeInfo {
        code: "PW0301",
        title: "an attribute that has no meaning for the field's type",
        explanation: include_str!("../explain/PW0301.md"),
    },
    CodeInfo {
        code: "PW0302",
        title: "number bounds that no value satisfies",
        explanation: include_str!("../explain/PW0302.md"),
    },
    CodeInfo {
        code: "PW0303",
        title: "an enum without values",
        explanation: include_str!("../explain/PW0303.md"),
    },
    CodeInfo {
        code: "PW0304",
        title: "an untyped list or a list of lists",
        explanation: include_str!("../explain/PW0304.md"),
    },
    CodeInfo {
        code: "PW0305",
        title: "two schemas share a name",
        explanation: include_str!("../explain/PW0305.md"),
    },
    CodeInfo {
        code: "PW0306",
        title: "recursive schema",
        explanation: include_str!("../explain/PW0306.md"),
    },
];
