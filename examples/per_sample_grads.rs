//! Per-sample gradients: `cargo run --release --example per_sample_grads`.
//!
//! An MLP 64 → 128 → 10 with cross-entropy, a batch of 256 examples. The
//! gradient of each example's loss with respect to the parameters, for all
//! examples at once, is `vmap(grad(loss))` with the parameters shared
//! (in_dim `None`) and the data batched (in_dim 0). The example checks it
//! against the loop of single-example gradients and, for the last layer,
//! against the hand formula `outer(softmax(logits) - onehot(y), hidden)`,
//! in f64 (to 1e-10) and in f32 (to 1e-4).

use batchrules::Reduction;
use std::time::Instant;

use batchrules::{grad, ops, vmap, DType, Error, FallbackPolicy, Result, Tensor, TensorTree};
use ndarray::{Array1, Array2, ArrayD, Ix1, Ix2};

/// The parameters of the MLP; gradients come back in the same struct.
#[derive(TensorTree)]
struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

const BATCH: usize = 256;
const IN: usize = 64;
const HIDDEN: usize = 128;
const CLASSES: usize = 10;

/// Deterministic values in (-scale, scale).
fn values(n: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn tensor(shape: &[usize], seed: u64, scale: f64, dtype: DType) -> Result<Tensor> {
    let v = values(shape.iter().product(), seed, scale);
    match dtype {
        DType::F32 => Tensor::from_shape_vec(shape, v.iter().map(|&x| x as f32).collect()),
        _ => Tensor::from_shape_vec(shape, v),
    }
}

fn params(dtype: DType) -> Result<Mlp> {
    Ok(Mlp {
        w1: tensor(&[HIDDEN, IN], 1, 0.125, dtype)?,
        b1: tensor(&[HIDDEN], 2, 0.1, dtype)?,
        w2: tensor(&[CLASSES, HIDDEN], 3, 0.09, dtype)?,
        b2: tensor(&[CLASSES], 4, 0.1, dtype)?,
    })
}

/// The loss of one example: x is [64], y a 0-d class index.
fn loss(p: &Mlp, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let h = ops::relu(&ops::linear(x, &p.w1, Some(&p.b1))?)?;
    let logits = ops::linear(&h, &p.w2, Some(&p.b2))?;
    ops::cross_entropy(&logits, y, Reduction::Mean)
}

fn per_example_loss((p, x, y): (Mlp, Tensor, Tensor)) -> Result<Tensor> {
    loss(&p, &x, &y)
}

/// The per-sample gradients of the whole batch.
fn per_sample_grads(p: &Mlp, xs: &Tensor, ys: &Tensor) -> Result<Mlp> {
    vmap(|(p, x, y): (Mlp, Tensor, Tensor)| grad(per_example_loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((p, xs, ys))
}

fn as_f64(t: &Tensor) -> Result<ArrayD<f64>> {
    match t.dtype() {
        DType::F32 => Ok(t.to_array::<f32>()?.mapv(f64::from)),
        _ => t.to_array::<f64>(),
    }
}

fn max_diff(a: &Tensor, b: &Tensor) -> Result<f64> {
    if a.shape() != b.shape() {
        return Err(Error::Tensor(format!(
            "shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    }
    let (a, b) = (as_f64(a)?, as_f64(b)?);
    Ok(a.iter()
        .zip(b.iter())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max))
}

fn check(what: &str, diff: f64, tol: f64) -> Result<()> {
    println!("  {what}: max |difference| = {diff:.2e} (tolerance {tol:.0e})");
    if diff <= tol {
        Ok(())
    } else {
        Err(Error::Tensor(format!("{what}: {diff:e} exceeds {tol:e}")))
    }
}

/// The last layer's gradient by hand, for example `i`:
/// `delta = softmax(logits) - onehot(y)`, `dW2 = outer(delta, h)`, `db2 = delta`.
fn last_layer_by_hand(p: &Mlp, x: &Tensor, y: usize) -> Result<(Array2<f64>, Array1<f64>)> {
    let w1 = as_f64(&p.w1)?.into_dimensionality::<Ix2>().map_err(shape)?;
    let b1 = as_f64(&p.b1)?.into_dimensionality::<Ix1>().map_err(shape)?;
    let w2 = as_f64(&p.w2)?.into_dimensionality::<Ix2>().map_err(shape)?;
    let b2 = as_f64(&p.b2)?.into_dimensionality::<Ix1>().map_err(shape)?;
    let x = as_f64(x)?.into_dimensionality::<Ix1>().map_err(shape)?;
    let h = (w1.dot(&x) + b1).mapv(|v| v.max(0.0));
    let logits = w2.dot(&h) + b2;
    let m = logits.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let e = logits.mapv(|v| (v - m).exp());
    let mut delta = &e / e.sum();
    delta[y] -= 1.0;
    let dw2 = Array2::from_shape_fn((CLASSES, HIDDEN), |(i, j)| delta[i] * h[j]);
    Ok((dw2, delta))
}

fn shape(e: ndarray::ShapeError) -> Error {
    Error::Tensor(e.to_string())
}

fn run(dtype: DType, tol: f64) -> Result<()> {
    println!("{dtype}:");
    let p = params(dtype)?;
    let xs = tensor(&[BATCH, IN], 5, 1.0, dtype)?;
    let labels: Vec<i64> = (0..BATCH).map(|i| ((i * 7 + 3) % CLASSES) as i64).collect();
    let ys = Tensor::from_shape_vec(&[BATCH], labels.clone())?;

    let start = Instant::now();
    let batched = per_sample_grads(&p, &xs, &ys)?;
    let t_vmap = start.elapsed();
    let mut leaves = Vec::new();
    batched.leaves(&mut leaves);
    println!(
        "  vmap(grad(loss)) over {BATCH} examples: {:?}, gradient shapes {:?}",
        t_vmap,
        leaves.iter().map(Tensor::shape).collect::<Vec<_>>()
    );

    // Against the loop of single-example gradients.
    let start = Instant::now();
    let mut worst = 0.0f64;
    for i in 0..BATCH {
        let (x, y) = (xs.select(0, i)?, ys.select(0, i)?);
        let one = grad(per_example_loss).call((&p, &x, &y))?;
        let mut want = Vec::new();
        one.leaves(&mut want);
        for (b, w) in leaves.iter().zip(&want) {
            worst = worst.max(max_diff(&b.select(0, i)?, w)?);
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
        let (dw2, db2) = last_layer_by_hand(&p, &xs.select(0, i)?, label as usize)?;
        let got_w = as_f64(&batched.w2.select(0, i)?)?;
        let got_b = as_f64(&batched.b2.select(0, i)?)?;
        let dw2 = dw2.into_dyn();
        let db2 = db2.into_dyn();
        for (a, b) in got_w
            .iter()
            .zip(dw2.iter())
            .chain(got_b.iter().zip(db2.iter()))
        {
            worst = worst.max((a - b).abs());
        }
    }
    check("last layer against outer(delta, hidden)", worst, tol)
}

fn main() -> Result<()> {
    run(DType::F64, 1e-10)?;
    run(DType::F32, 1e-4)?;
    println!("per-sample gradients match the loop and the hand formula");
    Ok(())
}
