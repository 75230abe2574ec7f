//! What a `jit` replay allocates, counted by this binary's allocator: no
//! tensor buffer once the programs' buffers are in the thread's cache.

use batchrules::{jit, ops, Tensor};

/// Runs the kernels on the calling thread until dropped (so the counted
/// allocations are one thread's), then gives back the pool's size, also
/// when the test fails.
struct OneThread;

impl OneThread {
    fn set() -> OneThread {
        batchrules::tuning::set_num_threads(1).unwrap();
        OneThread
    }
}

impl Drop for OneThread {
    fn drop(&mut self) {
        let _ = batchrules::tuning::set_num_threads(rayon::current_num_threads());
    }
}

/// A replay of a pointwise program with a transpose, an `expand` and a small
/// reduction allocates none of its matrices' buffers: the in-place steps
/// write over the values before them, and every other output buffer (the
/// copies of `reshape` and `expand` too) comes from the cache the previous
/// replay filled. The large output the caller drops goes back to the cache
/// as any large buffer does. What is left is bookkeeping (argument lists,
/// tensor handles), the scalar output and the reduction's 512 bytes (the
/// reductions allocate through ndarray, outside the cache): under a quarter
/// of one matrix.
#[test]
fn a_warm_replay_allocates_no_tensor_buffer() {
    let _exclusive = super::exclusive();
    let _one = OneThread::set();
    let n = 128; // 64 KiB of f32 per matrix: large enough for the cache outside a replay
    let values: Vec<f32> = (0..n * n).map(|i| (i as f32 * 0.37).sin()).collect();
    let x = Tensor::from_shape_vec(&[n, n], values).unwrap();
    let row = Tensor::from_shape_vec(&[1, n], (0..n).map(|i| i as f32).collect()).unwrap();
    let f = |(x, row): (Tensor, Tensor)| {
        let e = ops::tanh(&ops::add(&ops::mul(&ops::exp(&x)?, &x)?, &x)?)?;
        let t = ops::reshape(&ops::transpose(&e, 0, 1)?, &[-1])?;
        let m = ops::sum(&e, Some(1), true)?; // [n, 1]: 512 bytes
        let centered = ops::sub(&e, &m)?;
        let b = ops::add(&ops::expand(&row, &[n as i64, n as i64])?, &centered)?;
        Ok((ops::sum(&t, None, false)?, ops::neg(&b)?))
    };
    let jitted = jit(f);
    let eager = f((x.clone(), row.clone())).unwrap();
    let buffer = n * n * 4;
    let mut last = usize::MAX;
    batchrules::tuning::clear_buffer_cache();
    for call in 0..4 {
        let (out, bytes) = super::bytes_allocated(|| jitted.call((&x, &row)).unwrap());
        assert_eq!(
            out.0.to_array::<f32>().unwrap(),
            eager.0.to_array::<f32>().unwrap()
        );
        assert_eq!(
            out.1.to_array::<f32>().unwrap(),
            eager.1.to_array::<f32>().unwrap()
        );
        drop(out);
        if call == 0 {
            // The trace and the first replay: every buffer, new.
            assert!(bytes > 2 * buffer, "call {call}: {bytes} bytes");
        }
        last = bytes;
    }
    assert!(
        last < buffer / 4,
        "a warm replay allocated {last} bytes (one buffer is {buffer})"
    );
}

/// During a replay the cache also keeps buffers below its usual minimum:
/// the 1 KiB output of `exp`, freed at `sum`, is the next replay's `exp`
/// output. (Without that, each warm replay allocated it again: 1,796 bytes
/// where it now allocates 772, bookkeeping and the scalar.)
#[test]
fn a_warm_replay_reuses_small_buffers_too() {
    let _exclusive = super::exclusive();
    let _one = OneThread::set();
    let n = 16; // 1 KiB of f32, far below the cache's usual minimum
    let x = Tensor::from_shape_vec(&[n, n], (0..n * n).map(|i| i as f32 * 0.01).collect()).unwrap();
    let jitted = jit(|x: Tensor| ops::sum(&ops::exp(&x)?, None, false));
    let mut bytes = Vec::new();
    batchrules::tuning::clear_buffer_cache();
    for _ in 0..4 {
        let (out, b) = super::bytes_allocated(|| jitted.call(&x).unwrap());
        drop(out);
        bytes.push(b);
    }
    let buffer = n * n * 4;
    assert!(bytes[0] > buffer, "{bytes:?}");
    assert!(bytes[2] < buffer && bytes[3] < buffer, "{bytes:?}");
}
