use super::fixture::{project, RULES};
use super::*;
use crate::source::FileId;
use serde_json::Value;

#[test]
fn human_snapshot() {
    let (sources, diags) = project();
    insta::assert_snapshot!("human", human(&diags, &sources, false));
}

#[test]
fn json_snapshot() {
    let (sources, diags) = project();
    insta::assert_snapshot!("json", json(&diags, &sources));
}

#[test]
fn sarif_snapshot() {
    let (sources, diags) = project();
    insta::assert_snapshot!("sarif", sarif(&diags, &sources, "0.1.0", RULES));
}

#[test]
fn github_snapshot() {
    let (sources, diags) = project();
    insta::assert_snapshot!("github", github(&diags, &sources));
}

#[test]
fn colour_only_when_asked() {
    let (sources, diags) = project();
    assert!(!human(&diags, &sources, false).contains('\x1b'));
    assert!(human(&diags, &sources, true).contains('\x1b'));
}

/// Display width for the test texts: CJK ideographs take two terminal columns.
fn width(s: &str) -> usize {
    s.chars()
        .map(|c| {
            if ('\u{4E00}'..='\u{9FFF}').contains(&c) {
                2
            } else {
                1
            }
        })
        .sum()
}

/// The underline must start under the first character of the span even when multi-byte and
/// double-width characters precede it on the line.
#[test]
fn underline_sits_under_the_span_after_non_ascii_text() {
    let text = "a: é 東京 target\n";
    let mut sources = SourceMap::new();
    let f = sources.add("u.yaml", text);
    let start = text.find("target").unwrap_or_default();
    let d = Diagnostic::error("PW0001", Span::new(f, start..start + 6), "m").with_label("here");
    let out = human(&[d], &sources, false);
    let lines: Vec<&str> = out.lines().collect();
    let row = lines
        .iter()
        .position(|l| l.contains("target"))
        .unwrap_or_default();
    let src_col = width(&lines[row][..lines[row].find("target").unwrap_or_default()]);
    let under = lines[row + 1];
    let under_col = under.chars().position(|c| c == '─').unwrap_or_default();
    assert_eq!(src_col, under_col, "\n{out}");
    assert_eq!(
        under.chars().filter(|&c| c == '─' || c == '┬').count(),
        6,
        "\n{out}"
    );
    assert!(out.contains("u.yaml:1:9"), "\n{out}");
}

#[test]
fn summary_line() {
    let (_, diags) = project();
    assert_eq!(
        summary(&diags, 3),
        "checked 3 files: 3 errors, 1 warning, 1 note"
    );
    assert_eq!(summary(&[], 1), "checked 1 file: no problems");
    assert_eq!(summary(&diags[1..2], 0), "checked 0 files: 1 warning");
}

#[test]
fn utf16_columns_count_surrogate_pairs() {
    let text = "k: \u{1F600}é x\n";
    let mut sources = SourceMap::new();
    let f = sources.add("e.yaml", text);
    let start = text.find('x').unwrap_or_default();
    let d = Diagnostic::warning("PW0001", Span::new(f, start..start + 1), "m");
    let doc: Value = serde_json::from_str(&sarif(std::slice::from_ref(&d), &sources, "0", &[]))
        .unwrap_or_default();
    let region = &doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
    // "k: " is 3 units, the emoji 2, "é " 2: x is unit 8, so column 8 (1-based) .. 9.
    assert_eq!(region["startColumn"], 8);
    assert_eq!(region["endColumn"], 9);
    // JSON and GitHub count characters instead.
    let doc: Value =
        serde_json::from_str(&json(std::slice::from_ref(&d), &sources)).unwrap_or_default();
    assert_eq!(doc["diagnostics"][0]["span"]["start_col"], 7);
    assert!(github(&[d], &sources).contains("line=1,col=7,endLine=1,endColumn=7,"));
}

#[test]
fn sarif_has_the_structure_code_scanning_requires() {
    let (sources, diags) = project();
    let doc: Value =
        serde_json::from_str(&sarif(&diags, &sources, "1.2.3", RULES)).unwrap_or_default();
    assert_eq!(doc["version"], "2.1.0");
    assert_eq!(
        doc["$schema"],
        "https://json.schemastore.org/sarif-2.1.0.json"
    );
    let runs = doc["runs"].as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "pipewright");
    assert_eq!(driver["version"], "1.2.3");
    // Optional in SARIF; omitted until pipewright has a real home page to link.
    assert!(driver.get("informationUri").is_none(), "{driver}");
    let rules = driver["rules"].as_array().cloned().unwrap_or_default();
    let ids: Vec<&str> = rules.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(
        ids,
        ["PW0001", "PW0005", "PW0104", "PW0201", "PW0301"],
        "only used codes, sorted"
    );
    for r in &rules {
        assert!(r["shortDescription"]["text"].is_string());
        assert!(r["help"]["text"].is_string() && r["help"]["markdown"].is_string());
    }
    let results = run["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), diags.len());
    let region_ok = |loc: &Value| {
        let uri = loc["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap_or("\\");
        assert!(!uri.contains('\\') && !uri.starts_with('/'));
        let region = &loc["physicalLocation"]["region"];
        for key in ["startLine", "startColumn", "endLine", "endColumn"] {
            assert!(
                region[key].as_u64().is_some_and(|n| n >= 1),
                "{key} in {region}"
            );
        }
        let (sl, el) = (region["startLine"].as_u64(), region["endLine"].as_u64());
        assert!(sl <= el);
        if sl == el {
            assert!(region["startColumn"].as_u64() <= region["endColumn"].as_u64());
        }
    };
    for res in &results {
        let id = res["ruleId"].as_str().unwrap_or_default();
        let index = res["ruleIndex"].as_u64().unwrap_or(u64::MAX) as usize;
        assert_eq!(rules.get(index).and_then(|r| r["id"].as_str()), Some(id));
        assert!(["error", "warning", "note"].contains(&res["level"].as_str().unwrap_or_default()));
        assert!(res["message"]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty()));
        let locations = res["locations"].as_array().cloned().unwrap_or_default();
        assert_eq!(locations.len(), 1);
        locations.iter().for_each(region_ok);
        for rel in res["relatedLocations"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            region_ok(&rel);
            assert!(rel["message"]["text"].is_string());
        }
        assert!(res["partialFingerprints"].is_object());
    }
    let with_related = results
        .iter()
        .filter(|r| r["relatedLocations"].is_array())
        .count();
    assert_eq!(with_related, 2);
}

#[test]
fn json_document_shape() {
    let (sources, diags) = project();
    let doc: Value = serde_json::from_str(&json(&diags, &sources)).unwrap_or_default();
    assert_eq!(doc["version"], 1);
    assert_eq!(
        doc["summary"],
        serde_json::json!({"errors": 3, "warnings": 1, "notes": 1})
    );
    let keys: Vec<&str> = doc["diagnostics"][0]
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        [
            "code",
            "severity",
            "message",
            "file",
            "span",
            "label",
            "secondary",
            "notes",
            "help"
        ]
    );
}

#[test]
fn github_escapes_data_and_properties() {
    let mut sources = SourceMap::new();
    let f = sources.add("dir,x/a:b.yaml", "k: v\n");
    let d = Diagnostic::error("PW0001", Span::new(f, 3..4), "100% bad\r\nreally")
        .with_help("use `a, b: c`");
    let out = github(&[d], &sources);
    assert_eq!(
        out,
        "::error file=dir%2Cx/a%3Ab.yaml,line=1,col=4,endLine=1,endColumn=4,title=PW0001::\
         100%25 bad%0D%0Areally%0Ahelp: use `a, b: c`\n"
    );
}

#[test]
fn missing_files_render_without_panicking() {
    let mut sources = SourceMap::new();
    let f = sources.add("a.yaml", "a: 1\n");
    let ghost = FileId(7);
    let only_ghost = Diagnostic::error("PW0001", Span::new(ghost, 3..9), "lost")
        .with_label("here")
        .with_note("n");
    let half = Diagnostic::warning("PW0001", Span::new(f, 0..1), "half")
        .with_secondary(Span::new(ghost, 0..1), "elsewhere");
    let diags = [only_ghost, half];
    let out = human(&diags, &sources, false);
    assert!(
        out.contains("error[PW0001]: lost\n  --> file #7, bytes 3..9 (not loaded)\n"),
        "{out}"
    );
    assert!(
        out.contains("note: elsewhere (in file #7, which is not loaded)"),
        "{out}"
    );
    let doc: Value = serde_json::from_str(&json(&diags, &sources)).unwrap_or_default();
    assert_eq!(doc["diagnostics"][0]["file"], Value::Null);
    assert_eq!(doc["diagnostics"][0]["span"]["start_line"], Value::Null);
    let doc: Value = serde_json::from_str(&sarif(&diags, &sources, "0", &[])).unwrap_or_default();
    assert_eq!(
        doc["runs"][0]["results"][0]["locations"],
        serde_json::json!([])
    );
    assert!(github(&diags, &sources).starts_with("::error title=PW0001::lost: here%0Anote: n\n"));
}

/// Every span over awkward texts — empty files, CRLF, lone CR, Unicode line separators, tabs,
/// multi-byte and astral characters, offsets inside characters and past the end, reversed
/// spans — renders in every format without panicking.
#[test]
fn no_span_panics() {
    let texts = [
        "",
        "a",
        "a\n",
        "é東\r\nx\n\n",
        "\t\u{2028}z\x0b\u{1F600}\r",
        "\r\n\r\n",
        "é",
    ];
    for text in texts {
        let mut sources = SourceMap::new();
        let f = sources.add("t.yaml", text);
        let g = sources.add("u.yaml", "other\n");
        let limit = text.len() as u32 + 3;
        let mut diags = Vec::new();
        for start in 0..limit {
            for end in 0..limit {
                diags.push(
                    Diagnostic::error(
                        "PW0001",
                        Span {
                            file: f,
                            start,
                            end,
                        },
                        "m",
                    )
                    .with_label("l")
                    .with_secondary(
                        Span {
                            file: f,
                            start: end,
                            end: start,
                        },
                        "s",
                    )
                    .with_secondary(
                        Span {
                            file: g,
                            start,
                            end,
                        },
                        "o",
                    )
                    .with_secondary(
                        Span {
                            file: FileId(9),
                            start,
                            end,
                        },
                        "x",
                    ),
                );
            }
        }
        diags.push(Diagnostic::error(
            "PW0001",
            Span {
                file: f,
                start: u32::MAX,
                end: u32::MAX,
            },
            "max",
        ));
        for d in &diags {
            let one = std::slice::from_ref(d);
            let out = human(one, &sources, true);
            assert!(out.starts_with("\x1b[1;31merror[PW0001]"), "{out}");
            let _ = human(one, &sources, false);
            assert!(serde_json::from_str::<Value>(&json(one, &sources)).is_ok());
            assert!(serde_json::from_str::<Value>(&sarif(one, &sources, "0", RULES)).is_ok());
            assert_eq!(github(one, &sources).lines().count(), 1);
        }
    }
}

/// Found by the `recipe_load` fuzz target: control characters from a file reached the terminal
/// as themselves, in the drawn source line and in messages that quote the file. They are drawn
/// as pictures (`␛`) and quoted as escapes, and the underline still sits under its span.
#[test]
fn control_characters_from_a_file_never_reach_the_terminal() {
    let text = "a: \"\u{1b}[31m\u{7}x\u{9b}\" target\n";
    let mut sources = SourceMap::new();
    let f = sources.add("c\u{1b}.yaml", text);
    let start = text.find("target").unwrap_or_default();
    let d = Diagnostic::error(
        "PW0001",
        Span::new(f, start..start + 6),
        "unexpected `\u{1b}[2J`",
    )
    .with_label("here \u{7}")
    .with_help("not \u{1b}]0;title\u{7}");
    for out in [
        human(std::slice::from_ref(&d), &sources, false),
        concise(std::slice::from_ref(&d), &sources),
    ] {
        let acting: Vec<char> = out
            .chars()
            .filter(|&c| c.is_control() && c != '\n')
            .collect();
        assert!(acting.is_empty(), "{acting:?} in\n{out}");
        assert!(out.contains("unexpected `\\u{1b}[2J`"), "\n{out}");
    }
    let out = human(&[d], &sources, false);
    assert!(out.contains("\"␛[31m␇x\u{fffd}\" target"), "\n{out}");
    assert!(out.contains("help: not \\u{1b}]0;title\\u{7}"), "\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    let row = lines
        .iter()
        .position(|l| l.contains("target"))
        .unwrap_or_default();
    let src_col = lines[row][..lines[row].find("target").unwrap_or_default()]
        .chars()
        .count();
    let under_col = lines[row + 1]
        .chars()
        .position(|c| c == '─' || c == '┬')
        .unwrap_or_default();
    assert_eq!(src_col, under_col, "\n{out}");
    assert!(out.contains(":1:15"), "\n{out}");
}
