//! Expression → result table drawn from the reference runtime notes (with pipewright's
//! documented deviations). An expected value starting with `!` is an evaluation error whose
//! message contains the rest.

use pipewright_r1::parser::parse_fast;
use pipewright_r1::{eval, parse, Scope, Value};

const CASES: &[(&str, &str)] = &[
    // literals and numbers
    ("007", "7"),
    ("1.50", "1.5"),
    ("--5", "5"),
    ("- -1 * - 2", "-2"),
    ("1 + 2 * 3", "7"),
    ("(1 + 2) * 3", "9"),
    ("0.1 + 0.2", "0.30000000000000004"),
    ("6/2", "3"),
    ("-6/3", "-2"),
    ("7/7", "1"),
    ("0/5", "0"),
    ("7/2", "3.5"),
    ("6/4", "1.5"),
    ("-7/2", "-3.5"),
    ("6.0/2", "3.0"),
    ("2 * 1.5", "3.0"),
    ("1 + 1.0", "2.0"),
    ("1/0", "!division by zero"),
    ("1.0/0.0", "!division by zero"),
    ("9223372036854775807 + 1", "!integer overflow"),
    ("-9223372036854775807 - 2", "!integer overflow"),
    ("3037000500 * 3037000500", "!integer overflow"),
    // strings and lists
    ("'a' + \"b\"", "\"ab\""),
    ("'it\\'s'", "\"it's\""),
    ("'\\r\\u0041'", "\"ru0041\""),
    ("'tab\\there'", "\"tab\\there\""),
    ("[1] + [2, 3]", "[1,2,3]"),
    ("'a' + 1", "!arithmetic '+' requires two numbers (or '+' on two strings/lists), got string and int"),
    ("[1] + 'a'", "!got list and string"),
    ("'a' * 3", "!arithmetic '*'"),
    ("null + 1", "!got null and int"),
    ("true + 1", "!got bool and int"),
    ("-'a'", "!unary '-' requires a number, got string"),
    ("-true", "!unary '-' requires a number, got bool"),
    // truthiness, and/or, not
    ("not null", "true"),
    ("not 0", "true"),
    ("not 0.0", "true"),
    ("not ''", "true"),
    ("not []", "true"),
    ("not {}", "true"),
    ("not [0]", "false"),
    ("not '0'", "false"),
    ("not 'false'", "false"),
    ("not not 3", "true"),
    ("1 and 2", "2"),
    ("0 or 'x'", "\"x\""),
    ("'' and ctx.missing", "\"\""),
    ("1 or ctx.missing", "1"),
    ("[] or {}", "{}"),
    ("ctx.flag and 'OK' or 'NEEDS WORK'", "\"OK\""),
    ("ctx.off and 'OK' or 'NEEDS WORK'", "\"NEEDS WORK\""),
    ("not 1 == 2", "true"),
    ("true and false or true", "true"),
    // equality and ordering
    ("1 == 1.0", "true"),
    ("[1] == [1.0]", "true"),
    ("'1' == 1", "false"),
    ("null == null", "true"),
    ("{a: 1, b: 2} == {b: 2, a: 1}", "true"),
    ("true == 1", "false"),
    ("false == 0", "false"),
    ("true != 1", "true"),
    ("'B' < 'a'", "true"),
    ("'10' < '9'", "true"),
    ("2 >= 2.0", "true"),
    ("1 < 1.5", "true"),
    ("true < 2", "!comparison '<' requires two numbers or two strings, got bool and int"),
    ("true > false", "!comparison '>' requires two numbers or two strings, got bool and bool"),
    ("'a' < 1", "!got string and int"),
    // paths
    ("ctx.n", "3"),
    ("ctx . n", "3"),
    ("ctx.nested.inner.v", "\"deep\""),
    ("ctx.nil", "null"),
    ("ctx.and", "\"kw\""),
    ("ctx.count", "\"field\""),
    ("ctx.missing", "!path 'ctx.missing' is absent: no field 'ctx.missing' in context"),
    ("ctx.nested.nope.x", "!path 'ctx.nested.nope.x' is absent: no field 'ctx.nested.nope' in context"),
    ("ctx.s.x", "!path 'ctx.s.x' is absent: ctx.s is not an object (it is string), cannot access 'x'"),
    ("ctx.nil.x", "!ctx.nil is not an object (it is null)"),
    ("ctx.tool.structured", "!read 'ctx.tool.text'"),
    ("greeting", "!no field 'greeting' in context"),
    ("n", "!write 'ctx.n'"),
    ("pipe", "null"),
    ("{a: 1, a: 2}", "{\"a\":2}"),
    ("{and: 1, true: 2}", "{\"and\":1,\"true\":2}"),
    // get
    ("get(ctx, 'nested.inner.v')", "\"deep\""),
    ("get(ctx, 'nested.nope', 5)", "5"),
    ("get(ctx, 'nope')", "null"),
    ("get(ctx, 'nil', 5)", "null"),
    ("get(ctx.list, '0', 'd')", "\"d\""),
    ("get(ctx, 's.x', 'd')", "\"d\""),
    ("get(ctx.odd, 'a..b')", "1"),
    ("get(ctx.odd, '')", "2"),
    ("get(ctx, 'n', 1/0)", "!division by zero"),
    ("get(ctx.missing, 'a', 1)", "!path 'ctx.missing' is absent"),
    // combinators
    ("map(ctx.list, x -> x * 2)", "[2,4,6]"),
    ("filter(ctx.list, x -> x > 1)", "[2,3]"),
    ("all([], x -> x)", "true"),
    ("any([], x -> x)", "false"),
    ("all(ctx.reviews, r -> r.passed)", "false"),
    ("any(ctx.reviews, r -> r.passed)", "true"),
    ("all([0, 1], x -> x and ctx.missing)", "false"),
    ("any([1, 0], x -> 1/x)", "true"),
    ("all([1, 0], x -> 1/x)", "!division by zero"),
    ("find(ctx.reviews, r -> not r.passed)", "{\"passed\":false,\"name\":\"b\"}"),
    ("find(ctx.list, x -> x > 9)", "null"),
    ("map('abc', x -> x)", "!map() requires a list, got string"),
    ("filter({}, x -> x)", "!filter() requires a list, got object"),
    ("count(ctx.list)", "3"),
    ("count([])", "0"),
    ("count('abc')", "!count() requires a list, got string"),
    ("sum(ctx.list)", "6"),
    ("sum([])", "0"),
    ("sum([1, 2.5])", "3.5"),
    ("sum([1.0, 2])", "3.0"),
    ("sum([1, true])", "!sum() requires a list of numbers, found bool"),
    ("sum(['a'])", "!sum() requires a list of numbers, found string"),
    ("sum(1)", "!sum() requires a list, got int"),
    ("join(['a', 'b'], ', ')", "\"a, b\""),
    ("join([], ',')", "\"\""),
    ("join([1], ',')", "!join() requires a list of strings, found int"),
    ("join(['a'], 1)", "!join() separator must be a string, got int"),
    ("join(1, 1)", "!join() requires a list, got int"),
    ("map(ctx.list, x -> map([10], y -> x + y))", "[[11],[12],[13]]"),
    ("map([1], ctx -> ctx)", "[1]"),
    ("map(ctx.list, item -> item) == ctx.list", "true"),
    ("join(map(filter([{fired: true, text: 'a'}, {fired: false, text: 'b'}], r -> r.fired), r -> r.text), '')", "\"a\""),
    // parse_json
    ("parse_json('{\"a\": [1, 2.0, null]}')", "{\"a\":[1,2.0,null]}"),
    ("parse_json(' 3 ')", "3"),
    ("parse_json('\"s\"')", "\"s\""),
    ("parse_json('{\"a\":1,\"a\":2}')", "{\"a\":2}"),
    ("parse_json('')", "!parse_json() failed to decode"),
    ("parse_json('1 x')", "!parse_json() failed to decode"),
    ("parse_json(1)", "!parse_json() requires a string, got int"),
    // shell_quote
    ("shell_quote('x; touch pwned')", "\"'x; touch pwned'\""),
    ("shell_quote(\"it's\")", "\"'it'\\\"'\\\"'s'\""),
    ("shell_quote('')", "\"''\""),
    ("shell_quote('a-b_c/d.txt')", "\"a-b_c/d.txt\""),
    ("'echo ' + shell_quote(ctx.s)", "\"echo str\""),
    ("shell_quote(1)", "!shell_quote() requires a string, got int"),
];

fn context() -> Value {
    Value::from_json(&serde_json::json!({
        "n": 3,
        "s": "str",
        "nil": null,
        "flag": true,
        "off": false,
        "and": "kw",
        "count": "field",
        "list": [1, 2, 3],
        "nested": {"inner": {"v": "deep"}},
        "odd": {"a": {"": {"b": 1}}, "": 2},
        "tool": {"text": "hello"},
        "reviews": [{"passed": true, "name": "a"}, {"passed": false, "name": "b"}]
    }))
}

#[test]
fn conformance_table() {
    assert!(CASES.len() >= 80);
    let ctx = context();
    let scope = Scope::new()
        .with("ctx", &ctx)
        .with_owned("pipe", Value::Null);
    let mut failures = Vec::new();
    for (src, expected) in CASES {
        let got = match parse(src) {
            Ok(e) => match eval(&e, &scope) {
                Ok(v) => v.to_json_string(),
                Err(e) => format!("!{}", e.message),
            },
            Err(errs) => format!("parse error: {errs:?}"),
        };
        let ok = match expected.strip_prefix('!') {
            Some(msg) => got.starts_with('!') && got.contains(msg),
            None => &got == expected,
        };
        if !ok {
            failures.push(format!("{src}\n   expected {expected}\n   got      {got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn well_formed_cases_take_the_fast_path() {
    for (src, _) in CASES {
        if let Ok(e) = parse(src) {
            assert_eq!(
                parse_fast(src),
                Some(e),
                "{src} fell back to the slow parser"
            );
        }
    }
}
