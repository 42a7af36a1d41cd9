//! Deep `call`/`match` recursion without a deep native stack. Each nested call is a boxed
//! future, but polling (and dropping) the chain still descends one native frame set per level;
//! at a few thousand levels that overflowed the 2 MiB of a worker thread and aborted the whole
//! process. [`GrowStack`] polls and drops its future on a fresh heap-allocated stack segment
//! whenever the current one is nearly used up, so depth costs memory, never a crash.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Room one level of nesting may use before the next check (debug builds have large frames).
const RED_ZONE: usize = 512 * 1024;
/// The size of each new segment.
const SEGMENT: usize = 4 * 1024 * 1024;

pub(crate) struct GrowStack<F: Future>(Option<Pin<Box<F>>>);

impl<F: Future> GrowStack<F> {
    pub(crate) fn new(f: F) -> GrowStack<F> {
        GrowStack(Some(Box::pin(f)))
    }
}

impl<F: Future> Future for GrowStack<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // `Pin<Box<F>>` is Unpin, so the wrapper is too.
        let this = self.get_mut();
        match this.0.as_mut() {
            Some(f) => stacker::maybe_grow(RED_ZONE, SEGMENT, || f.as_mut().poll(cx)),
            None => Poll::Pending,
        }
    }
}

impl<F: Future> Drop for GrowStack<F> {
    fn drop(&mut self) {
        // Dropping a pending chain (a cancelled fan-out around deep recursion) recurses as
        // deeply as polling it did.
        let f = self.0.take();
        stacker::maybe_grow(RED_ZONE, SEGMENT, move || drop(f));
    }
}
