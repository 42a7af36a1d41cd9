//! A run kept as key-value state: how an engine that stores each run as a set of keys (a
//! durable-execution engine's per-run state) holds what the SQLite store keeps in tables, with
//! the same semantics. One small `meta` value (status, input, final record, counters), one
//! value per landing (`land:KEY`, carrying its landing order), and one value per batch of
//! events (`events:N`): a batch rewrites only what it changes, so a long run does not rewrite
//! its whole history on every step.
//!
//! [`MemoryStore`] is a [`Store`] over this model in memory; the tests hold it equal to the
//! SQLite store, which is what lets another engine trust the model.

use crate::secrets;
use crate::store::{
    self, Finish, Landed, Landing, NewRun, RunLock, RunRecord, RunSummary, Store, StoreError, Write,
};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, Mutex};

/// The key of a run's [`RunMeta`].
pub const META: &str = "meta";
const LANDING_PREFIX: &str = "land:";
const EVENTS_PREFIX: &str = "events:";

/// The key a landing is kept under.
pub fn landing_key(key: &str) -> String {
    format!("{LANDING_PREFIX}{key}")
}

/// The landing a state key holds, if it holds one.
pub fn landing_of(state_key: &str) -> Option<&str> {
    state_key.strip_prefix(LANDING_PREFIX)
}

/// The key of the `n`th batch of events (zero-padded: keys sort in batch order).
pub fn events_key(n: u64) -> String {
    format!("{EVENTS_PREFIX}{n:012}")
}

/// Whether a state key holds a batch of events.
pub fn is_events_key(state_key: &str) -> bool {
    state_key.starts_with(EVENTS_PREFIX)
}

/// Everything about a run but its landings and events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub run_id: String,
    pub status: String,
    pub file: String,
    pub workflow: String,
    pub source_hash: String,
    pub input: Json,
    pub spawns: u64,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub output: Option<Json>,
    /// The stores the steps wrote over the input (see [`store::stores_delta`]).
    pub stores: Option<Json>,
    /// Redacted, as the SQLite store keeps it.
    pub error: Option<Json>,
    pub cancelled_at: Option<String>,
    /// The order the next landing gets.
    pub next_landing: u64,
    /// How many batches of events are kept.
    pub event_batches: u64,
    /// What each agent call cost, by step key, in call order (small: one entry per call).
    #[serde(default)]
    pub usage: Vec<(String, crate::usage::Usage)>,
}

/// One landing as kept: its order among the run's landings, its step hash, and its value or
/// the error that dropped it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptLanding {
    pub order: u64,
    pub step_hash: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub value: Option<Json>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dropped: Option<String>,
}

/// A change to a run's state.
#[derive(Debug, Clone, PartialEq)]
pub enum KvOp {
    Set(String, Json),
    Clear(String),
}

impl RunMeta {
    pub fn new(run: &NewRun, now_ms: i64) -> RunMeta {
        RunMeta {
            run_id: run.run_id.clone(),
            status: "running".into(),
            file: run.file.clone(),
            workflow: run.workflow.clone(),
            source_hash: run.source_hash.clone(),
            input: run.input.clone(),
            spawns: 0,
            created_ms: now_ms,
            updated_ms: now_ms,
            output: None,
            stores: None,
            error: None,
            cancelled_at: None,
            next_landing: 0,
            event_batches: 0,
            usage: Vec::new(),
        }
    }

    /// The state changes `writes` make, in order, as one batch (the caller applies all of them
    /// or none). `landings` holds the run's landing keys and is kept up to date.
    pub fn apply(
        &mut self,
        writes: &[Write],
        landings: &mut BTreeSet<String>,
        now_ms: i64,
    ) -> Vec<KvOp> {
        let mut ops = Vec::new();
        let mut lines = String::new();
        for w in writes {
            match w {
                Write::Land(l) => {
                    let (value, dropped) = match &l.landed {
                        Landed::Value(v) => (Some(v.clone()), None),
                        // Redacted as the SQLite store does: the last point before a secret
                        // would be kept.
                        Landed::Dropped(e) => (None, Some(secrets::redact(e).into_owned())),
                    };
                    let kept = KeptLanding {
                        order: self.next_landing,
                        step_hash: l.step_hash.clone(),
                        value,
                        dropped,
                    };
                    self.next_landing += 1;
                    landings.insert(l.key.clone());
                    ops.push(KvOp::Set(landing_key(&l.key), to_json(&kept)));
                }
                Write::ForgetUnder(key) => {
                    // Keys under `k` are `k.…`; '/' is the character after '.', so the range
                    // `[k., k/)` is exactly them.
                    let under = format!("{key}.")..format!("{key}/");
                    let gone: Vec<String> = landings
                        .get(key)
                        .into_iter()
                        .chain(landings.range(under))
                        .cloned()
                        .collect();
                    for k in gone {
                        landings.remove(&k);
                        ops.push(KvOp::Clear(landing_key(&k)));
                    }
                }
                Write::Event(line) => {
                    lines.push_str(&secrets::redact(line));
                    lines.push('\n');
                }
                Write::Spawns(n) => self.spawns = self.spawns.max(*n),
                Write::Usage { key, usage } => self.usage.push((key.clone(), usage.clone())),
                Write::Status(s) => {
                    self.status = s.clone();
                    self.updated_ms = now_ms;
                }
                Write::Finish(f) => self.finish(f, now_ms),
            }
        }
        if !lines.is_empty() {
            ops.push(KvOp::Set(
                events_key(self.event_batches),
                Json::String(lines),
            ));
            self.event_batches += 1;
        }
        ops.push(KvOp::Set(META.into(), to_json(self)));
        ops
    }

    fn finish(&mut self, f: &Finish, now_ms: i64) {
        self.status = f.status.clone();
        self.output = Some(f.output.clone());
        self.stores = Some(f.stores.clone());
        self.error = f.error.as_ref().map(|e| {
            let text = secrets::redact(&e.to_string()).into_owned();
            serde_json::from_str(&text).unwrap_or(Json::String(text))
        });
        self.cancelled_at = f.cancelled_at.clone();
        self.updated_ms = now_ms;
    }

    /// The run as `--resume` loads it, from its kept landings (in any order).
    pub fn record(&self, landings: Vec<(String, KeptLanding)>) -> RunRecord {
        let mut landings = landings;
        landings.sort_by_key(|(_, l)| l.order);
        RunRecord {
            run_id: self.run_id.clone(),
            status: self.status.clone(),
            file: self.file.clone(),
            workflow: self.workflow.clone(),
            input: self.input.clone(),
            source_hash: self.source_hash.clone(),
            landings: landings
                .into_iter()
                .map(|(key, l)| Landing {
                    key,
                    step_hash: l.step_hash,
                    landed: match (l.value, l.dropped) {
                        (Some(v), _) => Landed::Value(v),
                        (None, d) => Landed::Dropped(d.unwrap_or_default()),
                    },
                })
                .collect(),
            spawns: self.spawns,
            usage: self.usage.clone(),
        }
    }

    /// The `runs show` document.
    pub fn state(&self, landings: Vec<(String, KeptLanding)>) -> Json {
        let ended = store::Ended {
            output: self.output.clone(),
            stores: self.stores.clone(),
            error: self.error.clone(),
            cancelled_at: self.cancelled_at.clone(),
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
        };
        store::state_document(self.record(landings), ended)
    }

    /// The run's events as JSON lines, from its batches in order.
    pub fn events(&self, batches: &[String]) -> Vec<String> {
        batches
            .iter()
            .flat_map(|b| b.lines())
            .map(|l| store::with_run_id(&store::on_run_clock(l, self.created_ms), &self.run_id))
            .collect()
    }

    pub fn summary(&self) -> RunSummary {
        RunSummary {
            run_id: self.run_id.clone(),
            status: self.status.clone(),
            file: self.file.clone(),
            workflow: self.workflow.clone(),
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
            usage: self
                .usage
                .iter()
                .fold(crate::usage::Usage::default(), |mut all, (_, u)| {
                    all.add(u);
                    all
                }),
        }
    }
}

fn to_json<T: Serialize>(v: &T) -> Json {
    // Plain data with string keys: serialising it cannot fail.
    serde_json::to_value(v).unwrap_or(Json::Null)
}

/// A [`Store`] that keeps every run as key-value state in memory, through [`RunMeta`]: runs
/// die with the process. It is the model another engine's store follows.
#[derive(Default)]
pub struct MemoryStore {
    runs: Mutex<BTreeMap<String, BTreeMap<String, Json>>>,
    owned: Arc<Mutex<HashSet<String>>>,
}

struct MemoryLock {
    run_id: String,
    owned: Arc<Mutex<HashSet<String>>>,
}

impl RunLock for MemoryLock {}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        lock(&self.owned).remove(&self.run_id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn no_run(&self, run_id: &str) -> StoreError {
        StoreError::NoRun {
            run_id: run_id.to_string(),
            store: self.describe(),
            hint: "",
        }
    }

    fn with_run<T>(
        &self,
        run_id: &str,
        f: impl FnOnce(RunMeta, &BTreeMap<String, Json>) -> T,
    ) -> Result<T, StoreError> {
        store::check_run_id(run_id)?;
        let runs = lock(&self.runs);
        let state = runs.get(run_id).ok_or_else(|| self.no_run(run_id))?;
        let meta = state
            .get(META)
            .and_then(|m| serde_json::from_value(m.clone()).ok())
            .ok_or_else(|| StoreError::Unusable(format!("run {run_id} has no readable meta")))?;
        Ok(f(meta, state))
    }
}

/// A run's kept landings, from its state.
pub fn kept_landings<'a>(
    state: impl IntoIterator<Item = (&'a String, &'a Json)>,
) -> Vec<(String, KeptLanding)> {
    state
        .into_iter()
        .filter_map(|(k, v)| {
            let key = landing_of(k)?;
            let kept = serde_json::from_value(v.clone()).ok()?;
            Some((key.to_string(), kept))
        })
        .collect()
}

/// A run's batches of events, in order, from its state.
pub fn event_batches<'a>(state: impl IntoIterator<Item = (&'a String, &'a Json)>) -> Vec<String> {
    let mut batches: Vec<(&String, String)> = state
        .into_iter()
        .filter(|(k, _)| is_events_key(k))
        .filter_map(|(k, v)| Some((k, v.as_str()?.to_string())))
        .collect();
    batches.sort_by(|a, b| a.0.cmp(b.0));
    batches.into_iter().map(|(_, b)| b).collect()
}

impl Store for MemoryStore {
    fn describe(&self) -> String {
        "in memory".into()
    }

    fn lock_run(&self, run_id: &str) -> Result<Box<dyn RunLock>, StoreError> {
        store::check_run_id(run_id)?;
        if !lock(&self.owned).insert(run_id.to_string()) {
            return Err(StoreError::Busy {
                run_id: run_id.to_string(),
                by: String::new(),
            });
        }
        Ok(Box::new(MemoryLock {
            run_id: run_id.to_string(),
            owned: self.owned.clone(),
        }))
    }

    fn is_owned(&self, run_id: &str) -> bool {
        lock(&self.owned).contains(run_id)
    }

    fn create_run(&self, run: &NewRun) -> Result<(), StoreError> {
        store::check_run_id(&run.run_id)?;
        let meta = RunMeta::new(run, store::now_ms());
        let mut state = BTreeMap::new();
        state.insert(META.to_string(), to_json(&meta));
        lock(&self.runs).insert(run.run_id.clone(), state);
        Ok(())
    }

    fn load_run(&self, run_id: &str) -> Result<RunRecord, StoreError> {
        self.with_run(run_id, |meta, state| meta.record(kept_landings(state)))
    }

    fn record(&self, run_id: &str, writes: &[Write]) -> Result<(), StoreError> {
        store::check_run_id(run_id)?;
        let mut runs = lock(&self.runs);
        let state = runs.get_mut(run_id).ok_or_else(|| StoreError::NoRun {
            run_id: run_id.to_string(),
            store: "in memory".into(),
            hint: "",
        })?;
        let mut meta: RunMeta = state
            .get(META)
            .and_then(|m| serde_json::from_value(m.clone()).ok())
            .ok_or_else(|| StoreError::Unusable(format!("run {run_id} has no readable meta")))?;
        let mut keys: BTreeSet<String> = state
            .keys()
            .filter_map(|k| landing_of(k).map(str::to_string))
            .collect();
        for op in meta.apply(writes, &mut keys, store::now_ms()) {
            match op {
                KvOp::Set(k, v) => {
                    state.insert(k, v);
                }
                KvOp::Clear(k) => {
                    state.remove(&k);
                }
            }
        }
        Ok(())
    }

    fn list_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let runs = lock(&self.runs);
        let mut all: Vec<RunSummary> = runs
            .values()
            .filter_map(|s| s.get(META))
            .filter_map(|m| serde_json::from_value::<RunMeta>(m.clone()).ok())
            .map(|m| m.summary())
            .collect();
        all.sort_by(|a, b| (b.created_ms, &b.run_id).cmp(&(a.created_ms, &a.run_id)));
        Ok(all)
    }

    fn state(&self, run_id: &str) -> Result<Json, StoreError> {
        self.with_run(run_id, |meta, state| meta.state(kept_landings(state)))
    }

    fn events(&self, run_id: &str) -> Result<Vec<String>, StoreError> {
        self.with_run(run_id, |meta, state| meta.events(&event_batches(state)))
    }

    fn remove(&self, run_id: &str) -> Result<(), StoreError> {
        let _lock = self.lock_run(run_id)?;
        match lock(&self.runs).remove(run_id) {
            Some(_) => Ok(()),
            None => Err(self.no_run(run_id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SqliteStore;
    use proptest::prelude::*;
    use serde_json::json;

    #[derive(Debug, Clone)]
    enum Step {
        Land(String, bool),
        Forget(String),
        Event(String),
        Spawns(u64),
        Status(&'static str),
        Finish,
        Usage(String, u64),
        Commit,
    }

    fn key() -> impl Strategy<Value = String> {
        // Few distinct parts, so keys nest under one another and collide: `a`, `a.b`, `a-b`.
        proptest::collection::vec(prop_oneof!["a", "b", "a-b", "0", "10"], 1..4)
            .prop_map(|parts| parts.join("."))
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (key(), any::<bool>()).prop_map(|(k, v)| Step::Land(k, v)),
            1 => key().prop_map(Step::Forget),
            2 => "[a-z]{0,6}".prop_map(Step::Event),
            1 => (0u64..20).prop_map(Step::Spawns),
            1 => prop_oneof![Just("running"), Just("paused")].prop_map(Step::Status),
            1 => Just(Step::Finish),
            1 => (key(), 0u64..50).prop_map(|(k, n)| Step::Usage(k, n)),
            2 => Just(Step::Commit),
        ]
    }

    fn write(step: &Step, n: usize) -> Option<Write> {
        Some(match step {
            Step::Land(k, value) => Write::Land(Landing {
                key: k.clone(),
                step_hash: format!("h{n}"),
                landed: match value {
                    true => Landed::Value(json!({"n": n})),
                    false => Landed::Dropped(format!("dropped {n}")),
                },
            }),
            Step::Forget(k) => Write::ForgetUnder(k.clone()),
            Step::Event(e) => Write::Event(format!(
                "{{\"event\":\"step_started\",\"key\":\"{e}\",\"at_ms\":{n}}}"
            )),
            Step::Spawns(s) => Write::Spawns(*s),
            Step::Status(s) => Write::Status((*s).into()),
            Step::Finish => Write::Finish(Finish {
                status: "failed".into(),
                output: json!(n),
                stores: json!({"s": n}),
                error: Some(json!({"code": "PW0500", "message": format!("boom {n}")})),
                cancelled_at: Some(format!("k{n}")),
            }),
            Step::Usage(k, n) => Write::Usage {
                key: k.clone(),
                usage: crate::usage::Usage {
                    input_tokens: Some(*n),
                    output_tokens: (n % 2 == 0).then_some(n * 2),
                    cost_usd: (n % 3 == 0).then_some(*n as f64 / 100.0),
                    agent_calls: 1,
                    wall_ms: 1.5,
                    ..crate::usage::Usage::unknown()
                },
            },
            Step::Commit => return None,
        })
    }

    fn without_clock(mut v: Json) -> Json {
        if let Some(o) = v.as_object_mut() {
            o.remove("created_ms");
            o.remove("updated_ms");
        }
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any sequence of batches leaves the key-value model and the SQLite store with the
        /// same record, `runs show` document and events.
        #[test]
        fn the_key_value_model_keeps_what_the_sqlite_store_keeps(steps in proptest::collection::vec(step(), 0..40)) {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let sqlite = SqliteStore::open(&dir.path().join("runs.db")).unwrap_or_else(|e| panic!("{e}"));
            let memory = MemoryStore::new();
            let stores: [&dyn Store; 2] = [&sqlite, &memory];
            let id = store::new_run_id();
            let run = NewRun {
                run_id: id.clone(),
                file: "f.yaml".into(),
                workflow: "main".into(),
                source_hash: "hash".into(),
                input: json!({"in": 1}),
            };
            for st in stores {
                st.create_run(&run).unwrap_or_else(|e| panic!("{e}"));
            }
            let mut batch = Vec::new();
            for (n, s) in steps.iter().enumerate() {
                match write(s, n) {
                    Some(w) => batch.push(w),
                    None => {
                        for st in stores {
                            st.record(&id, &batch).unwrap_or_else(|e| panic!("{e}"));
                        }
                        batch.clear();
                    }
                }
            }
            for st in stores {
                st.record(&id, &batch).unwrap_or_else(|e| panic!("{e}"));
            }
            let [a, b] = stores.map(|st| st.load_run(&id).unwrap_or_else(|e| panic!("{e}")));
            prop_assert_eq!(format!("{:?}", a), format!("{:?}", b));
            let [a, b] = stores.map(|st| without_clock(st.state(&id).unwrap_or_else(|e| panic!("{e}"))));
            prop_assert_eq!(a, b);
            let [a, b] = stores.map(|st| st.events(&id).unwrap_or_else(|e| panic!("{e}")));
            prop_assert_eq!(a, b);
        }
    }

    /// A run is owned by one lock at a time, and a removed run is gone.
    #[test]
    fn a_memory_run_has_one_owner_and_can_be_removed() {
        let memory = MemoryStore::new();
        let id = store::new_run_id();
        let run = NewRun {
            run_id: id.clone(),
            file: "f".into(),
            workflow: "w".into(),
            source_hash: "h".into(),
            input: Json::Null,
        };
        memory.create_run(&run).unwrap_or_else(|e| panic!("{e}"));
        let owner = memory.lock_run(&id).unwrap_or_else(|e| panic!("{e}"));
        assert!(memory.is_owned(&id));
        assert!(matches!(memory.lock_run(&id), Err(StoreError::Busy { .. })));
        assert!(matches!(memory.remove(&id), Err(StoreError::Busy { .. })));
        drop(owner);
        assert!(!memory.is_owned(&id));
        memory.remove(&id).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            memory.load_run(&id),
            Err(StoreError::NoRun { .. })
        ));
    }
}
