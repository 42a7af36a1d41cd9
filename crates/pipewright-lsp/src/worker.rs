//! The check thread: jobs are coalesced (only the newest per directory runs) and a job whose
//! directory was edited again meanwhile stops at the next phase boundary.

use crate::analysis::{self, Input};
use crossbeam_channel::{Receiver, Sender};
use lsp_types::Url;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub(crate) struct Job {
    pub dir: PathBuf,
    pub generation: u64,
    /// The directory's edit counter: when it moves past `generation` this job is stale.
    pub counter: Arc<AtomicU64>,
    pub docs: Vec<(Url, i32, Input)>,
}

impl Job {
    fn stale(&self) -> bool {
        self.counter.load(Ordering::SeqCst) != self.generation
    }
}

pub(crate) struct Outcome {
    /// The documents checked and the version each had.
    pub checked: Vec<(Url, i32)>,
    pub diagnostics: HashMap<PathBuf, Vec<lsp_types::Diagnostic>>,
}

pub(crate) fn spawn(
    known: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    jobs: Receiver<Job>,
    done: Sender<Outcome>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while let Ok(first) = jobs.recv() {
            let mut pending: Vec<Job> = vec![first];
            pending.extend(jobs.try_iter());
            let mut newest: Vec<Job> = Vec::new();
            for job in pending {
                match newest.iter().position(|j| j.dir == job.dir) {
                    Some(i) => newest[i] = job,
                    None => newest.push(job),
                }
            }
            for job in newest {
                if job.stale() {
                    continue;
                }
                let inputs: Vec<Input> = job
                    .docs
                    .iter()
                    .map(|(_, _, i)| Input {
                        path: i.path.clone(),
                        text: i.text.clone(),
                        kept: i.kept.clone(),
                    })
                    .collect();
                let Some(a) = analysis::analyze(&inputs, &*known, &|| job.stale()) else {
                    continue;
                };
                let outcome = Outcome {
                    checked: job.docs.iter().map(|(u, v, _)| (u.clone(), *v)).collect(),
                    diagnostics: crate::convert::by_file(&a),
                };
                if done.send(outcome).is_err() {
                    return;
                }
                // Freed after the diagnostics are on their way, not before.
                drop(a);
            }
        }
    })
}
