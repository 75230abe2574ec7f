//! Per-sample gradients of a CNN, after functorch's tutorial:
//! `cargo run --example per_sample_grads_cnn`.
//!
//! The tutorial's model: conv 1->32 3x3, relu, conv 32->64 3x3, relu,
//! max_pool2d 2, flatten, linear 9216->128, relu, linear 128->10,
//! log_softmax and nll_loss, on a batch of 64 images of 28x28 (f32). One
//! `vmap(grad(loss))` call gives the gradient of every example's loss with
//! respect to every parameter: each per-sample weight gradient is a batched
//! GEMM, and nothing runs on the fallback loop (`FallbackPolicy::Error`).
//!
//! Checked against torch.func (`vmap(grad(loss), in_dims=(None, 0, 0))`,
//! recorded by `scripts/reference/record_model_examples.py` from the same
//! parameters and images) to 1e-4, and against the loop of single-example
//! gradients. The program exits with status 1 if a check fails.

#[path = "support/mod.rs"]
mod support;

use std::time::Instant;

use batchrules::prelude::*;
use support::{labels, max_abs_diff, torch_bound, uniform, Reference};

const BATCH: usize = 64;

/// The tutorial's CNN, its fields named as PyTorch's `state_dict` names them.
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
    #[tree(rename = "fc1.weight")]
    fc1_w: Tensor,
    #[tree(rename = "fc1.bias")]
    fc1_b: Tensor,
    #[tree(rename = "fc2.weight")]
    fc2_w: Tensor,
    #[tree(rename = "fc2.bias")]
    fc2_b: Tensor,
}

impl Cnn {
    /// Leaf k from the stream 10 + k, within PyTorch's default bounds (the
    /// reference script's `cnn_params`).
    fn new() -> Result<Self> {
        let u =
            |shape: &[usize], seed, fan_in| uniform(shape, seed, torch_bound(fan_in), DType::F32);
        Ok(Cnn {
            conv1_w: u(&[32, 1, 3, 3], 10, 9)?,
            conv1_b: u(&[32], 11, 9)?,
            conv2_w: u(&[64, 32, 3, 3], 12, 288)?,
            conv2_b: u(&[64], 13, 288)?,
            fc1_w: u(&[128, 9216], 14, 9216)?,
            fc1_b: u(&[128], 15, 9216)?,
            fc2_w: u(&[10, 128], 16, 128)?,
            fc2_b: u(&[10], 17, 128)?,
        })
    }

    /// Log-probabilities `[n, 10]` of images `[n, 1, 28, 28]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let conv = |x: &Tensor, w, b| ops::conv2d(x, w, Some(b), &[1], &[0], &[1], 1);
        let x = conv(x, &self.conv1_w, &self.conv1_b)?.relu()?;
        let x = conv(&x, &self.conv2_w, &self.conv2_b)?.relu()?;
        x.max_pool2d(&[2])?
            .flatten_from(1)?
            .linear(&self.fc1_w, Some(&self.fc1_b))?
            .relu()?
            .linear(&self.fc2_w, Some(&self.fc2_b))?
            .log_softmax(1)
    }
}

/// The loss of one example (`[1, 28, 28]`, a 0-d label), run as a batch of
/// one, as the tutorial does.
fn loss((p, x, y): (Cnn, Tensor, Tensor)) -> Result<Tensor> {
    p.forward(&x.unsqueeze(0)?)?.nll_loss(&y.unsqueeze(0)?)
}

fn main() -> Result<()> {
    let params = Cnn::new()?;
    let images = uniform(&[BATCH, 1, 28, 28], 500, 1.0, DType::F32)?;
    let targets = labels(BATCH, 501, 10)?;
    let mut reference = Reference::load("per_sample_grads_cnn.json");
    let (rtol, atol) = (1e-4, 1e-4);

    let batch_loss = params.forward(&images)?.nll_loss(&targets)?;
    println!("the batch's loss: {:.6}", batch_loss.to_scalar::<f32>()?);
    reference.check("batch_loss", &batch_loss, rtol, atol)?;

    // Parameters shared (None), images and labels batched along dim 0.
    let start = Instant::now();
    let grads: Cnn = vmap(|(p, x, y): (Cnn, Tensor, Tensor)| grad(loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((&params, &images, &targets))?;
    println!(
        "per-sample gradients of {BATCH} examples by vmap(grad(loss)) in {:.2} s (this build):",
        start.elapsed().as_secs_f64()
    );
    for (key, g) in tree_leaves(&grads) {
        reference.check(&format!("grad.{key}"), &g, rtol, atol)?;
    }

    // The loop of single-example gradients gives the same.
    let start = Instant::now();
    let mut worst = 0.0f64;
    for i in 0..BATCH {
        let one: Cnn = grad(loss).call((&params, &images.select(0, i)?, &targets.select(0, i)?))?;
        for ((_, batched), (_, single)) in tree_leaves(&grads).into_iter().zip(tree_leaves(&one)) {
            worst = worst.max(max_abs_diff(&batched.select(0, i)?, &single)?);
        }
    }
    println!(
        "  the loop of {BATCH} single-example gradients ({:.2} s): max |difference| {worst:.1e}",
        start.elapsed().as_secs_f64()
    );
    if worst > 1e-5 {
        reference.fail(format!(
            "vmap(grad) differs from the loop of single-example gradients by {worst:e}"
        ));
    }
    reference.finish();
    Ok(())
}
