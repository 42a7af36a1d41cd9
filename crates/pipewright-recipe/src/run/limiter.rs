//! The agent rate limiter of a recipe run (`rate_limiting`, notes §5.16): at most
//! `max_concurrent_llm` turns at once, `min_delay_ms` between the end of one turn and the start
//! of the next, and an adaptive delay after rate-limit answers that grows by `multiplier` up to
//! `max_delay_ms` and ends after `reset_after_success` successes in a row.

use pipewright_ir::{Backoff, Limits};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) struct Limiter {
    slots: Option<Arc<tokio::sync::Semaphore>>,
    min_delay: Duration,
    backoff: Option<Backoff>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    last_done: Option<Instant>,
    /// The current backoff delay; `None` while no rate limit was met.
    delay: Option<Duration>,
    successes: u64,
}

impl Limiter {
    pub(super) fn new(l: &Limits) -> Limiter {
        Limiter {
            slots: l
                .max_concurrent_agents
                .filter(|n| *n > 0)
                .map(|n| Arc::new(tokio::sync::Semaphore::new(n as usize))),
            min_delay: Duration::from_millis(l.min_agent_delay_ms.unwrap_or(0)),
            backoff: l.backoff.clone(),
            state: Mutex::new(State::default()),
        }
    }

    /// Whether it limits nothing (the recipe has no `rate_limiting`).
    pub(super) fn limits_nothing(&self) -> bool {
        self.slots.is_none() && self.min_delay.is_zero() && self.backoff.is_none()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a slot, the pacing delay and the backoff delay; the slot is held until the
    /// returned permit is dropped.
    pub(super) async fn acquire(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let permit = match &self.slots {
            Some(s) => s.clone().acquire_owned().await.ok(),
            None => None,
        };
        let wait = {
            let st = self.state();
            let pacing = st
                .last_done
                .map(|t| self.min_delay.saturating_sub(t.elapsed()))
                .unwrap_or_default();
            pacing.max(st.delay.unwrap_or_default())
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        permit
    }

    /// A turn ended (successfully or not).
    pub(super) fn done(&self, ok: bool) {
        let mut st = self.state();
        st.last_done = Some(Instant::now());
        if ok && st.delay.is_some() {
            st.successes += 1;
            if self
                .backoff
                .as_ref()
                .is_some_and(|b| st.successes >= b.reset_after)
            {
                st.delay = None;
                st.successes = 0;
            }
        }
    }

    /// A turn was refused for its rate (`429`, `rate limit`): the next turns wait longer.
    pub(super) fn rate_limited(&self) {
        let Some(b) = &self.backoff else { return };
        let mut st = self.state();
        st.successes = 0;
        let max = Duration::from_millis(b.max_ms);
        st.delay = Some(match st.delay {
            None => Duration::from_millis(b.initial_ms).min(max),
            Some(d) => d.mul_f64(b.multiplier).min(max),
        });
    }

    /// The backoff delay now (for tests and progress).
    #[cfg(test)]
    fn delay(&self) -> Option<Duration> {
        self.state().delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter() -> Limiter {
        Limiter::new(&Limits {
            backoff: Some(Backoff {
                initial_ms: 1000,
                max_ms: 3000,
                multiplier: 2.0,
                reset_after: 2,
            }),
            ..Limits::default()
        })
    }

    #[test]
    fn backoff_grows_to_its_cap_and_ends_after_successes_in_a_row() {
        let l = limiter();
        assert_eq!(l.delay(), None);
        l.rate_limited();
        assert_eq!(l.delay(), Some(Duration::from_millis(1000)));
        l.rate_limited();
        assert_eq!(l.delay(), Some(Duration::from_millis(2000)));
        l.rate_limited();
        assert_eq!(l.delay(), Some(Duration::from_millis(3000)));
        l.done(true);
        l.rate_limited();
        assert_eq!(
            l.delay(),
            Some(Duration::from_millis(3000)),
            "a 429 resets the count"
        );
        l.done(true);
        assert!(l.delay().is_some());
        l.done(true);
        assert_eq!(l.delay(), None);
    }

    #[test]
    fn without_a_backoff_a_rate_limit_changes_nothing() {
        let l = Limiter::new(&Limits::default());
        l.rate_limited();
        assert_eq!(l.delay(), None);
    }
}
