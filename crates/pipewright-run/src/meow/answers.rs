//! What the scheduler answers over the orchestrator channel (channel.rs carries the lines): an
//! agent's `meow done`, and the agent-side questions `meow prime`, `meow step-status` and
//! `meow session-id` (spec: The Stop Hook, Interactive Mode, IPC and Communication).
//!
//! The scheduler handles one message at a time, so a `done` is validated and its step ended
//! before the next question is read: the reference's transient `completing` state is never
//! visible here, and `prime` after an accepted `done` already sees the agent's next step (or
//! none).

use super::agent;
use super::channel::{Query, Request};
use super::state::{Ended, State, Status};
use super::tmux::SessionId;
use super::Exec;
use pipewright_meow::tree::Node;
use serde_json::{json, Value};
use std::collections::HashMap;

/// What the scheduler keeps for the agent-side commands.
#[derive(Default)]
pub(crate) struct Side {
    /// The text typed into the agent's session, by waiting agent step: what `prime` repeats.
    prompts: HashMap<usize, String>,
    /// Why the agent's last `meow done` for a still-running step was refused.
    refused: HashMap<usize, String>,
    /// `meow done --notes`, by step, until the step's landing takes them.
    notes: HashMap<usize, String>,
}

/// The run-store key of an agent's session id (`:` and `#` never occur in a step id the
/// check accepts, so no landing of a step shares it).
fn session_key(agent: &str) -> String {
    format!("agent:{agent}#session_id")
}

impl Exec {
    /// Remembers the text typed for a waiting agent step, for `prime`.
    pub(super) fn prompted(&mut self, i: usize, text: &str) {
        self.side.prompts.insert(i, text.to_string());
    }

    /// The notes `meow done --notes` gave step `i`, for its landing.
    pub(super) fn take_notes(&mut self, i: usize) -> Option<String> {
        self.side.notes.remove(&i)
    }

    /// The agent's session id as last recorded (in the run store, so it survives a resume).
    fn session_of(&self, agent: &str) -> Option<String> {
        let v = self.journal.get(&session_key(agent))?;
        v.get("session_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }

    fn record_session(&mut self, agent: &str, id: Option<&str>) {
        let v = json!({"agent": agent, "session_id": id});
        self.land_fact(session_key(agent), v);
    }

    /// A spawn ended: records the session id it started under (a session started under an
    /// id nobody knows forgets the old one; a reused session keeps it) and returns the id the
    /// agent now runs under, for the spawn's outputs.
    pub(super) fn spawned(&mut self, agent: &str, sid: &SessionId) -> Option<String> {
        match sid {
            SessionId::Unchanged => {}
            SessionId::Started(id) => {
                if id.is_some() || self.session_of(agent).is_some() {
                    self.record_session(agent, id.as_deref());
                }
            }
        }
        self.session_of(agent)
    }

    /// A message from the orchestrator channel.
    pub(super) fn message(&mut self, st: &mut State, m: Request, ended: &mut Ended) {
        match m {
            Request::StepDone {
                agent,
                step,
                outputs,
                notes,
                reply,
            } => {
                let answer = self.step_done(st, agent, step, outputs, notes, ended);
                let _ = reply.send(answer);
            }
            Request::Query { query, reply } => {
                let _ = reply.send(self.answer(st, query));
            }
            Request::Session { agent, session_id } => {
                if self.session_of(&agent).as_deref() != Some(session_id.as_str()) {
                    self.record_session(&agent, Some(&session_id));
                }
            }
        }
    }

    fn step_done(
        &mut self,
        st: &mut State,
        agent: Option<String>,
        step: Option<String>,
        outputs: serde_json::Map<String, Value>,
        notes: Option<String>,
        ended: &mut Ended,
    ) -> Result<(), String> {
        let found = match step.as_deref().filter(|s| !s.is_empty()) {
            Some(s) => st.index.get(s).copied(),
            None => agent.as_deref().and_then(|a| self.busy.get(a).copied()),
        };
        let i = match found {
            None => {
                return Err(format!(
                    "no running step found{}",
                    agent
                        .map(|a| format!(" for agent `{a}`"))
                        .unwrap_or_default()
                ))
            }
            Some(i) if st.steps[i].status != Status::Running => {
                return Err(format!(
                    "step `{}` is not running (it is {})",
                    st.steps[i].id,
                    st.steps[i].status.name()
                ))
            }
            Some(i) if !st.steps[i].is_agent() => {
                return Err(format!("step `{}` is not an agent step", st.steps[i].id))
            }
            Some(i) if !self.waiting.contains(&i) => {
                return Err(format!(
                    "step `{}` is answered by the run's backend, not over the channel",
                    st.steps[i].id
                ))
            }
            Some(i) => i,
        };
        let t = st.steps[i].t.clone();
        let decl = agent::declared(t.get("outputs").and_then(Node::as_table));
        let name = self.busy_step.get(&i).cloned();
        let workdir = name
            .and_then(|n| self.agents.get(&n))
            .map_or_else(|| self.project.clone(), |a| a.workdir.clone());
        match agent::validate(&decl, outputs, &workdir) {
            Ok(outs) => {
                self.waiting.remove(&i);
                if let Some(w) = self.watchers.remove(&i) {
                    w.notify_one();
                }
                self.deadlines.retain(|(_, k)| *k != i);
                self.side.prompts.remove(&i);
                self.side.refused.remove(&i);
                if let Some(n) = notes {
                    self.side.notes.insert(i, n);
                }
                st.end(i, Status::Done, outs, None, ended);
                Ok(())
            }
            // The step keeps running: the agent reads why and reports again (and `prime`
            // repeats why with the prompt).
            Err(errs) => {
                let why = format!("output validation failed: {}", errs.join("; "));
                self.side.refused.insert(i, why.clone());
                Err(why)
            }
        }
    }

    fn answer(&mut self, st: &State, q: Query) -> Value {
        // Steps that ended another way (timeout, a dead session) leave their prompts behind.
        self.side
            .prompts
            .retain(|&i, _| st.steps[i].status == Status::Running);
        self.side
            .refused
            .retain(|&i, _| st.steps[i].status == Status::Running);
        match q {
            Query::Prompt { agent } => self.prompt(st, &agent),
            Query::StepStatus { step, asker } => step_status(st, &step, asker.as_deref()),
            Query::SessionId { agent } => match self.session_of(&agent) {
                Some(id) => json!({"type": "session_id", "session_id": id}),
                None => {
                    let why = if self.agents.contains_key(&agent) {
                        "its adapter's command has no `{{session_id}}`, it was not resumed with `resume_session`, and it reported none (`pipewright meow event session-started session_id=ID`)"
                    } else {
                        "no spawn step of this run started it"
                    };
                    json!({"type": "error", "message": format!("the session id of agent `{agent}` is not known: {why}")})
                }
            },
        }
    }

    /// `prime`: the running step's prompt as typed (with why its last `done` was refused), or
    /// "" when the agent has no step waiting for it, or the step is interactive (a human talks
    /// to the agent then; the spec's rule).
    fn prompt(&self, st: &State, agent: &str) -> Value {
        let Some(&i) = self
            .busy
            .get(agent)
            .filter(|&&i| st.steps[i].status == Status::Running)
        else {
            return json!({"type": "prompt", "content": "", "step": null, "mode": null});
        };
        let s = &st.steps[i];
        let mode = s.t.str("mode").unwrap_or("autonomous");
        let content = match (mode, self.side.prompts.get(&i)) {
            ("interactive", _) | (_, None) => String::new(),
            (_, Some(p)) => match self.side.refused.get(&i) {
                Some(why) => agent::refused_prompt(p, why),
                None => p.clone(),
            },
        };
        json!({"type": "prompt", "content": content, "step": s.id, "mode": mode})
    }
}

/// A step's status by id, looked up from the asking step's scopes outwards (`F.0.work` asking
/// for `build` finds `F.0.build` before `build`), as `{{step.outputs.x}}` is.
fn step_status(st: &State, step: &str, asker: Option<&str>) -> Value {
    let mut cands = Vec::new();
    let mut p = asker.unwrap_or("");
    while let Some((head, _)) = p.rsplit_once('.') {
        cands.push(format!("{head}.{step}"));
        p = head;
    }
    cands.push(step.to_string());
    match cands.iter().find_map(|c| st.index.get(c)) {
        Some(&i) => json!({
            "type": "step_status",
            "step_id": st.steps[i].id,
            "status": st.steps[i].status.name(),
        }),
        None => json!({
            "type": "error",
            "message": format!("no step `{step}` in this run (a step an expansion has not created yet does not exist)"),
        }),
    }
}
