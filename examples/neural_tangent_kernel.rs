//! The empirical neural tangent kernel, after functorch's NTK tutorial:
//! `cargo run --example neural_tangent_kernel`.
//!
//! The tutorial's CNN (conv 3->32, relu, conv 32->32, relu, conv 32->32, all
//! 3x3, flatten, linear 21632->10) on images of 3x32x32, f32. The empirical
//! NTK between 20 images `x1` and 5 images `x2` (the tutorial's sizes) is
//! `Θ[n, m, a, b] = Σ_params J(x1[n])[a, :] · J(x2[m])[b, :]`, `[20, 5, 10, 10]`,
//! computed both ways the tutorial does:
//!
//! 1. **Jacobian contraction**: `vmap(jacrev(f))` over each batch gives every
//!    parameter's Jacobian; each is flattened and contracted with
//!    `einsum("Naf,Mbf->NMab")`, and the contractions are summed over the
//!    parameters;
//! 2. **NTK-vector products**: for each pair of images, the pullback of `f`
//!    at `x1[n]` (`vjp`) takes each row of the identity to parameter space,
//!    and `jvp` of `f` at `x2[m]` pushes it forward; `vmap` runs over the
//!    rows and two nested `vmap`s over the pairs.
//!
//! Both are checked against each other and against torch.func (the same two
//! methods, recorded by `scripts/reference/record_model_examples.py` from the
//! same parameters and images) to 1e-4. Exits with status 1 if a check fails.

#[path = "support/mod.rs"]
mod support;

use std::time::Instant;

use batchrules::prelude::*;
use support::{max_abs_diff, torch_bound, uniform, Reference};

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
    #[tree(rename = "conv3.weight")]
    conv3_w: Tensor,
    #[tree(rename = "conv3.bias")]
    conv3_b: Tensor,
    #[tree(rename = "fc.weight")]
    fc_w: Tensor,
    #[tree(rename = "fc.bias")]
    fc_b: Tensor,
}

impl Cnn {
    /// Leaf k from the stream 70 + k, within PyTorch's default bounds (the
    /// reference script's `ntk_params`).
    fn new() -> Result<Self> {
        let u =
            |shape: &[usize], seed, fan_in| uniform(shape, seed, torch_bound(fan_in), DType::F32);
        Ok(Cnn {
            conv1_w: u(&[32, 3, 3, 3], 70, 27)?,
            conv1_b: u(&[32], 71, 27)?,
            conv2_w: u(&[32, 32, 3, 3], 72, 288)?,
            conv2_b: u(&[32], 73, 288)?,
            conv3_w: u(&[32, 32, 3, 3], 74, 288)?,
            conv3_b: u(&[32], 75, 288)?,
            fc_w: u(&[10, 21632], 76, 21632)?,
            fc_b: u(&[10], 77, 21632)?,
        })
    }

    /// The 10 outputs of one image `[3, 32, 32]` (run as a batch of one).
    fn single(&self, x: &Tensor) -> Result<Tensor> {
        let conv = |x: &Tensor, w, b| ops::conv2d(x, w, Some(b), &[1], &[0], &[1], 1);
        let x = conv(&x.unsqueeze(0)?, &self.conv1_w, &self.conv1_b)?.relu()?;
        let x = conv(&x, &self.conv2_w, &self.conv2_b)?.relu()?;
        let x = conv(&x, &self.conv3_w, &self.conv3_b)?;
        x.flatten_from(1)?
            .linear(&self.fc_w, Some(&self.fc_b))?
            .squeeze_dim(0)
    }
}

/// Method 1: every parameter's Jacobian over a batch, flattened to
/// `[batch, 10, numel]`.
fn jacobians(p: &Cnn, x: &Tensor) -> Result<Vec<Tensor>> {
    let jac: Cnn = vmap(|(p, x): (Cnn, Tensor)| jacrev(|q: Cnn| q.single(&x)).call(&p))
        .in_dims([None, Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((p, x))?;
    tree_leaves(&jac)
        .into_iter()
        .map(|(_, j)| j.flatten_from(2))
        .collect()
}

fn ntk_by_contraction(p: &Cnn, x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
    let mut total: Option<Tensor> = None;
    for (a, b) in jacobians(p, x1)?.iter().zip(jacobians(p, x2)?) {
        let term = ops::einsum("Naf,Mbf->NMab", &[a.clone(), b])?;
        total = Some(match total {
            Some(t) => (t + term)?,
            None => term,
        });
    }
    Ok(total.expect("the model has parameters"))
}

/// Method 2: `Θ(a, b)` of one pair of images, `[10, 10]`, by NTK-vector
/// products: column `v` is `J(b) Jᵀ(a) v`.
fn ntk_pair(p: &Cnn, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (out, pullback) = vjp(|q: Cnn| q.single(a), p)?;
    let n = out.shape()[0];
    let mut eye = vec![0.0f32; n * n];
    eye.iter_mut().step_by(n + 1).for_each(|e| *e = 1.0);
    let basis = Tensor::from_shape_vec(&[n, n], eye)?;
    vmap(|v: Tensor| {
        let tangent = pullback.call(&v)?;
        let (_, pushed) = jvp(|q: Cnn| q.single(b), p, &tangent)?;
        Ok(pushed)
    })
    .fallback(FallbackPolicy::Error)
    .call(&basis)
}

fn ntk_by_vector_products(p: &Cnn, x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
    let over_x2 = |a: Tensor| {
        vmap(|b: Tensor| ntk_pair(p, &a, &b))
            .fallback(FallbackPolicy::Error)
            .call(x2)
    };
    vmap(over_x2).fallback(FallbackPolicy::Error).call(x1)
}

fn main() -> Result<()> {
    let params = Cnn::new()?;
    let x1 = uniform(&[20, 3, 32, 32], 700, 1.0, DType::F32)?;
    let x2 = uniform(&[5, 3, 32, 32], 701, 1.0, DType::F32)?;
    let mut reference = Reference::load("neural_tangent_kernel.json");
    let (rtol, atol) = (1e-4, 1e-4);

    let start = Instant::now();
    let contraction = ntk_by_contraction(&params, &x1, &x2)?;
    println!(
        "NTK of 20 x 5 images by Jacobian contraction: {:?} in {:.2} s (this build)",
        contraction.shape(),
        start.elapsed().as_secs_f64()
    );
    reference.check("ntk", &contraction, rtol, atol)?;

    let start = Instant::now();
    let products = ntk_by_vector_products(&params, &x1, &x2)?;
    println!(
        "NTK by NTK-vector products (vmap of vjp then jvp): {:?} in {:.2} s",
        products.shape(),
        start.elapsed().as_secs_f64()
    );
    reference.check("ntk_vps", &products, rtol, atol)?;

    let scale = contraction.abs()?.amax()?.to_scalar::<f32>()? as f64;
    let gap = max_abs_diff(&contraction, &products)?;
    println!("  the two methods: max |difference| {gap:.1e} (largest entry {scale:.3})");
    if gap > atol + rtol * scale {
        reference.fail(format!("the two methods differ by {gap:e}"));
    }
    reference.finish();
    Ok(())
}
