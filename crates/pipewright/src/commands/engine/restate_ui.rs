//! `pipewright ui --engine restate`: the engine as the web view asks it
//! ([`pipewright_ui::Engine`]), through the code `runs`, `approve|deny` and `cancel --engine
//! restate` run, so the page's refusals are theirs.

use super::restate::{cancel_loaded, decide_loaded, engine, CancelRefused};
use super::Restate;
use pipewright_restate::store::RestateStore;
use pipewright_runtime::approval::Decision;
use pipewright_runtime::store::{Store as _, StoreError};
use pipewright_ui::{EngineRun, Listed, Refusal};
use std::sync::Arc;

struct RestateUi {
    store: RestateStore,
    at: String,
}

/// The engine at `restate`, for `pipewright ui`.
pub(crate) fn ui_engine(restate: Restate) -> Result<Arc<dyn pipewright_ui::Engine>, String> {
    let at = format!(
        "the Restate engine at {} (admin {})",
        restate.ingress, restate.admin
    );
    let store = RestateStore::new(engine(&restate), false).map_err(|e| e.to_string())?;
    Ok(Arc::new(RestateUi { store, at }))
}

fn refusal(e: StoreError) -> Refusal {
    match e {
        StoreError::NoRun { .. } | StoreError::BadRunId(_) => Refusal::NoRun(e.to_string()),
        e => Refusal::Unreachable(e.to_string()),
    }
}

/// A refusal as `approve|deny|cancel` exit with it: 1 is the command's own refusal; any
/// other code, something it could not ask (a worker, an orchestrator).
fn refused(code: u8, message: String) -> Refusal {
    if code == 1 {
        Refusal::Conflict(message)
    } else {
        Refusal::Unreachable(message)
    }
}

impl pipewright_ui::Engine for RestateUi {
    fn describe(&self) -> String {
        self.at.clone()
    }

    fn list(&self) -> Result<Vec<Listed>, String> {
        Ok(self
            .store
            .list_stored(true)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|r| Listed {
                stamp: format!("{}\n{}", r.meta, r.owner.unwrap_or_default()),
                run_id: r.run_id,
            })
            .collect())
    }

    fn fetch(&self, run_id: &str) -> Result<Option<EngineRun>, String> {
        let loaded = match self.store.loaded(run_id) {
            Ok(l) => l,
            Err(StoreError::NoRun { .. }) => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let events = match self.store.events(run_id) {
            Ok(e) => e,
            Err(StoreError::NoRun { .. }) => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        Ok(Some(EngineRun {
            meta: loaded.meta,
            landings: loaded.landings,
            events,
            owned: loaded.owner.owned,
        }))
    }

    fn decide(&self, run_id: &str, step: Option<&str>, d: &Decision) -> Result<String, Refusal> {
        let loaded = self.store.loaded(run_id).map_err(refusal)?;
        decide_loaded(&self.store, &loaded, run_id, step, d)
            .map_err(|(code, message)| refused(code, message))
    }

    fn waiting(&self, run_id: &str) -> Result<Vec<pipewright_dialect::Waiting>, String> {
        super::restate::waiting_on_worker(&self.store, run_id)
    }

    fn cancel(&self, run_id: &str) -> Result<String, Refusal> {
        let loaded = self.store.loaded(run_id).map_err(refusal)?;
        cancel_loaded(&self.store, &loaded, run_id).map_err(|r| match r {
            CancelRefused::NotRunning(e) => Refusal::Conflict(e.to_string()),
            CancelRefused::Worker(code, message) => refused(code, message),
        })
    }
}
