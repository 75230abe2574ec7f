//! DP-SGD on handwritten digits: `cargo run --example dp_sgd`.
//!
//! Differentially private SGD (Abadi et al., 2016) trains a small CNN on the
//! UCI handwritten digits shipped in `examples/data/digits.npz` (1,797 images
//! of 8x8, shuffled once by a fixed permutation; the first 1,437 train, the
//! other 360 test; source and licence in
//! `examples/data/README.md`). Each step:
//!
//! 1. per-sample gradients of the batch by one `vmap(grad(loss))`;
//! 2. each example's gradient clipped to L2 norm `C` over all parameters;
//! 3. the clipped gradients summed, Gaussian noise of standard deviation
//!    `σ C` added, divided by the batch size;
//! 4. an SGD step over the whole parameter struct with `tree_zip_map`.
//!
//! No privacy accountant is included: the program does not say what
//! (ε, δ) the run spends.
//!
//! Checks (exit status 1 if one fails):
//! - the deterministic part of the first step (each example's gradient norm,
//!   and the sum of the clipped gradients before noise, at the initial
//!   parameters on the first batch) against torch.func, recorded by
//!   `scripts/reference/record_model_examples.py`, to 1e-4;
//! - training is random (the noise, the order of the batches), so its check
//!   is a property: the final test accuracy is at least 90 %.

#[path = "support/mod.rs"]
mod support;

use std::time::Instant;

use batchrules::prelude::*;
use support::{reference_path, torch_bound, uniform, unit_values, Reference};

/// Clipping norm `C`.
const CLIP: f64 = 1.0;
/// Noise multiplier `σ`: the noise's standard deviation is `σ C`.
const SIGMA: f64 = 1.0;
const BATCH: usize = 64;
const TRAIN: usize = 1437;
const EPOCHS: usize = 15;
const LEARNING_RATE: f64 = 1.0;

/// conv 1->16 3x3 (padding 1), tanh, max_pool 2, conv 16->32 3x3 (padding
/// 1), tanh, max_pool 2, linear 128->10.
#[derive(Clone, TensorTree)]
struct Cnn {
    #[tree(rename = "conv1.weight")]
    conv1_w: Tensor,
    #[tree(rename = "conv1.bias")]
    conv1_b: Tensor,
    #[tree(rename = "conv2.weight")]
    conv2_w: Tensor,
    #[tree(rename = "conv2.bias")]
    conv2_b: Tensor,
    #[tree(rename = "fc.weight")]
    fc_w: Tensor,
    #[tree(rename = "fc.bias")]
    fc_b: Tensor,
}

impl Cnn {
    /// Leaf k from the stream 20 + k, within PyTorch's default bounds (the
    /// reference script's `dp_cnn_params`).
    fn new() -> Result<Self> {
        let u =
            |shape: &[usize], seed, fan_in| uniform(shape, seed, torch_bound(fan_in), DType::F32);
        Ok(Cnn {
            conv1_w: u(&[16, 1, 3, 3], 20, 9)?,
            conv1_b: u(&[16], 21, 9)?,
            conv2_w: u(&[32, 16, 3, 3], 22, 144)?,
            conv2_b: u(&[32], 23, 144)?,
            fc_w: u(&[10, 128], 24, 128)?,
            fc_b: u(&[10], 25, 128)?,
        })
    }

    /// Logits `[n, 10]` of images `[n, 1, 8, 8]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let conv = |x: &Tensor, w, b| ops::conv2d(x, w, Some(b), &[1], &[1], &[1], 1);
        let x = conv(x, &self.conv1_w, &self.conv1_b)?
            .tanh()?
            .max_pool2d(&[2])?;
        let x = conv(&x, &self.conv2_w, &self.conv2_b)?
            .tanh()?
            .max_pool2d(&[2])?;
        x.flatten_from(1)?.linear(&self.fc_w, Some(&self.fc_b))
    }
}

/// The loss of one example (`[1, 8, 8]`, a 0-d label), as a batch of one.
fn loss((p, x, y): (Cnn, Tensor, Tensor)) -> Result<Tensor> {
    p.forward(&x.unsqueeze(0)?)?.cross_entropy(&y.unsqueeze(0)?)
}

/// Per-sample gradients of a batch: every leaf gets a leading batch dim.
fn per_sample_grads(p: &Cnn, x: &Tensor, y: &Tensor) -> Result<Cnn> {
    vmap(|(p, x, y): (Cnn, Tensor, Tensor)| grad(loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((p, x, y))
}

/// Each example's gradient norm over all parameters, `[batch]`.
fn norms(grads: &Cnn) -> Result<Tensor> {
    let mut total: Option<Tensor> = None;
    for (_, g) in tree_leaves(grads) {
        let sq = (&g * &g)?.flatten_from(1)?.sum_dim(1)?;
        total = Some(match total {
            Some(t) => (t + sq)?,
            None => sq,
        });
    }
    total.expect("the model has parameters").sqrt()
}

/// The sum over the batch of the gradients, each scaled to norm at most
/// `CLIP` (by `min(1, C / (norm + 1e-6))`, as Opacus does).
fn clipped_sum(grads: &Cnn) -> Result<Cnn> {
    let factor = (CLIP / (norms(grads)? + 1e-6)?)?.clamp_max(1.0)?;
    tree_map(grads, |g| {
        let mut shape = vec![g.shape()[0] as i64];
        shape.resize(g.ndim(), 1);
        (g * &factor.reshape(&shape)?)?.sum_dim(0)
    })
}

/// One DP-SGD step on a batch; `seed` draws the noise.
fn step(p: &Cnn, x: &Tensor, y: &Tensor, seed: i64) -> Result<Cnn> {
    let summed = clipped_sum(&per_sample_grads(p, x, y)?)?;
    let batch = x.shape()[0] as f64;
    let mut leaf = 0;
    let noisy = tree_map(&summed, |g| {
        let dims: Vec<i64> = g.shape().iter().map(|&d| d as i64).collect();
        let noise = ops::randn(&dims, seed * 16 + leaf, DType::F32)?;
        leaf += 1;
        (g + &(noise * (SIGMA * CLIP))?)? / batch
    })?;
    tree_zip_map(p, &noisy, |w, g| w - &(g * LEARNING_RATE)?)
}

/// The share of `x`'s images that the model classifies as `y`.
fn accuracy(p: &Cnn, x: &Tensor, y: &Tensor) -> Result<f64> {
    let predicted = p.forward(x)?.argmax_dim(1)?.to_vec::<i64>()?;
    let labels = y.to_vec::<i64>()?;
    let right = predicted
        .iter()
        .zip(&labels)
        .filter(|(a, b)| a == b)
        .count();
    Ok(right as f64 / labels.len() as f64)
}

/// Rows `rows` of `t` (along dim 0), in that order.
fn rows(t: &Tensor, rows: &[usize]) -> Result<Tensor> {
    let picked = rows
        .iter()
        .map(|&i| t.select(0, i))
        .collect::<Result<Vec<_>>>()?;
    ops::stack(&picked, 0)
}

fn main() -> Result<()> {
    let data = batchrules::io::read_npz(reference_path("../data/digits.npz"))?;
    // Pixels 0..16 to [-1, 1]; images [1797, 1, 8, 8].
    let images = ((ops::to_dtype(&data["images"], DType::F32)? / 8.0)? - 1.0)?.unsqueeze(1)?;
    let labels = data["labels"].clone();
    let n = images.shape()[0];
    // A fixed shuffle of the images, then the first 1,437 train and the rest
    // test (the file's order groups writers, so a split by position would
    // test on writers never seen in training).
    let keys = unit_values(7, n);
    let mut shuffled: Vec<usize> = (0..n).collect();
    shuffled.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
    let (train_rows, test_rows) = shuffled.split_at(TRAIN);
    let (train_x, train_y) = (rows(&images, train_rows)?, rows(&labels, train_rows)?);
    let (test_x, test_y) = (rows(&images, test_rows)?, rows(&labels, test_rows)?);
    let test = test_rows.len();
    println!("digits: {TRAIN} training and {test} test images of 8x8; DP-SGD with C = {CLIP}, sigma = {SIGMA}, batch {BATCH}, lr {LEARNING_RATE}");

    // The deterministic part of the first step, against torch.func.
    let mut params = Cnn::new()?;
    let mut reference = Reference::load("dp_sgd.json");
    let first = (
        train_x.narrow(0, 0, BATCH as i64)?,
        train_y.narrow(0, 0, BATCH as i64)?,
    );
    let grads = per_sample_grads(&params, &first.0, &first.1)?;
    reference.check("norms", &norms(&grads)?, 1e-4, 1e-4)?;
    for (key, g) in tree_leaves(&clipped_sum(&grads)?) {
        reference.check(&format!("clipped_sum.{key}"), &g, 1e-4, 1e-4)?;
    }

    let mut seed = 0i64;
    let mut last = 0.0;
    for epoch in 1..=EPOCHS {
        let start = Instant::now();
        // A fresh order of the training images each epoch.
        let keys = unit_values(1000 + epoch as u32, TRAIN);
        let mut order: Vec<usize> = (0..TRAIN).collect();
        order.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
        for batch in order.chunks(BATCH) {
            seed += 1;
            params = step(
                &params,
                &rows(&train_x, batch)?,
                &rows(&train_y, batch)?,
                seed,
            )?;
        }
        let secs = start.elapsed().as_secs_f64();
        let train_loss = params
            .forward(&train_x)?
            .cross_entropy(&train_y)?
            .to_scalar::<f32>()?;
        last = accuracy(&params, &test_x, &test_y)?;
        println!(
            "epoch {epoch:>2}: training loss {train_loss:.4}, test accuracy {:.1} %, {secs:.2} s per epoch",
            100.0 * last
        );
    }
    if last < 0.9 {
        reference.fail(format!(
            "the test accuracy after {EPOCHS} epochs is {:.1} %, below 90 %",
            100.0 * last
        ));
    }
    reference.finish();
    Ok(())
}
