//! A global allocator that forwards every call to [`System`] and counts the calls that allocate
//! (`alloc`, `alloc_zeroed`, `realloc`; not `dealloc`), both for the whole process and per
//! thread:
//! - [`total`] suits a test whose work runs on other threads (a proxy worker), or a test binary
//!   with a single test, so that no other test thread allocates meanwhile;
//! - [`this_thread`] suits test binaries whose tests run in parallel.
//!
//! Install it in the test or bench binary (the library itself does not):
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: palisade_testkit::alloc::Counting = palisade_testkit::alloc::Counting;
//! ```
//!
//! Without it installed the counters stay at zero, which makes a "does not allocate" assertion
//! pass vacuously: [`assert_installed`] guards against that.

// `GlobalAlloc` is an unsafe trait and its methods are unsafe to call: this module needs
// `unsafe` for the impl and for forwarding to `System`, and nothing else in the crate does.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The counting allocator (see the module documentation).
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

static TOTAL: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // Const-initialised and without a destructor: reading it never allocates, and it stays
    // usable while the thread is torn down.
    static THREAD: Cell<u64> = const { Cell::new(0) };
}

#[inline]
fn count() {
    TOTAL.fetch_add(1, Ordering::Relaxed);
    let _ = THREAD.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are the caller's; counting touches only an atomic and a const-initialised
// thread-local `Cell`, neither of which allocates or unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as this method's caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as this method's caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as this method's caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as this method's caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations made through [`Counting`] by every thread since the process started.
pub fn total() -> u64 {
    TOTAL.load(Ordering::Relaxed)
}

/// Allocations made through [`Counting`] by the calling thread since it started.
pub fn this_thread() -> u64 {
    THREAD.with(Cell::get)
}

/// Panics unless [`Counting`] is the global allocator of this binary (an allocation made here
/// must be counted), so that a zero count means "allocated nothing", not "not installed".
pub fn assert_installed() {
    let before = this_thread();
    drop(std::hint::black_box(Box::new(0u64)));
    assert!(this_thread() > before, "palisade_testkit::alloc::Counting is not this binary's #[global_allocator]");
}
