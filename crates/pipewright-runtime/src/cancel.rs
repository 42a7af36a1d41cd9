//! Cancellation. The flag is polled before every step; a step in flight races its work against
//! [`CancelToken::cancelled`], and the expression evaluator polls the flag as it goes.
//!
//! SIGINT and SIGTERM are handled alike: the first one cancels the run. Nothing new starts, and
//! every step in flight stops now: its child's process group is killed, its HTTP call and
//! back-off sleep are dropped, its evaluation ends. Such a step is recorded cancelled, never
//! landed, so `--resume` runs it again; steps that completed stay landed. The exit code is 130
//! for SIGINT, 143 for SIGTERM. A second signal kills the process groups of every child still
//! running and exits at once with the same code. The store then holds the run as its last
//! commit left it, and `--resume` continues it.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
    /// The signal that cancelled the run (0: none, or cancelled by the program).
    signal: Arc<AtomicI32>,
    /// Wakes the steps waiting in [`CancelToken::cancelled`].
    wake: Arc<Notify>,
}

impl CancelToken {
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.wake.notify_waiters();
    }

    /// Completes once the run is cancelled (at once if it already is).
    pub async fn cancelled(&self) {
        loop {
            let woken = self.wake.notified();
            tokio::pin!(woken);
            // Registered before the flag is read: a cancel in between still wakes us.
            woken.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            woken.await;
        }
    }

    /// The flag itself, for code that polls it without async (the expression evaluator).
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }

    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// The signal number that cancelled the run, if a signal did.
    pub fn signal(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    fn cancel_by(&self, sig: i32) {
        if self.flag.swap(true, Ordering::SeqCst) {
            // The second signal: stop now. Every child dies with its process group; the
            // store is at its last commit, which is what a resume continues from.
            crate::tools::process::kill_all_children();
            let first = self.signal().unwrap_or(sig);
            std::process::exit(128 + first);
        }
        self.signal.store(sig, Ordering::SeqCst);
        self.wake.notify_waiters();
    }

    /// Cancels on SIGINT (Ctrl-C) and SIGTERM. Must be called inside a tokio runtime.
    ///
    /// On Unix the handlers are installed before this returns: `ctrl_c()` only installs it
    /// when its future is first polled by the spawned task, so a signal arriving in between
    /// (early in a run) would kill the process with the default action instead of cancelling.
    pub fn cancel_on_ctrl_c(&self) {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            for (kind, sig) in [
                (SignalKind::interrupt(), libc::SIGINT),
                (SignalKind::terminate(), libc::SIGTERM),
            ] {
                if let Ok(mut stream) = signal(kind) {
                    let token = self.clone();
                    tokio::spawn(async move {
                        while stream.recv().await.is_some() {
                            token.cancel_by(sig);
                        }
                    });
                }
            }
        }
        #[cfg(not(unix))]
        {
            let token = self.clone();
            tokio::spawn(async move {
                while tokio::signal::ctrl_c().await.is_ok() {
                    token.cancel_by(2);
                }
            });
        }
    }
}
