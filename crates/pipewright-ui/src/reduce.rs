//! A run's events and landings reduced to one state per graph node (`NodeState` of
//! docs/ui.md): the browser only applies what this computes.
//!
//! An event belongs to the node whose `step_key` is the longest prefix of its key (at a `.`):
//! `1.for_each.3` is an item of node `1`, `1.for_each.collect` its own node. A key the graph
//! does not know but a state machine's turn landing names a step for (`turn.4` ran `fix`)
//! belongs to that step; the turn still running ran the step the previous turn decided on
//! (the workflow's entry for the first).

use crate::graphs::WorkflowKeys;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap, HashSet};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodeState {
    /// pending | running | done | failed | skipped | waiting | cancelled
    pub state: &'static str,
    pub started_ms: Option<i64>,
    pub elapsed_ms: Option<f64>,
    pub attempts: u32,
    /// (items done, items seen) of a step that fans out.
    pub fanout: Option<(u64, u64)>,
    /// What its last start was given (its `step_started` event): its input, and its rendered
    /// prompt or command.
    pub input: Option<Json>,
    pub prompt: Option<String>,
    /// Whose start `input` and `prompt` are, when not the node's own: a fan-out whose own start
    /// records none (a recipe loop, a `for_each`) shows its latest item's.
    pub given_by: Option<GivenBy>,
    pub output: Option<Json>,
    pub error: Option<String>,
}

/// The item start a node shows what it was given from: its key, and its kind of step (so a
/// view can tell a command from a prompt).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct GivenBy {
    pub key: String,
    pub step_kind: String,
}

/// A NodeState as the API sends it (docs/ui.md), serialized straight from the state: a run's
/// detail holds one per node.
#[derive(Serialize)]
struct NodeStateJson<'a> {
    state: &'a str,
    started_ms: Option<i64>,
    elapsed_ms: Option<f64>,
    attempts: u32,
    fanout: Option<FanoutJson>,
    input: &'a Option<Json>,
    prompt: &'a Option<String>,
    given_by: &'a Option<GivenBy>,
    output: &'a Option<Json>,
    error: &'a Option<String>,
}

#[derive(Serialize)]
struct FanoutJson {
    done: u64,
    total: u64,
}

impl NodeState {
    fn view(&self) -> NodeStateJson<'_> {
        NodeStateJson {
            state: self.state,
            started_ms: self.started_ms,
            elapsed_ms: self.elapsed_ms,
            attempts: self.attempts,
            fanout: self.fanout.map(|(done, total)| FanoutJson { done, total }),
            input: &self.input,
            prompt: &self.prompt,
            given_by: &self.given_by,
            output: &self.output,
            error: &self.error,
        }
    }

    pub(crate) fn to_json(&self) -> Json {
        serde_json::to_value(self.view()).unwrap_or(Json::Null)
    }
}

/// `{"KEY": NodeState, …}` as text.
pub(crate) fn nodes_text(nodes: &BTreeMap<String, NodeState>) -> String {
    let views: BTreeMap<&str, NodeStateJson<'_>> =
        nodes.iter().map(|(k, s)| (k.as_str(), s.view())).collect();
    serde_json::to_string(&views).unwrap_or_else(|_| "{}".into())
}

/// What the reduction reads of an event line (`runs events`): only these fields are parsed
/// out of each line, not a whole JSON tree.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct EventLine {
    #[serde(default)]
    pub event: String,
    pub key: Option<String>,
    pub step_kind: Option<String>,
    pub at_ms: Option<f64>,
    pub elapsed_ms: Option<f64>,
    pub error: Option<String>,
    /// An `approval_decided` event's `approved` or `denied`.
    pub decision: Option<String>,
    /// A `step_started` event's rendered prompt or command, and input.
    pub prompt: Option<String>,
    pub command: Option<String>,
    pub input: Option<Json>,
}

impl EventLine {
    /// `None` for a line that is not a JSON object of this shape.
    pub(crate) fn parse(line: &str) -> Option<EventLine> {
        serde_json::from_str(line).ok()
    }
}

/// What the reduction reads of one run.
pub(crate) struct RunFacts<'a> {
    pub created_ms: i64,
    /// As the store says (`running` for an interrupted run too).
    pub status: &'a str,
    /// A live process runs it now.
    pub in_progress: bool,
    /// Its events, parsed, in order.
    pub events: &'a [EventLine],
    /// key → (value, dropped error).
    pub landings: &'a [(String, Json, Option<String>)],
    pub keys: &'a WorkflowKeys,
    /// The step key of the approval it waits for, if any.
    pub waiting_at: Option<&'a str>,
}

#[derive(Default)]
struct Acc {
    state: Option<&'static str>,
    started_at: Option<f64>,
    elapsed: Option<f64>,
    attempts: u32,
    error: Option<String>,
    input: Option<Json>,
    prompt: Option<String>,
    /// The latest item start that recorded what it was given: (by whom, input, prompt).
    item_given: Option<(GivenBy, Option<Json>, Option<String>)>,
    /// item → exact key → its last state.
    items: BTreeMap<String, HashMap<String, &'static str>>,
}

/// The item of a fan-out a key under a node's key is in: `for_each.3` (a pipeline's
/// `for_each.3.0` too), `0` of a recipe loop's `0.1` or a MEOW foreach's `0.run`, `first` of
/// an expansion's `first`.
fn item_of(rest: &str) -> String {
    let mut segs = rest.split('.');
    let first = segs.next().unwrap_or_default();
    match first {
        "for_each" | "fold" | "parallel" | "call" | "match" => match segs.next() {
            Some(second) => format!("{first}.{second}"),
            None => first.to_string(),
        },
        _ => first.to_string(),
    }
}

/// The node a key belongs to and the rest of the key under it (`""`: the node's own).
fn owner<'k>(key: &'k str, known: &HashSet<&str>) -> Option<(String, &'k str)> {
    let mut end = key.len();
    loop {
        let head = &key[..end];
        if known.contains(head) {
            let rest = key.get(end + 1..).unwrap_or("");
            return Some((head.to_string(), rest));
        }
        end = head.rfind('.')?;
    }
}

pub(crate) fn reduce(f: &RunFacts<'_>) -> BTreeMap<String, NodeState> {
    let known: HashSet<&str> = f.keys.nodes.iter().map(|(k, _)| k.as_str()).collect();
    // A state machine's turns: turn key → the step it ran.
    let mut turn_step: HashMap<String, String> = HashMap::new();
    let mut next_step = f.keys.entry.clone();
    let mut landed: HashMap<&str, (&Json, Option<&String>)> = HashMap::new();
    for (key, value, dropped) in f.landings {
        landed.insert(key.as_str(), (value, dropped.as_ref()));
        if let Some(step) = value["state"]["step"].as_str() {
            if key.starts_with("turn.") {
                turn_step.insert(key.clone(), step.to_string());
                next_step = value["decision"]["next"].as_str().map(str::to_string);
            }
        }
    }
    let mut accs: HashMap<String, Acc> = HashMap::new();
    for e in f.events {
        let Some(key) = e.key.as_deref() else {
            continue;
        };
        let kind = e.event.as_str();
        let (node, rest) = match owner(key, &known) {
            Some(found) => found,
            None => match turn_step.get(key).cloned().or_else(|| {
                // The one turn not landed yet runs the step the last landed turn decided on.
                key.starts_with("turn.")
                    .then(|| next_step.clone())
                    .flatten()
            }) {
                Some(step) if known.contains(step.as_str()) => (step, ""),
                _ => continue,
            },
        };
        let acc = accs.entry(node).or_default();
        let state = match kind {
            "step_started" => "running",
            "step_completed" | "step_replayed" => "done",
            "step_failed" => "failed",
            "step_cancelled" => "cancelled",
            "approval_decided" => match e.decision.as_deref() {
                Some("denied") => "failed",
                _ => "done",
            },
            _ => continue,
        };
        if !rest.is_empty() {
            if kind == "step_started" {
                let prompt = e.prompt.clone().or_else(|| e.command.clone());
                if prompt.is_some() || e.input.is_some() {
                    let by = GivenBy {
                        key: key.to_string(),
                        step_kind: e.step_kind.clone().unwrap_or_default(),
                    };
                    acc.item_given = Some((by, e.input.clone(), prompt));
                }
            }
            acc.items
                .entry(item_of(rest))
                .or_default()
                .insert(key.to_string(), state);
            if acc.state.is_none() {
                acc.state = Some("running");
            }
            continue;
        }
        let at = e.at_ms;
        match kind {
            "step_started" => {
                acc.attempts += 1;
                acc.started_at = at;
                acc.elapsed = None;
                acc.error = None;
                acc.input = e.input.clone();
                acc.prompt = e.prompt.clone().or_else(|| e.command.clone());
            }
            "approval_decided" if state == "failed" => {
                acc.error = Some("denied".into());
            }
            _ => {
                acc.elapsed = e.elapsed_ms.or(acc.elapsed);
                if let Some(err) = &e.error {
                    acc.error = Some(err.clone());
                }
            }
        }
        acc.state = Some(state);
    }
    let mut out = BTreeMap::new();
    for (key, _) in &f.keys.nodes {
        let acc = accs.remove(key).unwrap_or_default();
        let fanout = (!acc.items.is_empty()).then(|| {
            let done = acc
                .items
                .values()
                .filter(|keys| keys.values().all(|s| *s == "done"))
                .count() as u64;
            (done, acc.items.len() as u64)
        });
        let (input, prompt, given_by) = match acc.item_given {
            Some((by, input, prompt)) if acc.input.is_none() && acc.prompt.is_none() => {
                (input, prompt, Some(by))
            }
            _ => (acc.input, acc.prompt, None),
        };
        let (output, dropped) = match landed.get(key.as_str()) {
            Some((v, d)) => ((d.is_none()).then(|| (*v).clone()), d.cloned()),
            None => (None, None),
        };
        out.insert(
            key.clone(),
            NodeState {
                state: acc.state.unwrap_or("pending"),
                started_ms: acc
                    .started_at
                    .map(|at| f.created_ms.saturating_add(at.round() as i64)),
                elapsed_ms: acc.elapsed,
                attempts: acc.attempts,
                fanout,
                input,
                prompt,
                given_by,
                output,
                error: acc.error.or(dropped),
            },
        );
    }
    settle(f, &mut out);
    out
}

/// What no event says itself: a node with no events of its own (a recipe's stage) takes its
/// steps' state, the approval waited for is `waiting`, a step still "running" in a run nobody
/// runs any more was cancelled, and a step an `ok` run never reached was skipped.
fn settle(f: &RunFacts<'_>, out: &mut BTreeMap<String, NodeState>) {
    let keys: Vec<String> = out.keys().cloned().collect();
    for key in &keys {
        // The keys under `key` sort from `key.` up to, not including, `key/` ('/' follows
        // '.'): a range, not a scan of every node for every node (5,000 steps: 25 M checks).
        let (under, past) = (format!("{key}."), format!("{key}/"));
        let states: Vec<&'static str> = out
            .range::<str, _>((
                std::ops::Bound::Included(under.as_str()),
                std::ops::Bound::Excluded(past.as_str()),
            ))
            .map(|(_, s)| s.state)
            .collect();
        let Some(node) = out.get_mut(key) else {
            continue;
        };
        if node.state == "pending" && node.attempts == 0 && !states.is_empty() {
            node.state = if states.contains(&"failed") {
                "failed"
            } else if states.contains(&"running") || states.contains(&"waiting") {
                "running"
            } else if states.iter().all(|s| matches!(*s, "done" | "skipped")) {
                "done"
            } else if states.iter().any(|s| *s != "pending") {
                "running"
            } else {
                "pending"
            };
        }
    }
    for (key, node) in out.iter_mut() {
        if Some(key.as_str()) == f.waiting_at {
            node.state = "waiting";
            continue;
        }
        match node.state {
            "running" if !f.in_progress => {
                node.state = if f.status == "failed" && node.error.is_some() {
                    "failed"
                } else {
                    "cancelled"
                };
            }
            "pending" if f.status == "ok" => node.state = "skipped",
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Event lines as the store would hold them.
    fn lines(events: &[Json]) -> Vec<EventLine> {
        events
            .iter()
            .map(|e| EventLine::parse(&e.to_string()).unwrap_or_else(|| panic!("{e}")))
            .collect()
    }

    fn keys(nodes: &[(&str, &str)], entry: Option<&str>) -> WorkflowKeys {
        WorkflowKeys {
            top: nodes
                .iter()
                .map(|(k, _)| k.to_string())
                .filter(|k| !k.contains('.'))
                .collect(),
            nodes: nodes
                .iter()
                .map(|(k, kind)| (k.to_string(), kind.to_string()))
                .collect(),
            entry: entry.map(str::to_string),
        }
    }

    fn ev(kind: &str, key: &str, at: f64) -> Json {
        json!({"event": kind, "key": key, "at_ms": at, "elapsed_ms": 2.5})
    }

    fn facts<'a>(
        status: &'a str,
        in_progress: bool,
        events: &'a [EventLine],
        landings: &'a [(String, Json, Option<String>)],
        keys: &'a WorkflowKeys,
    ) -> RunFacts<'a> {
        RunFacts {
            created_ms: 1_000,
            status,
            in_progress,
            events,
            landings,
            keys,
            waiting_at: None,
        }
    }

    #[test]
    fn a_fan_out_counts_its_items_and_its_collect_is_its_own_node() {
        let k = keys(
            &[
                ("0", "transform"),
                ("1", "for_each"),
                ("1.for_each.collect", "transform"),
                ("2", "transform"),
            ],
            None,
        );
        let events = [
            ev("step_started", "0", 0.0),
            ev("step_completed", "0", 1.0),
            ev("step_started", "1", 2.0),
            ev("step_started", "1.for_each.0", 3.0),
            ev("step_started", "1.for_each.1", 3.0),
            ev("step_started", "1.for_each.2", 3.0),
            ev("step_completed", "1.for_each.0", 4.0),
            ev("step_completed", "1.for_each.2", 5.0),
        ];
        let landings = [("0".to_string(), json!([1, 2, 3]), None)];
        let s = reduce(&facts("running", true, &lines(&events), &landings, &k));
        assert_eq!(s["0"].state, "done");
        assert_eq!(s["0"].output, Some(json!([1, 2, 3])));
        assert_eq!(s["0"].started_ms, Some(1_000));
        assert_eq!(s["0"].elapsed_ms, Some(2.5));
        assert_eq!(s["1"].state, "running");
        assert_eq!(s["1"].fanout, Some((2, 3)));
        assert_eq!(s["1"].started_ms, Some(1_002));
        assert_eq!(s["1.for_each.collect"].state, "pending");
        assert_eq!(s["2"].state, "pending");
        assert_eq!(s["2"].fanout, None);
    }

    #[test]
    fn a_loop_with_nothing_given_of_its_own_shows_its_latest_items() {
        let k = keys(&[("0", "command"), ("1", "loop")], None);
        let mut own = ev("step_started", "0", 0.0);
        own["command"] = json!("echo own");
        let item = |key: &str, command: &str| {
            let mut e = ev("step_started", key, 2.0);
            e["step_kind"] = json!("command");
            e["command"] = json!(command);
            e
        };
        let events = [
            own,
            ev("step_completed", "0", 1.0),
            ev("step_started", "1", 2.0),
            item("1.0", "echo a"),
            ev("step_completed", "1.0", 3.0),
            item("1.1", "echo b"),
        ];
        let s = reduce(&facts("running", true, &lines(&events), &[], &k));
        assert_eq!(s["1"].prompt.as_deref(), Some("echo b"));
        assert_eq!(
            s["1"].given_by,
            Some(GivenBy {
                key: "1.1".into(),
                step_kind: "command".into()
            })
        );
        assert_eq!(s["1"].fanout, Some((1, 2)));
        assert_eq!(s["0"].prompt.as_deref(), Some("echo own"));
        assert_eq!(s["0"].given_by, None, "its own start's");
        let detail = s["1"].to_json();
        assert_eq!(
            detail["given_by"],
            json!({"key": "1.1", "step_kind": "command"})
        );
    }

    #[test]
    fn a_failed_retried_step_counts_attempts_and_keeps_the_last_error() {
        let k = keys(&[("0", "shell")], None);
        let mut failed = ev("step_failed", "0", 1.0);
        failed["error"] = json!("exit 1");
        let events = [
            ev("step_started", "0", 0.0),
            failed,
            ev("step_started", "0", 2.0),
        ];
        let s = reduce(&facts("running", true, &lines(&events), &[], &k));
        assert_eq!(s["0"].attempts, 2);
        assert_eq!(s["0"].state, "running");
        assert_eq!(s["0"].error, None, "a new attempt clears the error");
        let mut failed = ev("step_failed", "0", 3.0);
        failed["error"] = json!("exit 2");
        let events = [ev("step_started", "0", 0.0), failed];
        let s = reduce(&facts("failed", false, &lines(&events), &[], &k));
        assert_eq!(s["0"].state, "failed");
        assert_eq!(s["0"].error.as_deref(), Some("exit 2"));
    }

    #[test]
    fn a_stage_takes_its_steps_state_and_the_gate_waits() {
        let k = keys(
            &[
                ("0", "stage"),
                ("0.0", "command"),
                ("1", "gate"),
                ("2", "stage"),
                ("2.0", "command"),
            ],
            None,
        );
        let events = [
            ev("step_started", "0.0", 0.0),
            ev("step_completed", "0.0", 1.0),
        ];
        let events = lines(&events);
        let mut f = facts("paused", false, &events, &[], &k);
        f.waiting_at = Some("1");
        let s = reduce(&f);
        assert_eq!(s["0"].state, "done");
        assert_eq!(s["0.0"].state, "done");
        assert_eq!(s["1"].state, "waiting");
        assert_eq!(s["2"].state, "pending");
        assert_eq!(s["2.0"].state, "pending");
    }

    #[test]
    fn a_denied_gate_fails() {
        let k = keys(&[("0", "stage"), ("1", "gate")], None);
        let events =
            [json!({"event": "approval_decided", "key": "1", "decision": "denied", "at_ms": 5})];
        let s = reduce(&facts("paused", false, &lines(&events), &[], &k));
        assert_eq!(s["1"].state, "failed");
        assert_eq!(s["1"].error.as_deref(), Some("denied"));
    }

    #[test]
    fn a_state_machines_turns_land_on_their_steps() {
        let k = keys(&[("review", "agent"), ("fix", "agent")], Some("review"));
        let events = [
            ev("step_started", "turn.1", 0.0),
            ev("step_completed", "turn.1", 1.0),
            ev("step_started", "turn.2", 2.0),
        ];
        let landings = [(
            "turn.1".to_string(),
            json!({"state": {"step": "review"}, "decision": {"next": "fix"}}),
            None,
        )];
        let s = reduce(&facts("running", true, &lines(&events), &landings, &k));
        assert_eq!(s["review"].state, "done");
        assert_eq!(
            s["fix"].state, "running",
            "the running turn runs the decided step"
        );
        assert_eq!(s["fix"].attempts, 1);
    }

    #[test]
    fn an_ended_run_leaves_nothing_running_and_skips_what_it_never_reached() {
        let k = keys(&[("a", "shell"), ("b", "shell"), ("c", "shell")], None);
        let events = [ev("step_started", "a", 0.0), ev("step_completed", "a", 1.0)];
        let s = reduce(&facts("ok", false, &lines(&events), &[], &k));
        assert_eq!(s["b"].state, "skipped");
        let events = [ev("step_started", "a", 0.0)];
        let s = reduce(&facts("cancelled", false, &lines(&events), &[], &k));
        assert_eq!(s["a"].state, "cancelled");
        assert_eq!(s["b"].state, "pending");
    }

    #[test]
    fn meow_expansions_and_iterations_are_items_of_their_step() {
        let k = keys(&[("impl", "expand"), ("each", "foreach")], None);
        let events = [
            ev("step_started", "impl", 0.0),
            ev("step_started", "impl.first", 0.0),
            ev("step_completed", "impl.first", 1.0),
            ev("step_started", "impl.second", 1.0),
            ev("step_started", "each", 0.0),
            ev("step_started", "each.0.run", 0.0),
            ev("step_started", "each.0.post", 0.0),
            ev("step_completed", "each.0.run", 0.0),
            ev("step_started", "each.1.run", 0.0),
            ev("step_completed", "each.1.run", 0.0),
        ];
        let s = reduce(&facts("running", true, &lines(&events), &[], &k));
        assert_eq!(s["impl"].fanout, Some((1, 2)));
        assert_eq!(s["each"].fanout, Some((1, 2)), "item 0 still runs `post`");
    }

    #[test]
    fn a_step_shows_what_its_last_start_was_given() {
        let k = keys(&[("0", "agent"), ("1", "shell")], None);
        let mut first = ev("step_started", "0", 0.0);
        first["prompt"] = json!("Review draft 1");
        first["input"] = json!({"draft": 1});
        let mut again = ev("step_started", "0", 2.0);
        again["prompt"] = json!("Review draft 2");
        let mut shell = ev("step_started", "1", 3.0);
        shell["command"] = json!("make test");
        let events = [first, ev("step_failed", "0", 1.0), again, shell];
        let s = reduce(&facts("running", true, &lines(&events), &[], &k));
        assert_eq!(s["0"].prompt.as_deref(), Some("Review draft 2"));
        assert_eq!(s["0"].input, None, "the last start had no input");
        assert_eq!(s["1"].prompt.as_deref(), Some("make test"));
        let sent = s["1"].to_json();
        assert_eq!(sent["prompt"], "make test");
        assert_eq!(sent["input"], Json::Null);
    }

    #[test]
    fn item_names() {
        assert_eq!(item_of("for_each.3"), "for_each.3");
        assert_eq!(item_of("for_each.3.0"), "for_each.3");
        assert_eq!(item_of("parallel.left"), "parallel.left");
        assert_eq!(item_of("0.run"), "0");
        assert_eq!(item_of("first"), "first");
        let known: HashSet<&str> = ["1", "1.for_each.collect"].into_iter().collect();
        assert_eq!(
            owner("1.for_each.collect", &known),
            Some(("1.for_each.collect".to_string(), ""))
        );
        assert_eq!(
            owner("1.for_each.2", &known),
            Some(("1".to_string(), "for_each.2"))
        );
        assert_eq!(owner("3", &known), None);
    }
}
