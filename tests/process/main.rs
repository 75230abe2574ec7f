//! Tests of process-wide settings (the allocation limit, the buffer cache
//! limit, the global fallback policy with its logger, the spin window), in one
//! test binary of their own so that no other suite runs while a setting is
//! changed. Each test holds [`exclusive`] for its whole run, so they also run
//! one at a time among themselves.

use std::sync::{Mutex, MutexGuard};

mod allocation_limit;
mod buffers;
mod fallback_policy;
mod spin;

/// Held by each test of this binary while it runs.
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    // A test that failed while holding it poisons it; the next still runs.
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
