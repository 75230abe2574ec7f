//! The batchrules quickstart: `cargo run --example quickstart`.
//!
//! Tensors with operators and methods; a per-example function vmapped with
//! mixed in_dims; per-sample gradients of a small model; nested vmap; the
//! error you get when an op is invalid per example; and the fallback warning.

use batchrules::prelude::*;
use ndarray::{array, Array};

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

/// A linear model `x · w + b`.
#[derive(Clone, TensorTree)]
struct Linear {
    w: Tensor,
    b: Tensor,
}

/// The squared error of one example: x is [3], y a 0-d target.
fn loss((p, x, y): (Linear, Tensor, Tensor)) -> Result<Tensor> {
    let pred = (x.dot(&p.w)? + &p.b)?;
    pred.mse_loss(&y)
}

fn main() -> Result<()> {
    log::set_logger(&Stderr).expect("no other logger");
    log::set_max_level(log::LevelFilter::Warn);

    // Tensors from ndarray arrays of any dimension, operators and methods.
    let xs = Tensor::from(Array::from_shape_fn((4, 3), |(i, j)| (i + j) as f64));
    let w = Tensor::from(array![1.0f64, 0.5, -1.0]);
    println!("xs =\n{xs}\n");
    println!("(xs * w).sum_dim(1) = {}\n", (&xs * &w)?.sum_dim(1)?);

    // Per example: a score vector x of shape [3], shared weights w of shape [3].
    let probs = vmap(|(x, w): (Tensor, Tensor)| (x * w)?.softmax(-1))
        .in_dims([Some(0), None])
        .call((&xs, &w))?;
    println!("softmax(x * w) per example, batch of 4:\n{probs:.4}\n");

    // Per-sample gradients of a linear model: parameters shared, data batched.
    let model = Linear {
        w: w.clone(),
        b: Tensor::scalar(0.5f64),
    };
    let ys = Tensor::from(array![1.0f64, 0.0, -1.0, 2.0]);
    let grads: Linear = vmap(|(p, x, y): (Linear, Tensor, Tensor)| grad(loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .call((&model, &xs, &ys))?;
    println!("per-sample gradients of the weights:\n{}\n", grads.w);
    // One SGD step with the batch's mean gradient, over the whole struct.
    let mean = tree_map(&grads, |g| g.mean_dim(0))?;
    let model = tree_zip_map(&model, &mean, |p, g| p - &(g * 0.05)?)?;
    println!("after one SGD step: w = {}, b = {}\n", model.w, model.b);

    // Nested: a batch of 2 batches of 3 matrices [2, 2]; triu per matrix.
    let m = Tensor::from(Array::from_shape_fn((2, 3, 2, 2), |(a, b, c, d)| {
        (a + b + c + d) as f64
    }));
    let upper = vmap(|x: Tensor| vmap(|y: Tensor| y.triu()).call(&x)).call(&m)?;
    println!(
        "nested vmap(vmap(triu)) on {:?} -> {:?}\n",
        m.shape(),
        upper.shape()
    );

    // Each example of a [32, 2] batch is 1-d, so triu must fail under vmap.
    let rows = Tensor::from(Array::<f64, _>::zeros((32, 2)));
    let err = vmap(|x: Tensor| x.triu()).call(&rows).unwrap_err();
    println!("vmap(triu) on [32, 2]: error: {err}\n");

    // An op without a batching rule runs through the fallback loop, with a warning.
    let sums = vmap(|x: Tensor| downstream_ops::ops::cumsum(&x, 0)).call(&xs)?;
    println!("vmap(cumsum) via the fallback:\n{sums}");
    Ok(())
}
