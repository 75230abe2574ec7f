//! MAML on sine regression, after functorch's `maml_regression` example:
//! `cargo run --example maml`.
//!
//! Each task is a sine wave `y = A sin(x + φ)` with `A` in [0.1, 5] and `φ`
//! in [0, π]; a model sees K = 10 support points and is scored on 10 query
//! points, all in [-5, 5]. Model-agnostic meta-learning (Finn et al., 2017)
//! learns initial weights of an MLP 1 -> 40 -> 40 -> 1 (relu) from which two
//! SGD steps on a task's support points fit its query points:
//!
//! - the inner steps run inside `grad` (second order: the meta-gradient
//!   differentiates through them);
//! - `vmap` runs the adaptation over a batch of 25 tasks at once;
//! - the outer loop is Adam (written here with `tree_zip_map`) on the
//!   meta-loss, for 300 steps, each on a fresh batch of tasks.
//!
//! Checks (exit status 1 if one fails): the meta-loss and meta-gradient of
//! the first step against torch.func (recorded by
//! `scripts/reference/record_model_examples.py`) to 1e-4; and, as a
//! property of training, that the meta-loss falls: the mean of the last 50
//! steps' meta-losses is below two thirds of the mean of the first 50 (a
//! few hundred steps is a short run for MAML: the loss is still falling).

#[path = "support/mod.rs"]
mod support;

use batchrules::prelude::*;
use support::{torch_bound, uniform, unit_values, Reference};

const TASKS: usize = 25;
const K: usize = 10;
/// The inner SGD steps' learning rate and count.
const ALPHA: f64 = 0.1;
const INNER_STEPS: usize = 2;
const OUTER_STEPS: usize = 600;
const META_LR: f64 = 3e-3;

#[derive(Clone, TensorTree)]
struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
    w3: Tensor,
    b3: Tensor,
}

impl Mlp {
    /// Leaf k from the stream 80 + k, within PyTorch's default bounds.
    fn new() -> Result<Self> {
        let u =
            |shape: &[usize], seed, fan_in| uniform(shape, seed, torch_bound(fan_in), DType::F32);
        Ok(Mlp {
            w1: u(&[40, 1], 80, 1)?,
            b1: u(&[40], 81, 1)?,
            w2: u(&[40, 40], 82, 40)?,
            b2: u(&[40], 83, 40)?,
            w3: u(&[1, 40], 84, 40)?,
            b3: u(&[1], 85, 40)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.linear(&self.w1, Some(&self.b1))?
            .relu()?
            .linear(&self.w2, Some(&self.b2))?
            .relu()?
            .linear(&self.w3, Some(&self.b3))
    }
}

/// A batch of tasks (or, under vmap, one task): support points `x1, y1` and
/// query points `x2, y2`, each `[K, 1]`.
#[derive(Clone, TensorTree)]
struct Tasks {
    x1: Tensor,
    y1: Tensor,
    x2: Tensor,
    y2: Tensor,
}

/// Step `step`'s tasks (the reference script's `sine_tasks`).
fn sine_tasks(step: u32) -> Result<Tasks> {
    let u = |j: u32, n: usize| unit_values(10_000 + 4 * step + j, n);
    let amp: Vec<f64> = u(0, TASKS)
        .iter()
        .map(|v| 0.1 + 4.9 * (v + 1.0) / 2.0)
        .collect();
    let phase: Vec<f64> = u(1, TASKS)
        .iter()
        .map(|v| std::f64::consts::PI * (v + 1.0) / 2.0)
        .collect();
    let points = |j: u32| -> Result<(Tensor, Tensor)> {
        let x: Vec<f64> = u(j, TASKS * K).iter().map(|v| 5.0 * v).collect();
        let y: Vec<f32> = x
            .iter()
            .enumerate()
            .map(|(i, x)| (amp[i / K] * (x + phase[i / K]).sin()) as f32)
            .collect();
        let x: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let shape = [TASKS, K, 1];
        Ok((
            Tensor::from_shape_vec(&shape, x)?,
            Tensor::from_shape_vec(&shape, y)?,
        ))
    };
    let (x1, y1) = points(2)?;
    let (x2, y2) = points(3)?;
    Ok(Tasks { x1, y1, x2, y2 })
}

fn mse((p, x, y): (Mlp, Tensor, Tensor)) -> Result<Tensor> {
    p.forward(&x)?.mse_loss(&y)
}

/// One task's query loss after `INNER_STEPS` SGD steps on its support points.
fn adapted_loss((p, t): (Mlp, Tasks)) -> Result<Tensor> {
    let mut q = p;
    for _ in 0..INNER_STEPS {
        let g = grad(mse).call((&q, &t.x1, &t.y1))?;
        q = tree_zip_map(&q, &g, |w, g| w - &(g * ALPHA)?)?;
    }
    mse((q, t.x2, t.y2))
}

/// The mean of the adapted query losses over a batch of tasks.
fn meta_loss((p, tasks): (Mlp, Tasks)) -> Result<Tensor> {
    vmap(adapted_loss)
        .in_dims([None, Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((&p, &tasks))?
        .mean()
}

/// Adam's state: the moment estimates and the step count.
struct Adam {
    m: Mlp,
    v: Mlp,
    t: i32,
}

impl Adam {
    const B1: f64 = 0.9;
    const B2: f64 = 0.999;
    const EPS: f64 = 1e-8;

    fn new(p: &Mlp) -> Result<Self> {
        let zeros = tree_map(p, |w| w * 0.0)?;
        Ok(Adam {
            m: zeros.clone(),
            v: zeros,
            t: 0,
        })
    }

    fn step(&mut self, p: &Mlp, g: &Mlp, lr: f64) -> Result<Mlp> {
        self.t += 1;
        self.m = tree_zip_map(&self.m, g, |m, g| (m * Self::B1)? + (g * (1.0 - Self::B1))?)?;
        self.v = tree_zip_map(&self.v, g, |v, g| {
            (v * Self::B2)? + ((g * g)? * (1.0 - Self::B2))?
        })?;
        let (c1, c2) = (1.0 - Self::B1.powi(self.t), 1.0 - Self::B2.powi(self.t));
        let update = tree_zip_map(&self.m, &self.v, |m, v| {
            (m * (lr / c1))? / &(((v / c2)?.sqrt()? + Self::EPS)?)
        })?;
        tree_zip_map(p, &update, |w, u| w - u)
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn main() -> Result<()> {
    let mut params = Mlp::new()?;
    let mut reference = Reference::load("maml.json");

    // The first step's meta-loss and meta-gradient, against torch.func.
    let (loss, meta_grad) = value_and_grad(meta_loss).call((&params, &sine_tasks(0)?))?;
    reference.check("meta_loss", &loss, 1e-4, 1e-4)?;
    for (key, g) in tree_leaves(&meta_grad) {
        reference.check(&format!("meta_grad.{key}"), &g, 1e-4, 1e-4)?;
    }

    let mut adam = Adam::new(&params)?;
    let mut losses = Vec::new();
    for step in 0..OUTER_STEPS as u32 {
        let (loss, g) = value_and_grad(meta_loss).call((&params, &sine_tasks(step)?))?;
        params = adam.step(&params, &g, META_LR)?;
        losses.push(loss.to_scalar::<f32>()? as f64);
        if step % 100 == 0 || step + 1 == OUTER_STEPS as u32 {
            println!("step {step:>3}: meta-loss {:.4}", losses[losses.len() - 1]);
        }
    }
    let (first, last) = (mean(&losses[..50]), mean(&losses[losses.len() - 50..]));
    println!("mean meta-loss of the first 50 steps {first:.4}, of the last 50 {last:.4}");
    if last >= 2.0 / 3.0 * first {
        reference.fail(format!(
            "the meta-loss did not fall by a third: {first:.4} over the first 50 steps, {last:.4} over the last 50"
        ));
    }
    reference.finish();
    Ok(())
}
