//! Keeping rayon's workers awake between the parallel regions of a call (the
//! `rayon` feature).
//!
//! A call such as W1 at batch 1024 runs a dozen parallel regions of 10-100 µs
//! each, with serial work between them. rayon puts a worker that finds no
//! work to sleep after a short spin, and waking it again goes through the
//! kernel: on the virtual machines the benchmarks run on, that took about
//! 100 µs, as long as the region itself, so two threads were hardly faster
//! than one. Here, every parallel region first calls [`region`], which
//! records the time and, if no spinner is live, sends one to every thread of
//! the pool (`spawn_broadcast`): a job that keeps looking for work (and runs
//! any it finds) until no region has started for [`spin_window`]. The first
//! region of a burst still waits for the workers to wake; the next ones find
//! them awake. A spinner that runs a job it found is not looking for work
//! while the job lasts (the job may be the caller's whole computation, sent
//! to the pool by `install`): when no spinner has found the pool idle for
//! 50 µs, a region spawns one more, up to one per thread of the pool.
//!
//! The cost is CPU time: a spinner keeps its core busy for up to the window
//! after the last region (it yields the core to the OS between its looks, so
//! a caller outside the pool can still run there). One known hazard is
//! bounded by the window: a worker that picks a spinner up while it waits
//! for a job of its own resumes that job's caller only when the spinner
//! ends. A spinner never runs on the thread whose region spawned it (it ends
//! at once there), so a caller that waits in a `join` does not end up
//! spinning itself. The count of live spinners is one for all pools: while
//! one pool's spinners are live, a region on another pool spawns at most the
//! one extra spinner of the rule above.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The default [`spin_window`]: 1 ms.
pub const DEFAULT_SPIN_WINDOW: Duration = Duration::from_millis(1);

/// The window in nanoseconds; 0 turns spinning off.
static WINDOW_NS: AtomicU64 = AtomicU64::new(DEFAULT_SPIN_WINDOW.as_nanos() as u64);
/// When the last parallel region started, in nanoseconds since [`epoch`].
static LAST_REGION_NS: AtomicU64 = AtomicU64::new(0);
/// Spinners spawned and not yet ended.
static SPINNERS: AtomicUsize = AtomicUsize::new(0);
/// When a spinner last found no work, in nanoseconds since [`epoch`]: a
/// spinner that runs a job it found (the rest of a caller's work, say) is
/// not looking for more until the job ends, and then another may be needed.
static LAST_IDLE_NS: AtomicU64 = AtomicU64::new(0);
/// A spinner that has not found the pool idle for this long is taken to be
/// busy with a job.
const BUSY_AFTER_NS: u64 = 50_000;

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ns() -> u64 {
    u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Sets how long rayon's workers keep looking for work after a parallel
/// region of batchrules started (the `rayon` feature), instead of going to
/// sleep: [`DEFAULT_SPIN_WINDOW`] unless set. `Duration::ZERO` turns this off
/// (workers then sleep as rayon decides, and each region may wait for one to
/// wake up). Values above a second are taken as a second.
///
/// A longer window keeps the other cores busy for longer after the work;
/// a shorter one lets a worker fall asleep between calls that come at longer
/// intervals.
///
/// ```
/// use std::time::Duration;
///
/// batchrules::tuning::set_spin_window(Duration::from_micros(200));
/// assert_eq!(batchrules::tuning::spin_window(), Duration::from_micros(200));
/// batchrules::tuning::set_spin_window(Duration::from_secs(5));
/// assert_eq!(batchrules::tuning::spin_window(), Duration::from_secs(1));
/// batchrules::tuning::set_spin_window(batchrules::tuning::DEFAULT_SPIN_WINDOW);
/// ```
pub fn set_spin_window(window: Duration) {
    let ns = window.min(Duration::from_secs(1)).as_nanos() as u64;
    WINDOW_NS.store(ns, Ordering::Relaxed);
}

/// The window set by [`set_spin_window`].
pub fn spin_window() -> Duration {
    Duration::from_nanos(WINDOW_NS.load(Ordering::Relaxed))
}

/// How many spinners are live (for tests).
#[doc(hidden)]
pub fn live_spinners() -> usize {
    SPINNERS.load(Ordering::Relaxed)
}

/// Called as a parallel region starts on the current rayon pool: records the
/// time and makes sure the pool's other threads spin (see the module docs).
pub(crate) fn region() {
    let window = WINDOW_NS.load(Ordering::Relaxed);
    if window == 0 {
        return;
    }
    let now = now_ns();
    LAST_REGION_NS.store(now, Ordering::Relaxed);
    let threads = rayon::current_num_threads();
    if threads < 2 {
        return;
    }
    let spawner = rayon::current_thread_index();
    let live = SPINNERS.load(Ordering::Relaxed);
    if live == 0 {
        // None live: a spinner for every thread of the pool, delivered to
        // each (a spawned job could be taken back by the spawning thread,
        // where it ends at once, before a sleeping one wakes to steal it).
        if SPINNERS
            .compare_exchange(0, threads, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            LAST_IDLE_NS.store(now, Ordering::Relaxed);
            rayon::spawn_broadcast(move |_| spin(spawner));
        }
        return;
    }
    // Every spinner runs a job it found (none has found the pool idle for a
    // while): one more, up to one per thread of the pool.
    let busy = now.saturating_sub(LAST_IDLE_NS.load(Ordering::Relaxed)) > BUSY_AFTER_NS;
    if busy
        && live < threads
        && SPINNERS
            .compare_exchange(live, live + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        LAST_IDLE_NS.store(now, Ordering::Relaxed);
        rayon::spawn(move || spin(spawner));
    }
}

/// A spinner's loop: runs pending pool work, or yields the core and looks
/// again, until no region has started for the window.
fn spin(spawner: Option<usize>) {
    if spawner.is_none() || rayon::current_thread_index() != spawner {
        loop {
            match rayon::yield_now() {
                Some(rayon::Yield::Executed) => continue,
                Some(rayon::Yield::Idle) => LAST_IDLE_NS.store(now_ns(), Ordering::Relaxed),
                // Not on a pool thread (cannot happen for a spawned job).
                None => break,
            }
            let window = WINDOW_NS.load(Ordering::Relaxed);
            let last = LAST_REGION_NS.load(Ordering::Relaxed);
            if now_ns().saturating_sub(last) > window {
                break;
            }
            // Lets a thread outside the pool (the caller, between regions)
            // run on this core if the OS has one waiting.
            std::thread::yield_now();
        }
    }
    SPINNERS.fetch_sub(1, Ordering::AcqRel);
}
