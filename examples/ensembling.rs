//! Model ensembling, after functorch's tutorial: `cargo run --example ensembling`.
//!
//! Ten MLPs (784 -> 128 -> 128 -> 10, relu) with the same architecture and
//! different weights. Their parameters are stacked leaf by leaf along a new
//! dim 0 (what `torch.func.stack_module_state` does), and one `vmap` over the
//! stack runs all ten at once:
//!
//! - each model on a minibatch of its own (`in_dims` 0 for the parameters
//!   and the data);
//! - every model on the same minibatch (the data's `in_dim` is `None`);
//! - and the gradient of every model's cross-entropy at once
//!   (`vmap(grad(loss))`).
//!
//! Each result is checked against the loop over the models and against
//! torch.func (`vmap(functional_call)` over `stack_module_state`, f64), whose
//! values `scripts/reference/record_ensembling.py` recorded in
//! `examples/reference/ensembling.json` from the same parameters and data.
//! The program exits with status 1 if a check fails.

#[path = "support/mod.rs"]
mod support;

use batchrules::prelude::*;
use support::{labels, max_abs_diff, torch_bound, uniform, Reference};

const MODELS: usize = 10;
const BATCH: usize = 64;
const IN: usize = 784;
const HIDDEN: usize = 128;
const CLASSES: usize = 10;

/// One model's parameters, named as PyTorch's `state_dict` names them.
#[derive(Clone, TensorTree)]
struct Mlp {
    #[tree(rename = "fc1.weight")]
    fc1_w: Tensor,
    #[tree(rename = "fc1.bias")]
    fc1_b: Tensor,
    #[tree(rename = "fc2.weight")]
    fc2_w: Tensor,
    #[tree(rename = "fc2.bias")]
    fc2_b: Tensor,
    #[tree(rename = "fc3.weight")]
    fc3_w: Tensor,
    #[tree(rename = "fc3.bias")]
    fc3_b: Tensor,
}

impl Mlp {
    /// Model `m`: leaf k from the stream `100 m + k`, within PyTorch's
    /// default bound `1 / sqrt(fan_in)` (the reference script's `model(m)`).
    fn new(m: u32) -> Result<Self> {
        let layer = |k: u32, fan_in: usize, fan_out: usize| -> Result<(Tensor, Tensor)> {
            let bound = torch_bound(fan_in);
            Ok((
                uniform(&[fan_out, fan_in], 100 * m + k, bound, DType::F64)?,
                uniform(&[fan_out], 100 * m + k + 1, bound, DType::F64)?,
            ))
        };
        let (fc1_w, fc1_b) = layer(0, IN, HIDDEN)?;
        let (fc2_w, fc2_b) = layer(2, HIDDEN, HIDDEN)?;
        let (fc3_w, fc3_b) = layer(4, HIDDEN, CLASSES)?;
        Ok(Mlp {
            fc1_w,
            fc1_b,
            fc2_w,
            fc2_b,
            fc3_w,
            fc3_b,
        })
    }

    /// Logits `[batch, 10]` of a minibatch `[batch, 784]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.linear(&self.fc1_w, Some(&self.fc1_b))?
            .relu()?
            .linear(&self.fc2_w, Some(&self.fc2_b))?
            .relu()?
            .linear(&self.fc3_w, Some(&self.fc3_b))
    }
}

/// The mean cross-entropy of one model on one minibatch.
fn loss((p, x, y): (Mlp, Tensor, Tensor)) -> Result<Tensor> {
    p.forward(&x)?.cross_entropy(&y)
}

/// The models' parameters stacked leaf by leaf along a new dim 0.
fn stack_models(models: &[Mlp]) -> Result<Mlp> {
    let leaves: Vec<Vec<Tensor>> = models
        .iter()
        .map(|m| tree_leaves(m).into_iter().map(|(_, t)| t).collect())
        .collect();
    let stacked = (0..leaves[0].len())
        .map(|k| {
            let column: Vec<Tensor> = leaves.iter().map(|l| l[k].clone()).collect();
            ops::stack(&column, 0)
        })
        .collect::<Result<Vec<_>>>()?;
    models[0].with_leaves(stacked)
}

fn main() -> Result<()> {
    let models = (0..MODELS as u32)
        .map(Mlp::new)
        .collect::<Result<Vec<_>>>()?;
    let stacked = stack_models(&models)?;
    let data = uniform(&[MODELS, BATCH, IN], 999, 1.0, DType::F64)?;
    let ys = labels(MODELS * BATCH, 998, CLASSES)?.reshape(&[MODELS as i64, BATCH as i64])?;
    let minibatch = data.select(0, 0)?;
    let mut reference = Reference::load("ensembling.json");
    let (rtol, atol) = (1e-10, 1e-10);

    // Each model on a minibatch of its own.
    let different = vmap(|(p, x): (Mlp, Tensor)| p.forward(&x))
        .fallback(FallbackPolicy::Error)
        .call((&stacked, &data))?;
    // Every model on the same minibatch.
    let same = vmap(|(p, x): (Mlp, Tensor)| p.forward(&x))
        .in_dims([Some(0), None])
        .fallback(FallbackPolicy::Error)
        .call((&stacked, &minibatch))?;
    println!(
        "{MODELS} models at once: logits {:?} (a minibatch each), {:?} (one minibatch)",
        different.shape(),
        same.shape()
    );
    reference.check("different_minibatches", &different, rtol, atol)?;
    reference.check("same_minibatch", &same, rtol, atol)?;

    // Every model's gradient at once.
    let grads: Mlp = vmap(|(p, x, y): (Mlp, Tensor, Tensor)| grad(loss).call((&p, &x, &y)))
        .fallback(FallbackPolicy::Error)
        .call((&stacked, &data, &ys))?;
    for (key, g) in tree_leaves(&grads) {
        reference.check(&format!("grad.{key}"), &g, rtol, atol)?;
    }

    // The loop over the models gives the same.
    let mut worst = 0.0f64;
    for (m, p) in models.iter().enumerate() {
        let x = data.select(0, m)?;
        let y = ys.select(0, m)?;
        worst = worst.max(max_abs_diff(&different.select(0, m)?, &p.forward(&x)?)?);
        worst = worst.max(max_abs_diff(&same.select(0, m)?, &p.forward(&minibatch)?)?);
        let one: Mlp = grad(loss).call((p, &x, &y))?;
        for ((_, a), (_, b)) in tree_leaves(&grads).into_iter().zip(tree_leaves(&one)) {
            worst = worst.max(max_abs_diff(&a.select(0, m)?, &b)?);
        }
    }
    println!("  the loop over the models: max |difference| {worst:.1e}");
    if worst > 1e-12 {
        reference.fail(format!(
            "the ensemble differs from the loop over the models by {worst:e}"
        ));
    }
    reference.finish();
    Ok(())
}
