//! `fmt`'s key order: canonical, idempotent, meaning-preserving, prompts byte for byte.

use pipewright_statemachine::fmt::format;
use pipewright_syntax::FileId;
use std::path::{Path, PathBuf};

fn files(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/statemachine")
        .join(kind);
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

fn fmt(text: &str) -> String {
    match format(FileId(0), text) {
        Ok(s) => s,
        Err(d) => panic!("{d:?}"),
    }
}

/// Every string literal exactly as written, in the order met.
fn strings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let s = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            out.push(text[s..=i.min(b.len() - 1)].to_string());
        }
        i += 1;
    }
    out.sort();
    out
}

fn value(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or(serde_json::Value::Null)
}

#[test]
fn the_catalogue_is_already_canonical() {
    let ok = files("ok");
    assert_eq!(ok.len(), 8);
    for p in ok {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        assert_eq!(fmt(&text), text, "{}", p.display());
    }
}

#[test]
fn keys_are_put_in_the_spec_order_and_prompts_are_untouched() {
    let text = r#"{"steps": {"b": {"onOutcome": {"other": {"reason": "user-provided-other", "action": "exit"},
  "done": {"reason": "finished", "action": "exit"}, "again": {"nextStep": "b"}},
  "outcomes": ["again", "done", "other"], "model": "haiku", "prompt": "Caf\u00e9 \"quoted\"\n\ttab"},
  "a": {"prompt": "p", "outcomes": [], "onOutcome": {}, "custom": 1}},
 "guardrails": {"exitOnOther": true, "maxTotalSteps": 1e2, "maxStepVisits": 3},
 "initialStep": "b", "description": "d", "extra": null, "label": "L", "id": "x"}"#;
    let out = fmt(text);
    let expected = r#"{
  "id": "x",
  "label": "L",
  "description": "d",
  "initialStep": "b",
  "guardrails": {
    "maxStepVisits": 3,
    "maxTotalSteps": 1e2,
    "exitOnOther": true
  },
  "steps": {
    "b": {
      "prompt": "Caf\u00e9 \"quoted\"\n\ttab",
      "model": "haiku",
      "outcomes": [
        "again",
        "done",
        "other"
      ],
      "onOutcome": {
        "again": {
          "nextStep": "b"
        },
        "done": {
          "action": "exit",
          "reason": "finished"
        },
        "other": {
          "action": "exit",
          "reason": "user-provided-other"
        }
      }
    },
    "a": {
      "prompt": "p",
      "outcomes": [],
      "onOutcome": {},
      "custom": 1
    }
  },
  "extra": null
}
"#;
    assert_eq!(out, expected);
    assert_eq!(fmt(&out), out);
    assert_eq!(value(&out), value(text));
    assert_eq!(strings(&out), strings(text));
}

#[test]
fn duplicate_keys_keep_their_order_so_the_last_still_wins() {
    let text = r#"{"steps": {}, "id": "first", "initialStep": "a", "id": "second"}"#;
    let out = fmt(text);
    let first = out.find("\"first\"").unwrap_or(usize::MAX);
    let second = out.find("\"second\"").unwrap_or(0);
    assert!(first < second, "{out}");
    assert_eq!(value(&out), value(text));
}

#[test]
fn every_testdata_file_formats_idempotently_to_the_same_value() {
    let mut n = 0;
    for p in files("ok").into_iter().chain(files("err")) {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let Ok(once) = format(FileId(0), &text) else {
            // Only the files that are not JSON may fail.
            assert!(
                serde_json::from_str::<serde_json::Value>(&text).is_err(),
                "{}",
                p.display()
            );
            continue;
        };
        n += 1;
        assert_eq!(fmt(&once), once, "{}", p.display());
        assert_eq!(value(&once), value(&text), "{}", p.display());
        assert_eq!(strings(&once), strings(&text), "{}", p.display());
    }
    assert!(n > 25);
}

#[test]
fn invalid_json_is_reported_not_formatted() {
    let Err(d) = format(FileId(0), "{\"id\": }") else {
        panic!("formatted invalid JSON")
    };
    assert_eq!(d[0].code, "PW0001");
}
