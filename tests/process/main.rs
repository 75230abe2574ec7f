//! Tests of process-wide settings (the allocation limit, the buffer cache
//! limit, the global fallback policy with its logger, the spin window), in one
//! test binary of their own so that no other suite runs while a setting is
//! changed. Each test holds [`exclusive`] for its whole run, so they also run
//! one at a time among themselves.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

mod allocation_limit;
mod buffers;
mod fallback_policy;
mod jit_replay;
mod linear_cost;
mod spin;

/// The system allocator, counting the bytes it hands out (never decreasing):
/// the tests of costs compare what a call allocates at two sizes.
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller upholds `alloc`'s contract, forwarded as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
        // SAFETY: the caller upholds `realloc`'s contract, forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The bytes allocated while `f` ran (by every thread: the tests of this
/// binary run one at a time), with its result.
fn bytes_allocated<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATED.load(Ordering::SeqCst);
    let out = f();
    (out, ALLOCATED.load(Ordering::SeqCst) - before)
}

/// Held by each test of this binary while it runs.
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    // A test that failed while holding it poisons it; the next still runs.
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets the allocation limit until dropped, then puts the default back.
struct Limit;

impl Limit {
    fn set(bytes: usize) -> Limit {
        batchrules::tuning::set_allocation_limit(bytes);
        Limit
    }
}

impl Drop for Limit {
    fn drop(&mut self) {
        batchrules::tuning::set_allocation_limit(batchrules::tuning::DEFAULT_ALLOCATION_LIMIT);
    }
}
