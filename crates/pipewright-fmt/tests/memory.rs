//! Peak memory of formatting, measured by counting the heap this test binary allocates (its own
//! global allocator; one test in the binary, so nothing else allocates meanwhile).
//!
//! The formatter holds the input's node tree (several times the file's size) while printing,
//! and the output's while verifying. Holding both at once, plus a token list as large as a
//! tree, peaked at 16–25 times the input; the target is at most 10 times.

use pipewright_fmt::{format_source, Syntax};
use pipewright_syntax::FileId;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grew(l.size());
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            grew(new - l.size());
        } else {
            LIVE.fetch_sub(l.size() - new, Relaxed);
        }
        // SAFETY: as for `alloc`.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn formatting_peaks_at_most_ten_times_the_input() {
    let text = pipewright_fmt::bench_support::pipeline_file(2 * 1024 * 1024);
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let out = format_source(
        FileId(0),
        &text,
        Syntax::Yaml(&pipewright_pipeline::fmt_rules::PipelineRules),
        pipewright_fmt::Options::CANONICAL,
    )
    .expect("formats");
    let peak = PEAK.load(Relaxed) - before;
    let ratio = peak as f64 / text.len() as f64;
    eprintln!(
        "input {} bytes, peak {} bytes above it ({ratio:.1}x), output {} bytes",
        text.len(),
        peak,
        out.output.len()
    );
    assert!(
        ratio <= 10.0,
        "formatting peaked at {ratio:.1} times the input size (the target is 10)"
    );
}
