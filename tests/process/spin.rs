//! The `rayon` feature's spin window: a parallel region keeps one spinner per
//! other thread of the pool live, and the spinners end once no region has
//! started for the window (run with `cargo test --features rayon --test process spin::`).
//! In the `process` binary, so that no other test's regions keep spinners alive.
#![cfg(feature = "rayon")]

use std::time::{Duration, Instant};

use batchrules::tuning::{live_spinners, set_spin_window, spin_window};
use batchrules::{ops, Tensor};

/// Waits up to `limit` for no spinner to be live.
fn spinners_end_within(limit: Duration) -> bool {
    let start = Instant::now();
    while live_spinners() > 0 {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

#[test]
fn spinners_start_with_a_region_and_end_after_the_window() {
    let _exclusive = super::exclusive();
    // 2^18 values: the add runs as a parallel region.
    let x = Tensor::from(ndarray::ArrayD::<f32>::ones(ndarray::IxDyn(&[512, 512])));
    let expected = ndarray::ArrayD::<f32>::from_elem(ndarray::IxDyn(&[512, 512]), 2.0);
    for threads in [2, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        // A window far longer than the op (the longest there is), so that
        // the spinners are still live when the test looks, even on a
        // loaded machine.
        set_spin_window(Duration::from_secs(1));
        assert!(spinners_end_within(Duration::from_secs(5)));
        // The region runs on a pool thread (`install`), which sends a
        // spinner to every thread of the pool; the one on its own thread
        // ends at once.
        let y = pool.install(|| ops::add(&x, &x)).unwrap();
        assert_eq!(y.to_array::<f32>().unwrap(), expected);
        let live = live_spinners();
        assert!(
            (threads - 1..=threads).contains(&live),
            "{threads} threads: {live} spinners"
        );
        // More regions within the window never make more than one per thread.
        for _ in 0..20 {
            pool.install(|| ops::add(&x, &x)).unwrap();
            let live = live_spinners();
            assert!(
                (1..=threads).contains(&live),
                "{threads} threads: {live} spinners"
            );
        }
        // And they end after it (with ample slack for a loaded machine).
        assert!(spinners_end_within(Duration::from_secs(10)));
    }

    // One thread: nothing to keep awake.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    one.install(|| ops::add(&x, &x)).unwrap();
    assert_eq!(live_spinners(), 0);

    // A window of zero turns spinning off.
    set_spin_window(Duration::ZERO);
    assert_eq!(spin_window(), Duration::ZERO);
    let two = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let y = two.install(|| ops::add(&x, &x)).unwrap();
    assert_eq!(y.to_array::<f32>().unwrap(), expected);
    assert_eq!(live_spinners(), 0);
    set_spin_window(batchrules::tuning::DEFAULT_SPIN_WINDOW);
}
