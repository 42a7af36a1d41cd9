//! What a run says when it ends, whatever its dialect: the JSON report (`run --format json`)
//! and the human one, and the refusal of a run that could not start. A dialect whose spec
//! defines its own report (a state machine's §9) implements [`Report`] itself; the others use
//! [`RunOutcome`]'s.

use crate::outcome::{RunOutcome, RunStatus};
use crate::secrets;
use pipewright_syntax::{render, SourceMap};
use serde_json::Value;

/// The human report: what goes to standard output and to standard error.
#[derive(Debug, Default)]
pub struct Human {
    pub stdout: String,
    pub stderr: String,
}

pub trait Report: Send {
    /// The JSON report.
    fn to_json(&self, sources: &SourceMap) -> Value;
    /// The report for a person; `color` when stderr is a terminal that shows it.
    fn human(&self, sources: &SourceMap, color: bool) -> Human;
    /// A failure of the run store that the report does not already say.
    fn unreported_store_error(&self) -> Option<&str>;
    /// The process's exit code (docs/run.md).
    fn exit_code(&self) -> i32;
}

/// A run that could not start (exit 2): nothing ran, nothing was recorded.
#[derive(Debug)]
pub struct Refusal {
    pub message: String,
    /// The JSON report of the refusal, when the dialect defines one (printed with
    /// `--format json`).
    pub report: Option<Value>,
}

impl From<String> for Refusal {
    fn from(message: String) -> Refusal {
        Refusal {
            message,
            report: None,
        }
    }
}

impl Report for RunOutcome {
    fn to_json(&self, sources: &SourceMap) -> Value {
        RunOutcome::to_json(self, sources)
    }

    fn human(&self, sources: &SourceMap, color: bool) -> Human {
        let mut h = Human::default();
        if let Some(d) = self.diagnostic() {
            h.stderr.push_str(&render::human(&[d], sources, color));
        }
        let id = &self.run_id;
        match self.status {
            RunStatus::Ok => {
                // Redacted like the JSON report (crate::secrets).
                let mut output = self.output.to_json();
                secrets::redact_json(&mut output);
                h.stdout = serde_json::to_string_pretty(&output).unwrap_or_default();
                h.stdout.push('\n');
            }
            RunStatus::Cancelled => {
                h.stderr.push_str(&format!(
                    "run {id} cancelled; continue it with `pipewright run --resume {id}`\n"
                ));
                h.stderr.push_str(&stopped_summary(self));
            }
            RunStatus::Failed => {
                h.stderr.push_str(&format!("run {id} failed\n"));
                h.stderr.push_str(&stopped_summary(self));
            }
            RunStatus::Stopped => {
                h.stderr.push_str(&format!(
                    "run {id} stopped at its budget; continue it with a higher one: `pipewright run --resume {id} --max-…`\n"
                ));
                h.stderr.push_str(&stopped_summary(self));
            }
            RunStatus::Paused => {
                let p = self.pending.clone().unwrap_or_default();
                h.stderr.push_str(&format!(
                    "run {id} paused: stage '{}' needs approval\n{}\n",
                    p["stage"].as_str().unwrap_or(""),
                    p["prompt"].as_str().unwrap_or("")
                ));
                h.stderr.push_str(&format!(
                    "approve: pipewright approve {id} [--message TEXT]\ndeny:    pipewright deny {id} [--reason TEXT]\nthen:    pipewright run --resume {id}\n"
                ));
            }
        }
        if let Some(u) = &self.usage {
            h.stderr.push_str(&usage_line(u));
        }
        h
    }

    fn unreported_store_error(&self) -> Option<&str> {
        RunOutcome::unreported_store_error(self)
    }

    fn exit_code(&self) -> i32 {
        RunOutcome::exit_code(self)
    }
}

/// For a failed or cancelled run: the named stores as they were when it stopped, with a
/// one-line preview of each, and where the full state is.
/// The one line a person reads of what a run's agent calls cost: `usage: 3 agent calls, 120
/// tokens in, 240 out, cost unknown, 1.2 s`.
fn usage_line(u: &Value) -> String {
    let n = |k: &str| u[k].as_u64();
    let calls = n("agent_calls").unwrap_or(0);
    let tokens = match (n("input_tokens"), n("output_tokens")) {
        (None, None) => "tokens unknown".to_string(),
        (i, o) => format!(
            "{} tokens in, {} out",
            i.map_or("?".into(), |i| i.to_string()),
            o.map_or("?".into(), |o| o.to_string())
        ),
    };
    let cost = match u["cost_usd"].as_f64() {
        Some(c) => format!("${c:.4}"),
        None => "cost unknown".into(),
    };
    let secs = u["wall_ms"].as_f64().unwrap_or(0.0) / 1000.0;
    format!(
        "usage: {calls} agent call{}, {tokens}, {cost}, {secs:.1} s\n",
        if calls == 1 { "" } else { "s" }
    )
}

fn stopped_summary(outcome: &RunOutcome) -> String {
    let mut out = String::new();
    let mut stores = outcome.stores.to_json();
    // Before the previews cut them: a cut could leave part of a secret.
    secrets::redact_json(&mut stores);
    match stores.as_object().filter(|m| !m.is_empty()) {
        None => out.push_str("stores when it stopped: none\n"),
        Some(m) => {
            out.push_str("stores when it stopped:\n");
            for (name, v) in m {
                out.push_str(&format!("  {name} = {}\n", preview(v, 100)));
            }
        }
    }
    if outcome.store.is_some() {
        out.push_str(&format!(
            "full state: pipewright runs show {}\n",
            outcome.run_id
        ));
    }
    out
}

/// Compact JSON cut to `max` characters.
fn preview(v: &Value, max: usize) -> String {
    let text = v.to_string();
    if text.chars().count() <= max {
        text
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}…")
    }
}
