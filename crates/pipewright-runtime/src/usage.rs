//! What agent calls cost (issue 25): tokens, dollars, calls and wall time, per step and per
//! run, and the budgets that stop a run before a call would go past them.
//!
//! Every backend reports what it knows per call ([`crate::backend::AgentBackend::reply`]);
//! what it does not know stays `None`, never 0. The [`Meter`] of a run sums the calls, per step
//! key and in all, admits each call against the run's budgets first, and has each call's usage
//! recorded by the run's journal, so a resumed run counts on from what its earlier attempts
//! spent and a replayed step (which calls nothing) is not counted twice.

use crate::backend::{AgentBackend, AgentRequest, BackendError, BoxFuture, Reply};
use crate::cancel::CancelToken;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// The cost of one call, or the sum of several.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Prompt tokens read from, and written to, the provider's prompt cache (Claude reports
    /// them apart from `input_tokens`; OpenAI counts cached reads inside them). Absent from the
    /// JSON while unknown, so a record written before they existed reads the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    pub agent_calls: u64,
    pub wall_ms: f64,
}

/// A sum of what is known: `None` only when no addend knew.
fn add<T: std::ops::Add<Output = T> + Default>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or_default() + b.unwrap_or_default()),
    }
}

impl Usage {
    /// One call that reported nothing but how long it took.
    pub fn unknown() -> Usage {
        Usage::default()
    }

    pub fn add(&mut self, o: &Usage) {
        self.input_tokens = add(self.input_tokens, o.input_tokens);
        self.output_tokens = add(self.output_tokens, o.output_tokens);
        self.cache_read_tokens = add(self.cache_read_tokens, o.cache_read_tokens);
        self.cache_write_tokens = add(self.cache_write_tokens, o.cache_write_tokens);
        self.cost_usd = add(self.cost_usd, o.cost_usd);
        self.agent_calls += o.agent_calls;
        self.wall_ms += o.wall_ms;
    }

    /// Input and output tokens, when either is known.
    pub fn tokens(&self) -> Option<u64> {
        add(self.input_tokens, self.output_tokens)
    }

    /// `run --format json`'s shape: unknown figures are null.
    pub fn to_json(&self) -> Json {
        let mut o = json!({
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd.map(|c| (c * 1e6).round() / 1e6),
            "agent_calls": self.agent_calls,
            "wall_ms": (self.wall_ms * 1000.0).round() / 1000.0,
        });
        // Only backends with a prompt cache know these: the others' reports keep their shape.
        if let Some(n) = self.cache_read_tokens {
            o["cache_read_tokens"] = json!(n);
        }
        if let Some(n) = self.cache_write_tokens {
            o["cache_write_tokens"] = json!(n);
        }
        o
    }
}

/// `run --format json`'s `usage` of a run: its totals, and each step's under `steps`.
pub fn report_json(calls: &[(String, Usage)]) -> Json {
    let mut total = Usage::default();
    let mut steps: IndexMap<&str, Usage> = IndexMap::new();
    for (key, u) in calls {
        total.add(u);
        steps.entry(key).or_default().add(u);
    }
    steps_json(&total, steps.iter().map(|(k, u)| (*k, u)))
}

fn steps_json<'a>(total: &Usage, steps: impl Iterator<Item = (&'a str, &'a Usage)>) -> Json {
    let mut o = total.to_json();
    o["steps"] = Json::Object(steps.map(|(k, u)| (k.to_string(), u.to_json())).collect());
    o
}

/// A run's budgets (`--max-cost`, `--max-tokens`, `--max-agent-calls`, or `[run]` in
/// pipewright.toml); `None`: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budgets {
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub max_agent_calls: Option<u64>,
}

/// Why a run stopped: the budget it reached, and what it had spent.
#[derive(Debug, Clone, PartialEq)]
pub struct Exhausted {
    pub budget: &'static str,
    pub limit: String,
    pub spent: Usage,
}

impl Exhausted {
    pub fn message(&self) -> String {
        let spent = match self.budget {
            "--max-cost" => format!("${:.6} spent", self.spent.cost_usd.unwrap_or_default()),
            "--max-tokens" => format!("{} tokens spent", self.spent.tokens().unwrap_or_default()),
            _ => format!("{} agent calls made", self.spent.agent_calls),
        };
        format!(
            "the run stopped before an agent call that would go past its budget ({} {}: {spent}); resume it with a higher budget",
            self.budget, self.limit
        )
    }
}

/// Records one call's usage for step `key` where the run is recorded.
pub type RecordUsage = Box<dyn Fn(&str, &Usage) + Send + Sync>;

/// A run's meter. Shared by the run's backend (which admits and charges each call) and its
/// session (which seeds it on resume, records each charge, and reports the totals).
pub struct Meter {
    budgets: Budgets,
    /// `[prices]`: the cost of a call whose backend gives tokens but no cost.
    prices: std::collections::BTreeMap<String, crate::config::Price>,
    state: Mutex<MeterState>,
    record: OnceLock<RecordUsage>,
    cancel: CancelToken,
}

#[derive(Default)]
struct MeterState {
    total: Usage,
    steps: IndexMap<String, Usage>,
    /// The keys of `steps`, sorted: a fan-out's items are the keys under its own.
    sorted: std::collections::BTreeSet<String>,
    exhausted: Option<Exhausted>,
    /// The calls this meter charged itself (not seeded): what a fan-out member that ran
    /// elsewhere reports back to its run.
    charged: Vec<(String, Usage)>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Meter {
    /// A meter with `budgets` that stops the run through `cancel` when one is reached.
    pub fn new(budgets: Budgets, cancel: CancelToken) -> Meter {
        Meter {
            budgets,
            prices: Default::default(),
            state: Mutex::new(MeterState::default()),
            record: OnceLock::new(),
            cancel,
        }
    }

    /// The meter with `[prices]` (model → dollars per million tokens).
    pub fn with_prices(
        mut self,
        prices: std::collections::BTreeMap<String, crate::config::Price>,
    ) -> Meter {
        self.prices = prices;
        self
    }

    /// A call's cost from its tokens and the price of `model`, when the backend gave none;
    /// unknown (`None`) without a price or without tokens.
    pub fn priced(&self, usage: &mut Usage, model: Option<&str>) {
        if usage.cost_usd.is_some() {
            return;
        }
        let (Some(price), Some(input), Some(output)) = (
            model.and_then(|m| self.prices.get(m)),
            usage.input_tokens,
            usage.output_tokens,
        ) else {
            return;
        };
        usage.cost_usd = Some(
            (input as f64 * price.input_per_mtok + output as f64 * price.output_per_mtok) / 1e6,
        );
    }

    /// What the earlier attempts of a resumed run spent, per call, by step key.
    pub fn seed(&self, recorded: &[(String, Usage)]) {
        let mut st = lock(&self.state);
        for (key, u) in recorded {
            st.total.add(u);
            st.steps.entry(key.clone()).or_default().add(u);
            st.sorted.insert(key.clone());
        }
    }

    /// What was spent at step `key` and under it, by step key: in a fan-out member run apart
    /// from its run, what this attempt charged and what the earlier attempts of the member
    /// recorded (seeded when it joined the run), which is what the run counts for it
    /// ([`Meter::replace_under`]).
    pub fn spent_under(&self, key: &str) -> Vec<(String, Usage)> {
        let st = lock(&self.state);
        st.steps
            .iter()
            .filter(|(k, _)| crate::store::is_at_or_under(k, key))
            .map(|(k, u)| (k.clone(), u.clone()))
            .collect()
    }

    /// What fan-out member `key`, run apart from the run, spent at its steps, all attempts
    /// of it counted ([`Meter::spent_under`] where it ran): it stands in place of what this
    /// meter knew under `key`. (A run resumed while the member was out seeded what the
    /// member had recorded by then: added again, it would count twice; a member retried
    /// after its worker died reports the calls of the attempt that died too.)
    pub fn replace_under(&self, key: &str, spent: &[(String, Usage)]) {
        let mut st = lock(&self.state);
        let st = &mut *st;
        for (k, u) in st.steps.iter_mut() {
            if crate::store::is_at_or_under(k, key) {
                *u = Usage::default();
            }
        }
        for (k, u) in spent {
            st.steps.entry(k.clone()).or_default().add(u);
            st.sorted.insert(k.clone());
        }
        let given: std::collections::HashSet<&str> =
            spent.iter().map(|(k, _)| k.as_str()).collect();
        let gone: Vec<String> = st
            .steps
            .keys()
            .filter(|k| crate::store::is_at_or_under(k, key) && !given.contains(k.as_str()))
            .cloned()
            .collect();
        for k in gone {
            st.steps.shift_remove(&k);
            st.sorted.remove(&k);
        }
        let mut total = Usage::default();
        for u in st.steps.values() {
            total.add(u);
        }
        st.total = total;
    }

    /// Where each call's usage is recorded from now on (the run's journal).
    pub fn record_with(&self, record: RecordUsage) {
        let _ = self.record.set(record);
    }

    /// Admits a call, or stops the run: the budget reached is kept, and the run is cancelled.
    pub fn admit(&self) -> Result<(), Box<Exhausted>> {
        let mut st = lock(&self.state);
        if let Some(e) = &st.exhausted {
            return Err(Box::new(e.clone()));
        }
        let b = self.budgets;
        let t = &st.total;
        let over = if b.max_agent_calls.is_some_and(|m| t.agent_calls >= m) {
            Some((
                "--max-agent-calls",
                b.max_agent_calls.map(|m| m.to_string()),
            ))
        } else if b.max_tokens.is_some_and(|m| t.tokens().unwrap_or(0) >= m) {
            Some(("--max-tokens", b.max_tokens.map(|m| m.to_string())))
        } else if b
            .max_cost_usd
            .is_some_and(|m| t.cost_usd.unwrap_or(0.0) >= m)
        {
            Some(("--max-cost", b.max_cost_usd.map(|m| m.to_string())))
        } else {
            None
        };
        let Some((budget, limit)) = over else {
            return Ok(());
        };
        let e = Exhausted {
            budget,
            limit: limit.unwrap_or_default(),
            spent: st.total.clone(),
        };
        st.exhausted = Some(e.clone());
        drop(st);
        self.cancel.cancel();
        Err(Box::new(e))
    }

    /// Counts one call of step `key`, and has it recorded.
    pub fn charge(&self, key: &str, usage: &Usage) {
        {
            let mut st = lock(&self.state);
            st.total.add(usage);
            st.steps.entry(key.to_string()).or_default().add(usage);
            if !st.sorted.contains(key) {
                st.sorted.insert(key.to_string());
            }
            st.charged.push((key.to_string(), usage.clone()));
        }
        if let Some(record) = self.record.get() {
            record(key, usage);
        }
    }

    /// The calls charged here (not seeded), in order.
    pub fn charged(&self) -> Vec<(String, Usage)> {
        lock(&self.state).charged.clone()
    }

    /// Stops the run on a budget that was reached elsewhere (by a fan-out member that ran on
    /// another worker), as [`Meter::admit`] stops it here.
    pub fn stop(&self, e: Exhausted) {
        lock(&self.state).exhausted.get_or_insert(e);
        self.cancel.cancel();
    }

    pub fn total(&self) -> Usage {
        lock(&self.state).total.clone()
    }

    /// What step `key` cost so far, with every step under it (a fan-out's items, a call's
    /// steps), earlier attempts and runs included; `None` if none of them called an agent.
    pub fn step(&self, key: &str) -> Option<Usage> {
        let st = lock(&self.state);
        let mut sum = st.steps.get(key).cloned();
        // Keys under `key` sort from `key.` up to, not including, `key/` ('/' follows '.').
        let (lo, hi) = (format!("{key}."), format!("{key}/"));
        for k in st.sorted.range::<String, _>(lo..hi) {
            if let Some(u) = st.steps.get(k) {
                sum.get_or_insert_with(Usage::unknown).add(u);
            }
        }
        sum
    }

    pub fn steps(&self) -> IndexMap<String, Usage> {
        lock(&self.state).steps.clone()
    }

    /// The budget that stopped the run, if one did.
    pub fn exhausted(&self) -> Option<Exhausted> {
        lock(&self.state).exhausted.clone()
    }

    /// `run --format json`'s `usage`: totals and each step's.
    pub fn report_json(&self) -> Json {
        let st = lock(&self.state);
        steps_json(&st.total, st.steps.iter().map(|(k, u)| (k.as_str(), u)))
    }

    /// The warning a run under a cost budget gets once, at its start, when nothing it can call
    /// says what a call costs: its backend reports no cost and there is no price to compute
    /// one from.
    pub fn unenforceable(&self, backend: &dyn AgentBackend) -> Option<String> {
        self.unenforceable_with(backend.name(), backend.reports_cost())
    }

    /// [`Meter::unenforceable`] for a backend known by its name and whether it reports cost
    /// (a state machine's session backends are not [`AgentBackend`]s).
    pub fn unenforceable_with(&self, backend: &str, reports_cost: bool) -> Option<String> {
        let limit = self.budgets.max_cost_usd?;
        if reports_cost || !self.prices.is_empty() {
            return None;
        }
        Some(format!(
            "warning: --max-cost {limit} cannot be enforced: the {backend} backend reports no cost, and pipewright.toml has no [prices] to compute one from"
        ))
    }

    /// Whether any budget is set.
    pub fn budgeted(&self) -> bool {
        self.budgets != Budgets::default()
    }
}

/// A backend whose calls the run's meter admits and charges.
pub struct Metered {
    inner: Arc<dyn AgentBackend>,
    meter: Arc<Meter>,
}

impl Metered {
    pub fn new(inner: Arc<dyn AgentBackend>, meter: Arc<Meter>) -> Metered {
        Metered { inner, meter }
    }
}

impl AgentBackend for Metered {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn reports_cost(&self) -> bool {
        self.inner.reports_cost()
    }

    fn reproducible(&self) -> bool {
        self.inner.reproducible()
    }

    fn complete<'a>(
        &'a self,
        req: &'a AgentRequest,
    ) -> BoxFuture<'a, Result<String, BackendError>> {
        Box::pin(async move { self.reply(req).await.map(|r| r.text) })
    }

    fn reply<'a>(&'a self, req: &'a AgentRequest) -> BoxFuture<'a, Result<Reply, BackendError>> {
        Box::pin(async move {
            if let Err(e) = self.meter.admit() {
                // The run is being stopped (its cancel token is set): the call is not made, and
                // the step waits for the stop to reach it, as it does on Ctrl-C. A step that
                // does not stop with its run fails instead, rather than wait for ever.
                tokio::time::sleep(std::time::Duration::from_secs(10)).await;
                return Err(BackendError::new(e.message()));
            }
            let t0 = Instant::now();
            let r = self.inner.reply(req).await;
            let wall_ms = t0.elapsed().as_secs_f64() * 1000.0;
            let mut usage = match &r {
                Ok(reply) => {
                    let mut u = reply.usage.clone();
                    let model = reply.model.as_deref().or(req.model.as_deref());
                    self.meter.priced(&mut u, model);
                    u
                }
                Err(_) => Usage::unknown(),
            };
            usage.agent_calls = 1;
            usage.wall_ms = wall_ms;
            self.meter.charge(&req.step, &usage);
            r
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(input: Option<u64>, cost: Option<f64>) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: input.map(|i| i * 2),
            cost_usd: cost,
            agent_calls: 1,
            wall_ms: 1.0,
            ..Usage::unknown()
        }
    }

    /// Unknown stays unknown (never 0), and a known figure is summed over the calls that knew.
    #[test]
    fn sums_keep_unknown_apart_from_zero() {
        let mut u = Usage::default();
        u.add(&call(None, None));
        assert_eq!(u.tokens(), None);
        assert_eq!(u.to_json()["cost_usd"], Json::Null);
        u.add(&call(Some(10), None));
        u.add(&call(Some(5), Some(0.25)));
        assert_eq!((u.input_tokens, u.output_tokens), (Some(15), Some(30)));
        assert_eq!(u.cost_usd, Some(0.25));
        assert_eq!(u.agent_calls, 3);
    }

    /// A budget admits calls until it is reached, then stops the run and keeps refusing.
    #[test]
    fn a_reached_budget_stops_the_run_and_says_what_was_spent() {
        let cancel = CancelToken::new();
        let m = Meter::new(
            Budgets {
                max_agent_calls: Some(2),
                ..Budgets::default()
            },
            cancel.clone(),
        );
        m.seed(&[("0".into(), call(Some(1), None))]);
        assert!(m.admit().is_ok());
        m.charge("1", &call(Some(1), None));
        let e = m
            .admit()
            .err()
            .unwrap_or_else(|| panic!("the third call is refused"));
        assert_eq!(e.budget, "--max-agent-calls");
        assert!(
            e.message().contains("2 agent calls made"),
            "{}",
            e.message()
        );
        assert!(cancel.is_cancelled());
        assert!(m.admit().is_err());
        assert_eq!(m.steps().len(), 2);
    }

    /// A member run elsewhere reports what was spent under its key over all its attempts (its
    /// worker seeded what an attempt that died recorded); the run counts that in place of
    /// what it knew under the key (a resume seeded some of it), not on top of it.
    #[test]
    fn a_members_spending_stands_in_place_of_what_the_run_knew_under_its_key() {
        let member = Meter::new(Budgets::default(), CancelToken::new());
        member.seed(&[
            ("a".into(), call(Some(1), None)),
            ("each.1.ask".into(), call(Some(2), None)),
        ]);
        member.charge("each.1.again", &call(Some(3), None));
        let spent = member.spent_under("each.1");
        assert_eq!(spent.len(), 2, "{spent:?}");

        let run = Meter::new(Budgets::default(), CancelToken::new());
        run.seed(&[
            ("a".into(), call(Some(1), None)),
            ("each.1.ask".into(), call(Some(2), None)),
            ("each.10.ask".into(), call(Some(5), None)),
        ]);
        run.replace_under("each.1", &spent);
        let total = run.total();
        assert_eq!(total.agent_calls, 4);
        assert_eq!(total.input_tokens, Some(1 + 2 + 3 + 5));
        let keys: Vec<String> = run.steps().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "each.1.ask", "each.10.ask", "each.1.again"]);
        // Reported again (the same member's answer read twice): nothing more is counted.
        run.replace_under("each.1", &spent);
        assert_eq!(run.total().agent_calls, 4);
    }
}
