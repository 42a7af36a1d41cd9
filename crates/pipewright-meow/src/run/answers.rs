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
use super::tmux::{self, SessionId};
use super::Exec;
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
        self.recorded(&session_key(agent))
            .as_ref()
            .and_then(recorded_session)
    }

    fn record_session(&mut self, agent: &str, id: Option<&str>) {
        let v = json!({"agent": agent, "session_id": id});
        self.land_fact(session_key(agent), v);
    }

    /// A spawn ended: records the session id it started under (a session started under an
    /// id nobody knows forgets the old one; a reused session keeps it) and returns the id the
    /// agent now runs under, for the spawn's outputs.
    pub(super) fn spawned(&mut self, agent: &str, sid: &SessionId) -> Option<String> {
        let known = self.session_of(agent).is_some();
        if let Some(id) = session_change(sid, known) {
            self.record_session(agent, id);
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
                // An agent a member took has its session recorded by the member's worker.
                if self.sent.reserved.contains_key(&agent) {
                    return;
                }
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
        let name = self.busy_step.get(&i).cloned();
        // An agent reports for itself only (the reference's rule): a `done` naming another
        // agent's step would end it with outputs its agent never gave. A report without an
        // agent (a human at a terminal with `--run`) is taken as it is.
        if let (Some(from), Some(owner)) = (agent.as_deref().filter(|a| !a.is_empty()), &name) {
            if from != owner {
                return Err(format!(
                    "step `{}` is not assigned to agent `{from}` (it is agent `{owner}`'s)",
                    st.steps[i].id
                ));
            }
        }
        let decl = st.steps[i]
            .agent()
            .map_or_else(Vec::new, |a| a.outputs.clone());
        let info = name.and_then(|n| self.agents.get(&n));
        let workdir = info.map_or_else(|| self.project.clone(), |a| a.workdir.clone());
        let session = info.and_then(|a| a.session.clone());
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
                if let Some((session, adapter)) = &session {
                    tmux::pause(adapter, session);
                }
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
        self.side
            .forget_ended(|i| st.steps[i].status == Status::Running);
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
        let running = self
            .busy
            .get(agent)
            .copied()
            .filter(|&i| st.steps[i].status == Status::Running);
        match running {
            None => prime(None, None, None),
            Some(i) => {
                let s = &st.steps[i];
                let mode = s
                    .agent()
                    .and_then(|a| a.mode.as_ref())
                    .map_or("autonomous", |m| m.text.as_str());
                prime(
                    Some((&s.id, mode)),
                    self.side.prompts.get(&i).map(String::as_str),
                    self.side.refused.get(&i).map(String::as_str),
                )
            }
        }
    }
}

impl Side {
    /// Steps that ended another way than by `done` (timeout, a dead session) leave their
    /// prompts and refusals behind: drops those of steps no longer running.
    fn forget_ended(&mut self, running: impl Fn(usize) -> bool) {
        self.prompts.retain(|&i, _| running(i));
        self.refused.retain(|&i, _| running(i));
    }
}

/// The `prime` answer: for the agent's running step (its id and mode), the text typed into
/// its session with why its last `done` was refused; empty when the agent is idle, the step
/// is interactive, or nothing was typed (the run's backend answers it).
fn prime(running: Option<(&str, &str)>, typed: Option<&str>, refused: Option<&str>) -> Value {
    let Some((step, mode)) = running else {
        return json!({"type": "prompt", "content": "", "step": null, "mode": null});
    };
    let content = match (mode, typed) {
        ("interactive", _) | (_, None) => String::new(),
        (_, Some(p)) => match refused {
            Some(why) => agent::refused_prompt(p, why),
            None => p.to_string(),
        },
    };
    json!({"type": "prompt", "content": content, "step": step, "mode": mode})
}

/// A session id as `record_session` landed it; a forgotten one (null) or an empty one is
/// none.
fn recorded_session(v: &Value) -> Option<String> {
    v.get("session_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// What a spawn changes in the recorded session id: `Some(id)` to record (`Some(None)`
/// forgets the old one: the agent runs under an id nobody knows), `None` to keep it (a reused
/// session, or nothing was known to forget).
fn session_change(sid: &SessionId, known: bool) -> Option<Option<&str>> {
    match sid {
        SessionId::Unchanged => None,
        SessionId::Started(Some(id)) => Some(Some(id)),
        SessionId::Started(None) => known.then_some(None),
    }
}

/// A step's status by id, looked up from the asking step's scopes outwards (`F.0.work` asking
/// for `build` finds `F.0.build` before `build`), as `{{step.outputs.x}}` is.
fn step_status(st: &State, step: &str, asker: Option<&str>) -> Value {
    match find_step(&st.index, step, asker) {
        Some(i) => json!({
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

/// Step `step` as seen from step `asker`: the nearest enclosing scope's step of that id.
fn find_step(index: &HashMap<String, usize>, step: &str, asker: Option<&str>) -> Option<usize> {
    let mut p = asker.unwrap_or("");
    while let Some((head, _)) = p.rsplit_once('.') {
        if let Some(&i) = index.get(&format!("{head}.{step}")) {
            return Some(i);
        }
        p = head;
    }
    index.get(step).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prime_is_empty_for_an_idle_agent() {
        let v = prime(None, Some("stale"), Some("stale"));
        assert_eq!(
            v,
            json!({"type": "prompt", "content": "", "step": null, "mode": null})
        );
    }

    #[test]
    fn prime_repeats_the_typed_prompt_of_an_autonomous_step() {
        let v = prime(
            Some(("plan", "autonomous")),
            Some("Plan it.\n## Expected Outputs"),
            None,
        );
        assert_eq!(v["content"], "Plan it.\n## Expected Outputs");
        assert_eq!(v["step"], "plan");
        assert_eq!(v["mode"], "autonomous");
    }

    #[test]
    fn prime_after_a_refused_done_says_why() {
        let v = prime(
            Some(("plan", "autonomous")),
            Some("Plan it."),
            Some("output validation failed: output `n` is missing"),
        );
        assert_eq!(
            v["content"],
            "Plan it.\n\nYour last `pipewright meow done` was refused: output validation failed: output `n` is missing. Report again."
        );
    }

    #[test]
    fn prime_is_empty_for_an_interactive_step_even_after_a_refusal() {
        let v = prime(Some(("talk", "interactive")), Some("Talk."), Some("bad"));
        assert_eq!(v["content"], "");
        assert_eq!(v["step"], "talk", "the step is still named");
        assert_eq!(v["mode"], "interactive");
    }

    #[test]
    fn prime_is_empty_for_a_step_the_backend_answers() {
        // Nothing was typed into a session for it.
        let v = prime(Some(("plan", "autonomous")), None, None);
        assert_eq!(v["content"], "");
        assert_eq!(v["step"], "plan");
    }

    #[test]
    fn ended_steps_lose_their_prompts_and_refusals() {
        let mut side = Side::default();
        for i in 0..3 {
            side.prompts.insert(i, format!("p{i}"));
            side.refused.insert(i, format!("r{i}"));
        }
        side.notes.insert(0, "kept for the landing".into());
        side.forget_ended(|i| i == 1);
        assert_eq!(side.prompts.keys().collect::<Vec<_>>(), [&1]);
        assert_eq!(side.refused.keys().collect::<Vec<_>>(), [&1]);
        assert_eq!(side.notes.len(), 1, "notes go with the landing, not here");
    }

    fn index(ids: &[&str]) -> HashMap<String, usize> {
        ids.iter()
            .enumerate()
            .map(|(i, s)| (s.to_string(), i))
            .collect()
    }

    #[test]
    fn step_status_looks_in_the_nearest_scope_first() {
        let ix = index(&["build", "F.0.build", "F.0.work", "F.1.work", "F.build"]);
        // From inside an iteration: its own `build`.
        assert_eq!(find_step(&ix, "build", Some("F.0.work")), Some(1));
        // An iteration without one: the foreach's scope, then the top.
        assert_eq!(find_step(&ix, "build", Some("F.1.work")), Some(4));
        assert_eq!(find_step(&ix, "build", Some("G.0.work")), Some(0));
        // From the top, or asked without a step (a shell outside the run's steps).
        assert_eq!(find_step(&ix, "build", Some("work")), Some(0));
        assert_eq!(find_step(&ix, "build", None), Some(0));
        // A full id is found as it is.
        assert_eq!(find_step(&ix, "F.0.build", None), Some(1));
        assert_eq!(find_step(&ix, "nope", Some("F.0.work")), None);
    }

    #[test]
    fn a_spawn_records_a_known_session_id_and_forgets_one_nobody_knows() {
        let fresh = SessionId::Started(Some("0190-abc".into()));
        assert_eq!(session_change(&fresh, false), Some(Some("0190-abc")));
        assert_eq!(session_change(&fresh, true), Some(Some("0190-abc")));
        // Started under an id the orchestrator cannot know: the old one no longer holds.
        let unknown = SessionId::Started(None);
        assert_eq!(session_change(&unknown, true), Some(None));
        assert_eq!(session_change(&unknown, false), None, "nothing to forget");
        // A live session reused: whatever was recorded still holds.
        assert_eq!(session_change(&SessionId::Unchanged, true), None);
        assert_eq!(session_change(&SessionId::Unchanged, false), None);
    }

    #[test]
    fn a_forgotten_or_empty_session_id_reads_as_none() {
        let v = |id: Value| json!({"agent": "w", "session_id": id});
        assert_eq!(recorded_session(&v(json!("s-1"))).as_deref(), Some("s-1"));
        assert_eq!(recorded_session(&v(Value::Null)), None);
        assert_eq!(recorded_session(&v(json!(""))), None);
        assert_eq!(recorded_session(&json!({})), None);
    }

    #[test]
    fn session_ids_are_kept_under_a_key_no_step_id_can_take() {
        let k = session_key("w");
        assert_eq!(k, "agent:w#session_id");
        assert!(k.contains(':') && k.contains('#'));
    }
}
