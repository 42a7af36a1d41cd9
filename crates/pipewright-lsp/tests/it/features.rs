//! Formatting, code actions, hover, definitions and references over the protocol.

use crate::common::{at, testdata, uri, Client};
use lsp_types::request::*;
use lsp_types::*;

fn main_yaml(c: &mut Client) -> (Url, String) {
    let path = testdata("lsp/main.yaml").canonicalize().expect("fixture");
    let text = std::fs::read_to_string(&path).expect("fixture");
    let u = uri(&path);
    c.open(&u, 1, &text);
    (u, text)
}

fn open_fixture(c: &mut Client, rel: &str) -> Url {
    let path = testdata(rel).canonicalize().expect("fixture");
    let u = uri(&path);
    c.open(&u, 1, &std::fs::read_to_string(&path).expect("fixture"));
    u
}

fn loc(u: &Url, start: (u32, u32), end: (u32, u32)) -> Location {
    Location::new(
        u.clone(),
        Range::new(Position::new(start.0, start.1), Position::new(end.0, end.1)),
    )
}

fn references(c: &mut Client, u: &Url, line: u32, col: u32) -> Vec<Location> {
    c.request::<References>(ReferenceParams {
        text_document_position: at(line, col, u),
        context: ReferenceContext {
            include_declaration: true,
        },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    })
    .expect("references")
}

fn hover_text(c: &mut Client, u: &Url, line: u32, col: u32) -> String {
    let h: Option<Hover> = c.request::<HoverRequest>(HoverParams {
        text_document_position_params: at(line, col, u),
        work_done_progress_params: Default::default(),
    });
    match h.map(|h| h.contents) {
        Some(HoverContents::Markup(m)) => m.value,
        other => panic!("no markdown hover: {other:?}"),
    }
}

fn definition(c: &mut Client, u: &Url, line: u32, col: u32) -> Vec<Location> {
    let r: Option<GotoDefinitionResponse> = c.request::<GotoDefinition>(GotoDefinitionParams {
        text_document_position_params: at(line, col, u),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    match r {
        Some(GotoDefinitionResponse::Array(a)) => a,
        other => panic!("unexpected definition answer {other:?}"),
    }
}

#[test]
fn formatting_returns_the_fmt_engines_text_as_one_edit() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let u = uri(&dir.path().join("p.yaml"));
    let messy = "pipeline:   p\nsteps:\n    -   transform: {value: \"1+2\",   output: x}\n";
    c.open(&u, 1, messy);
    let edits = c
        .request::<Formatting>(DocumentFormattingParams {
            text_document: TextDocumentIdentifier::new(u.clone()),
            options: FormattingOptions::default(),
            work_done_progress_params: Default::default(),
        })
        .expect("edits");
    assert_eq!(edits.len(), 1);
    let want = pipewright_registry::by_name("pipeline")
        .expect("the pipeline dialect")
        .format(
            pipewright_syntax::FileId(0),
            messy,
            pipewright_fmt::Options::PRESERVE,
        )
        .expect("formats");
    assert_eq!(edits[0].new_text, want);
    assert_ne!(want, messy);
    assert_eq!(edits[0].range.start, Position::new(0, 0));
    assert_eq!(edits[0].range.end, Position::new(3, 0));
    // Already canonical: no edit.
    c.change(&u, 2, &want);
    let edits = c.request::<Formatting>(DocumentFormattingParams {
        text_document: TextDocumentIdentifier::new(u.clone()),
        options: FormattingOptions::default(),
        work_done_progress_params: Default::default(),
    });
    assert_eq!(edits, Some(Vec::new()));
    c.shutdown();
}

#[test]
fn a_did_you_mean_is_a_quick_fix() {
    let mut c = Client::start();
    let (u, _) = main_yaml(&mut c);
    let p = c.diagnostics(&u, Some(1));
    let unknown = p.diagnostics[0].clone();
    let actions = c
        .request::<CodeActionRequest>(CodeActionParams {
            text_document: TextDocumentIdentifier::new(u.clone()),
            range: unknown.range,
            context: CodeActionContext {
                diagnostics: p.diagnostics.clone(),
                only: None,
                trigger_kind: None,
            },
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        })
        .expect("actions");
    assert_eq!(actions.len(), 1, "{actions:?}");
    let CodeActionOrCommand::CodeAction(a) = &actions[0] else {
        panic!("a command");
    };
    assert_eq!(a.title, "Replace `sumarize` with `summarize`");
    assert_eq!(a.kind, Some(CodeActionKind::QUICKFIX));
    let edits = &a
        .edit
        .as_ref()
        .and_then(|e| e.changes.as_ref())
        .expect("changes")[&u];
    assert_eq!(
        edits,
        &vec![TextEdit::new(
            Range::new(Position::new(6, 21), Position::new(6, 29)),
            "summarize".into()
        )]
    );
    c.shutdown();
}

#[test]
fn hover_explains_step_kinds_keys_functions_stores_and_codes() {
    let mut c = Client::start();
    let (u, _) = main_yaml(&mut c);
    let _ = c.diagnostics(&u, Some(1));
    // `call` on line 6 (0-based 5).
    assert!(hover_text(&mut c, &u, 5, 5).starts_with("step kind `call`: Runs another pipeline"));
    // `pass` in that call's body.
    let h = hover_text(&mut c, &u, 5, 37);
    assert!(h.starts_with("`call.pass`: The stores handed"), "{h}");
    // `ctx.summary` on line 8 is written by the call's `output: summary` (line 6).
    let h = hover_text(&mut c, &u, 7, 26);
    assert_eq!(
        h.lines().next(),
        Some("named store `summary`: written by the step with `output: summary` (line 6)")
    );
    // The PW0253 diagnostic over `ctx.late`: its explanation follows.
    let h = hover_text(&mut c, &u, 7, 46);
    assert!(h.contains("**PW0253**: "), "{h}");
    // An R1 function in lib.yaml.
    let lib = testdata("lsp/lib.yaml").canonicalize().expect("fixture");
    let lu = uri(&lib);
    c.open(&lu, 1, &std::fs::read_to_string(&lib).expect("fixture"));
    let h = hover_text(&mut c, &lu, 3, 25);
    assert!(h.starts_with("```\ncount(list)\n```\nR1 function."), "{h}");
    c.shutdown();
}

#[test]
fn definitions_of_stores_and_call_targets_across_files() {
    let mut c = Client::start();
    let (u, _) = main_yaml(&mut c);
    // `ctx.items` in the call's pass → `output: items` on line 5.
    let d = definition(&mut c, &u, 5, 57);
    assert_eq!(d, vec![loc(&u, (4, 44), (4, 49))]);
    // `lib.summarize` → lib.yaml's `pipeline: summarize`, a file not open.
    let d = definition(&mut c, &u, 5, 25);
    let lib = uri(&testdata("lsp/lib.yaml").canonicalize().expect("fixture"));
    assert_eq!(d, vec![loc(&lib, (1, 10), (1, 19))]);
    // An unknown target: nothing.
    assert!(definition(&mut c, &u, 6, 24).is_empty());
    c.shutdown();
}

#[test]
fn references_of_a_store_list_its_write_and_reads() {
    let mut c = Client::start();
    let (u, _) = main_yaml(&mut c);
    let lines: Vec<(u32, u32)> = references(&mut c, &u, 4, 45)
        .iter()
        .map(|l| (l.range.start.line, l.range.start.character))
        .collect();
    assert_eq!(lines, [(4, 44), (5, 54)]);
    c.shutdown();
}

#[test]
fn state_machine_next_step_and_recipe_variables_resolve() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let sm = uri(&dir.path().join("m.json"));
    let sm_text = "{\n  \"id\": \"m\",\n  \"initialStep\": \"a\",\n  \"steps\": {\n    \"a\": {\"prompt\": \"x\", \"outcomes\": [\"done\"], \"onOutcome\": {\"done\": {\"nextStep\": \"b\"}}},\n    \"b\": {\"prompt\": \"y\", \"outcomes\": [\"done\"], \"onOutcome\": {\"done\": {\"action\": \"exit\", \"reason\": \"ok\"}}}\n  }\n}\n";
    c.open(&sm, 1, sm_text);
    let col = sm_text
        .lines()
        .nth(4)
        .and_then(|l| l.find("\"b\""))
        .expect("nextStep") as u32
        + 1;
    let d = definition(&mut c, &sm, 4, col);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].range.start, Position::new(5, 4));
    let r = uri(&dir.path().join("r.yaml"));
    let r_text = "name: r\ncontext:\n  target: src\nsteps:\n  - id: plan\n    agent: a\n    prompt: \"Plan {{target}}\"\n    output: plan\n  - id: do\n    type: bash\n    command: \"echo '{{plan.items}}'\"\n";
    c.open(&r, 1, r_text);
    let d = definition(&mut c, &r, 10, 22);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].range.start, Position::new(7, 12));
    let d = definition(&mut c, &r, 6, 20);
    assert_eq!(d[0].range.start, Position::new(2, 2));
    let h = hover_text(&mut c, &r, 6, 20);
    assert_eq!(
        h,
        "recipe variable `target`: set in `context` on line 3 (a string)"
    );
    c.shutdown();
}

#[test]
fn meow_needs_and_template_references_resolve() {
    let mut c = Client::start();
    let u = open_fixture(&mut c, "meow/ok/all-executors.meow.toml");
    // needs = ["prepare"] (line 26) → id = "prepare" (line 12).
    let d = definition(&mut c, &u, 25, 11);
    assert_eq!(d, vec![loc(&u, (11, 6), (11, 13))]);
    // template = ".per-task" (line 53) → [per-task] (line 79).
    let d = definition(&mut c, &u, 52, 14);
    assert_eq!(d, vec![loc(&u, (78, 1), (78, 9))]);
    // template = "./lib/helper" (line 43) → lib/helper.meow.toml's [main].
    let d = definition(&mut c, &u, 42, 16);
    let helper = uri(&testdata("meow/ok/lib/helper.meow.toml")
        .canonicalize()
        .expect("fixture"));
    assert_eq!(d, vec![loc(&helper, (0, 1), (0, 5))]);
    c.shutdown();
}

/// A cancelled request gets exactly one answer: its result if it finished first, else the
/// cancellation error; a request is answered while a slow one is still running.
#[test]
fn cancelled_and_concurrent_requests_get_exactly_one_answer_each() {
    use lsp_types::notification::Cancel;
    use lsp_types::request::Request as _;
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let big_uri = uri(&dir.path().join("big.yaml"));
    let mut big = String::from("pipeline: p\nsteps:\n");
    for i in 0..20_000 {
        big.push_str(&format!(
            "  -   transform: {{value: \"{i}+1\", output: s{i}}}\n"
        ));
    }
    c.open(&big_uri, 1, &big);
    let small = uri(&dir.path().join("small.yaml"));
    c.open(
        &small,
        1,
        "pipeline: q\nsteps:\n  - transform: {value: \"1\"}\n",
    );
    let format = serde_json::json!({
        "textDocument": {"uri": big_uri}, "options": {"tabSize": 2, "insertSpaces": true}
    });
    let slow = c.send_request(Formatting::METHOD, format.clone());
    let hover = c.send_request(
        HoverRequest::METHOD,
        serde_json::json!({"textDocument": {"uri": small}, "position": {"line": 2, "character": 6}}),
    );
    let cancelled = c.send_request(Formatting::METHOD, format);
    c.notify::<Cancel>(CancelParams {
        id: NumberOrString::Number(c.last_id()),
    });
    // An id never sent: ignored.
    c.notify::<Cancel>(CancelParams {
        id: NumberOrString::Number(999),
    });
    let responses = c.responses(3);
    let ids: Vec<_> = responses.iter().map(|r| r.id.clone()).collect();
    for id in [&slow, &hover, &cancelled] {
        assert_eq!(
            ids.iter().filter(|i| *i == id).count(),
            1,
            "{id:?} in {ids:?}"
        );
    }
    assert_eq!(responses.len(), 3, "{ids:?}");
    let answer =
        |id: &lsp_server::RequestId| responses.iter().find(|r| r.id == *id).expect("answered");
    assert!(answer(&slow).error.is_none());
    assert!(answer(&hover).result.is_some());
    let c_answer = answer(&cancelled);
    assert!(
        c_answer.result.is_some()
            || c_answer.error.as_ref().map(|e| e.code)
                == Some(lsp_server::ErrorCode::RequestCanceled as i32),
        "{c_answer:?}"
    );
    c.shutdown();
}

#[test]
fn hover_over_recipe_and_state_machine_keys_uses_their_schemas() {
    let mut c = Client::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let r = uri(&dir.path().join("r.yaml"));
    c.open(
        &r,
        1,
        "name: r\nrecursion:\n  max_depth: 2\nsteps:\n  - id: a\n    type: bash\n    command: \"true\"\n",
    );
    assert!(hover_text(&mut c, &r, 2, 4).starts_with("`max_depth` (integer): "));
    let h = hover_text(&mut c, &r, 6, 6);
    assert!(h.starts_with("`command`"), "{h}");
    let sm = uri(&dir.path().join("m.json"));
    c.open(
        &sm,
        1,
        "{\n  \"id\": \"m\",\n  \"initialStep\": \"a\",\n  \"steps\": {\n    \"a\": {\"prompt\": \"x\", \"outcomes\": [\"done\"], \"onOutcome\": {\"done\": {\"action\": \"exit\", \"reason\": \"ok\"}}}\n  }\n}\n",
    );
    let h = hover_text(&mut c, &sm, 4, 13);
    assert!(h.starts_with("`prompt` (string): "), "{h}");
    // `initialStep: "a"` (line 3): the step and its prompt.
    assert_eq!(hover_text(&mut c, &sm, 2, 19), "step `a`: x");
    c.shutdown();
}

#[test]
fn schemas_and_sub_recipe_paths_resolve() {
    let mut c = Client::start();
    let u = open_fixture(&mut c, "pipeline/ok/review_and_report.yaml");
    // `schema: Review` in the agent step (line 13) → the `schema: Review` document (line 1).
    let d = definition(&mut c, &u, 12, 15);
    assert_eq!(d, vec![loc(&u, (0, 8), (0, 14))]);
    let r = open_fixture(&mut c, "recipe/ok/v13-minimal.yaml");
    let d = definition(&mut c, &r, 17, 18);
    let leaf = uri(&testdata("recipe/ok/sub/leaf.yaml")
        .canonicalize()
        .expect("fixture"));
    assert_eq!(d, vec![Location::new(leaf, Range::default())]);
    c.shutdown();
}

#[test]
fn references_of_a_pipeline_cross_files() {
    let mut c = Client::start();
    let (u, _) = main_yaml(&mut c);
    let lib = uri(&testdata("lsp/lib.yaml").canonicalize().expect("fixture"));
    // On `lib.summarize` in main.yaml's call.
    let found: Vec<(Url, u32, u32)> = references(&mut c, &u, 5, 25)
        .into_iter()
        .map(|l| (l.uri, l.range.start.line, l.range.start.character))
        .collect();
    // The declaration in lib.yaml and the qualified call in main.yaml (the unknown `sumarize`
    // is not one).
    assert_eq!(found, [(u.clone(), 5, 21), (lib, 1, 10)]);
    c.shutdown();
}

#[test]
fn hover_over_meow_keys_uses_its_schema() {
    let mut c = Client::start();
    let u = open_fixture(&mut c, "meow/ok/all-executors.meow.toml");
    // `executor = "shell"` (line 13) in a [[main.steps]] table.
    let h = hover_text(&mut c, &u, 12, 3);
    assert!(h.starts_with("`executor` (string)"), "{h}");
    assert!(h.contains("`\"foreach\"`"), "{h}");
    c.shutdown();
}
