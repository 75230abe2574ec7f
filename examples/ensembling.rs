//! Model ensembling: `cargo run --example ensembling`.
//!
//! Five small MLPs with the same architecture and different weights, their
//! parameters stacked along a new leading dim. `vmap` over the stacked
//! parameters (in_dim 0) with the data shared (in_dim `None`) runs all five
//! models at once; the example checks it against the loop over the models,
//! then takes every model's gradient at once the same way.

use batchrules::{grad, ops, vmap, Error, FallbackPolicy, Result, Tensor, TensorTree};
use ndarray::{Array, ArrayD, Dimension, IxDyn};

#[derive(TensorTree)]
struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

const MODELS: usize = 5;

fn filled(shape: &[usize], seed: usize) -> Tensor {
    Tensor::from(ArrayD::from_shape_fn(IxDyn(shape), |i| {
        let k = i.as_array_view().iter().fold(seed, |a, &b| a * 31 + b);
        ((k % 97) as f64 / 97.0 - 0.5) * 0.5
    }))
}

fn model(seed: usize) -> Mlp {
    Mlp {
        w1: filled(&[16, 8], seed),
        b1: filled(&[16], seed + 1),
        w2: filled(&[4, 16], seed + 2),
        b2: filled(&[4], seed + 3),
    }
}

/// A batch of inputs [32, 8] through one model: logits [32, 4].
fn forward(p: &Mlp, x: &Tensor) -> Result<Tensor> {
    let h = ops::tanh(&ops::linear(x, &p.w1, Some(&p.b1))?)?;
    ops::linear(&h, &p.w2, Some(&p.b2))
}

/// The models' parameters stacked leaf by leaf along a new dim 0.
fn stack_models(models: &[Mlp]) -> Result<Mlp> {
    let leaves: Vec<Vec<Tensor>> = models
        .iter()
        .map(|m| {
            let mut v = Vec::new();
            m.leaves(&mut v);
            v
        })
        .collect();
    let stacked = (0..leaves[0].len())
        .map(|k| {
            let column: Vec<Tensor> = leaves.iter().map(|l| l[k].clone()).collect();
            ops::stack(&column, 0)
        })
        .collect::<Result<Vec<_>>>()?;
    models[0].with_leaves(stacked)
}

fn max_diff(a: &Tensor, b: &Tensor) -> Result<f64> {
    let (a, b) = (a.to_array::<f64>()?, b.to_array::<f64>()?);
    if a.shape() != b.shape() {
        return Err(Error::Tensor(format!(
            "shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    }
    Ok(a.iter()
        .zip(b.iter())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max))
}

fn main() -> Result<()> {
    let models: Vec<Mlp> = (0..MODELS).map(|m| model(10 * m + 1)).collect();
    // Stack each parameter over the models: w1 becomes [5, 16, 8], ...
    let stacked = stack_models(&models)?;
    let x = Tensor::from(
        Array::from_shape_fn((32, 8), |(i, j)| ((i * 8 + j) % 13) as f64 / 13.0).into_dyn(),
    );

    let all = vmap(|(p, x): (Mlp, Tensor)| forward(&p, &x))
        .in_dims([Some(0), None])
        .fallback(FallbackPolicy::Error)
        .call((&stacked, &x))?;
    println!(
        "ensemble of {MODELS} models on a batch of 32: logits {:?}",
        all.shape()
    );
    let mut worst = 0.0f64;
    for (m, p) in models.iter().enumerate() {
        worst = worst.max(max_diff(&all.select(0, m)?, &forward(p, &x)?)?);
    }
    println!("  max |difference| from the loop over models: {worst:.1e}");

    // Every model's gradient of its mean squared logit, at once.
    let loss = |(p, x): (Mlp, Tensor)| {
        let y = forward(&p, &x)?;
        ops::mean(&ops::mul(&y, &y)?, None, false)
    };
    let grads = vmap(|(p, x): (Mlp, Tensor)| grad(loss).call((&p, &x)))
        .in_dims([Some(0), None])
        .fallback(FallbackPolicy::Error)
        .call((&stacked, &x))?;
    for (m, p) in models.iter().enumerate() {
        let one = grad(loss).call((p, &x))?;
        worst = worst.max(max_diff(&grads.w1.select(0, m)?, &one.w1)?);
        worst = worst.max(max_diff(&grads.b2.select(0, m)?, &one.b2)?);
    }
    println!("  per-model gradients, max |difference| from the loop: {worst:.1e}");
    if worst > 1e-12 {
        return Err(Error::Tensor(format!(
            "ensemble differs from the loop by {worst:e}"
        )));
    }
    Ok(())
}
