//! How many threads the kernels use: every core by default (rayon's global
//! pool, with the `rayon` feature, which is on by default), or one, as
//! `torch.set_num_threads(1)` pins PyTorch.
//!
//! The number never changes a result: every parallel kernel cuts its work
//! into pieces whose boundaries depend on the shapes only, and no piece
//! splits the additions that make one output element, so one thread and two
//! give the same bits (`tests/suite/threads.rs` checks this on the model
//! workloads).

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by `set_num_threads(1)`: every kernel runs on the calling thread.
static ONE_THREAD: AtomicBool = AtomicBool::new(false);

/// How many threads the kernels split their work across: 1 after
/// [`set_num_threads(1)`](set_num_threads) or without the `rayon` feature,
/// else the size of rayon's pool (every core, unless the `RAYON_NUM_THREADS`
/// environment variable or [`set_num_threads`] before the first parallel
/// kernel said otherwise).
///
/// ```
/// assert!(batchrules::tuning::num_threads() >= 1);
/// ```
pub fn num_threads() -> usize {
    if ONE_THREAD.load(Ordering::Relaxed) {
        return 1;
    }
    #[cfg(feature = "rayon")]
    {
        rayon::current_num_threads().max(1)
    }
    #[cfg(not(feature = "rayon"))]
    {
        1
    }
}

/// Sets how many threads the kernels use, as `torch.set_num_threads` does.
///
/// `1` runs every kernel on the calling thread, at any time, and a later
/// call with more threads undoes it. A larger number sizes rayon's global
/// pool, which can only be done before the pool first runs (rayon cannot
/// resize it): after that, asking for the size it has is `Ok` and any other
/// size an error that says so (the `RAYON_NUM_THREADS` environment variable
/// sets it before the program starts). Results are the same bits for every
/// number of threads.
///
/// ```
/// use batchrules::tuning::{num_threads, set_num_threads};
/// set_num_threads(1)?;
/// assert_eq!(num_threads(), 1);
/// assert!(set_num_threads(0).is_err());
/// # Ok::<(), batchrules::Error>(())
/// ```
///
/// # Errors
/// `n` is 0; `n` is more than 1 and the crate was built without the `rayon`
/// feature; or rayon's pool already runs with another number of threads.
pub fn set_num_threads(n: usize) -> crate::Result<()> {
    if n == 0 {
        return Err(crate::Error::invalid(
            "set_num_threads: the number of threads must be at least 1",
        ));
    }
    if n == 1 {
        ONE_THREAD.store(true, Ordering::Relaxed);
        return Ok(());
    }
    #[cfg(feature = "rayon")]
    {
        // Fails when the pool exists already; then its size decides.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
        let have = rayon::current_num_threads();
        if have != n {
            return Err(crate::Error::invalid(format!(
                "set_num_threads({n}): rayon's global pool already runs with {have} \
                 threads and cannot be resized; call set_num_threads before the first \
                 parallel kernel, or set RAYON_NUM_THREADS={n} before the program starts \
                 (set_num_threads(1) works at any time)"
            )));
        }
        ONE_THREAD.store(false, Ordering::Relaxed);
        Ok(())
    }
    #[cfg(not(feature = "rayon"))]
    {
        Err(crate::Error::invalid(format!(
            "set_num_threads({n}): batchrules was built without its `rayon` feature \
             (on by default), so kernels run on one thread"
        )))
    }
}

/// Whether kernels may split work across threads now: more than one thread
/// ([`num_threads`]).
#[inline]
pub(crate) fn parallel() -> bool {
    num_threads() > 1
}
