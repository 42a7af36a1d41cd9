//! Diagnostic codes of the R1 language (`PW0100`–`PW0199`).

use pipewright_syntax::CodeInfo;

pub const BAD_CHAR: &str = "PW0100";
pub const SYNTAX: &str = "PW0101";
pub const FOREIGN_OPERATOR: &str = "PW0102";
pub const NO_INDEXING: &str = "PW0103";
pub const CONDITIONAL: &str = "PW0104";
pub const UNKNOWN_FUNCTION: &str = "PW0105";
pub const ARITY: &str = "PW0106";
pub const LAMBDA: &str = "PW0107";
pub const GET_PATH: &str = "PW0108";
pub const EMPTY: &str = "PW0109";
pub const CHAINED_COMPARISON: &str = "PW0110";
pub const INT_TOO_LARGE: &str = "PW0111";
pub const KEYWORD: &str = "PW0112";
pub const TOO_DEEP: &str = "PW0113";
pub const UNTERMINATED: &str = "PW0114";
pub const UNKNOWN_FIELD: &str = "PW0120";
pub const ARITH_TYPES: &str = "PW0121";
pub const COMPARE_TYPES: &str = "PW0122";
pub const NOT_A_LIST: &str = "PW0123";
pub const ARG_TYPE: &str = "PW0124";
pub const PATH_INTO_SCALAR: &str = "PW0125";

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
    code!("PW0100", "unexpected character in an R1 expression"),
    code!("PW0101", "R1 syntax error"),
    code!(
        "PW0102",
        "operator spelt as in another language (`&&`, `||`, `!`, `=`)"
    ),
    code!("PW0103", "R1 has no indexing"),
    code!("PW0104", "R1 has no conditional operator `? :`"),
    code!("PW0105", "call of a function that is not an R1 combinator"),
    code!("PW0106", "wrong number of arguments to a combinator"),
    code!(
        "PW0107",
        "lambda in the wrong place, or missing where required"
    ),
    code!(
        "PW0108",
        "the path argument of `get` is not a string literal"
    ),
    code!("PW0109", "empty expression"),
    code!("PW0110", "chained comparison"),
    code!("PW0111", "integer literal too large"),
    code!("PW0112", "keyword used where a value or name is needed"),
    code!("PW0113", "expression nests too deeply"),
    code!("PW0114", "unterminated string literal"),
    code!("PW0120", "no such field in the schema"),
    code!("PW0121", "arithmetic on incompatible types"),
    code!("PW0122", "ordering comparison of incompatible types"),
    code!(
        "PW0123",
        "combinator applied to something that is not a list"
    ),
    code!("PW0124", "combinator argument of the wrong type"),
    code!("PW0125", "field access on a value that is not an object"),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `PW01xx` literal in the crate's sources must be documented.
    #[test]
    fn every_emitted_code_is_documented() {
        let sources = [
            include_str!("codes.rs"),
            include_str!("lexer.rs"),
            include_str!("parser.rs"),
            include_str!("eval.rs"),
            include_str!("types.rs"),
            include_str!("template.rs"),
            include_str!("refs.rs"),
            include_str!("print.rs"),
        ];
        let mut seen = 0;
        for src in sources {
            let mut rest = src;
            while let Some(i) = rest.find("\"PW") {
                let code = rest.get(i + 1..i + 7).unwrap_or("");
                rest = &rest[i + 3..];
                if code.len() == 6 && code[2..].bytes().all(|b| b.is_ascii_digit()) {
                    seen += 1;
                    assert!(
                        CODES.iter().any(|c| c.code == code),
                        "{code} is not in CODES"
                    );
                }
            }
        }
        assert!(seen >= CODES.len());
        for c in CODES {
            assert!(
                c.explanation.contains("**Wrong:**") && c.explanation.contains("**Right:**"),
                "{}",
                c.code
            );
            assert!(c.code.starts_with("PW01"));
        }
    }
}
