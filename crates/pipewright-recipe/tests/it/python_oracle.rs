//! Template text of context values against Python itself: the reference runner renders
//! `{{x}}` with `str()` for numbers and `json.dumps` for lists and mappings, so python3 is the
//! oracle for generated JSON documents (read by `json.loads` on its side, by
//! `Value::from_json_text` on ours) and for random floats. Requires python3 (CI has it).

use pipewright_recipe::value::Value;
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

/// What the runner substitutes, except null: pipewright writes `null` where the runner writes
/// `None` (a documented deviation, docs/recipe.md).
const ORACLE: &str = r#"
import json, sys
def render(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if v is None:
        return 'null'
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return str(v)
out = []
for line in sys.stdin.buffer.read().decode('utf-8').split('\n'):
    if line:
        v = json.loads(line)
        out.append(json.dumps([render(v), json.dumps(v)]))
sys.stdout.write('\n'.join(out) + '\n')
"#;

/// splitmix64: a fixed sequence, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn finite_float(&mut self) -> f64 {
        loop {
            let f = f64::from_bits(self.next());
            if f.is_finite() {
                return f;
            }
        }
    }
}

const CHARS: &[char] = &[
    'a',
    'Z',
    '0',
    ' ',
    '"',
    '\\',
    '/',
    '\n',
    '\r',
    '\t',
    '\u{8}',
    '\u{c}',
    '\u{0}',
    '\u{1f}',
    '\u{7f}',
    '\u{80}',
    'é',
    'ß',
    '中',
    '\u{2028}',
    '\u{fffd}',
    '\u{ffff}',
    '😀',
    '\u{10ffff}',
];

fn gen_string(r: &mut Rng, out: &mut String) {
    out.push('"');
    for _ in 0..r.below(8) {
        let c = CHARS[r.below(CHARS.len() as u64) as usize];
        let escape = c < ' ' || c == '"' || c == '\\' || r.below(4) == 0;
        if escape {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04X}");
            }
        } else {
            out.push(c);
        }
    }
    out.push('"');
}

fn gen_number(r: &mut Rng, out: &mut String) {
    match r.below(9) {
        0 => {
            let _ = write!(out, "{}", r.next() as i64);
        }
        1 => {
            let _ = write!(out, "{}", r.below(2000) as i64 - 1000);
        }
        2 => {
            if r.below(2) == 0 {
                out.push('-');
            }
            out.push(char::from(b'1' + r.below(9) as u8));
            for _ in 0..18 + r.below(30) {
                out.push(char::from(b'0' + r.below(10) as u8));
            }
        }
        3 => {
            let _ = write!(out, "{:e}", r.finite_float());
        }
        4 => {
            // Short decimals, the common case in real contexts.
            let _ = write!(out, "{}.{}", r.below(100_000), r.below(1000));
        }
        5 => {
            let _ = write!(out, "{}e{}", r.below(1000), r.below(60) as i64 - 30);
        }
        6 => out.push_str(
            ["NaN", "Infinity", "-Infinity", "1e400", "-0.0", "0.0"][r.below(6) as usize],
        ),
        7 => {
            let _ = write!(out, "{}E+{}", r.below(10), r.below(25));
        }
        _ => {
            let _ = write!(out, "{:?}", (r.below(1 << 20) as f64) / 1024.0);
        }
    }
}

fn gen_value(r: &mut Rng, depth: u32, out: &mut String) {
    let pick = if depth >= 3 { r.below(5) } else { r.below(7) };
    match pick {
        0 => out.push_str(["null", "true", "false"][r.below(3) as usize]),
        1 | 2 => gen_number(r, out),
        3 | 4 => gen_string(r, out),
        5 => {
            out.push('[');
            for i in 0..r.below(4) {
                if i > 0 {
                    out.push_str(if r.below(2) == 0 { "," } else { " , " });
                }
                gen_value(r, depth + 1, out);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            for i in 0..r.below(4) {
                if i > 0 {
                    out.push(',');
                }
                gen_string(r, out);
                out.push(':');
                gen_value(r, depth + 1, out);
            }
            out.push('}');
        }
    }
}

fn python(lines: &[String]) -> Vec<(String, String)> {
    let mut child = Command::new("python3")
        .args(["-c", ORACLE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 is required for this test (CI machines have it)");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = lines.join("\n");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("python3 runs");
    writer.join().expect("writer").expect("write to python3");
    assert!(out.status.success(), "python3 failed");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str::<(String, String)>(l).expect("oracle line"))
        .collect()
}

fn compare(lines: Vec<String>) {
    let want = python(&lines);
    assert_eq!(want.len(), lines.len());
    let mut failures = Vec::new();
    for (line, (text, dumps)) in lines.iter().zip(want) {
        let v = match Value::from_json_text(line) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{line}: not read: {e}"));
                continue;
            }
        };
        let (mut got_text, mut got_dumps) = (String::new(), String::new());
        v.render(&mut got_text);
        v.write_json(&mut got_dumps);
        if got_text != text || got_dumps != dumps {
            failures.push(format!(
                "{line}\n  python: {text:?} / {dumps:?}\n  ours:   {got_text:?} / {got_dumps:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        lines.len(),
        failures[..failures.len().min(10)].join("\n")
    );
}

#[test]
fn generated_documents_render_as_the_runner_renders_them() {
    let mut r = Rng(0x5eed_1234);
    let lines = (0..5000)
        .map(|_| {
            let mut s = String::new();
            gen_value(&mut r, 0, &mut s);
            s
        })
        .collect();
    compare(lines);
}

#[test]
fn random_floats_print_as_python_prints_them() {
    let mut r = Rng(42);
    let mut lines: Vec<String> = (0..50_000)
        .map(|_| format!("{:e}", r.finite_float()))
        .collect();
    // Around the switches between positional and exponent notation.
    for e in -7..=18 {
        for m in ["1", "9.999999999999999", "1.5", "5"] {
            lines.push(format!("{m}e{e}"));
            lines.push(format!("-{m}e{e}"));
        }
    }
    compare(lines);
}

#[test]
fn template_substitution_uses_the_runner_text() {
    let ctx = r#"{"big": 100000000000000000000, "f": 1e-7, "one": 1.0, "e20": 1e20,
                  "m": {"k": "é", "l": [1, 2.5, null]}, "s": "😀", "t": true}"#;
    let got = pipewright_recipe::template::render_json(
        "{{big}} {{f}} {{one}} {{e20}} {{m}} {{m.l}} {{s}} {{t}}",
        ctx,
    )
    .expect("renders");
    assert_eq!(
        got,
        r#"100000000000000000000 1e-07 1.0 1e+20 {"k": "\u00e9", "l": [1, 2.5, null]} [1, 2.5, null] 😀 true"#
    );
}
