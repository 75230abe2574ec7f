//! W1 and W8 at batch 1024 on one thread and on every core, with and without
//! the spin window, in alternating rounds:
//! `cargo run --release --features rayon --example two_cores [rounds]`.
//!
//! Each call is timed on its own inside one `install` per configuration (a
//! loop of calls, as a training loop makes them), and the median and mean per
//! call are printed. The parallel results are checked against the one-thread
//! ones first (the example exits non-zero on a mismatch).

use batchrules::Reduction;
use std::hint::black_box;
use std::time::{Duration, Instant};

use batchrules::{grad, ops, vmap, Error, FallbackPolicy, Result, Tensor};

type Mlp = (Tensor, Tensor, Tensor, Tensor);
/// A workload: one call, its results.
type Workload<'a> = Box<dyn Fn() -> Result<Vec<Tensor>> + Sync + 'a>;

fn tensor(shape: &[usize], scale: f32) -> Tensor {
    let n: usize = shape.iter().product();
    let values = (0..n).map(|i| ((i as f32) * 0.37).sin() * scale).collect();
    Tensor::from(ndarray::ArrayD::from_shape_vec(shape.to_vec(), values).expect("shape"))
}

/// W1: the MLP 64 -> 128 -> relu -> 10 -> log_softmax (weights `[in, out]`).
fn w1(p: &Mlp, xs: &Tensor) -> Result<Vec<Tensor>> {
    let y = vmap(|x: Tensor| {
        let h = ops::relu(&ops::add(&ops::matmul(&x, &p.0)?, &p.1)?)?;
        ops::log_softmax(&ops::add(&ops::matmul(&h, &p.2)?, &p.3)?, -1)
    })
    .call(xs)?;
    Ok(vec![y])
}

/// W8: per-sample gradients of the MLP (weights `[out, in]`) with cross-entropy.
fn w8(p: &Mlp, xs: &Tensor, ys: &Tensor) -> Result<Vec<Tensor>> {
    let loss = |(p, x, y): (Mlp, Tensor, Tensor)| {
        let h = ops::relu(&ops::linear(&x, &p.0, Some(&p.1))?)?;
        ops::cross_entropy(&ops::linear(&h, &p.2, Some(&p.3))?, &y, Reduction::Mean)
    };
    let g = vmap(move |(p, x, y): (Mlp, Tensor, Tensor)| grad(loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((p, xs, ys))?;
    Ok(vec![g.0, g.1, g.2, g.3])
}

/// Median and mean microseconds per call of `f`, for about `time`.
fn time_calls(f: &(dyn Fn() -> Result<Vec<Tensor>> + Sync), time: Duration) -> Result<(f64, f64)> {
    let mut us = Vec::new();
    let start = Instant::now();
    while start.elapsed() < time || us.len() < 5 {
        let t = Instant::now();
        black_box(f()?);
        us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    us.sort_by(f64::total_cmp);
    Ok((us[us.len() / 2], us.iter().sum::<f64>() / us.len() as f64))
}

fn largest_difference(a: &[Tensor], b: &[Tensor]) -> Result<f32> {
    let mut worst = 0.0f32;
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (x.to_array::<f32>()?, y.to_array::<f32>()?);
        if x.shape() != y.shape() {
            return Err(Error::invalid("the results' shapes differ"));
        }
        worst = x
            .iter()
            .zip(&y)
            .fold(worst, |m, (p, q)| m.max((p - q).abs()));
    }
    Ok(worst)
}

fn main() -> Result<()> {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let batch = 1024;
    let w1_params = (
        tensor(&[64, 128], 0.125),
        tensor(&[128], 1.0),
        tensor(&[128, 10], 0.09),
        tensor(&[10], 1.0),
    );
    let w8_params = (
        tensor(&[128, 64], 0.125),
        tensor(&[128], 1.0),
        tensor(&[10, 128], 0.09),
        tensor(&[10], 1.0),
    );
    let xs = tensor(&[batch, 64], 1.0);
    let labels: Vec<i64> = (0..batch).map(|i| ((i * 7 + 3) % 10) as i64).collect();
    let ys = Tensor::from_shape_vec(&[batch], labels)?;
    let pool = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| Error::invalid(format!("cannot build a pool: {e}")))
    };
    let (one, all) = (pool(1)?, pool(0)?);
    let workloads: [(&str, Workload); 2] = [
        ("W1", Box::new(|| w1(&w1_params, &xs))),
        ("W8", Box::new(|| w8(&w8_params, &xs, &ys))),
    ];
    let spin = batchrules::tuning::DEFAULT_SPIN_WINDOW;
    for (name, f) in &workloads {
        let serial = one.install(f)?;
        let parallel = all.install(f)?;
        let worst = largest_difference(&serial, &parallel)?;
        if worst > 1e-4 {
            return Err(Error::invalid(format!(
                "{name}: the parallel result differs from the one-thread one by {worst}"
            )));
        }
    }
    println!(
        "batch {batch}, {} threads in the pool; median / mean µs per call",
        all.current_num_threads()
    );
    for round in 1..=rounds {
        for (name, f) in &workloads {
            let mut line = format!("round {round} {name}:");
            for (config, pool, window) in [
                ("1 thread", &one, spin),
                ("all, spin", &all, spin),
                ("all, no spin", &all, Duration::ZERO),
            ] {
                batchrules::tuning::set_spin_window(window);
                let (median, mean) = pool.install(|| time_calls(f, Duration::from_secs(1)))?;
                line.push_str(&format!("  {config} {median:.0} / {mean:.0}"));
            }
            batchrules::tuning::set_spin_window(spin);
            println!("{line}");
        }
    }
    Ok(())
}
