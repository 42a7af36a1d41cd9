//! `on_error = ".template"` (spec "On-Error Handling" to "Recovery Depth Limit"): a failed
//! step whose `on_error` names a template is `recovering` (landed `failed`) while the template
//! runs under `<step>.on_error.`, with `_failed_step` and the failing workflow's variables.
//! Its dependents wait; when every step of the recovery ends done the step is `recovered` and
//! they run, otherwise it fails and skips them as any failure does. Recoveries nest at most
//! `max_recovery_depth` deep (PW0832).

use super::state::{Ended, Scope, State, Status, StepValues};
use super::{subst, Exec};
use crate::ast::Text;
use crate::Executor;
use pipewright_runtime::codes;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Why a recovery could not start.
struct Refusal {
    code: &'static str,
    message: String,
}

impl Exec {
    /// Expands the recovery of step `i`, which `State::end` left `recovering`.
    pub(super) fn recover(&mut self, st: &mut State, i: usize, ended: &mut Ended) {
        if st.steps[i].status != Status::Recovering {
            return;
        }
        let Some(reference) = st.steps[i].recovery_template().map(str::to_string) else {
            return;
        };
        // The failure's own children (a join's) are done with; the recovery is joined anew.
        let child_failed = std::mem::replace(&mut st.steps[i].child_failed, false);
        st.steps[i].open = 0;
        let res = self.start_recovery(st, i, &reference, child_failed, ended);
        let made = match res {
            Ok(n) => n,
            Err(r) => {
                self.codes.insert(i, r.code);
                let s = &mut st.steps[i];
                let why = format!(
                    "{}; its `on_error` recovery `{reference}` could not start: {}",
                    s.error.as_deref().unwrap_or("it failed"),
                    r.message
                );
                let outs = std::mem::take(&mut s.outputs);
                st.end(i, Status::Failed, outs, Some(why), ended);
                return;
            }
        };
        if made == 0 && st.steps[i].status == Status::Recovering {
            let s = &mut st.steps[i];
            let (outs, err) = (std::mem::take(&mut s.outputs), s.error.clone());
            st.end(i, Status::Recovered, outs, err, ended);
        }
    }

    fn start_recovery(
        &mut self,
        st: &mut State,
        i: usize,
        reference: &str,
        child_failed: bool,
        ended: &mut Ended,
    ) -> Result<usize, Refusal> {
        let refused = |message: String| Refusal {
            code: codes::MEOW_STEP,
            message,
        };
        let depth = st.steps[i].recovery + 1;
        if depth > self.limits.max_recovery_depth {
            return Err(Refusal {
                code: codes::MEOW_RECOVERY,
                message: format!(
                    "recoveries would nest {depth} deep, over the limit of {} (`[meow] max_recovery_depth` in pipewright.toml)",
                    self.limits.max_recovery_depth
                ),
            });
        }
        let id = st.steps[i].id.clone();
        let key = format!("{id}#recovery");
        // A resumed run recovers with the context of the first attempt's failure.
        let failed = match self.recorded(&key) {
            Some(v) => v,
            None => {
                let v = failed_step(st, i, self.codes.get(&i).copied(), child_failed);
                self.land_fact(key, v.clone());
                v
            }
        };
        let reference = subst::render(reference, &StepValues::new(st, i), false)
            .map_err(|e| refused(format!("`on_error`: {e}")))?;
        let src = st.steps[i].src.clone();
        let tmpl = self
            .lib
            .resolve(&reference, &src)
            .map_err(|e| refused(e.into()))?;
        let mut vars = recovery_vars(&tmpl, &st.steps[i].scope.vars)
            .map_err(|e| refused(format!("expanding `{reference}`: {e}")))?;
        vars.insert(FAILED_STEP.into(), failed);
        let steps = tmpl.steps.clone();
        self.insert_children(
            st,
            i,
            &steps,
            Arc::new(Scope { vars }),
            tmpl.src.clone(),
            format!("{id}.on_error."),
            true,
            None,
            ended,
        )
        .map_err(|r| Refusal {
            code: r.code,
            message: r.message,
        })
    }
}

/// The variables recovery template `tmpl` runs with, from those of the workflow that failed
/// (`mine`): its declared variables take their values from them, and the rest of them are
/// visible too. (`_failed_step`, which describes the failure, comes on top.)
pub(super) fn recovery_vars(
    tmpl: &super::template::Template,
    mine: &Map<String, Value>,
) -> Result<Map<String, Value>, super::template::BindError> {
    let given: Map<String, Value> = mine
        .iter()
        .filter(|(k, _)| tmpl.vars.iter().any(|v| &v.name == *k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut vars = tmpl.bind(given, false)?;
    for (k, v) in mine {
        vars.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Ok(vars)
}

/// Whether step `i` failed the run: failed, and not under a step whose recovery stood in for
/// the failures beneath it (a join that failed because of them, then recovered).
pub(super) fn fails_run(st: &State, i: usize) -> bool {
    if st.steps[i].status != Status::Failed {
        return false;
    }
    let mut p = st.steps[i].parent;
    while let Some(k) = p {
        if st.steps[k].status == Status::Recovered {
            return false;
        }
        p = st.steps[k].parent;
    }
    true
}

/// The variable a recovery template reads its failure from.
pub(super) const FAILED_STEP: &str = "_failed_step";

/// Error types of the spec that failure sites name (`State::fail`); the others are told by
/// `error_type` from the executor and the failure.
pub(super) const TIMEOUT: &str = "timeout";
pub(super) const COMMAND_FAILED: &str = "command_failed";
pub(super) const AGENT_NOT_FOUND: &str = "agent_not_found";
pub(super) const AGENT_CRASHED: &str = "agent_crashed";
pub(super) const TEMPLATE_NOT_FOUND: &str = "template_not_found";

/// `_failed_step` of the spec's table for step `i`, which just failed.
fn failed_step(st: &State, i: usize, code: Option<&str>, child_failed: bool) -> Value {
    let s = &st.steps[i];
    let error = s.error.clone().unwrap_or_default();
    let (started_at, duration) = match s.started {
        Some(t) => {
            let took = t.elapsed();
            let ms =
                pipewright_runtime::store::now_ms() - i64::try_from(took.as_millis()).unwrap_or(0);
            let (y, mo, d, h, mi, se) = pipewright_runtime::store::utc_parts(ms);
            (
                format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{se:02}Z"),
                super::duration::show(took),
            )
        }
        None => (String::new(), super::duration::show(Default::default())),
    };
    let field = |t: &Option<Text>| -> String {
        match t {
            Some(t) => subst::render(&t.text, &StepValues::new(st, i), false)
                .unwrap_or_else(|_| t.text.clone()),
            None => String::new(),
        }
    };
    let (agent, prompt) = match &s.template.executor {
        Executor::Agent(a) => (field(&a.agent), field(&a.prompt)),
        Executor::Spawn(spawn) => (field(&spawn.agent), String::new()),
        Executor::Kill(kill) => (field(&kill.agent), String::new()),
        _ => (String::new(), String::new()),
    };
    json!({
        "id": s.id,
        "executor": s.template.executor.name(),
        "error_type": error_type(
            s.template.executor.name(),
            code,
            child_failed,
            st.error_types.get(&i).copied(),
        ),
        "error_message": error,
        "started_at": started_at,
        "duration": duration,
        "retries": s.recovery,
        "agent": agent,
        "prompt": prompt,
    })
}

/// The spec's classification of a failure ("Error Types by Executor"): PW0831, else the type
/// its site `named` (carried from where it happened), else the executor's own.
fn error_type(
    executor: &str,
    code: Option<&str>,
    child_failed: bool,
    named: Option<&'static str>,
) -> &'static str {
    if code == Some(codes::MEOW_LIMIT) {
        return "expansion_limit";
    }
    if let Some(kind) = named {
        return kind;
    }
    match executor {
        "agent" => AGENT_CRASHED,
        "spawn" => "spawn_failed",
        "expand" => TEMPLATE_NOT_FOUND,
        "branch" | "foreach" if child_failed => "child_failed",
        "branch" => "condition_error",
        "foreach" => "invalid_items",
        _ => COMMAND_FAILED,
    }
}

#[cfg(test)]
mod tests {
    use super::error_type;

    #[test]
    fn failures_are_classified_as_the_spec_lists_them() {
        use super::{AGENT_CRASHED, TEMPLATE_NOT_FOUND, TIMEOUT};
        // (executor, code, child failed, the type its failure site named, expected)
        let cases = [
            ("shell", None, false, None, "command_failed"),
            ("shell", None, false, Some(TIMEOUT), "timeout"),
            ("agent", None, false, Some(TIMEOUT), "timeout"),
            ("agent", None, false, None, "agent_crashed"),
            ("spawn", None, false, None, "spawn_failed"),
            ("expand", None, false, None, "template_not_found"),
            ("expand", Some("PW0831"), false, None, "expansion_limit"),
            ("branch", None, false, None, "condition_error"),
            ("branch", None, true, None, "child_failed"),
            (
                "branch",
                None,
                false,
                Some(TEMPLATE_NOT_FOUND),
                "template_not_found",
            ),
            ("foreach", None, true, None, "child_failed"),
            ("foreach", None, false, None, "invalid_items"),
            (
                "foreach",
                None,
                false,
                Some(TEMPLATE_NOT_FOUND),
                "template_not_found",
            ),
            // A message that says `timed out` is not a timeout unless its site says so.
            ("kill", None, false, None, "command_failed"),
        ];
        for (executor, code, child_failed, named, want) in cases {
            assert_eq!(
                error_type(executor, code, child_failed, named),
                want,
                "{executor} {named:?}"
            );
        }
        // An expansion limit is one whatever else the step was doing.
        let t = error_type("agent", Some("PW0831"), false, Some(AGENT_CRASHED));
        assert_eq!(t, "expansion_limit");
    }
}
