//! Peak memory of formatting, measured by counting the heap the measuring thread allocates
//! (this test executable's global allocator counts per thread: the other tests of the
//! executable run on threads of their own meanwhile, and the formatter uses no threads).
//!
//! The formatter holds the input's node tree (several times the file's size) while printing,
//! and the output's while verifying. Holding both at once, plus a token list as large as a
//! tree, peaked at 16–25 times the input; the target is at most 10 times.

use pipewright_fmt::{format_source, Syntax};
use pipewright_syntax::FileId;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    // `const` and without a destructor: reading them never allocates, so the allocator may.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn grew(by: usize) {
    let now = LIVE.get().saturating_add_unsigned(by);
    LIVE.set(now);
    PEAK.set(PEAK.get().max(now));
}

fn shrank(by: usize) {
    LIVE.set(LIVE.get().saturating_sub_unsigned(by));
}

// SAFETY: every call is forwarded to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grew(l.size());
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        shrank(l.size());
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            grew(new - l.size());
        } else {
            shrank(l.size() - new);
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
    let before = LIVE.get();
    PEAK.set(before);
    let out = format_source(
        FileId(0),
        &text,
        Syntax::Yaml(&pipewright_pipeline::fmt_rules::PipelineRules),
        pipewright_fmt::Options::CANONICAL,
    )
    .expect("formats");
    let peak = PEAK.get() - before;
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
