//! `jit`: per-sample gradients of a small MLP, traced once and replayed.
//!
//! `cargo run --release --example jit` prints the lowered program (as
//! `jax.make_jaxpr` would), checks that every replay equals eager execution
//! bit for bit, and times eager calls against replays. It exits non-zero on a
//! mismatch.

use std::time::Instant;

use batchrules::prelude::*;
use batchrules::{jit, DType};

#[path = "support/mod.rs"]
mod support;
use support::{labels, torch_bound, uniform};

#[derive(Clone, TensorTree)]
struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

/// The cross-entropy of one example: x is [IN], y a 0-d class index.
fn loss((p, x, y): (Mlp, Tensor, Tensor)) -> Result<Tensor> {
    let h = x.linear(&p.w1, Some(&p.b1))?.tanh()?;
    h.linear(&p.w2, Some(&p.b2))?.cross_entropy(&y)
}

/// Per-sample gradients: parameters shared, data batched along dim 0.
fn per_sample_grads((p, xs, ys): (Mlp, Tensor, Tensor)) -> Result<Mlp> {
    vmap(|(p, x, y): (Mlp, Tensor, Tensor)| grad(loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .call((&p, &xs, &ys))
}

const IN: usize = 16;
const HIDDEN: usize = 32;
const CLASSES: usize = 4;
const BATCH: usize = 8;

fn same_bits(a: &Mlp, b: &Mlp) -> Result<bool> {
    let (mut la, mut lb) = (Vec::new(), Vec::new());
    a.leaves(&mut la);
    b.leaves(&mut lb);
    for (x, y) in la.iter().zip(&lb) {
        let (x, y) = (x.to_array::<f32>()?, y.to_array::<f32>()?);
        if x.shape() != y.shape()
            || x.iter()
                .zip(y.iter())
                .any(|(p, q)| p.to_bits() != q.to_bits())
        {
            return Ok(false);
        }
    }
    Ok(la.len() == lb.len())
}

fn main() -> Result<()> {
    let b1 = torch_bound(IN);
    let b2 = torch_bound(HIDDEN);
    let params = Mlp {
        w1: uniform(&[HIDDEN, IN], 1, b1, DType::F32)?,
        b1: uniform(&[HIDDEN], 2, b1, DType::F32)?,
        w2: uniform(&[CLASSES, HIDDEN], 3, b2, DType::F32)?,
        b2: uniform(&[CLASSES], 4, b2, DType::F32)?,
    };
    let step = jit(per_sample_grads);

    // The program a call replays: the forward's loss values are dropped.
    let xs = uniform(&[BATCH, IN], 5, 1.0, DType::F32)?;
    let ys = labels(BATCH, 6, CLASSES)?;
    let program = step.lower((&params, &xs, &ys))?;
    println!("{program}\n");

    // Every replay equals eager execution, bit for bit; one trace serves all.
    for seed in 0..4 {
        let xs = uniform(&[BATCH, IN], 10 + seed, 1.0, DType::F32)?;
        let ys = labels(BATCH, 20 + seed, CLASSES)?;
        let eager = per_sample_grads((params.clone(), xs.clone(), ys.clone()))?;
        let replayed = step.call((&params, &xs, &ys))?;
        if !same_bits(&eager, &replayed)? {
            eprintln!("batch {seed}: the replay differs from eager execution");
            std::process::exit(1);
        }
    }
    println!(
        "4 batches: every replay equals eager bit for bit ({} trace)",
        step.traces()
    );

    // Eager against replay, 200 calls each.
    let time = |f: &dyn Fn() -> Result<Mlp>| -> Result<f64> {
        let start = Instant::now();
        for _ in 0..200 {
            f()?;
        }
        Ok(start.elapsed().as_secs_f64() / 200.0 * 1e6)
    };
    let eager = time(&|| per_sample_grads((params.clone(), xs.clone(), ys.clone())))?;
    let replay = time(&|| step.call((&params, &xs, &ys)))?;
    println!(
        "per call: eager {eager:.0} µs, jit replay {replay:.0} µs ({:.2}x)",
        eager / replay
    );
    Ok(())
}
