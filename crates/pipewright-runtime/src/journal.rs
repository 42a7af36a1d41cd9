//! Where a run's landings and events go: the seam between a dialect's runtime and the engine
//! that makes a run durable. The local engine is the run store behind a [`Recorder`]; a
//! durable-execution engine (Restate, issue 24) implements the same trait over its own journal.
//!
//! A runtime never calls a journal directly: it goes through its [`crate::session::RunSession`],
//! which also keeps the landings replayed from earlier attempts, reports events to the sinks and
//! remembers the first failed write.

use crate::recorder::Recorder;
use crate::store::{Event, Finish, Landing, StoreError, Write};

/// A run's durable record. Every method is called from the run's own tasks; an error says, in
/// words for the user, what could not be recorded where.
pub trait Journal: Send + Sync {
    /// Where the run is recorded, as messages name it (the store's path).
    fn describe(&self) -> String;
    /// Records a step's landing with the event that reports it (both or neither). `durable`:
    /// it must survive a crash before this returns (the step had effects outside the run, or
    /// one follows); otherwise it may ride with a later write, and a crash only means
    /// computing it again. `done` reaches the run's sinks once it is recorded.
    fn land(&self, landing: Landing, done: Option<Event>, durable: bool) -> Result<(), StoreError>;
    /// Forgets the landing at `key` and every landing under it (`key.…`): the next attempt of
    /// that part of the run runs it afresh.
    fn forget_under(&self, key: &str, durable: bool) -> Result<(), StoreError>;
    /// Records an event that lands nothing (started, failed, replayed, cancelled).
    fn event(&self, e: &Event);
    /// The run has spawned at least `n` agents; durable before the next one starts.
    fn spawns(&self, n: u64) -> Result<(), StoreError>;
    /// What an agent call of step `key` cost; recorded with the next write (a step with an
    /// agent call lands durably right after it).
    fn usage(&self, key: &str, usage: &crate::usage::Usage) -> Result<(), StoreError>;
    /// Makes everything recorded so far durable: a step with effects outside the run starts
    /// only after this.
    fn flush(&self) -> Result<(), StoreError>;
    /// The first write that failed, if one did.
    fn failed(&self) -> Option<StoreError>;
    /// Records how the run ended; tried even after a failed write, so the record says
    /// `failed` when it can.
    fn finish(&self, fin: Finish) -> Result<(), StoreError>;
    /// Releases the run once everything handed over is recorded.
    fn close(&self);
}

impl Journal for Recorder {
    fn describe(&self) -> String {
        Recorder::describe(self)
    }

    fn land(&self, landing: Landing, done: Option<Event>, durable: bool) -> Result<(), StoreError> {
        let mut writes = Vec::with_capacity(2);
        if let Some(e) = &done {
            writes.push(Write::Event(e.to_stored_line()));
        }
        writes.push(Write::Land(landing));
        Ok(self.stage(writes, done, durable)?)
    }

    fn forget_under(&self, key: &str, durable: bool) -> Result<(), StoreError> {
        Ok(self.stage(vec![Write::ForgetUnder(key.to_string())], None, durable)?)
    }

    fn event(&self, e: &Event) {
        self.stage_event(e.to_stored_line());
    }

    fn spawns(&self, n: u64) -> Result<(), StoreError> {
        Ok(self.stage(vec![Write::Spawns(n)], None, true)?)
    }

    fn usage(&self, key: &str, usage: &crate::usage::Usage) -> Result<(), StoreError> {
        self.stage_with_next(Write::Usage {
            key: key.to_string(),
            usage: usage.clone(),
        });
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        Ok(Recorder::flush(self)?)
    }

    fn failed(&self) -> Option<StoreError> {
        Recorder::failed(self).map(StoreError::Unusable)
    }

    fn finish(&self, fin: Finish) -> Result<(), StoreError> {
        Ok(Recorder::finish(self, fin)?)
    }

    fn close(&self) {
        Recorder::close(self)
    }
}
