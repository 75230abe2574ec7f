//! Per-sample gradients: `cargo run --release --example per_sample_grads`.
//!
//! An MLP 64 → 128 → 10 with cross-entropy, a batch of 256 examples, as in
//! torch.func's per-sample-gradients tutorial: the model, the loss of one
//! example, and `vmap(grad(loss))` with the parameters shared (in_dim `None`)
//! and the data batched (in_dim 0). The example checks the result against
//! the loop of single-example gradients and, for the last layer, against the
//! hand formula `outer(softmax(logits) - onehot(y), hidden)`, in f64 (to
//! 1e-10) and in f32 (to 1e-4); then takes one SGD step with the batch's
//! mean gradient and checks that the loss falls.

use std::time::Instant;

use batchrules::prelude::*;
use ndarray::{Array1, Array2};

/// The parameters of the MLP; gradients come back in the same struct.
#[derive(Clone, TensorTree)]
struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

/// The loss of one example: x is [64], y a 0-d class index.
fn loss((p, x, y): (Mlp, Tensor, Tensor)) -> Result<Tensor> {
    let h = x.linear(&p.w1, Some(&p.b1))?.relu()?;
    h.linear(&p.w2, Some(&p.b2))?.cross_entropy(&y)
}

/// The per-sample gradients of the whole batch.
fn per_sample_grads(params: &Mlp, xs: &Tensor, ys: &Tensor) -> Result<Mlp> {
    vmap(|(p, x, y): (Mlp, Tensor, Tensor)| grad(loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((params, xs, ys))
}

const BATCH: usize = 256;
const IN: usize = 64;
const HIDDEN: usize = 128;
const CLASSES: usize = 10;

/// Deterministic values in (-scale, scale), as a tensor of `shape`.
fn tensor(shape: &[usize], seed: u64, scale: f64, dtype: DType) -> Result<Tensor> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let values: Vec<f64> = (0..shape.iter().product())
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
        })
        .collect();
    Tensor::from_shape_vec(shape, values)?.to_dtype(dtype)
}

fn params(dtype: DType) -> Result<Mlp> {
    Ok(Mlp {
        w1: tensor(&[HIDDEN, IN], 1, 0.125, dtype)?,
        b1: tensor(&[HIDDEN], 2, 0.1, dtype)?,
        w2: tensor(&[CLASSES, HIDDEN], 3, 0.09, dtype)?,
        b2: tensor(&[CLASSES], 4, 0.1, dtype)?,
    })
}

/// The largest absolute difference between two tensors of one shape.
fn max_diff(a: &Tensor, b: &Tensor) -> Result<f64> {
    (a - b)?
        .abs()?
        .amax()?
        .to_dtype(DType::F64)?
        .to_scalar::<f64>()
}

fn check(what: &str, diff: f64, tol: f64) -> Result<()> {
    println!("  {what}: max |difference| = {diff:.2e} (tolerance {tol:.0e})");
    if diff <= tol {
        Ok(())
    } else {
        Err(Error::invalid(format!("{what}: {diff:e} exceeds {tol:e}")))
    }
}

/// The last layer's gradient by hand, in f64 ndarray code:
/// `delta = softmax(logits) - onehot(y)`, `dW2 = outer(delta, h)`, `db2 = delta`.
fn last_layer_by_hand(p: &Mlp, x: &Tensor, y: usize) -> Result<(Array2<f64>, Array1<f64>)> {
    let f64s = |t: &Tensor| t.to_dtype(DType::F64);
    let (w1, b1) = (f64s(&p.w1)?.to_array2()?, f64s(&p.b1)?.to_array1::<f64>()?);
    let (w2, b2) = (f64s(&p.w2)?.to_array2()?, f64s(&p.b2)?.to_array1::<f64>()?);
    let x = f64s(x)?.to_array1::<f64>()?;
    let h = (w1.dot(&x) + b1).mapv(|v| v.max(0.0));
    let logits = w2.dot(&h) + b2;
    let m = logits.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let e = logits.mapv(|v| (v - m).exp());
    let mut delta = &e / e.sum();
    delta[y] -= 1.0;
    let dw2 = Array2::from_shape_fn((CLASSES, HIDDEN), |(i, j)| delta[i] * h[j]);
    Ok((dw2, delta))
}

/// The mean loss over the batch.
fn batch_loss(p: &Mlp, xs: &Tensor, ys: &Tensor) -> Result<f64> {
    let losses = vmap(loss)
        .in_dims([None, Some(0), Some(0)])
        .call((p, xs, ys))?;
    losses.mean()?.to_dtype(DType::F64)?.to_scalar()
}

fn run(dtype: DType, tol: f64) -> Result<()> {
    println!("{dtype}:");
    let params = params(dtype)?;
    let xs = tensor(&[BATCH, IN], 5, 1.0, dtype)?;
    let labels: Vec<i64> = (0..BATCH).map(|i| ((i * 7 + 3) % CLASSES) as i64).collect();
    let ys = Tensor::from(labels.clone());

    let start = Instant::now();
    let grads = per_sample_grads(&params, &xs, &ys)?;
    let t_vmap = start.elapsed();
    let shapes: Vec<_> = tree_leaves(&grads)
        .into_iter()
        .map(|(key, g)| format!("{key} {:?}", g.shape()))
        .collect();
    println!("  vmap(grad(loss)) over {BATCH} examples: {t_vmap:?}; {shapes:?}");

    // Against the loop of single-example gradients.
    let start = Instant::now();
    let mut worst = 0.0f64;
    let batched = tree_leaves(&grads);
    for i in 0..BATCH {
        let (x, y) = (xs.select(0, i)?, ys.select(0, i)?);
        let one = grad(loss).call((&params, &x, &y))?;
        for ((_, want), (_, all)) in tree_leaves(&one).iter().zip(&batched) {
            worst = worst.max(max_diff(&all.select(0, i)?, want)?);
        }
    }
    println!(
        "  the loop of {BATCH} single-example grads: {:?}",
        start.elapsed()
    );
    check("vmap(grad) against the loop", worst, tol)?;

    // The last layer against the hand formula.
    let mut worst = 0.0f64;
    for (i, &label) in labels.iter().enumerate() {
        let (dw2, db2) = last_layer_by_hand(&params, &xs.select(0, i)?, label as usize)?;
        let got_w = grads
            .w2
            .select(0, i)?
            .to_dtype(DType::F64)?
            .to_array2::<f64>()?;
        let got_b = grads
            .b2
            .select(0, i)?
            .to_dtype(DType::F64)?
            .to_array1::<f64>()?;
        worst = worst.max((&got_w - &dw2).fold(0.0, |m: f64, d| m.max(d.abs())));
        worst = worst.max((&got_b - &db2).fold(0.0, |m: f64, d| m.max(d.abs())));
    }
    check("last layer against outer(delta, hidden)", worst, tol)?;

    // The batch's mean gradient, and an SGD step over the whole struct.
    let step: Mlp = tree_map(&grads, |g| g.mean_dim(0))?;
    let updated = tree_zip_map(&params, &step, |p, g| p - &(g * 0.5)?)?;
    let (before, after) = (
        batch_loss(&params, &xs, &ys)?,
        batch_loss(&updated, &xs, &ys)?,
    );
    println!("  one SGD step (lr 0.5): mean loss {before:.6} -> {after:.6}");
    if after >= before {
        return Err(Error::invalid("the SGD step did not lower the loss"));
    }
    Ok(())
}

fn main() -> Result<()> {
    run(DType::F64, 1e-10)?;
    run(DType::F32, 1e-4)?;
    println!("per-sample gradients match the loop and the hand formula");
    Ok(())
}
