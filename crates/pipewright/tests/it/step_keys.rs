//! `step_key` on the nodes of `graph --format json` is the key a real run of the file gives
//! that step in its events and landings, in each dialect (a view of a run finds each event's
//! node by it).

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("JSON on stdout ({e}): {}", text(o)))
}

/// The step keys of the graph's workflow named `workflow`, at every depth.
fn graph_keys(dir: &Path, file: &str, workflow: &str) -> BTreeSet<String> {
    fn walk(region: &Value, keys: &mut BTreeSet<String>) {
        for n in region["nodes"].as_array().into_iter().flatten() {
            if let Some(k) = n["step_key"].as_str() {
                keys.insert(k.to_string());
            }
            for r in n["regions"].as_array().into_iter().flatten() {
                walk(&r["region"], keys);
            }
        }
    }
    let o = run_in(dir, &["graph", file, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let g = json_of(&o);
    let w = g["workflows"]
        .as_array()
        .and_then(|ws| ws.iter().find(|w| w["name"] == workflow))
        .unwrap_or_else(|| panic!("no workflow {workflow} in {g}"));
    let mut keys = BTreeSet::new();
    walk(&w["body"], &mut keys);
    keys
}

/// The only run of the store in `dir`: (its id, its workflow).
fn only_run(dir: &Path) -> (String, String) {
    let runs = json_of(&run_in(dir, &["runs", "--format", "json"]));
    let [r] = runs.as_array().map(Vec::as_slice).unwrap_or_default() else {
        panic!("one run: {runs}");
    };
    (
        r["run_id"].as_str().unwrap_or_default().to_string(),
        r["workflow"].as_str().unwrap_or_default().to_string(),
    )
}

fn event_keys(dir: &Path, id: &str) -> BTreeSet<String> {
    let o = run_in(dir, &["runs", "events", id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|e| e["key"].as_str().map(str::to_string))
        .collect()
}

fn landing_keys(dir: &Path, id: &str) -> Vec<(String, Value)> {
    let v = json_of(&run_in(dir, &["runs", "show", id]));
    v["completed"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// Every key is a graph key or an item under one (`2.for_each.0` under `2`), and every
/// graph key the run reached is among them.
fn assert_keys_match(keys: &BTreeSet<String>, graph: &BTreeSet<String>, expect: &[&str]) {
    for k in keys {
        let known = graph.contains(k)
            || graph.iter().any(|g| {
                k.strip_prefix(g.as_str())
                    .is_some_and(|r| r.starts_with('.'))
            });
        assert!(
            known,
            "run key {k} is no graph step_key nor under one: {graph:?}"
        );
    }
    for e in expect {
        assert!(graph.contains(*e), "graph lacks {e}: {graph:?}");
        assert!(keys.contains(*e), "the run lacks {e}: {keys:?}");
    }
}

#[test]
fn pipeline_keys_are_index_paths_with_fan_out_items_under_them() {
    let d = tempdir();
    copy_into(&testdata("run").join("fan_gate.yaml"), d.path());
    // The fixture's slow items wait for this file.
    std::fs::write(d.path().join("gate"), "").unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &["run", "fan_gate.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (id, wf) = only_run(d.path());
    let graph = graph_keys(d.path(), "fan_gate.yaml", &wf);
    let keys = event_keys(d.path(), &id);
    assert_keys_match(&keys, &graph, &["0", "1", "1.for_each.collect", "2"]);
    assert!(keys.contains("1.for_each.5"), "{keys:?}");
}

#[test]
fn recipe_keys_are_positions_and_a_stage_keys_its_steps_and_gate() {
    let d = tempdir();
    copy_tree(&testdata("recipe").join("run"), d.path());
    let o = run_in(d.path(), &["run", "flat.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (id, wf) = only_run(d.path());
    let graph = graph_keys(d.path(), "flat.yaml", &wf);
    let keys = event_keys(d.path(), &id);
    assert_keys_match(&keys, &graph, &["0", "1", "2", "3", "4", "5"]);

    let d = tempdir();
    copy_tree(&testdata("recipe").join("run"), d.path());
    let o = run_in(d.path(), &["run", "staged.yaml"]);
    assert_eq!(o.status.code(), Some(3), "paused: {}", text(&o));
    let (id, wf) = only_run(d.path());
    let graph = graph_keys(d.path(), "staged.yaml", &wf);
    assert_keys_match(&event_keys(d.path(), &id), &graph, &["0.0"]);
    // The gate waits in the landing keyed like its graph node.
    let gate = landing_keys(d.path(), &id)
        .into_iter()
        .find(|(_, v)| v["status"] == "pending")
        .unwrap_or_else(|| panic!("a pending gate"));
    assert_eq!(gate.0, "1");
    assert!(graph.contains("1"), "{graph:?}");
}

#[test]
fn state_machine_turns_land_the_step_the_graph_keys_by_name() {
    let d = tempdir();
    // The recipe includes files of its sibling `shared/` directory.
    copy_tree(&testdata("statemachine").join("ok"), d.path());
    let name = "review-and-commit.json";
    let script = testdata("statemachine")
        .join("run")
        .join("review-and-commit.yaml");
    let script = script.display().to_string();
    let o = run_in(
        d.path(),
        &["run", name, "--backend", "script", "--script", &script],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (id, wf) = only_run(d.path());
    let graph = graph_keys(d.path(), name, &wf);
    // A state machine's events are its turns; each turn's landing names the step it ran.
    let keys = event_keys(d.path(), &id);
    assert!(keys.iter().all(|k| k.starts_with("turn.")), "{keys:?}");
    let steps: BTreeSet<String> = landing_keys(d.path(), &id)
        .into_iter()
        .filter(|(k, _)| k.starts_with("turn."))
        .filter_map(|(_, v)| v["state"]["step"].as_str().map(str::to_string))
        .collect();
    assert!(!steps.is_empty());
    assert!(steps.is_subset(&graph), "{steps:?} ⊄ {graph:?}");
    assert!(graph.contains("code-review"), "{graph:?}");
}

#[test]
fn meow_keys_are_step_ids_with_expansions_and_iterations_under_them() {
    let d = tempdir();
    copy_tree(&testdata("meow").join("run"), d.path());
    for (file, expect) in [
        ("expand.meow.toml", &["prep", "impl", "done"][..]),
        ("foreach.meow.toml", &["list", "each", "all-work"][..]),
    ] {
        let store = d.path().join(format!("{file}.db"));
        let o = bin()
            .current_dir(d.path())
            .env("PIPEWRIGHT_STORE", &store)
            .args(["run", file])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.status.code(), Some(0), "{file}: {}", text(&o));
        let runs = bin()
            .current_dir(d.path())
            .env("PIPEWRIGHT_STORE", &store)
            .args(["runs", "--format", "json"])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let runs = json_of(&runs);
        let id = runs[0]["run_id"].as_str().unwrap_or_default().to_string();
        let wf = runs[0]["workflow"].as_str().unwrap_or_default().to_string();
        let events = bin()
            .current_dir(d.path())
            .env("PIPEWRIGHT_STORE", &store)
            .args(["runs", "events", &id])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let keys: BTreeSet<String> = stdout(&events)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|e| e["key"].as_str().map(str::to_string))
            .collect();
        let graph = graph_keys(d.path(), file, &wf);
        assert_keys_match(&keys, &graph, expect);
        assert!(keys.iter().any(|k| k.contains('.')), "{file}: {keys:?}");
    }
}
