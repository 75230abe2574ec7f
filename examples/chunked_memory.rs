//! Peak memory and time of chunked vmap, jacrev and jacfwd:
//! `cargo run --release --example chunked_memory`.
//!
//! A counting global allocator records the peak of live heap bytes during each
//! call. The workloads: `vmap` of a matmul-heavy per-example function (two
//! layers 256 -> 1024 -> 256, batch 1024) and `jacrev` of `tanh(W x + b)`
//! (32 -> 2048), and `jacfwd` of the same layer 2048 -> 32, at chunk sizes 1,
//! 16 and the whole batch (of rows, or columns), with the buffer cache off.
//! The example checks that every chunk size gives the whole batch's result
//! (up to the rounding of large matrix products) and that the peak falls with
//! the chunk size.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use batchrules::{jacfwd, jacrev, ops, vmap, Error, Result, Tensor};
use ndarray::{ArrayD, Dimension, IxDyn};

/// The system allocator, counting live bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, forwarded as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f`, returning its result, the peak of heap bytes allocated during
/// the call beyond what was live before it, and the time.
fn measure<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, usize, f64)> {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let start = Instant::now();
    let out = f()?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    Ok((out, PEAK.load(Ordering::Relaxed) - before, ms))
}

fn tensor(shape: &[usize], scale: f32) -> Tensor {
    Tensor::from(ArrayD::from_shape_fn(IxDyn(shape), |i| {
        let k = i.as_array_view().iter().fold(7usize, |a, &b| a * 31 + b);
        ((k % 97) as f32 / 97.0 - 0.5) * scale
    }))
}

/// A chunked result against the whole: equal up to the rounding of the
/// matrix products, whose GEMM may sum in another order for another number of
/// rows (at most 1e-5 of the largest value, in f32). Returns the largest
/// difference.
fn same(a: &Tensor, b: &Tensor) -> Result<f32> {
    let (x, y) = (a.to_array::<f32>()?, b.to_array::<f32>()?);
    let scale = y
        .iter()
        .fold(0.0f32, |m, v| m.max(v.abs()))
        .max(f32::MIN_POSITIVE);
    let diff = x
        .iter()
        .zip(y.iter())
        .fold(0.0f32, |m, (p, q)| m.max((p - q).abs()));
    if x.shape() == y.shape() && diff <= 1e-5 * scale {
        Ok(diff)
    } else {
        Err(Error::Tensor(format!(
            "a chunked result differs from the whole by {diff:e} (largest value {scale:e})"
        )))
    }
}

fn report(what: &str, rows: &[(String, usize, f64)]) -> Result<()> {
    println!("{what}");
    println!("| chunk size | peak heap (MiB) | time (ms) |\n|---|---|---|");
    for (chunk, peak, ms) in rows {
        println!(
            "| {chunk} | {:.2} | {ms:.1} |",
            *peak as f64 / (1 << 20) as f64
        );
    }
    println!();
    // A chunked call holds the output and one chunk's intermediates (each
    // chunk's result is copied into the output and dropped), so the peak
    // falls with the chunk size: every row peaks no higher than the next,
    // larger, chunk size, and every chunked run below the whole batch.
    let whole = rows.last().map_or(0, |r| r.1);
    let falls = rows.windows(2).all(|w| w[0].1 <= w[1].1);
    if falls && rows[..rows.len() - 1].iter().all(|r| r.1 < whole) {
        Ok(())
    } else {
        Err(Error::Tensor(format!(
            "{what}: the peak did not fall with the chunk size"
        )))
    }
}

fn main() -> Result<()> {
    // The peaks measure what each call itself allocates: with the buffer
    // cache on, buffers it keeps between calls (at most its limit per thread)
    // would count as live, or be reused, depending on the runs before.
    batchrules::tuning::set_buffer_cache_limit(0);
    batchrules::tuning::clear_buffer_cache();
    // vmap of two layers, 256 -> 1024 -> 256, batch 1024.
    let (batch, d, h) = (1024, 256, 1024);
    let xs = tensor(&[batch, d], 1.0);
    let w1 = tensor(&[h, d], 0.1);
    let w2 = tensor(&[d, h], 0.1);
    let f = |x: Tensor| ops::mv(&w2, &ops::tanh(&ops::mv(&w1, &x)?)?);
    let mut rows = Vec::new();
    let mut whole = None;
    for chunk in [1, 16, batch] {
        let (out, peak, ms) = measure(|| vmap(f).chunk_size(chunk).call(&xs))?;
        match &whole {
            None => whole = Some(out),
            Some(w) => {
                let diff = same(&out, w)?;
                println!("chunk {chunk}: largest difference from the whole {diff:e}");
            }
        }
        rows.push((chunk.to_string(), peak, ms));
    }
    report(
        "vmap(x -> W2 tanh(W1 x)), 256 -> 1024 -> 256, batch 1024, f32",
        &rows,
    )?;

    // jacrev of tanh(W x + b), 32 -> 2048.
    let (d_in, d_out) = (32, 2048);
    let w = tensor(&[d_out, d_in], 0.05);
    let b = tensor(&[d_out], 1.0);
    let x = tensor(&[d_in], 1.0);
    let g = |x: Tensor| ops::tanh(&ops::linear(&x, &w, Some(&b))?);
    let mut rows = Vec::new();
    let mut whole = None;
    for chunk in [1, 16, d_out] {
        let (out, peak, ms) = measure(|| jacrev(g).chunk_size(chunk).call(&x))?;
        match &whole {
            None => whole = Some(out),
            Some(w) => {
                let diff = same(&out, w)?;
                println!("chunk {chunk}: largest difference from the whole {diff:e}");
            }
        }
        rows.push((chunk.to_string(), peak, ms));
    }
    report("jacrev(tanh(W x + b)), 32 -> 2048, f32", &rows)?;

    // jacfwd of tanh(W x + b), 2048 -> 32: one column of the identity per
    // input element, pushed forward `chunk` at a time.
    let (d_in, d_out) = (2048, 32);
    let w = tensor(&[d_out, d_in], 0.05);
    let b = tensor(&[d_out], 1.0);
    let x = tensor(&[d_in], 1.0);
    let g = |x: Tensor| ops::tanh(&ops::linear(&x, &w, Some(&b))?);
    let mut rows = Vec::new();
    let mut whole = None;
    for chunk in [1, 16, d_in] {
        let (out, peak, ms) = measure(|| jacfwd(g).chunk_size(chunk).call(&x))?;
        match &whole {
            None => whole = Some(out),
            Some(w) => {
                let diff = same(&out, w)?;
                println!("chunk {chunk}: largest difference from the whole {diff:e}");
            }
        }
        rows.push((chunk.to_string(), peak, ms));
    }
    report("jacfwd(tanh(W x + b)), 2048 -> 32, f32", &rows)
}
