//! The batchrules quickstart: `cargo run --example quickstart`.
//!
//! A per-example function, vmapped with mixed in_dims; nested vmap; the error
//! you get when an op is invalid per example; and the fallback warning.

use batchrules::{ops, vmap, Result, Tensor};
use ndarray::Array;

/// Prints `log` warnings to stderr (any `log` backend works; this keeps the
/// example free of extra dependencies).
struct Stderr;
impl log::Log for Stderr {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Warn
    }
    fn log(&self, r: &log::Record) {
        eprintln!("[{}] {}", r.level(), r.args());
    }
    fn flush(&self) {}
}

fn main() -> Result<()> {
    log::set_logger(&Stderr).expect("no other logger");
    log::set_max_level(log::LevelFilter::Warn);

    // Per example: a score vector x of shape [3], shared weights w of shape [3].
    let per_example = |(x, w): (Tensor, Tensor)| ops::softmax(&ops::mul(&x, &w)?, -1);
    let xs = Tensor::from(Array::from_shape_fn((4, 3), |(i, j)| (i + j) as f64).into_dyn());
    let w = Tensor::from(ndarray::array![1.0f64, 0.5, -1.0].into_dyn());
    let probs = vmap(per_example).in_dims([Some(0), None]).call((&xs, &w))?;
    println!(
        "softmax(x * w) per example, batch of 4:\n{:?}\n",
        probs.to_array::<f64>()?
    );

    // Nested: a batch of 2 batches of 3 matrices [2, 2]; triu per matrix.
    let m = Tensor::from(
        Array::from_shape_fn((2, 3, 2, 2), |(a, b, c, d)| (a + b + c + d) as f64).into_dyn(),
    );
    let upper = vmap(|x: Tensor| vmap(|y: Tensor| ops::triu(&y, 0)).call(&x)).call(&m)?;
    println!(
        "nested vmap(vmap(triu)) on {:?} -> {:?}\n",
        m.shape(),
        upper.shape()
    );

    // Each example of a [32, 2] batch is 1-d, so triu must fail under vmap.
    let rows = Tensor::from(Array::<f64, _>::zeros((32, 2)).into_dyn());
    let err = vmap(|x: Tensor| ops::triu(&x, 0)).call(&rows).unwrap_err();
    println!("vmap(triu) on [32, 2]: error: {err}\n");

    // An op without a batching rule runs through the fallback loop, with a warning.
    let sums = vmap(|x: Tensor| downstream_ops::ops::cumsum(&x, 0)).call(&xs)?;
    println!(
        "vmap(cumsum) via the fallback:\n{:?}",
        sums.to_array::<f64>()?
    );
    Ok(())
}
