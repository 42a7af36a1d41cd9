//! The runtime's semantic core against the reference runner's behaviour
//! (`specs/notes/recipe-runtime.md` §3–§5).

use pipewright_recipe::runtime::*;
use pipewright_recipe::value::Value;

fn v(json: &str) -> Value {
    Value::from_json_text(json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

fn ctx(json: &str) -> Context {
    match v(json) {
        Value::Map(m) => m,
        other => panic!("not a mapping: {other:?}"),
    }
}

fn s(t: &str) -> Value {
    Value::Str(t.to_owned())
}

// ---- §5.3 / §5.4 -------------------------------------------------------------------------

#[test]
fn bash_output_is_json_when_it_can_be() {
    // `echo "msg=[]"`: only a trivial structure decodes, and it wins over the text.
    assert_eq!(process_result(s("msg=[]\n"), true, false), v("[]"));
    assert_eq!(
        process_result(s("x {\"a\":1}\n"), true, false),
        v(r#"{"a": 1}"#)
    );
    // Not bash: the text stays, unstripped.
    assert_eq!(
        process_result(s("x {\"a\":1}\n"), false, false),
        s("x {\"a\":1}\n")
    );
    assert_eq!(process_result(s("hello\n"), true, false), s("hello\n"));
    assert_eq!(process_result(s("  \n"), true, false), s("  \n"));
}

#[test]
fn any_json_value_parses_scalars_included() {
    for (text, want) in [
        ("42", "42"),
        ("true", "true"),
        ("null", "null"),
        ("\"hi\"", "\"hi\""),
        ("  7 ", "7"),
        ("100000000000000000000000", "100000000000000000000000"),
        ("{\"a\": 1, \"a\": 2}", "{\"a\": 2}"),
    ] {
        assert_eq!(process_result(s(text), false, false), v(want), "{text}");
    }
    // NaN and Infinity are Python floats.
    let Value::List(items) = process_result(s("[NaN, Infinity, -Infinity]"), false, false) else {
        panic!("not a list")
    };
    assert!(matches!(items[0], Value::Float(f) if f.is_nan()));
    assert_eq!(items[1], Value::Float(f64::INFINITY));
    assert_eq!(items[2], Value::Float(f64::NEG_INFINITY));
}

#[test]
fn output_key_unwraps_before_anything_else() {
    assert_eq!(
        process_result(v(r#"{"output": "{\"k\": 1}", "x": 2}"#), false, false),
        v(r#"{"k": 1}"#)
    );
    assert_eq!(
        process_result(v(r#"{"output": null}"#), false, true),
        Value::Null
    );
    assert_eq!(
        process_result(v(r#"{"out": 1}"#), false, false),
        v(r#"{"out": 1}"#)
    );
    assert_eq!(process_result(v("[1]"), false, true), v("[1]"));
}

#[test]
fn parse_json_extraction_order() {
    // 1. the whole stripped text, scalars included
    assert_eq!(extract_json("  42\n"), v("42"));
    // 2. a ```json fence, trailing text after the value allowed
    assert_eq!(
        extract_json("Here:\n```json\n{\"a\": 1} trailing\n```\nbye [2]"),
        v(r#"{"a": 1}"#)
    );
    assert_eq!(extract_json("```json\n42\n```"), v("42"));
    // Other language tags are not skipped: the content starts at `python` and fails.
    assert_eq!(extract_json("```python\n42\n```"), s("```python\n42\n```"));
    assert_eq!(extract_json("```python\n{\"b\": 2}\n```"), v(r#"{"b": 2}"#));
    // A trivial fence falls through to the scan.
    assert_eq!(extract_json("```\n{}\n```\nthen [1, 2]"), v("[1, 2]"));
    // 3. the scan takes the first non-trivial value, at any `[` or `{`
    assert_eq!(
        extract_json("a [x] b {} c {\"k\": [1]} d"),
        v(r#"{"k": [1]}"#)
    );
    assert_eq!(extract_json("[broken {\"k\": 2}"), v(r#"{"k": 2}"#));
    // 4. only trivial structures: the first one
    assert_eq!(extract_json("a {} b []"), v("{}"));
    assert_eq!(extract_json("a [] b {}"), v("[]"));
    // 5. nothing: the original, unstripped
    assert_eq!(extract_json("  no json here \n"), s("  no json here \n"));
    assert_eq!(extract_json(" \n"), s(" \n"));
    // Python number rules at the start of a fence: `01` is 0.
    assert_eq!(extract_json("```\n01\n```"), v("0"));
    assert_eq!(extract_json("```json\n1.x\n```"), v("1"));
    // parse_json on a non-bash step uses the extraction, never the plain fallback.
    assert_eq!(process_result(s("result: [3]"), false, true), v("[3]"));
    assert_eq!(
        process_result(s("result: [3]"), false, false),
        s("result: [3]")
    );
}

#[test]
fn raw_decode_takes_one_value_and_ignores_the_rest() {
    assert_eq!(raw_decode("[1] x"), Some(v("[1]")));
    assert_eq!(raw_decode("{\"a\": [true]}}}"), Some(v(r#"{"a": [true]}"#)));
    assert_eq!(raw_decode("nullx"), Some(Value::Null));
    assert_eq!(
        raw_decode("-Infinity!"),
        Some(Value::Float(f64::NEG_INFINITY))
    );
    assert_eq!(raw_decode("1e5e"), Some(Value::Float(1e5)));
    assert_eq!(raw_decode(" [1]"), None);
    assert_eq!(raw_decode("[1,"), None);
    assert_eq!(raw_decode(""), None);
}

#[test]
fn extraction_never_panics_on_odd_text() {
    let deep = "[".repeat(5000);
    for t in [
        deep.as_str(),
        "```",
        "``````",
        "```json",
        "{\"\\ud800\": 1}",
        "é[é{é",
        "```json\u{3000}[5]```",
    ] {
        let _ = extract_json(t);
        let _ = process_result(s(t), true, false);
    }
    assert_eq!(extract_json("```json\u{3000}[5]```"), v("[5]"));
}

/// Differential test against Python's own `json` module, when python3 is installed.
#[test]
fn extraction_matches_python() {
    const ORACLE: &str = r#"
import json, re, sys
def extract(output):
    s = output.strip()
    if not s:
        return output
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        pass
    dec = json.JSONDecoder()
    m = re.search(r"```(?:json)?\s*", s)
    if m:
        end = s.find("```", m.end())
        if end != -1:
            content = s[m.end():end].strip()
            if content:
                try:
                    obj, _ = dec.raw_decode(content)
                    if obj != {} and obj != []:
                        return obj
                except json.JSONDecodeError:
                    pass
    first = None
    for i, ch in enumerate(s):
        if ch in "[{":
            try:
                obj, _ = dec.raw_decode(s, i)
            except json.JSONDecodeError:
                continue
            if first is None:
                first = obj
            if obj != {} and obj != []:
                return obj
    return first if first is not None else output
for line in sys.stdin.read().split("\n"):
    print(json.dumps(extract(json.loads(line))))
"#;
    let cases = [
        "msg=[]\n",
        "x {\"a\":1}",
        "```python\n42\n```",
        "```json\n[1, 2] tail\n```",
        "``` json\n{\"a\": 1}\n```",
        "```\n01\n```",
        "```\n{}\n``` and [] and {\"z\": NaN}",
        "text [1, 2 {\"k\": \"v\"} more",
        "  \"quoted\"  ",
        "{\"a\": 1, \"a\": 2}",
        "no json",
        "\u{1c}[7]\u{1f}",
        "[[], {}]",
        "{\"big\": 123456789012345678901234567890}",
        "```jsonx\n[3]\n```",
        "1.5e3 then",
        "[1.0, 1e-7, 0.1]",
    ];
    // Plus pseudo-random JSON-ish texts (a fixed generator, so failures reproduce).
    let alphabet = [
        "[",
        "]",
        "{",
        "}",
        "\"k\"",
        ":",
        ",",
        "1",
        "-2.5e3",
        "NaN",
        "-Infinity",
        "```",
        "```json",
        "\n",
        " ",
        "x",
        "true",
        "null",
        "01",
        "1.",
        "\"\\u00e9\"",
        "[]",
        "{}",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut random = Vec::new();
    for _ in 0..400 {
        let mut t = String::new();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        for _ in 0..(seed % 16) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            t.push_str(alphabet[(seed % alphabet.len() as u64) as usize]);
        }
        random.push(t);
    }
    let cases: Vec<&str> = cases
        .iter()
        .copied()
        .chain(random.iter().map(String::as_str))
        .collect();
    let input: Vec<String> = cases
        .iter()
        .map(|c| {
            let mut out = String::new();
            s(c).write_json(&mut out);
            out
        })
        .collect();
    let child = std::process::Command::new("python3")
        .arg("-c")
        .arg(ORACLE)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("python3 not installed; skipped");
        return;
    };
    use std::io::Write;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.join("\n").as_bytes())
            .expect("write to python3");
    }
    let out = child.wait_with_output().expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), cases.len());
    let decoded = random
        .iter()
        .filter(|t| !matches!(extract_json(t), Value::Str(_)))
        .count();
    assert!(decoded >= 40, "only {decoded} random texts hold JSON");
    for (case, want) in cases.iter().zip(lines) {
        let mut got = String::new();
        extract_json(case).write_json(&mut got);
        assert_eq!(got, want, "{case:?}");
    }
}

// ---- §3 conditions by site ----------------------------------------------------------------

fn top(src: &str, c: &str) -> Result<bool, ConditionError> {
    condition_top_level(src, &ctx(c))
}

fn rendered(src: &str, c: &str) -> Result<bool, ConditionError> {
    condition_rendered(src, &ctx(c))
}

fn expr_err(m: &str) -> Result<bool, ConditionError> {
    Err(ConditionError::Expression(m.to_owned()))
}

#[test]
fn top_level_quotes_strings_itself() {
    let c = r#"{"s": "done", "t": true, "n": 10, "f": 0.0, "z": 0, "e": "", "q": "it's", "nul": null, "d": {"k": "v"}}"#;
    assert_eq!(top("{{s}} == 'done'", c), Ok(true));
    assert_eq!(top("{{q}} == \"it's\"", c), Ok(true));
    assert_eq!(top("{{t}} == 'true'", c), Ok(true));
    assert_eq!(top("{{t}} == 'True'", c), Ok(false));
    assert_eq!(top("{{n}} > '9'", c), Ok(true));
    assert_eq!(top("{{d.k}} == 'v'", c), Ok(true));
    assert_eq!(top("{{z}}", c), Ok(false));
    assert_eq!(top("{{f}}", c), Ok(true));
    assert_eq!(top("{{e}}", c), Ok(false));
    assert_eq!(top("", c), Ok(true));
    assert_eq!(top("  ", c), Ok(true));
    // The quoted form breaks here: `''done'' == 'done'`.
    assert_eq!(
        top("'{{s}}' == 'done'", c),
        expr_err("Invalid expression: Unexpected token 'done' at position 1")
    );
    assert_eq!(
        top("{{nul}} == 'x'", c),
        expr_err("Undefined variable: nul")
    );
    assert_eq!(
        top("{{s}} or {{missing}}", c),
        expr_err("Undefined variable: missing")
    );
    assert_eq!(top("{{s.x}}", c), expr_err("Undefined variable: s.x"));
    assert_eq!(
        top("{{d}} == 'x'", c),
        expr_err("Invalid expression: Unexpected character '{' at position 0")
    );
}

#[test]
fn rendered_sites_render_first() {
    let c = r#"{"s": "done", "w": "needs work", "nul": null, "e": "", "q": "it's", "n": 3}"#;
    assert_eq!(rendered("'{{s}}' == 'done'", c), Ok(true));
    assert_eq!(rendered("{{s}} == 'done'", c), Ok(true));
    assert_eq!(
        rendered("{{w}} != 'done'", c),
        expr_err("Invalid expression: Unexpected token 'work' at position 1")
    );
    // None renders as `None`, which is falsy, instead of being undefined.
    assert_eq!(rendered("{{nul}}", c), Ok(false));
    assert_eq!(top("{{nul}}", c), expr_err("Undefined variable: nul"));
    // An empty value makes the expression empty: true.
    assert_eq!(rendered("{{e}}", c), Ok(true));
    // A value containing `'` breaks tokenization.
    assert_eq!(
        rendered("'{{q}}' == 'x'", c),
        expr_err("Invalid expression: Unterminated string literal starting at position 12")
    );
    assert_eq!(rendered("{{n}} >= 3", c), Ok(true));
    assert_eq!(
        rendered("{{missing}} == 1", c),
        Err(ConditionError::Render(
            "Undefined variable: {{missing}}. Available variables: e, n, nul, q, s, w".into()
        ))
    );
}

#[test]
fn evaluator_grammar_and_messages() {
    let c = "{}";
    for (src, want) in [
        ("1 < 2", Ok(true)),
        ("'10' > '9'", Ok(true)),
        ("1 == '1.0'", Ok(true)),
        ("'nan' == 'nan'", Ok(false)),
        ("'nan' != 'nan'", Ok(true)),
        ("'inf' == 'Infinity'", Ok(true)),
        ("' 5 ' == 5", Ok(true)),
        ("'1_000' == 1000", Ok(true)),
        ("'B' < 'a'", Ok(true)),
        ("'10' > 'abc'", Ok(false)),
        ("foo", Ok(true)),
        ("FALSE", Ok(false)),
        ("'FALSE'", Ok(true)),
        ("'null'", Ok(true)),
        ("'0.0'", Ok(true)),
        ("None", Ok(false)),
        ("not 0", Ok(true)),
        ("(1 == 1) == true", Ok(true)),
        ("(1 == 2) == TRUE", Ok(false)),
        ("true and not false or false", Ok(true)),
        ("'a\\'b' == \"a'b\"", Ok(true)),
        ("AND", Ok(true)),
    ] {
        assert_eq!(top(src, c), want, "{src}");
    }
    for (src, detail) in [
        ("1 < 2 < 3", "Unexpected token '<' at position 3"),
        ("a AND b", "Unexpected token 'AND' at position 1"),
        ("{{x}} contains 'y'", ""),
        ("1 = 1", "Unexpected character '=' at position 2"),
        ("1 === 1", "Unexpected character '=' at position 4"),
        ("!a", "Unexpected character '!' at position 0"),
        ("-1 < 0", "Unexpected character '-' at position 0"),
        ("a and", "Unexpected end of expression"),
        ("a == and", "Unexpected keyword 'and' where value expected"),
        ("== 1", "Unexpected operator '==' where value expected"),
        ("()", "Unexpected operator ')' where value expected"),
        ("(a == b", "Expected ')' to close parenthesized expression"),
        ("'abc", "Unterminated string literal starting at position 0"),
        ("é == 'x' ∑", "Unexpected character '∑' at position 9"),
    ] {
        if detail.is_empty() {
            continue;
        }
        assert_eq!(
            top(src, c),
            expr_err(&format!("Invalid expression: {detail}")),
            "{src}"
        );
    }
    assert_eq!(
        top("{{x}} contains 'y'", r#"{"x": 1}"#),
        expr_err("Invalid expression: Unexpected token 'contains' at position 1")
    );
    // Lists and mappings paste as Python repr and fail to tokenize.
    assert_eq!(
        top("'a' == {{l}}", r#"{"l": ["a"]}"#),
        expr_err("Invalid expression: Unexpected character '[' at position 7")
    );
    assert_eq!(
        top("{{n}} == 1", r#"{"n": -1}"#),
        expr_err("Invalid expression: Unexpected character '-' at position 0")
    );
    let deep = "(".repeat(5000) + "1" + &")".repeat(5000);
    assert!(top(&deep, c).is_err());
    let nots = "not ".repeat(5000) + "1";
    assert!(top(&nots, c).is_err());
}

#[test]
fn break_when_warns_on_expression_errors_and_fails_on_undefined() {
    let c = ctx(r#"{"w": "needs work", "s": "done"}"#);
    assert_eq!(break_when("'{{s}}' == 'done'", &c), Ok(BreakWhen::Break));
    assert_eq!(break_when("'{{s}}' == 'x'", &c), Ok(BreakWhen::Continue));
    assert_eq!(
        break_when("{{w}} == 'x'", &c),
        Ok(BreakWhen::Warning(
            "Invalid expression: Unexpected token 'work' at position 1".into()
        ))
    );
    assert_eq!(
        break_when("{{nope}} == 'x'", &c),
        Err(RenderError(
            "Undefined variable: {{nope}}. Available variables: s, w".into()
        ))
    );
}

// ---- §4 rendering ---------------------------------------------------------------------------

#[test]
fn render_as_the_runner_does() {
    let c = ctx(
        r#"{"s": "a\n", "n": null, "b": true, "f": 1e-7, "d": {"k": ["é", null]}, "big": 123456789012345678901234}"#,
    );
    assert_eq!(
        render("{{s}}|{{n}}|{{b}}|{{f}}|{{d}}|{{big}}|{{ s }}|{{{b}}}|\\{{b\\}}", &c),
        Ok("a\n|None|true|1e-07|{\"k\": [\"\\u00e9\", null]}|123456789012345678901234|{{ s }}|{true}|\\{{b\\}}".to_owned())
    );
    let c2 = ctx(r#"{"y": "{{s}}", "s": "x"}"#);
    assert_eq!(render("{{y}}", &c2), Ok("{{s}}".to_owned()));
    assert_eq!(
        render("{{d.x}}", &c),
        Err(RenderError(
            "Undefined variable: {{d.x}}. Key 'x' not found. Available keys at 'd': k".into()
        ))
    );
    assert_eq!(
        render("{{zz.x}}", &c),
        Err(RenderError(
            "Undefined variable: {{zz.x}}. Key 'zz' not found. Available keys at 'root': b, big, d, f, n, s".into()
        ))
    );
    assert_eq!(
        render("{{s.x}}", &c),
        Err(RenderError("Cannot access 'x' on {{s}} - it's a str, not a dict. Hint: The step producing 's' may have failed to parse JSON. Check that the bash command outputs clean JSON or add 'parse_json: true'.".into()))
    );
    assert_eq!(
        render("{{d.k.0}}", &c),
        Err(RenderError("Cannot access '0' on {{d.k}} - it's a list, not a dict. Hint: The step producing 'd.k' may have failed to parse JSON. Check that the bash command outputs clean JSON or add 'parse_json: true'.".into()))
    );
}

#[test]
fn subrecipe_context_keeps_native_values() {
    let c = ctx(r#"{"l": [1, 2], "d": {"k": null}, "n": 5, "s": "x"}"#);
    let input = v(
        r#"{"a": "{{l}}", "b": "  {{d.k}} ", "c": "n={{n}}", "d": [{"e": "{{d}}"}, 3, true], "f": null, "g": "{{l}}{{n}}"}"#,
    );
    assert_eq!(
        substitute_context(&input, &c),
        Ok(v(
            r#"{"a": [1, 2], "b": null, "c": "n=5", "d": [{"e": {"k": null}}, 3, true], "f": null, "g": "[1, 2]5"}"#
        ))
    );
    assert_eq!(
        substitute_context(&v(r#"{"a": " {{nope}} "}"#), &c),
        Err(RenderError(
            "Undefined variable: {{nope}}. Available variables: d, l, n, s".into()
        ))
    );
}

#[test]
fn subrecipe_output_is_the_delta() {
    let child = ctx(
        r#"{"passed": 1, "default_key": 2, "recipe": {}, "session": {}, "step": {}, "stage": {},
            "_skipped_steps": [], "_child_session_x": "id", "_approval_message": "", "out": "r"}"#,
    );
    let delta = subrecipe_output(&child, &["passed"]);
    assert_eq!(
        delta,
        v(r#"{"default_key": 2, "_approval_message": "", "out": "r"}"#)
    );
    let child = ctx(r#"{"output": {"k": 1}, "other": 2}"#);
    assert_eq!(
        process_result(subrecipe_output(&child, &[]), false, false),
        v(r#"{"k": 1}"#)
    );
}

// ---- §5.7 foreach --------------------------------------------------------------------------

#[test]
fn foreach_resolution() {
    let c = ctx(
        r#"{"items": [1, 2], "d": {"l": ["a"], "s": "x"}, "n": null, "i": 3, "f": 1.5, "b": false, "m": {}}"#,
    );
    assert_eq!(
        resolve_foreach("{{items}}", &c, "st"),
        Ok(&[v("1"), v("2")][..])
    );
    assert_eq!(
        resolve_foreach("  {{d.l}} and more", &c, "st"),
        Ok(&[s("a")][..])
    );
    let err = |f: &str| resolve_foreach(f, &c, "st").map_err(|e| e.to_string());
    assert_eq!(
        err("items: {{items}}"),
        Err("Invalid foreach syntax: items: {{items}}".into())
    );
    assert_eq!(
        err("{{ items }}"),
        Err("Invalid foreach syntax: {{ items }}".into())
    );
    assert_eq!(
        err("{{nope}}"),
        Err("Undefined variable in foreach: {{nope}}".into())
    );
    assert_eq!(
        err("{{d.s.x}}"),
        Err("Undefined variable in foreach: {{d.s.x}}".into())
    );
    for (f, ty) in [
        ("{{m}}", "dict"),
        ("{{d.s}}", "str"),
        ("{{n}}", "NoneType"),
        ("{{i}}", "int"),
        ("{{f}}", "float"),
        ("{{b}}", "bool"),
    ] {
        assert_eq!(
            err(f),
            Err(format!(
                "Step 'st': foreach variable must be a list, got {ty}"
            ))
        );
    }
    assert_eq!(
        check_foreach_len("st", 3, 2).map_err(|e| e.to_string()),
        Err("Step 'st': foreach exceeds max_iterations (3 > 2)".into())
    );
    assert_eq!(check_foreach_len("st", 2, 2), Ok(()));
}

// ---- §5.8 update_context and while ---------------------------------------------------------

#[test]
fn update_context_stores_strings() {
    let mut c = ctx(r#"{"_loop_iteration": 3, "d": {"a": 1}, "b": true}"#);
    apply_update_context(
        &mut c,
        &[
            ("it".into(), s("{{_loop_iteration}}")),
            ("dj".into(), s("{{d}}")),
            ("bj".into(), s("{{b}}")),
            ("again".into(), s("{{it}}!")),
            ("num".into(), v("5")),
        ],
    )
    .expect("renders");
    assert_eq!(c["it"], s("3"));
    assert_eq!(c["dj"], s("{\"a\": 1}"));
    assert_eq!(c["bj"], s("true"));
    assert_eq!(c["again"], s("3!"));
    assert_eq!(c["num"], s("5"));
    assert!(apply_update_context(&mut c, &[("x".into(), s("{{nope}}"))]).is_err());
}

/// The notes' verified loop: counter 0; while `{{counter}} < 10`; update counter =
/// `{{_loop_iteration}}`; break_when `{{counter}} >= 3`; body `echo tick-{{_loop_index}}-seen-{{counter}}`.
#[test]
fn while_loop_runs_as_the_reference_does() {
    let mut c = ctx(r#"{"counter": 0}"#);
    let mut lp = WhileLoop::new("w", 100);
    let updates = [("counter".to_owned(), s("{{_loop_iteration}}"))];
    let mut stop = None;
    while !lp.at_limit() {
        if !lp.enter(&mut c, "{{counter}} < 10").expect("condition") {
            stop = Some(WhileStop::ConditionFalse);
            break;
        }
        let stdout = render("tick-{{_loop_index}}-seen-{{counter}}\n", &c).expect("renders");
        let result = process_result(s(&stdout), true, false);
        let after = lp
            .after_body(&mut c, result, &updates, Some("{{counter}} >= 3"))
            .expect("break_when");
        if after.stop.is_some() {
            stop = after.stop;
            break;
        }
    }
    assert_eq!(stop, Some(WhileStop::BreakWhen));
    let results = lp.finish(&mut c, None, Some("ticks"));
    assert_eq!(results.len(), 3);
    assert_eq!(
        c["ticks"],
        v(r#"["tick-0-seen-0\n", "tick-1-seen-1\n", "tick-2-seen-2\n"]"#)
    );
    assert_eq!(c["counter"], s("3"));
    assert!(!c.contains_key("_loop_index") && !c.contains_key("_loop_iteration"));
}

#[test]
fn while_loop_limits_and_errors() {
    let mut c = ctx(r#"{"go": true}"#);
    let mut lp = WhileLoop::new("w", 2);
    let mut n = 0;
    while !lp.at_limit() && lp.enter(&mut c, "{{go}}").expect("condition") {
        assert_eq!(c["_loop_index"], Value::Int(n));
        assert_eq!(c["_loop_iteration"], Value::Int(n + 1));
        lp.after_body(&mut c, Value::Int(n), &[], Some("{{go}} == 'x' 'y'"))
            .map(|a| assert!(a.warning.is_some() && a.stop.is_none()))
            .expect("a warning, not an error");
        n += 1;
    }
    assert_eq!(n, 2);
    assert_eq!(lp.body_error("boom"), "Step 'w' iteration 2 failed: boom");
    lp.finish(&mut c, Some("out"), None);
    assert_eq!(c["out"], Value::Int(1));

    let mut lp = WhileLoop::new("w", 5);
    assert_eq!(lp.body_error("boom"), "Step 'w' iteration 0 failed: boom");
    assert_eq!(
        lp.enter(&mut c, "{{nope}}"),
        Err(ConditionError::Render(
            "Undefined variable: {{nope}}. Available variables: go, out".into()
        ))
    );
    assert!(lp
        .after_body(&mut c, Value::Null, &[], Some("{{nope}}"))
        .is_err());
    // No iteration ran: `output` stays unset.
    let mut c = ctx("{}");
    WhileLoop::new("w", 5).finish(&mut c, Some("out"), None);
    assert!(c.is_empty());
}

// ---- §5.1 and §5.15 --------------------------------------------------------------------------

#[test]
fn initial_context_and_metadata() {
    let c = initial_context(
        &ctx(r#"{"a": 1, "b": 2}"#),
        &ctx(r#"{"b": 3, "c": 4}"#),
        recipe_meta("r", "1.0.0", "d"),
        session_meta("id", "2026-01-01T00:00:00", "/p"),
    );
    assert_eq!(
        Value::Map(c),
        v(
            r#"{"a": 1, "b": 3, "c": 4, "recipe": {"name": "r", "version": "1.0.0", "description": "d"},
              "session": {"id": "id", "started": "2026-01-01T00:00:00", "project": "/p"}}"#
        )
    );
    assert_eq!(step_meta("s", 2, None), v(r#"{"id": "s", "index": 2}"#));
    assert_eq!(
        step_meta("s", 0, Some("st")),
        v(r#"{"id": "s", "index": 0, "stage": "st"}"#)
    );
    assert_eq!(stage_meta("st", 1), v(r#"{"name": "st", "index": 1}"#));
}

#[test]
fn final_output_and_truncation() {
    let c = ctx(r#"{"final_output": "F", "last": 1, "_x": 2, "step": {}, "session": {}}"#);
    assert_eq!(
        final_output(&c, Some("last")),
        Some(FinalOutput {
            value: s("F"),
            key: None
        })
    );
    let c = ctx(
        r#"{"last": 1, "_x": 2, "step": {}, "recipe": {}, "stage": {}, "session": {}, "z": 0}"#,
    );
    assert_eq!(
        final_output(&c, Some("last")),
        Some(FinalOutput {
            value: v("1"),
            key: Some("last".into())
        })
    );
    assert_eq!(final_output(&c, Some("gone")), None);
    assert_eq!(final_output(&c, None), None);
    assert_eq!(available_outputs(&c), ["last", "z"]);

    let long = "é".repeat(TRUNCATE_CHARS + 1);
    let Value::Str(t) = truncate_output(&s(&long)) else {
        panic!()
    };
    assert_eq!(
        t,
        format!(
            "{}\n\n[... truncated, see session for full output]",
            "é".repeat(TRUNCATE_CHARS)
        )
    );
    let exact = "x".repeat(TRUNCATE_CHARS);
    assert_eq!(truncate_output(&s(&exact)), s(&exact));

    let big = Value::List(vec![s(&"a".repeat(TRUNCATE_CHARS))]);
    let Value::Map(m) = truncate_output(&big) else {
        panic!()
    };
    assert_eq!(m["_truncated"], Value::Bool(true));
    assert_eq!(m["_type"], s("list"));
    assert_eq!(m["_full_size_bytes"], Value::Int(TRUNCATE_CHARS as i64 + 4));
    let Value::Str(p) = &m["_preview"] else {
        panic!()
    };
    assert_eq!(p.len(), 503);
    assert!(p.starts_with("[\"aaa") && p.ends_with("a..."));
    assert!(matches!(&m["_message"], Value::Str(_)));
    let keys: Vec<&str> = m.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "_truncated",
            "_type",
            "_full_size_bytes",
            "_preview",
            "_message"
        ]
    );
    // The JSON text counts, escapes included: 2,000 `é` are 12,004 characters of JSON.
    let Value::Map(m) = truncate_output(&v(&format!("{{\"k\": \"{}\"}}", "é".repeat(2000))))
    else {
        panic!()
    };
    assert_eq!(m["_type"], s("dict"));
    assert_eq!(m["_full_size_bytes"], Value::Int(12_009));
    assert_eq!(truncate_output(&v("[1]")), v("[1]"));
}

// ---- no input panics ---------------------------------------------------------------------------

mod no_panics {
    use super::*;
    use proptest::prelude::*;

    const CTX: &str = r#"{"a": "x'y", "b": {"c": 1, "l": [1]}, "n": null, "e": "", "f": 1.5}"#;

    proptest! {
        #[test]
        fn conditions_and_templates(src in "[{}()'\"=!<>\\\\a-z0-9 ._&|é-]{0,60}") {
            let c = ctx(CTX);
            let _ = condition_top_level(&src, &c);
            let _ = condition_rendered(&src, &c);
            let _ = break_when(&src, &c);
            let _ = render(&src, &c);
            let _ = resolve_foreach(&src, &c, "s");
            let _ = substitute_context(&Value::Str(src.clone()), &c);
            let _ = pipewright_recipe::condition::eval_value_at(
                &src,
                &Value::Map(c.clone()),
                pipewright_recipe::condition::Site::Rendered,
            );
        }

        #[test]
        fn results(text in "[\\[\\]{}\"`:,a-z0-9 .eE+\\\\\n-]{0,80}") {
            let _ = extract_json(&text);
            let _ = process_result(Value::Str(text.clone()), true, false);
            let _ = process_result(Value::Str(text.clone()), false, true);
            let _ = raw_decode(&text);
            let _ = truncate_output(&Value::Str(text));
        }
    }
}
