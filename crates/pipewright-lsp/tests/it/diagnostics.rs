//! Diagnostics over the protocol: mapping, versions, cross-file refreshes, suppressions and
//! config, every dialect.

use crate::common::{codes, testdata, uri, Client};
use lsp_types::*;
use std::time::Duration;

/// `ctx.a` is read by the step before the one that writes it (PW0253).
const READ_EARLY: &str =
    "pipeline: p\nsteps:\n  - transform: {value: \"ctx.a\"}\n  - transform: {value: \"1\", output: a}\n";

fn main_yaml() -> (Url, String) {
    let path = testdata("lsp/main.yaml");
    let text = std::fs::read_to_string(&path).expect("fixture");
    (uri(&path.canonicalize().expect("fixture")), text)
}

#[test]
fn open_publishes_mapped_diagnostics_with_cross_file_calls_resolved() {
    let mut c = Client::start();
    let (u, text) = main_yaml();
    c.open(&u, 1, &text);
    let p = c.diagnostics(&u, Some(1));
    // `lib.summarize` is defined in the sibling lib.yaml: no PW0251 for it.
    assert_eq!(codes(&p), ["PW0251", "PW0253"]);
    let unknown = &p.diagnostics[0];
    assert_eq!(
        unknown.range,
        Range::new(Position::new(6, 21), Position::new(6, 29))
    );
    assert_eq!(unknown.severity, Some(DiagnosticSeverity::ERROR));
    assert_eq!(unknown.source.as_deref(), Some("pipewright"));
    assert!(unknown
        .message
        .starts_with("no pipeline named `sumarize` (unknown call target)"));
    assert!(unknown
        .message
        .contains("\nhelp: did you mean `summarize`?"));
    assert!(unknown.data.is_some(), "the did-you-mean travels as a fix");
    let read = &p.diagnostics[1];
    let related = read.related_information.as_ref().expect("secondary label");
    assert_eq!(related.len(), 1);
    assert_eq!(related[0].location.uri, u);
    assert_eq!(
        related[0].location.range,
        Range::new(Position::new(8, 36), Position::new(8, 40))
    );
    assert_eq!(related[0].message, "first written here, later");
    c.shutdown();
}

#[test]
fn a_fix_clears_and_a_new_error_reappears_with_its_version() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let u = uri(&dir.path().join("p.yaml"));
    c.open(&u, 1, READ_EARLY);
    assert_eq!(codes(&c.diagnostics(&u, Some(1))), ["PW0253"]);
    c.change(
        &u,
        2,
        "pipeline: p\nsteps:\n  - transform: {value: \"1\"}\n",
    );
    let p = c.diagnostics(&u, Some(2));
    assert!(p.diagnostics.is_empty(), "{p:?}");
    c.change(&u, 3, "pipeline: p\nsteps: []\n");
    assert_eq!(codes(&c.diagnostics(&u, Some(3))), ["PW0216"]);
    c.close(&u);
    assert!(c.diagnostics(&u, None).diagnostics.is_empty());
    c.shutdown();
}

/// The codes and ranges published for `text` opened whole, in a directory of its own.
fn published_whole(c: &mut Client, text: &str) -> Vec<(String, Range)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let u = uri(&dir.path().join("p.yaml"));
    c.open(&u, 1, text);
    let p = c.diagnostics(&u, Some(1));
    c.close(&u);
    ranges(&p)
}

fn ranges(p: &PublishDiagnosticsParams) -> Vec<(String, Range)> {
    p.diagnostics
        .iter()
        .map(|d| (format!("{:?}", d.code), d.range))
        .collect()
}

#[test]
fn incremental_edits_apply_in_order_at_utf16_columns() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let u = uri(&dir.path().join("p.yaml"));
    // `𝄞` is two UTF-16 units (four bytes): a column counted in bytes or in characters would
    // land elsewhere on its line. `ctx.a` starts at unit 31 of line 2.
    let v1 = "pipeline: p\nsteps:\n  - transform: {value: \"'𝄞' + ctx.a\"}\n  - transform: {value: \"1\", output: a}\n";
    c.open(&u, 1, v1);
    let p = c.diagnostics(&u, Some(1));
    assert_eq!(codes(&p), ["PW0253"]);
    // Two changes in one notification: `ctx.a` becomes `ctx.b`, then a step writing `b` is
    // inserted above that line, so the second applies to the text the first left.
    c.edit(
        &u,
        2,
        &[
            (Range::new(Position::new(2, 35), Position::new(2, 36)), "b"),
            (
                Range::new(Position::new(2, 0), Position::new(2, 0)),
                "  - transform: {value: \"'s'\", output: b}\n",
            ),
        ],
    );
    let v2 = "pipeline: p\nsteps:\n  - transform: {value: \"'s'\", output: b}\n  - transform: {value: \"'𝄞' + ctx.b\"}\n  - transform: {value: \"1\", output: a}\n";
    let p = c.diagnostics(&u, Some(2));
    assert!(p.diagnostics.is_empty(), "{p:?}");
    assert!(published_whole(&mut c, v2).is_empty());
    // Back to `ctx.a`, now on line 3: read early again, reported where a whole-text open of
    // the same text reports it.
    c.edit(
        &u,
        3,
        &[(Range::new(Position::new(3, 35), Position::new(3, 36)), "a")],
    );
    let v3 = v2.replace("ctx.b", "ctx.a");
    let p = c.diagnostics(&u, Some(3));
    assert_eq!(codes(&p), ["PW0253"]);
    assert_eq!(p.diagnostics[0].range.start.line, 3);
    assert_eq!(ranges(&p), published_whole(&mut c, &v3));
    // A deletion across a line break takes the inserted step out: the text is `v1` again.
    c.edit(
        &u,
        4,
        &[(Range::new(Position::new(2, 0), Position::new(3, 0)), "")],
    );
    let p = c.diagnostics(&u, Some(4));
    assert_eq!(p.diagnostics[0].range.start.line, 2);
    assert_eq!(ranges(&p), published_whole(&mut c, v1));
    c.shutdown();
}

#[test]
fn the_server_asks_for_incremental_sync() {
    let (server, client) = lsp_server::Connection::memory();
    let handle = std::thread::spawn(move || pipewright_lsp::serve(server, crate::common::config()));
    let init = lsp_server::Request::new(1.into(), "initialize".into(), InitializeParams::default());
    client.sender.send(init.into()).expect("send");
    let Ok(lsp_server::Message::Response(r)) =
        client.receiver.recv_timeout(Duration::from_secs(20))
    else {
        panic!("no answer to initialize");
    };
    let result: InitializeResult =
        serde_json::from_value(r.result.expect("result")).expect("shape");
    let Some(TextDocumentSyncCapability::Options(sync)) = result.capabilities.text_document_sync
    else {
        panic!("no sync options");
    };
    assert_eq!(sync.change, Some(TextDocumentSyncKind::INCREMENTAL));
    drop(client);
    let _ = handle.join();
}

#[test]
fn an_older_result_is_never_published_after_a_newer_one() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let u = uri(&dir.path().join("p.yaml"));
    // A large file makes each check slow enough for edits to overtake it.
    let mut big = String::from("pipeline: p\nsteps:\n");
    for i in 0..2000 {
        big.push_str(&format!(
            "  - transform: {{value: \"{i} + 1\", output: s{i}}}\n"
        ));
    }
    // The same with a first step reading a store a later step writes.
    let bad = big.replacen(
        "steps:\n",
        "steps:\n  - transform: {value: \"ctx.s1999\"}\n",
        1,
    );
    c.open(&u, 1, &big);
    for v in 2..=30 {
        let text = if v % 2 == 0 { bad.clone() } else { big.clone() };
        c.change(&u, v, &text);
    }
    // The last version (30, even) has the error.
    let last = c.diagnostics(&u, Some(30));
    assert_eq!(codes(&last), ["PW0253"]);
    let later = c.publishes_within(Duration::from_millis(500));
    assert!(later.is_empty(), "published after the newest: {later:?}");
    c.shutdown();
}

#[test]
fn published_versions_only_increase() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let u = uri(&dir.path().join("p.yaml"));
    c.open(&u, 1, "pipeline: p\nsteps: []\n");
    for v in 2..=20 {
        c.change(&u, v, &format!("pipeline: p{v}\nsteps: []\n"));
    }
    let mut seen = vec![c.diagnostics(&u, None)];
    while seen.last().and_then(|p| p.version) != Some(20) {
        seen.push(c.diagnostics(&u, None));
    }
    let versions: Vec<i32> = seen.iter().filter_map(|p| p.version).collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
    assert!(c.publishes_within(Duration::from_millis(300)).is_empty());
    c.shutdown();
}

#[test]
fn editing_a_called_file_refreshes_its_caller() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let caller = uri(&dir.path().join("a.yaml"));
    let callee = uri(&dir.path().join("b.yaml"));
    let b = "pipeline: helper\nsteps:\n  - transform: {value: \"1\"}\n";
    std::fs::write(dir.path().join("b.yaml"), b).expect("write");
    let a = "pipeline: a\nsteps:\n  - call: {pipeline: b.helper}\n";
    std::fs::write(dir.path().join("a.yaml"), a).expect("write");
    c.open(&caller, 1, a);
    assert!(c.diagnostics(&caller, Some(1)).diagnostics.is_empty());
    c.open(&callee, 1, b);
    // Opening it checks the directory's open documents again, the caller too.
    assert!(c.diagnostics(&callee, Some(1)).diagnostics.is_empty());
    assert!(c.diagnostics(&caller, Some(1)).diagnostics.is_empty());
    // Rename the called pipeline without saving: the caller's call no longer resolves.
    c.change(&callee, 2, &b.replace("helper", "other"));
    let p = c.diagnostics(&caller, Some(1));
    assert_eq!(codes(&p), ["PW0251"], "{p:?}");
    c.change(&callee, 3, b);
    assert!(c.diagnostics(&caller, Some(1)).diagnostics.is_empty());
    c.shutdown();
}

#[test]
fn suppressions_and_project_config_apply_as_in_check() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("pipewright.toml"),
        "[check]\nwarn = [\"PW0216\"]\n",
    )
    .expect("write");
    let u = uri(&dir.path().join("p.yaml"));
    let text = "pipeline: p\nsteps:\n  # pipewright: ignore[PW0253]\n  - transform: {value: \"ctx.a\"}\n  - transform: {value: \"1\", output: a}  # pipewright: ignore[PW0251]\n---\npipeline: q\nsteps: []\n";
    c.open(&u, 1, text);
    let p = c.diagnostics(&u, Some(1));
    assert_eq!(codes(&p), ["PW0012", "PW0216"], "{p:?}");
    let unused = &p.diagnostics[0];
    assert_eq!(unused.severity, Some(DiagnosticSeverity::WARNING));
    assert_eq!(
        unused.tags.as_deref(),
        Some(&[DiagnosticTag::UNNECESSARY][..])
    );
    // `[check] warn` lowered the empty-steps error.
    assert_eq!(p.diagnostics[1].severity, Some(DiagnosticSeverity::WARNING));
    c.shutdown();
}

#[test]
fn a_broken_project_config_is_reported_in_it() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("pipewright.toml");
    std::fs::write(&config, "[check\n").expect("write");
    let u = uri(&dir.path().join("p.yaml"));
    c.open(
        &u,
        1,
        "pipeline: p\nsteps:\n  - transform: {value: \"1\"}\n",
    );
    let p = c.diagnostics(&uri(&config), None);
    assert_eq!(codes(&p), ["PW0008"]);
    c.shutdown();
}

#[test]
fn columns_are_utf16_units() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let u = uri(&dir.path().join("p.yaml"));
    // `é` is two bytes but one UTF-16 unit, `𝄞` four bytes and two units.
    c.open(
        &u,
        1,
        "pipeline: p\nsteps:\n  - transform: {value: \"'é𝄞' + ctx.a\"}\n  - transform: {value: \"1\", output: a}\n",
    );
    let p = c.diagnostics(&u, Some(1));
    assert_eq!(codes(&p), ["PW0253"]);
    assert_eq!(
        p.diagnostics[0].range,
        Range::new(Position::new(2, 32), Position::new(2, 37))
    );
    c.shutdown();
}

/// Each dialect's error fixture reports the code its name starts with.
#[test]
fn every_dialect_is_checked() {
    let mut c = Client::start();
    for (rel, code) in [
        ("pipeline/err/PW0203_unknown_key.yaml", "PW0203"),
        ("recipe/err/PW0504-unknown-step-key.yaml", "PW0504"),
        ("meow/err/PW0603-top-key.meow.toml", "PW0603"),
        ("statemachine/err/PW0700-missing-fields.json", "PW0700"),
    ] {
        let path = testdata(rel).canonicalize().expect("fixture");
        let u = uri(&path);
        c.open(&u, 1, &std::fs::read_to_string(&path).expect("fixture"));
        let p = c.diagnostics(&u, Some(1));
        assert!(
            codes(&p).iter().any(|c| c == code),
            "{rel}: {:?}",
            codes(&p)
        );
        c.close(&u);
        let _ = c.diagnostics(&u, None);
    }
    c.shutdown();
}

#[test]
fn a_yaml_file_of_no_dialect_gets_no_diagnostics() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let u = uri(&dir.path().join("other.yaml"));
    c.open(&u, 1, "services:\n  web: {image: nginx}\n");
    assert!(c.diagnostics(&u, Some(1)).diagnostics.is_empty());
    c.shutdown();
}

/// The whole LSP form of the fixture's diagnostics (ranges, severity, code, message with notes
/// and help, related information, fixes), the file's directory written as `$DIR`.
#[test]
fn the_published_form_is_stable() {
    let mut c = Client::start();
    let (u, text) = main_yaml();
    c.open(&u, 1, &text);
    let p = c.diagnostics(&u, Some(1));
    let dir = u
        .as_str()
        .rsplit_once('/')
        .map_or("", |(d, _)| d)
        .to_string();
    let json = serde_json::to_string_pretty(&p)
        .expect("json")
        .replace(&dir, "$DIR");
    insta::assert_snapshot!(json);
    c.shutdown();
}

#[test]
fn an_unsaved_untitled_document_is_checked_alone() {
    let mut c = Client::start();
    let u = Url::parse("untitled:Untitled-1.yaml").expect("uri");
    c.open(&u, 1, READ_EARLY);
    assert_eq!(codes(&c.diagnostics(&u, Some(1))), ["PW0253"]);
    c.shutdown();
}

#[test]
fn an_unknown_code_in_the_project_config_is_reported_in_it() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("pipewright.toml");
    std::fs::write(&config, "[check]\nignore = [\"PW9999\"]\n").expect("write");
    let u = uri(&dir.path().join("p.yaml"));
    c.open(&u, 1, READ_EARLY);
    assert_eq!(codes(&c.diagnostics(&u, Some(1))), ["PW0253"]);
    let p = c.diagnostics(&uri(&config), None);
    assert_eq!(codes(&p), ["PW0008"]);
    assert_eq!(
        p.diagnostics[0].range,
        Range::new(Position::new(1, 11), Position::new(1, 17))
    );
    c.shutdown();
}

/// Edits inside one step of a pipeline (which the server loads again alone, keeping the rest
/// of the document's AST) publish what a whole-text open of the same text publishes: the
/// spans after the edit move, a new problem the edit causes further down is found, and an
/// edit that breaks the step falls back to the whole text and back again.
#[test]
fn edits_inside_a_step_publish_what_the_whole_text_does() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let u = uri(&dir.path().join("p.yaml"));
    let v1 = "pipeline: p\nsteps:\n  - transform: {value: \"1\", output: a}\n  - transform:\n      value: \"ctx.a + 1\"\n      output: b\n  - transform: {value: \"ctx.b + ctx.c\"}\n  - transform: {value: \"2\", output: c}\n";
    c.open(&u, 1, v1);
    let p = c.diagnostics(&u, Some(1));
    assert_eq!(codes(&p), ["PW0253"]);
    let steps = [
        // A comment line inside the second step: everything below moves down a line.
        v1.replace("      output: b\n", "      # why\n      output: b\n"),
        // Its output renamed: the third step now reads a store nobody writes.
        v1.replace("      output: b\n", "      # why\n      output: bee\n"),
        // The step broken, then mended.
        v1.replace("      output: b\n", "      output: [b\n"),
        v1.to_string(),
    ];
    for (n, text) in steps.iter().enumerate() {
        let version = i32::try_from(n).unwrap_or(0) + 2;
        c.change(&u, version, text);
        let p = c.diagnostics(&u, Some(version));
        assert_eq!(ranges(&p), published_whole(&mut c, text), "{text}");
    }
    c.shutdown();
}
