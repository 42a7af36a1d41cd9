//! The agent rate limiter of a recipe run (`rate_limiting`, notes §5.16): at most
//! `max_concurrent_llm` turns at once, `min_delay_ms` between the end of one turn and the start
//! of the next, and an adaptive delay after rate-limit answers that grows by `multiplier` up to
//! `max_delay_ms` and ends after `reset_after_success` successes in a row.

use pipewright_ir::{Backoff, Limits};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) struct Limiter {
    slots: Option<Arc<tokio::sync::Semaphore>>,
    min_delay: Duration,
    backoff: Option<Backoff>,
    state: Mutex<State>,
    /// What its turns met, in order, when they are to be told to another limiter: an
    /// iteration run apart from its run tells the run's (see [`Limiter::replay`]).
    log: Option<Mutex<Vec<Turn>>>,
    /// The next turn was admitted by the run's limiter already ([`Limiter::admitted`]).
    admitted: std::sync::atomic::AtomicBool,
}

/// What a turn told the limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Turn {
    Ended { ok: bool },
    RateLimited,
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
            log: None,
            admitted: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Keeps what its turns meet, for [`Limiter::turns`].
    pub(super) fn keep_turns(&mut self) {
        self.log = Some(Mutex::new(Vec::new()));
    }

    /// What its turns met since [`Limiter::keep_turns`].
    pub(super) fn turns(&self) -> Vec<Turn> {
        self.log
            .as_ref()
            .map(|l| l.lock().unwrap_or_else(|p| p.into_inner()).clone())
            .unwrap_or_default()
    }

    /// What another limiter's turns met, as if they had been this one's: the run's limiter
    /// learns what an iteration run elsewhere met (its pacing and backoff go on from there).
    pub(super) fn replay(&self, turns: &[Turn]) {
        for t in turns {
            match t {
                Turn::Ended { ok } => self.done(*ok),
                Turn::RateLimited => self.rate_limited(),
            }
        }
    }

    /// Whether it limits nothing (the recipe has no `rate_limiting`).
    pub(super) fn limits_nothing(&self) -> bool {
        self.slots.is_none() && self.min_delay.is_zero() && self.backoff.is_none()
    }

    /// Its backoff now, for a limiter elsewhere to start from ([`Limiter::resume`]).
    pub(super) fn backoff_state(&self) -> (Option<u64>, u64) {
        let st = self.state();
        (
            st.delay
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            st.successes,
        )
    }

    /// Starts from the run's limiter's backoff ([`Limiter::backoff_state`]), which admitted
    /// the next turn already: that one does not wait again.
    pub(super) fn admitted(&self, (delay_ms, successes): (Option<u64>, u64)) {
        let mut st = self.state();
        st.delay = delay_ms.map(Duration::from_millis);
        st.successes = successes;
        self.admitted
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn log(&self, t: Turn) {
        if let Some(l) = &self.log {
            l.lock().unwrap_or_else(|p| p.into_inner()).push(t);
        }
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
        if self
            .admitted
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            return permit;
        }
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
        self.log(Turn::Ended { ok });
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
        self.log(Turn::RateLimited);
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

    /// A limiter told what another's turns met ends where that one did.
    #[test]
    fn a_limiter_replays_what_anothers_turns_met() {
        let mut elsewhere = limiter();
        elsewhere.keep_turns();
        elsewhere.rate_limited();
        elsewhere.done(false);
        elsewhere.rate_limited();
        elsewhere.done(true);
        let here = limiter();
        here.replay(&elsewhere.turns());
        assert_eq!(here.delay(), Some(Duration::from_millis(2000)));
        assert_eq!(here.backoff_state(), elsewhere.backoff_state());
        assert!(here.state().last_done.is_some());
        let resumed = limiter();
        resumed.admitted(here.backoff_state());
        resumed.done(true);
        assert_eq!(
            resumed.delay(),
            None,
            "two successes in a row end the backoff"
        );
    }

    /// A turn the run's limiter admitted does not wait out the backoff again where it runs;
    /// its retry does.
    #[tokio::test]
    async fn a_turn_admitted_elsewhere_waits_once() {
        use futures_util::FutureExt as _;
        let l = limiter();
        l.admitted((Some(1000), 0));
        assert!(l.acquire().now_or_never().is_some(), "admitted: no wait");
        assert!(l.acquire().now_or_never().is_none(), "the next waits");
    }

    #[test]
    fn without_a_backoff_a_rate_limit_changes_nothing() {
        let l = Limiter::new(&Limits::default());
        l.rate_limited();
        assert_eq!(l.delay(), None);
    }
}
