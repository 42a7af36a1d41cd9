//! The run's steps and the `needs` DAG between them (notes §4.1–§4.3), kept so that every
//! change costs work in proportion to the steps it touches: each pending step counts the needs
//! not yet done, each step lists its dependents, and a need on a step that does not exist yet
//! waits under that id until an expansion creates it.

use super::subst::{self, Lookup, SubstError};
use super::template::{ModuleFile, TemplateStep};
use crate::executor::Agent;
use crate::Executor;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Pending,
    Running,
    Done,
    Failed,
    Skipped,
    /// Failed, and its `on_error` template runs: its dependents wait for the recovery.
    Recovering,
    /// Failed, and its recovery ended done: its dependents run as after `done`.
    Recovered,
}

impl Status {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Running => "running",
            Status::Done => "done",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::Recovering => "recovering",
            Status::Recovered => "recovered",
        }
    }

    /// The status [`Status::name`] names.
    pub(crate) fn named(name: &str) -> Option<Status> {
        [
            Status::Pending,
            Status::Running,
            Status::Done,
            Status::Failed,
            Status::Skipped,
            Status::Recovering,
            Status::Recovered,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    pub(crate) fn terminal(self) -> bool {
        matches!(
            self,
            Status::Done | Status::Failed | Status::Skipped | Status::Recovered
        )
    }

    /// Whether a need on a step in this state is met.
    pub(crate) fn satisfies(self) -> bool {
        matches!(self, Status::Done | Status::Recovered)
    }
}

/// The variables one instance of a workflow sees.
pub(super) struct Scope {
    pub vars: Map<String, Value>,
}

pub(super) struct RunStep {
    pub id: String,
    pub template: Arc<TemplateStep>,
    pub scope: Arc<Scope>,
    pub src: Arc<ModuleFile>,
    /// `E.`, `F.3.`: what the ids of this step's siblings start with.
    pub prefix: String,
    pub needs: Vec<String>,
    pub status: Status,
    pub outputs: Map<String, Value>,
    pub error: Option<String>,
    /// The branch or foreach that waits for this step to end.
    pub parent: Option<usize>,
    /// The nearest foreach above, and the iteration this step belongs to.
    pub foreach: Option<(usize, usize)>,
    pub depth: u32,
    /// Recoveries this step runs inside (0 outside any `on_error` template).
    pub recovery: u32,
    /// Needs not yet done (wildcard needs are not counted: see `State::wild`).
    pub waiting: usize,
    pub dependents: Vec<usize>,
    pub wild: bool,
    /// A joining step: children not yet ended, and whether one failed.
    pub open: usize,
    pub child_failed: bool,
    /// The steps an expansion created.
    pub children: Vec<usize>,
    pub started: Option<std::time::Instant>,
}

impl RunStep {
    pub(super) fn is_agent(&self) -> bool {
        self.agent().is_some()
    }

    /// The fields of an agent step.
    pub(super) fn agent(&self) -> Option<&Agent> {
        match &self.template.executor {
            Executor::Agent(a) => Some(a),
            _ => None,
        }
    }

    /// Its `on_error`; kill steps have none (they are idempotent, as `check` says).
    pub(super) fn on_error(&self) -> Option<&str> {
        match self.template.executor {
            Executor::Kill(_) => None,
            _ => self.template.on_error.as_ref().map(|t| t.text.as_str()),
        }
    }

    /// The recovery template its `on_error` names, if it names one.
    pub(super) fn recovery_template(&self) -> Option<&str> {
        self.on_error().filter(|v| crate::on_error_template(v))
    }
}

#[derive(Default)]
pub(super) struct State {
    pub steps: Vec<RunStep>,
    pub index: HashMap<String, usize>,
    /// Needs naming steps that do not exist yet: the id, and who waits for it.
    pub awaiting: HashMap<String, Vec<usize>>,
    /// Ready to dispatch: orchestrator executors first, then in creation order.
    pub ready: BTreeSet<(bool, usize)>,
    /// Pending steps with a wildcard need.
    pub wild: Vec<usize>,
    pub run_id: String,
    /// The spec's error type of a failure (`agent_crashed`, `timeout`…), by step, set where
    /// the failure happens: `_failed_step.error_type` reads it rather than the message.
    pub error_types: HashMap<usize, &'static str>,
    /// Steps a fan-out member may read the outputs of but does not hold (its state holds
    /// only its own steps): their status and outputs when it was sent.
    pub outside: HashMap<String, (Status, Map<String, Value>)>,
}

/// What ending a step set in motion, for the caller to report.
#[derive(Default)]
pub(super) struct Ended {
    /// Steps that ended (the step itself, skipped dependents, joins completed).
    pub steps: Vec<usize>,
    /// Failed steps whose `on_error` template is to be expanded.
    pub recover: Vec<usize>,
}

impl State {
    /// Adds a step and links its needs; `Err` when its id is taken.
    pub(super) fn insert(&mut self, mut s: RunStep, ended: &mut Ended) -> Result<usize, String> {
        if self.index.contains_key(&s.id) {
            return Err(format!("two steps would have the id `{}`", s.id));
        }
        let i = self.steps.len();
        let mut blocked: Option<String> = None;
        for n in &s.needs {
            if n.contains('*') {
                s.wild = true;
                continue;
            }
            match self.index.get(n) {
                Some(&d) => match self.steps[d].status {
                    Status::Done | Status::Recovered => {}
                    Status::Failed | Status::Skipped => {
                        blocked.get_or_insert_with(|| dep_message(n, self.steps[d].status));
                    }
                    _ => {
                        s.waiting += 1;
                        self.steps[d].dependents.push(i);
                    }
                },
                None => {
                    s.waiting += 1;
                    self.awaiting.entry(n.clone()).or_default().push(i);
                }
            }
        }
        if let Some(waiters) = self.awaiting.remove(&s.id) {
            s.dependents.extend(waiters);
        }
        self.index.insert(s.id.clone(), i);
        let wild = s.wild;
        let ready = s.waiting == 0 && !wild;
        let agent = s.is_agent();
        self.steps.push(s);
        if let Some(why) = blocked {
            self.end(i, Status::Skipped, Map::new(), Some(why), ended);
        } else if wild {
            self.wild.push(i);
        } else if ready {
            self.ready.insert((agent, i));
        }
        Ok(i)
    }

    /// Ends step `i` failed, of the spec's error type `kind` (for a recovery's
    /// `_failed_step.error_type`).
    pub(super) fn fail(
        &mut self,
        i: usize,
        kind: &'static str,
        outputs: Map<String, Value>,
        error: String,
        ended: &mut Ended,
    ) {
        self.error_types.insert(i, kind);
        self.end(i, Status::Failed, outputs, Some(error), ended);
    }

    /// Ends step `i` and everything that follows from it: dependents become ready or are
    /// skipped, a join whose last child this was ends too.
    pub(super) fn end(
        &mut self,
        i: usize,
        status: Status,
        outputs: Map<String, Value>,
        error: Option<String>,
        ended: &mut Ended,
    ) {
        let mut work = vec![(i, status, outputs, error)];
        while let Some((i, mut status, mut outputs, error)) = work.pop() {
            if self.steps[i].status.terminal() {
                continue;
            }
            // `on_error`: a recovery template holds the failure back from the dependents
            // (once: a recovery that fails fails the step); `continue` turns it into `done`.
            if status == Status::Failed && self.steps[i].status != Status::Recovering {
                if self.steps[i].recovery_template().is_some() {
                    let s = &mut self.steps[i];
                    s.status = Status::Recovering;
                    s.outputs = outputs;
                    s.error = error;
                    self.ready.remove(&(self.steps[i].is_agent(), i));
                    ended.steps.push(i);
                    ended.recover.push(i);
                    continue;
                }
                if self.steps[i].on_error() == Some("continue") {
                    status = Status::Done;
                    outputs.insert("error".into(), Value::from(error.unwrap_or_default()));
                    work.push((i, status, outputs, None));
                    continue;
                }
            }
            {
                let s = &mut self.steps[i];
                s.status = status;
                s.outputs = outputs;
                s.error = error;
            }
            self.ready.remove(&(self.steps[i].is_agent(), i));
            ended.steps.push(i);
            let deps = std::mem::take(&mut self.steps[i].dependents);
            for &d in &deps {
                if self.steps[d].status != Status::Pending {
                    continue;
                }
                if status.satisfies() {
                    let ds = &mut self.steps[d];
                    ds.waiting = ds.waiting.saturating_sub(1);
                    if ds.waiting == 0 && !ds.wild {
                        let agent = ds.is_agent();
                        self.ready.insert((agent, d));
                    }
                } else {
                    let why = dep_message(&self.steps[i].id, status);
                    work.push((d, Status::Skipped, Map::new(), Some(why)));
                }
            }
            self.steps[i].dependents = deps;
            if let Some(p) = self.steps[i].parent {
                // A failed expansion's own children still ending do not count for the
                // recovery it now waits for.
                if self.steps[p].status == Status::Recovering
                    && self.steps[i].recovery <= self.steps[p].recovery
                {
                    continue;
                }
                let ps = &mut self.steps[p];
                ps.open = ps.open.saturating_sub(1);
                ps.child_failed |= status == Status::Failed;
                if ps.open == 0 && ps.status == Status::Recovering {
                    let (st, err) = match ps.child_failed {
                        true => (
                            Status::Failed,
                            Some(format!(
                                "{}; its `on_error` recovery failed",
                                ps.error.as_deref().unwrap_or("it failed")
                            )),
                        ),
                        false => (Status::Recovered, ps.error.clone()),
                    };
                    let outs = std::mem::take(&mut ps.outputs);
                    work.push((p, st, outs, err));
                } else if ps.open == 0 && ps.status == Status::Running {
                    let (st, err) = if ps.child_failed {
                        let what = if matches!(ps.template.executor, Executor::Foreach(_)) {
                            "one or more iterations failed"
                        } else {
                            "a step of the chosen branch failed"
                        };
                        (Status::Failed, Some(what.to_string()))
                    } else {
                        (Status::Done, None)
                    };
                    let outs = std::mem::take(&mut ps.outputs);
                    work.push((p, st, outs, err));
                }
            }
        }
    }

    /// Re-examines the pending steps with wildcard needs; they may become ready or skipped.
    pub(super) fn check_wild(&mut self, ended: &mut Ended) {
        if self.wild.is_empty() {
            return;
        }
        let wild = std::mem::take(&mut self.wild);
        let mut keep = Vec::new();
        for i in wild {
            if self.steps[i].status != Status::Pending {
                continue;
            }
            match self.wild_state(i) {
                Wild::Waiting => keep.push(i),
                Wild::Blocked(why) => self.end(i, Status::Skipped, Map::new(), Some(why), ended),
                Wild::Satisfied => {
                    self.steps[i].wild = false;
                    if self.steps[i].waiting == 0 {
                        let agent = self.steps[i].is_agent();
                        self.ready.insert((agent, i));
                    }
                }
            }
        }
        self.wild.extend(keep);
    }

    fn wild_state(&self, i: usize) -> Wild {
        for n in self.steps[i].needs.iter().filter(|n| n.contains('*')) {
            let pat: Vec<&str> = n.split('.').collect();
            // A literal head names the step whose expansion the pattern looks into: it must
            // have started, or nothing it will create can be seen yet.
            if !pat[0].contains('*') {
                match self.index.get(pat[0]) {
                    Some(&h) if self.steps[h].status != Status::Pending => {}
                    _ => return Wild::Waiting,
                }
            }
            for (k, s) in self.steps.iter().enumerate() {
                if k == i || !matches(&pat, &s.id) {
                    continue;
                }
                match s.status {
                    Status::Done | Status::Recovered => {}
                    Status::Failed | Status::Skipped => {
                        return Wild::Blocked(dep_message(&s.id, s.status))
                    }
                    _ => return Wild::Waiting,
                }
            }
        }
        Wild::Satisfied
    }
}

enum Wild {
    Waiting,
    Satisfied,
    Blocked(String),
}

fn dep_message(id: &str, status: Status) -> String {
    match status {
        Status::Skipped => format!("dependency `{id}` was skipped"),
        _ => format!("dependency `{id}` failed"),
    }
}

/// Whether a wildcard need matches a step id: segment by segment (`*` inside a segment
/// matches any text), and a step under a matched id matches too (`F.*` is every step of
/// every iteration of `F`).
pub(super) fn matches(pat: &[&str], id: &str) -> bool {
    let segs: Vec<&str> = id.split('.').collect();
    segs.len() >= pat.len() && pat.iter().zip(&segs).all(|(p, s)| glob(p, s))
}

fn glob(p: &str, s: &str) -> bool {
    match p.split_once('*') {
        None => p == s,
        Some((head, rest)) => {
            let Some(s) = s.strip_prefix(head) else {
                return false;
            };
            if rest.is_empty() {
                return true;
            }
            (0..=s.len()).any(|k| s.is_char_boundary(k) && glob(rest, &s[k..]))
        }
    }
}

/// Values as step `i` sees them: its scope's variables, the builtins, and the outputs of the
/// steps it can name (its siblings first, then outwards).
pub(super) struct StepValues<'a> {
    pub state: &'a State,
    /// The step's index.
    pub step: usize,
    /// Bindings over the scope (a foreach's item while its variables are evaluated).
    pub extra: Option<&'a Map<String, Value>>,
    /// How deep in variables whose values hold references the lookup is.
    pub depth: u8,
}

impl StepValues<'_> {
    pub(super) fn new(state: &State, step: usize) -> StepValues<'_> {
        StepValues {
            state,
            step,
            extra: None,
            depth: 0,
        }
    }
}

impl Lookup for StepValues<'_> {
    fn var(&self, name: &str) -> Option<Value> {
        let s = &self.state.steps[self.step];
        let found = self
            .extra
            .and_then(|e| e.get(name))
            .or_else(|| s.scope.vars.get(name))
            .cloned();
        if let Some(v) = found {
            // A value holding references (a default such as "{{b}}-A") is expanded too.
            if let Value::String(t) = &v {
                if self.depth < 10 && t.contains("{{") {
                    let inner = StepValues {
                        state: self.state,
                        step: self.step,
                        extra: self.extra,
                        depth: self.depth + 1,
                    };
                    return subst::typed(t, &inner).ok().or(Some(v));
                }
            }
            return Some(v);
        }
        let now = || pipewright_runtime::store::utc_parts(pipewright_runtime::store::now_ms());
        Some(Value::String(match name {
            "workflow_id" => self.state.run_id.clone(),
            "step_id" => s.template.id.clone(),
            "__step_prefix__" => s.prefix.clone(),
            "timestamp" => {
                let (y, mo, d, h, mi, se) = now();
                format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{se:02}Z")
            }
            "date" => {
                let (y, mo, d, ..) = now();
                format!("{y:04}-{mo:02}-{d:02}")
            }
            "time" => {
                let (.., h, mi, se) = now();
                format!("{h:02}:{mi:02}:{se:02}")
            }
            _ => return None,
        }))
    }

    fn outputs(&self, step: &str) -> Result<Value, SubstError> {
        let me = &self.state.steps[self.step].id;
        for c in &candidates(me, step) {
            let found = match self.state.index.get(c) {
                Some(&k) => Some((self.state.steps[k].status, &self.state.steps[k].outputs)),
                None => self.state.outside.get(c).map(|(status, o)| (*status, o)),
            };
            if let Some((status, outputs)) = found {
                return match status {
                    Status::Done => Ok(Value::Object(outputs.clone())),
                    Status::Recovered => Err(SubstError::Recovered(c.clone())),
                    other => Err(SubstError::NotFinished {
                        step: c.clone(),
                        status: other.name(),
                    }),
                };
            }
        }
        Err(SubstError::NoStep(step.to_string()))
    }
}

/// The ids `{{step.outputs…}}` may name, read from step `me`: the nearest scope first (`a.0.b`
/// reading `setup` tries `a.0.setup`, `a.setup`, then `setup`).
pub(super) fn candidates(me: &str, step: &str) -> Vec<String> {
    let mut cands = Vec::new();
    let mut p = me;
    while let Some((head, _)) = p.rsplit_once('.') {
        cands.push(format!("{head}.{step}"));
        p = head;
    }
    cands.push(step.to_string());
    cands
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_by_segment_and_below() {
        let m = |p: &str, id: &str| matches(&p.split('.').collect::<Vec<_>>(), id);
        assert!(m("F.*.build", "F.0.build"));
        assert!(!m("F.*.build", "F.0.test"));
        assert!(m("F.*", "F.12.x.y"));
        assert!(m("validate-*", "validate-frontend"));
        assert!(!m("validate-*", "check"));
        assert!(m("feature-*.test", "feature-a.test"));
        assert!(!m("F.*.build", "F"));
    }
}
