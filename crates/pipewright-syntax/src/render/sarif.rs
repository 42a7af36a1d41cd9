//! SARIF 2.1.0, shaped for GitHub code scanning (`github/codeql-action/upload-sarif`).

use super::{locate, utf16_col, Located};
use crate::codes::CodeInfo;
use crate::diagnostic::{Diagnostic, Severity};
use crate::source::SourceMap;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// The key under `partialFingerprints`; the `/v1` changes if the fingerprint recipe does, so
/// code scanning treats old and new alerts as unrelated rather than mismatching them.
const FINGERPRINT_KEY: &str = "pipewright/v1";

/// Renders one SARIF log with a single run. `rules` is searched for the title and explanation of
/// each code used; only codes that occur in `diags` become rules.
pub fn sarif(
    diags: &[Diagnostic],
    sources: &SourceMap,
    tool_version: &str,
    rules: &[CodeInfo],
) -> String {
    let used: BTreeMap<&str, usize> = {
        let mut codes: Vec<&str> = diags.iter().map(|d| d.code).collect();
        codes.sort_unstable();
        codes.dedup();
        codes.into_iter().enumerate().map(|(i, c)| (c, i)).collect()
    };
    let rule_objects: Vec<Value> = used.keys().map(|code| rule(code, rules)).collect();

    let mut seen_fingerprints: HashMap<u64, usize> = HashMap::new();
    let results: Vec<Value> = diags
        .iter()
        .map(|d| {
            let index = used.get(d.code).copied().unwrap_or_default();
            result(d, index, sources, &mut seen_fingerprints)
        })
        .collect();

    let doc = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "pipewright",
                // No `informationUri`: pipewright has no public home page yet, and SARIF
                // viewers link it, so a made-up address would be a dead link.
                "version": tool_version,
                "rules": rule_objects,
            }},
            "columnKind": "utf16CodeUnits",
            "results": results,
        }],
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}

fn rule(code: &str, rules: &[CodeInfo]) -> Value {
    let mut obj = Map::new();
    obj.insert("id".into(), json!(code));
    if let Some(info) = rules.iter().find(|r| r.code == code) {
        obj.insert("name".into(), json!(code));
        obj.insert("shortDescription".into(), json!({ "text": info.title }));
        obj.insert(
            "fullDescription".into(),
            json!({ "text": first_paragraph(info.explanation) }),
        );
        obj.insert(
            "help".into(),
            json!({ "text": info.explanation, "markdown": info.explanation }),
        );
    }
    Value::Object(obj)
}

/// The explanation's opening paragraph, which is prose (later ones hold the examples).
fn first_paragraph(markdown: &str) -> String {
    let para: Vec<&str> = markdown
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .collect();
    para.join(" ")
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

fn result(
    d: &Diagnostic,
    rule_index: usize,
    sources: &SourceMap,
    seen: &mut HashMap<u64, usize>,
) -> Value {
    let at = locate(sources, d.primary.span);
    let mut text = d.message.clone();
    for note in &d.notes {
        text.push_str("\nnote: ");
        text.push_str(note);
    }
    if let Some(help) = &d.help {
        text.push_str("\nhelp: ");
        text.push_str(help);
    }

    let mut obj = Map::new();
    obj.insert("ruleId".into(), json!(d.code));
    obj.insert("ruleIndex".into(), json!(rule_index));
    obj.insert("level".into(), json!(level(d.severity)));
    obj.insert("message".into(), json!({ "text": text }));
    // A result whose file is not loaded has nowhere to point; SARIF allows that, and a
    // made-up location would be worse.
    let locations: Vec<Value> = location(&at, &d.primary.message, None)
        .into_iter()
        .collect();
    obj.insert("locations".into(), Value::Array(locations));
    let related: Vec<Value> = d
        .secondary
        .iter()
        .enumerate()
        .filter_map(|(i, l)| location(&locate(sources, l.span), &l.message, Some(i)))
        .collect();
    if !related.is_empty() {
        obj.insert("relatedLocations".into(), Value::Array(related));
    }

    let hash = fingerprint(d, &at);
    let n = seen.entry(hash).or_default();
    *n += 1;
    obj.insert(
        "partialFingerprints".into(),
        json!({ FINGERPRINT_KEY: format!("{hash:016x}:{n}") }),
    );
    Value::Object(obj)
}

fn location(at: &Located, message: &str, id: Option<usize>) -> Option<Value> {
    let file = at.file?;
    let (start, end) = (at.start_lc?, at.end_lc?);
    let mut obj = Map::new();
    if let Some(id) = id {
        obj.insert("id".into(), json!(id));
    }
    obj.insert(
        "physicalLocation".into(),
        json!({
            "artifactLocation": { "uri": uri(&file.name) },
            "region": {
                "startLine": start.line,
                "startColumn": utf16_col(file, start),
                "endLine": end.line,
                "endColumn": utf16_col(file, end),
            },
        }),
    );
    if !message.is_empty() {
        obj.insert("message".into(), json!({ "text": message }));
    }
    Some(Value::Object(obj))
}

/// The file's display name as a relative URI reference: forward slashes, and percent-encoding
/// for the few characters that would otherwise change the URI's meaning.
fn uri(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '\\' => out.push('/'),
            '%' => out.push_str("%25"),
            ' ' => out.push_str("%20"),
            '#' => out.push_str("%23"),
            '?' => out.push_str("%3F"),
            _ => out.push(c),
        }
    }
    out
}

/// Identifies "the same problem" across commits: it leaves out line numbers so an alert
/// survives unrelated edits above it, and the `:n` suffix (added by the caller) tells identical
/// problems in one file apart. FNV-1a because it must not change between Rust releases.
fn fingerprint(d: &Diagnostic, at: &Located) -> u64 {
    let snippet = at
        .file
        .and_then(|f| f.text.get(at.start..at.end))
        .unwrap_or("");
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [
        d.code,
        at.file_name().unwrap_or(""),
        &d.message,
        snippet.trim(),
    ] {
        for b in part.bytes().chain([0]) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}
