//! Completion over the protocol, per context.

use crate::common::{at, uri, Client};
use lsp_types::request::Completion;
use lsp_types::*;

fn labels(c: &mut Client, u: &Url, line: u32, col: u32) -> Vec<String> {
    let r = c.request::<Completion>(CompletionParams {
        text_document_position: at(line, col, u),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
        context: None,
    });
    match r {
        Some(CompletionResponse::Array(items)) => items.into_iter().map(|i| i.label).collect(),
        other => panic!("unexpected completion answer {other:?}"),
    }
}

fn open(c: &mut Client, name: &str, text: &str) -> (Url, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let u = uri(&dir.path().join(name));
    c.open(&u, 1, text);
    (u, dir)
}

#[test]
fn pipeline_kinds_keys_stores_and_functions() {
    let mut c = Client::start();
    let text = "pipeline: p\nsteps:\n  - transform: {value: \"1\", output: first}\n  - tool: {name: x, output: second}\n  - \n  - call:\n      pipeline: q\n      \n  - transform: {value: \"ctx.\"}\n  - transform: {value: \"co\"}\n  - tool: {name: y, on_error: }\n";
    let (u, _dir) = open(&mut c, "p.yaml", text);
    let kinds = labels(&mut c, &u, 4, 4);
    assert_eq!(kinds.len(), 9);
    assert!(kinds.contains(&"for_each".to_string()));
    // Under `call:` (block style): the call's keys.
    assert_eq!(labels(&mut c, &u, 7, 6), ["pipeline", "pass", "output"]);
    // After `ctx.`: the stores written above, in order of name.
    assert_eq!(labels(&mut c, &u, 8, 28), ["first", "second"]);
    let functions = labels(&mut c, &u, 9, 26);
    assert!(functions.contains(&"count".to_string()), "{functions:?}");
    assert!(functions.contains(&"ctx".to_string()));
    assert_eq!(labels(&mut c, &u, 10, 30), ["fail", "continue", "retry(2)"]);
    // In a flow body after `{`: the kind's keys.
    let text2 = "pipeline: p\nsteps:\n  - fold: {\n";
    c.change(&u, 2, text2);
    assert_eq!(
        labels(&mut c, &u, 2, 11),
        ["over", "items", "init", "do", "output", "max_items"]
    );
    c.shutdown();
}

#[test]
fn recipe_variables_meow_executors_and_state_machine_names() {
    let mut c = Client::start();
    let recipe = "name: r\ncontext:\n  target: src\nsteps:\n  - id: a\n    agent: x\n    prompt: \"p\"\n    output: plan\n  - id: b\n    type: bash\n    command: \"echo {{}}\"\n";
    let (u, _d1) = open(&mut c, "r.yaml", recipe);
    assert_eq!(labels(&mut c, &u, 10, 21), ["plan", "target"]);
    let meow = "[main]\n\n[[main.steps]]\nid = \"a\"\nexecutor = \"\"\ncommand = \"true\"\n";
    let (m, _d2) = open(&mut c, "w.meow.toml", meow);
    let ex = labels(&mut c, &m, 4, 12);
    assert_eq!(ex.len(), 7);
    assert!(ex.contains(&"foreach".to_string()));
    let sm = "{\n  \"id\": \"m\",\n  \"initialStep\": \"a\",\n  \"steps\": {\n    \"a\": {\"prompt\": \"x\", \"outcomes\": [\"done\", \"stuck\"], \"onOutcome\": {\"done\": {\"nextStep\": \"b\"}}},\n    \"b\": {\"prompt\": \"y\", \"outcomes\": [\"done\"], \"onOutcome\": {\"done\": {\"action\": \"exit\", \"reason\": \"ok\"}}}\n  }\n}\n";
    let (s, _d3) = open(&mut c, "m.json", sm);
    let line4 = sm.lines().nth(4).expect("line");
    let col = line4.find("\"b\"").expect("nextStep") as u32 + 1;
    assert_eq!(labels(&mut c, &s, 4, col), ["a", "b"]);
    c.shutdown();
}

#[test]
fn recipe_keys_by_position() {
    let mut c = Client::start();
    let text = "name: r\nsteps:\n  - id: a\n    \nstages:\n  - name: s\n    \n";
    let (u, _d) = open(&mut c, "r.yaml", text);
    let step = labels(&mut c, &u, 3, 4);
    assert_eq!(step, pipewright_recipe::load::STEP_KEYS);
    let stage = labels(&mut c, &u, 6, 4);
    assert_eq!(stage, pipewright_recipe::load::STAGE_KEYS);
    c.change(&u, 2, "name: r\nsteps: []\nve\n");
    let top = labels(&mut c, &u, 2, 2);
    assert_eq!(top, pipewright_recipe::load::TOP_KEYS);
    c.shutdown();
}
