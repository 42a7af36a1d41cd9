//! Cooperative cancellation: the flag is polled before every step, so a run stops at the next
//! step boundary and leaves the store consistent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
}

impl CancelToken {
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// Cancels on the first Ctrl-C (SIGINT). Must be called inside a tokio runtime.
    ///
    /// On Unix the handler is installed before this returns: `ctrl_c()` only installs it when
    /// its future is first polled by the spawned task, so a SIGINT arriving in between (early
    /// in a run) would kill the process with the default action instead of cancelling it.
    pub fn cancel_on_ctrl_c(&self) {
        let token = self.clone();
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            if let Ok(mut sigint) = signal(SignalKind::interrupt()) {
                tokio::spawn(async move {
                    if sigint.recv().await.is_some() {
                        token.cancel();
                    }
                });
                return;
            }
        }
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                token.cancel();
            }
        });
    }
}
