//! The local engine's journal: the run store, written through a writer thread that batches
//! the landings of pure steps.

use crate::store::{self, Event, EventSink, RunLock, Store, Write};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The run's connection to its store.
///
/// The landing of a step with side effects (shell, tool, agent) commits at once, with everything
/// staged before it, and a step with side effects starts only after everything before it has
/// committed. The landings of pure steps (transforms, and the results of calls, matches and
/// fan-outs, whose inner steps land on their own) are staged and handed to a writer thread in
/// batches of at most `MAX_STAGED` writes or `MAX_STAGE_DELAY` old, which commits them while the
/// run goes on: losing one to a crash only means computing it again, and a 10,000-item transform
/// fan-out is a few transactions instead of 10,000. Either way a landing and its
/// `step_completed` commit together, and the writer reports the completion to the event sinks
/// only after that commit. Batches commit in the order they were staged; once one fails, every
/// later one fails with it, and the run stops at its next step with side effects (or its end).
pub struct Recorder {
    store: Arc<dyn Store>,
    staged: Mutex<Staged>,
    /// The first failed commit, as the writer saw it.
    failed: Arc<Mutex<Option<String>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Held for the whole run: a second process cannot resume it meanwhile.
    _lock: Box<dyn RunLock>,
}

struct Staged {
    writes: Vec<Write>,
    /// Completions to report once their landings have committed.
    done: Vec<Event>,
    since: Option<Instant>,
    /// To the writer; `None` once closed.
    jobs: Option<std::sync::mpsc::Sender<Job>>,
}

struct Job {
    writes: Vec<Write>,
    done: Vec<Event>,
    reply: Option<std::sync::mpsc::SyncSender<Result<(), String>>>,
    /// Committed even after a failed commit: the run's final status.
    last: bool,
}

const MAX_STAGED: usize = 4096;
const MAX_STAGE_DELAY: std::time::Duration = std::time::Duration::from_millis(250);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Recorder {
    pub fn new(
        store: Arc<dyn Store>,
        run_id: String,
        lock_: Box<dyn RunLock>,
        sinks: Arc<Vec<Arc<dyn EventSink>>>,
    ) -> Result<Recorder, String> {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let failed = Arc::new(Mutex::new(None));
        let writer = {
            let store = store.clone();
            let failed = failed.clone();
            std::thread::Builder::new()
                .name("pipewright-store".into())
                .spawn(move || writer_loop(&*store, &run_id, &rx, &sinks, &failed))
                .map_err(|e| format!("cannot start the store writer: {e}"))?
        };
        Ok(Recorder {
            store,
            staged: Mutex::new(Staged {
                writes: Vec::new(),
                done: Vec::new(),
                since: None,
                jobs: Some(tx),
            }),
            failed,
            writer: Mutex::new(Some(writer)),
            _lock: lock_,
        })
    }

    /// Stages an event that reports nothing landed (started, failed, replayed, cancelled).
    pub fn stage_event(&self, line: String) {
        self.stage_with_next(Write::Event(line));
    }

    /// Stages `w` to ride with the next landing: it never closes a batch itself, so it cannot
    /// commit without what follows it (an agent call's usage and the landing of its step
    /// commit together, even when that landing is staged rather than committed at once).
    pub fn stage_with_next(&self, w: Write) {
        let mut st = lock(&self.staged);
        st.writes.push(w);
        st.since.get_or_insert_with(Instant::now);
    }

    /// Stages `writes` (and the completion they report). With `now`, commits everything staged
    /// and waits for the commit (and for the completions to be reported); otherwise hands a
    /// full or old batch to the writer without waiting.
    pub fn stage(&self, writes: Vec<Write>, done: Option<Event>, now: bool) -> Result<(), String> {
        self.send(writes, done, now, false)
    }

    /// Commits the run's final status. After a failed commit this is still tried (with the
    /// events staged since), so the store says `failed` when it can.
    pub fn finish(&self, fin: store::Finish) -> Result<(), String> {
        self.send(vec![Write::Finish(fin)], None, true, true)
    }

    fn send(
        &self,
        writes: Vec<Write>,
        done: Option<Event>,
        now: bool,
        last: bool,
    ) -> Result<(), String> {
        if !last {
            if let Some(e) = lock(&self.failed).clone() {
                return Err(e);
            }
        }
        let mut st = lock(&self.staged);
        st.writes.extend(writes);
        st.done.extend(done);
        let since = *st.since.get_or_insert_with(Instant::now);
        if !(now || st.writes.len() >= MAX_STAGED || since.elapsed() >= MAX_STAGE_DELAY) {
            return Ok(());
        }
        let (reply, answer) = if now {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let job = Job {
            writes: std::mem::take(&mut st.writes),
            done: std::mem::take(&mut st.done),
            reply,
            last,
        };
        st.since = None;
        // Sent under the lock: batches reach the writer in the order they were staged.
        let sent = st.jobs.as_ref().is_some_and(|tx| tx.send(job).is_ok());
        drop(st);
        if !sent {
            return Err(format!(
                "the run store {}: its writer stopped",
                self.store.describe()
            ));
        }
        match answer {
            Some(rx) => rx.recv().unwrap_or_else(|_| {
                Err(format!(
                    "the run store {}: its writer stopped",
                    self.store.describe()
                ))
            }),
            None => Ok(()),
        }
    }

    /// Commits whatever is staged.
    ///
    /// Waits even when nothing is staged: a batch handed to the writer earlier may still be
    /// on its way to the store.
    pub fn flush(&self) -> Result<(), String> {
        self.send(Vec::new(), None, true, false)
    }

    /// The store, as messages name it.
    pub fn describe(&self) -> String {
        self.store.describe()
    }

    /// The first commit that failed, if one did.
    pub fn failed(&self) -> Option<String> {
        lock(&self.failed).clone()
    }

    /// Stops the writer once it has committed everything handed to it.
    pub fn close(&self) {
        lock(&self.staged).jobs = None;
        if let Some(h) = lock(&self.writer).take() {
            let _ = h.join();
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.close();
    }
}

fn writer_loop(
    store: &dyn Store,
    run_id: &str,
    rx: &std::sync::mpsc::Receiver<Job>,
    sinks: &[Arc<dyn EventSink>],
    failed: &Mutex<Option<String>>,
) {
    while let Ok(first) = rx.recv() {
        // Whatever queued up meanwhile goes in the same transaction.
        let mut jobs = vec![first];
        while let Ok(j) = rx.try_recv() {
            jobs.push(j);
        }
        // After a failed commit only the final status goes in (the batches after the failed
        // one must not land without it).
        let earlier = lock(failed).clone();
        let writes: Vec<Write> = jobs
            .iter_mut()
            .filter(|j| earlier.is_none() || j.last)
            .flat_map(|j| std::mem::take(&mut j.writes))
            .collect();
        let result = match (&earlier, writes.is_empty()) {
            (Some(e), true) => Err(e.clone()),
            _ => store
                .record(run_id, &writes)
                .map_err(String::from)
                .and(earlier.map_or(Ok(()), Err)),
        };
        match &result {
            Ok(()) => {
                for e in jobs.iter().flat_map(|j| &j.done) {
                    for s in sinks {
                        s.event(e);
                    }
                }
            }
            Err(e) => {
                lock(failed).get_or_insert_with(|| e.clone());
            }
        }
        for j in jobs {
            if let Some(r) = j.reply {
                let _ = r.send(result.clone());
            }
        }
    }
}
