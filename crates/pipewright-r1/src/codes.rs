//! Diagnostic codes of the R1 language (`PW0100`–`PW0199`).

pipewright_syntax::codes! {
    pub const CODES;

    pub const BAD_CHAR = "PW0100": "unexpected character in an R1 expression";
    pub const SYNTAX = "PW0101": "R1 syntax error";
    pub const FOREIGN_OPERATOR = "PW0102":
        "operator spelt as in another language (`&&`, `||`, `!`, `=`)";
    pub const NO_INDEXING = "PW0103": "R1 has no indexing";
    pub const CONDITIONAL = "PW0104": "R1 has no conditional operator `? :`";
    pub const UNKNOWN_FUNCTION = "PW0105": "call of a function that is not an R1 combinator";
    pub const ARITY = "PW0106": "wrong number of arguments to a combinator";
    pub const LAMBDA = "PW0107": "lambda in the wrong place, or missing where required";
    pub const GET_PATH = "PW0108": "the path argument of `get` is not a string literal";
    pub const EMPTY = "PW0109": "empty expression";
    pub const CHAINED_COMPARISON = "PW0110": "chained comparison";
    pub const INT_TOO_LARGE = "PW0111": "integer literal too large";
    pub const KEYWORD = "PW0112": "keyword used where a value or name is needed";
    pub const TOO_DEEP = "PW0113": "expression nests too deeply";
    pub const UNTERMINATED = "PW0114": "unterminated string literal";
    pub const UNKNOWN_FIELD = "PW0120": "no such field in the schema";
    pub const ARITH_TYPES = "PW0121": "arithmetic on incompatible types";
    pub const COMPARE_TYPES = "PW0122": "ordering comparison of incompatible types";
    pub const NOT_A_LIST = "PW0123": "combinator applied to something that is not a list";
    pub const ARG_TYPE = "PW0124": "combinator argument of the wrong type";
    pub const PATH_INTO_SCALAR = "PW0125": "field access on a value that is not an object";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_in_the_r1_range_and_explained_with_examples() {
        for c in CODES {
            assert!(c.code.starts_with("PW01"), "{}", c.code);
            assert!(
                c.explanation.contains("**Wrong:**") && c.explanation.contains("**Right:**"),
                "{}",
                c.code
            );
        }
        let problems = pipewright_syntax::codes::explanation_problems(CODES);
        assert!(problems.is_empty(), "{problems:#?}");
    }
}
