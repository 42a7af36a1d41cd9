//! The lowering for `graph`: steps as agent nodes, outcomes as labelled edges, exits (one per
//! reason) and restarts as terminal nodes, cycles kept.

use pipewright_ir::{Edge, NodeKind, Program};
use pipewright_syntax::SourceMap;
use std::path::{Path, PathBuf};

fn ok(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/statemachine/ok")
        .join(name)
}

fn lower_text(path: &Path, text: &str) -> Result<Program, Vec<pipewright_syntax::Diagnostic>> {
    let mut sources = SourceMap::new();
    let file = sources.add(path.display().to_string(), text);
    pipewright_statemachine::lower_file(&mut sources, path, file, text)
}

fn lower(path: &Path) -> Program {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    match lower_text(path, &text) {
        Ok(p) => p,
        Err(d) => panic!("{d:?}"),
    }
}

/// `from -label-> to` for every edge, names for steps, `exit:REASON`, `restart:ID`.
fn edges(p: &Program) -> Vec<String> {
    let body = &p.workflows[0].body;
    let name = |n: petgraph::stable_graph::NodeIndex| {
        let node = &body.graph[n];
        match &node.kind {
            NodeKind::Exit { outcome } => format!("exit:{}", outcome.as_deref().unwrap_or("")),
            NodeKind::Call(c) => format!("restart:{}", c.target),
            _ => node.id.clone().unwrap_or_default(),
        }
    };
    let mut v: Vec<String> = body
        .graph
        .edge_indices()
        .filter_map(|e| {
            let (a, b) = body.graph.edge_endpoints(e)?;
            let Edge::Outcome(l) = &body.graph[e] else {
                return Some(format!("{} ?? {}", name(a), name(b)));
            };
            Some(format!("{} -{l}-> {}", name(a), name(b)))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn implement_and_review_all_restarts_itself_and_keeps_its_cycle() {
    let p = lower(&ok("implement-and-review-all.json"));
    let w = &p.workflows[0];
    assert_eq!(w.name, "implement-and-review-all");
    assert_eq!(w.limits.max_total_steps, Some(100));
    let entry = w.body.entry.map(|e| w.body.graph[e].id.clone());
    assert_eq!(entry, Some(Some("implement".to_string())));
    let e = edges(&p);
    for want in [
        "implement -complete-> code-review",
        "code-review -issues-found-> fix",
        "fix -complete-> code-review",
        "code-review -no-issues-> commit",
        "commit -committed-> restart:implement-and-review-all",
        "commit -nothing-to-commit-> exit:no-changes-to-commit",
        "implement -no-tasks-> exit:no-tasks",
        "fix -other-> exit:user-provided-other",
    ] {
        assert!(e.contains(&want.to_string()), "missing {want} in {e:#?}");
    }
    assert_eq!(e.len(), 12, "{e:#?}");
    // One exit node per reason, shared by every step that exits with it.
    let exits = w
        .body
        .graph
        .node_weights()
        .filter(|n| matches!(n.kind, NodeKind::Exit { .. }))
        .count();
    assert_eq!(exits, 4);
    let restart = w.body.graph.node_weights().find_map(|n| match &n.kind {
        NodeKind::Call(c) => Some(c.resolved),
        _ => None,
    });
    assert_eq!(restart, Some(Some(pipewright_ir::WorkflowId(0))));
    // Models: the step's own, else the recipe's.
    let commit_model = w.body.graph.node_weights().find_map(|n| match &n.kind {
        NodeKind::Agent(a) if n.id.as_deref() == Some("commit") => a.model.clone(),
        _ => None,
    });
    assert_eq!(commit_model.as_deref(), Some("haiku"));
}

#[test]
fn every_catalogue_recipe_lowers_with_an_edge_per_outcome() {
    for name in [
        "break-down-tasks.json",
        "document-design.json",
        "implement-and-review.json",
        "rebase.json",
        "refine-design.json",
        "retrospective.json",
        "review-and-commit.json",
    ] {
        let p = lower(&ok(name));
        let w = &p.workflows[0];
        let path = ok(name);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut sources = SourceMap::new();
        let file = sources.add(name, text.as_str());
        let recipe =
            pipewright_statemachine::load(&mut sources, &path, file, &text, &mut Vec::new());
        let outcomes: usize = recipe.map_or(0, |r| r.steps.iter().map(|s| s.outcomes.len()).sum());
        assert!(outcomes > 0, "{name}");
        assert_eq!(w.body.graph.edge_count(), outcomes, "{name}");
        assert!(edges(&p).iter().all(|e| !e.contains("??")), "{name}");
        assert!(w.body.entry.is_some(), "{name}");
    }
}

#[test]
fn other_follows_exit_on_other() {
    let text = |exit_on_other: bool| {
        format!(
            r#"{{"id": "t", "label": "T", "description": "d", "initialStep": "a",
  "guardrails": {{"maxStepVisits": 3, "maxTotalSteps": 10, "exitOnOther": {exit_on_other}}},
  "steps": {{
    "a": {{"prompt": "p", "outcomes": ["done", "other"], "onOutcome": {{
      "done": {{"action": "exit", "reason": "finished"}},
      "other": {{"nextStep": "b", "reason": "triage"}}}}}},
    "b": {{"prompt": "q", "outcomes": ["done"], "onOutcome": {{"done": {{"action": "exit", "reason": "triaged"}}}}}}}}}}"#
        )
    };
    let path = Path::new("t.json");
    // exitOnOther false: the transition is followed.
    let p = lower_text(path, &text(false)).unwrap_or_default();
    assert!(
        edges(&p).contains(&"a -other-> b".to_string()),
        "{:?}",
        edges(&p)
    );
    // exitOnOther true: `other` exits (a warning says the transition is never taken).
    let p = lower_text(path, &text(true)).unwrap_or_default();
    assert!(
        edges(&p).contains(&"a -other-> exit:user-provided-other".to_string()),
        "{:?}",
        edges(&p)
    );
}

#[test]
fn a_recipe_with_errors_is_not_lowered() {
    let r = lower_text(
        Path::new("bad.json"),
        r#"{"id": "x", "label": "X", "description": "d", "initialStep": "nope", "guardrails": {}, "steps": {}}"#,
    );
    let Err(d) = r else {
        panic!("lowered a recipe with errors")
    };
    assert!(d.iter().any(|d| d.code == "PW0710"));
}
