//! The model workloads W12-W15 (issue 29): per-sample gradients of the
//! DP-SGD paper's MNIST CNN (W12), of the transformer block of
//! `examples/transformer_per_sample_grads.rs` (W13), one DP-SGD step of W12
//! (W14), and the empirical NTK of `examples/neural_tangent_kernel.rs`'s CNN
//! for two batches of 16 (W15). Parameters and inputs come from the
//! examples' generator (`examples/support`), which
//! `scripts/reference/examples_common.py` reproduces bit for bit, so
//! `benches/peers_models.py` times its peers on the very same numbers (and
//! prints a checksum of each result to compare).

use batchrules::prelude::*;
use batchrules::FallbackPolicy;

#[path = "../../examples/support/mod.rs"]
mod support;
use support::{labels, torch_bound, uniform};

// ---------------------------------------------------------------------------
// W12 and W14: the MNIST CNN of Abadi et al., "Deep Learning with Differential
// Privacy" (2016), as Opacus' MNIST example writes it: conv 1->16 8x8 stride
// 2 padding 3, tanh, max_pool 2 stride 1, conv 16->32 4x4 stride 2, tanh,
// max_pool 2 stride 1, linear 512->32, tanh, linear 32->10.

/// W12's batch.
pub const MNIST_BATCH: usize = 256;

/// The DP-SGD paper's MNIST CNN.
#[derive(Clone, TensorTree)]
pub struct MnistCnn {
    conv1_w: Tensor,
    conv1_b: Tensor,
    conv2_w: Tensor,
    conv2_b: Tensor,
    fc1_w: Tensor,
    fc1_b: Tensor,
    fc2_w: Tensor,
    fc2_b: Tensor,
}

impl MnistCnn {
    /// Leaf k from the stream 90 + k, within PyTorch's default bounds
    /// (`peers_models.py`'s `mnist_params`).
    pub fn new() -> Result<Self> {
        let u =
            |shape: &[usize], seed, fan_in| uniform(shape, seed, torch_bound(fan_in), DType::F32);
        Ok(MnistCnn {
            conv1_w: u(&[16, 1, 8, 8], 90, 64)?,
            conv1_b: u(&[16], 91, 64)?,
            conv2_w: u(&[32, 16, 4, 4], 92, 256)?,
            conv2_b: u(&[32], 93, 256)?,
            fc1_w: u(&[32, 512], 94, 512)?,
            fc1_b: u(&[32], 95, 512)?,
            fc2_w: u(&[10, 32], 96, 32)?,
            fc2_b: u(&[10], 97, 32)?,
        })
    }

    /// Logits `[n, 10]` of images `[n, 1, 28, 28]`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let pool = |x: Tensor| ops::max_pool2d(&x, &[2], Some(&[1]), &[0], &[1], false);
        let x = ops::conv2d(x, &self.conv1_w, Some(&self.conv1_b), &[2], &[3], &[1], 1)?.tanh()?;
        let x = pool(x)?;
        let x = ops::conv2d(&x, &self.conv2_w, Some(&self.conv2_b), &[2], &[0], &[1], 1)?.tanh()?;
        let x = pool(x)?;
        x.flatten_from(1)?
            .linear(&self.fc1_w, Some(&self.fc1_b))?
            .tanh()?
            .linear(&self.fc2_w, Some(&self.fc2_b))
    }
}

/// W12's inputs: images `[256, 1, 28, 28]` in [-1, 1) (stream 900) and
/// labels (stream 901).
pub fn mnist_inputs() -> Result<(Tensor, Tensor)> {
    let x = uniform(&[MNIST_BATCH, 1, 28, 28], 900, 1.0, DType::F32)?;
    Ok((x, labels(MNIST_BATCH, 901, 10)?))
}

/// The loss of one example (`[1, 28, 28]`, a 0-d label), as a batch of one.
fn mnist_loss((p, x, y): (MnistCnn, Tensor, Tensor)) -> Result<Tensor> {
    p.forward(&x.unsqueeze(0)?)?.cross_entropy(&y.unsqueeze(0)?)
}

/// W12: per-sample gradients by `vmap(grad)`, no fallback loop.
pub fn mnist_per_sample_grads(p: &MnistCnn, x: &Tensor, y: &Tensor) -> Result<MnistCnn> {
    vmap(|(p, x, y): (MnistCnn, Tensor, Tensor)| grad(mnist_loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((p, x, y))
}

/// W12's baseline: the loop of single-example gradients.
pub fn mnist_loop_grads(p: &MnistCnn, examples: &[(Tensor, Tensor)]) -> Result<Vec<MnistCnn>> {
    examples
        .iter()
        .map(|(x, y)| grad(mnist_loss).call((p, x, y)))
        .collect()
}

/// W14: one DP-SGD step (clip to norm 1 per example, Gaussian noise of
/// scale σC = 1, average, SGD with learning rate 0.1), as `examples/dp_sgd.rs`.
pub fn dp_sgd_step(p: &MnistCnn, x: &Tensor, y: &Tensor, seed: i64) -> Result<MnistCnn> {
    let (clip, sigma, lr) = (1.0, 1.0, 0.1);
    let grads = mnist_per_sample_grads(p, x, y)?;
    // Each leaf seen as [batch, its size]; the squared norms and the
    // weighted sum over the batch are contractions (Opacus writes them with
    // einsum too), one pass over the per-sample gradients each.
    let flat = |g: &Tensor| g.flatten_from(1);
    let mut norms: Option<Tensor> = None;
    for (_, g) in tree_leaves(&grads) {
        let f = flat(&g)?;
        let sq = ops::einsum("bi,bi->b", &[f.clone(), f])?;
        norms = Some(match norms {
            Some(t) => (t + sq)?,
            None => sq,
        });
    }
    let norms = norms.expect("the model has parameters").sqrt()?;
    let factor = (clip / (norms + 1e-6)?)?.clamp_max(1.0)?;
    let batch = x.shape()[0] as f64;
    let mut leaf = 0;
    let update = tree_map(&grads, |g| {
        let dims: Vec<i64> = g.shape()[1..].iter().map(|&d| d as i64).collect();
        let summed = ops::einsum("b,bi->i", &[factor.clone(), flat(g)?])?.reshape(&dims)?;
        let noise = ops::randn(&dims, seed * 16 + leaf, DType::F32)?;
        leaf += 1;
        (summed + &(noise * (sigma * clip))?)? / batch
    })?;
    tree_zip_map(p, &update, |w, g| w - &(g * lr)?)
}

// ---------------------------------------------------------------------------
// W13: the transformer block of examples/transformer_per_sample_grads.rs.

const V: usize = 100;
const L: usize = 32;
const D: usize = 64;
const HEADS: usize = 4;
const FF: usize = 256;
/// W13's batch of sequences.
pub const TRANSFORMER_BATCH: usize = 32;

/// The block's parameters (the example's, from the same streams).
#[derive(Clone, TensorTree)]
pub struct Block {
    tok_emb: Tensor,
    pos_emb: Tensor,
    ln1_w: Tensor,
    ln1_b: Tensor,
    qkv_w: Tensor,
    qkv_b: Tensor,
    out_w: Tensor,
    out_b: Tensor,
    ln2_w: Tensor,
    ln2_b: Tensor,
    fc1_w: Tensor,
    fc1_b: Tensor,
    fc2_w: Tensor,
    fc2_b: Tensor,
    lnf_w: Tensor,
    lnf_b: Tensor,
    head_w: Tensor,
    head_b: Tensor,
}

impl Block {
    /// Leaf k from the stream 40 + k, as the example's `Block::new`.
    pub fn new() -> Result<Self> {
        let u = |shape: &[usize], k: u32, bound: f64| uniform(shape, 40 + k, bound, DType::F32);
        let ln_w = |k: u32| u(&[D], k, 0.1)? + 1.0;
        let lin = torch_bound(D);
        Ok(Block {
            tok_emb: u(&[V, D], 0, 1.0)?,
            pos_emb: u(&[L, D], 1, 1.0)?,
            ln1_w: ln_w(2)?,
            ln1_b: u(&[D], 3, 0.1)?,
            qkv_w: u(&[3 * D, D], 4, lin)?,
            qkv_b: u(&[3 * D], 5, lin)?,
            out_w: u(&[D, D], 6, lin)?,
            out_b: u(&[D], 7, lin)?,
            ln2_w: ln_w(8)?,
            ln2_b: u(&[D], 9, 0.1)?,
            fc1_w: u(&[FF, D], 10, lin)?,
            fc1_b: u(&[FF], 11, lin)?,
            fc2_w: u(&[D, FF], 12, torch_bound(FF))?,
            fc2_b: u(&[D], 13, torch_bound(FF))?,
            lnf_w: ln_w(14)?,
            lnf_b: u(&[D], 15, 0.1)?,
            head_w: u(&[V, D], 16, lin)?,
            head_b: u(&[V], 17, lin)?,
        })
    }

    /// Logits `[L, V]` of one sequence of token ids `[L]`.
    fn forward(&self, tokens: &Tensor) -> Result<Tensor> {
        let d = D as i64;
        let h = (ops::embedding(tokens, &self.tok_emb, None)? + &self.pos_emb)?;
        let a = h.layer_norm(&[d], Some(&self.ln1_w), Some(&self.ln1_b))?;
        let qkv = a.linear(&self.qkv_w, Some(&self.qkv_b))?;
        let heads = qkv
            .split_dim(d, -1)?
            .iter()
            .map(|z| {
                z.reshape(&[L as i64, HEADS as i64, d / HEADS as i64])?
                    .transpose(0, 1)
            })
            .collect::<Result<Vec<_>>>()?;
        let o = ops::scaled_dot_product_attention(
            &heads[0], &heads[1], &heads[2], None, 0.0, true, None, 0,
        )?
        .transpose(0, 1)?
        .reshape(&[L as i64, d])?;
        let h = (&h + &o.linear(&self.out_w, Some(&self.out_b))?)?;
        let m = h.layer_norm(&[d], Some(&self.ln2_w), Some(&self.ln2_b))?;
        let mlp = m
            .linear(&self.fc1_w, Some(&self.fc1_b))?
            .gelu()?
            .linear(&self.fc2_w, Some(&self.fc2_b))?;
        let h = (&h + &mlp)?;
        h.layer_norm(&[d], Some(&self.lnf_w), Some(&self.lnf_b))?
            .linear(&self.head_w, Some(&self.head_b))
    }
}

/// W13's inputs: token ids and targets `[32, 32]` (the example's streams).
pub fn transformer_inputs() -> Result<(Tensor, Tensor)> {
    let shape = [TRANSFORMER_BATCH as i64, L as i64];
    let tokens = labels(TRANSFORMER_BATCH * L, 600, V)?.reshape(&shape)?;
    let targets = labels(TRANSFORMER_BATCH * L, 601, V)?.reshape(&shape)?;
    Ok((tokens, targets))
}

fn transformer_loss((p, x, y): (Block, Tensor, Tensor)) -> Result<Tensor> {
    p.forward(&x)?.cross_entropy(&y)
}

/// W13: per-sample gradients of the block by `vmap(grad)`.
pub fn transformer_per_sample_grads(p: &Block, x: &Tensor, y: &Tensor) -> Result<Block> {
    vmap(|(p, x, y): (Block, Tensor, Tensor)| grad(transformer_loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((p, x, y))
}

/// W13's baseline: the loop of single-sequence gradients.
pub fn transformer_loop_grads(p: &Block, examples: &[(Tensor, Tensor)]) -> Result<Vec<Block>> {
    examples
        .iter()
        .map(|(x, y)| grad(transformer_loss).call((p, x, y)))
        .collect()
}

// ---------------------------------------------------------------------------
// W15: the NTK of examples/neural_tangent_kernel.rs's CNN, two batches of 16.

/// W15's batches (each).
pub const NTK_BATCH: usize = 16;

/// The NTK tutorial's CNN (the example's, from the same streams).
#[derive(Clone, TensorTree)]
pub struct NtkCnn {
    conv1_w: Tensor,
    conv1_b: Tensor,
    conv2_w: Tensor,
    conv2_b: Tensor,
    conv3_w: Tensor,
    conv3_b: Tensor,
    fc_w: Tensor,
    fc_b: Tensor,
}

impl NtkCnn {
    /// Leaf k from the stream 70 + k, as the example's `Cnn::new`.
    pub fn new() -> Result<Self> {
        let u =
            |shape: &[usize], seed, fan_in| uniform(shape, seed, torch_bound(fan_in), DType::F32);
        Ok(NtkCnn {
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

/// W15's inputs: two batches `[16, 3, 32, 32]` (streams 700 and 701).
pub fn ntk_inputs() -> Result<(Tensor, Tensor)> {
    Ok((
        uniform(&[NTK_BATCH, 3, 32, 32], 700, 1.0, DType::F32)?,
        uniform(&[NTK_BATCH, 3, 32, 32], 701, 1.0, DType::F32)?,
    ))
}

/// Every parameter's Jacobian over a batch, flattened to `[batch, 10, numel]`.
fn ntk_jacobians(p: &NtkCnn, x: &Tensor) -> Result<Vec<Tensor>> {
    let jac: NtkCnn = vmap(|(p, x): (NtkCnn, Tensor)| jacrev(|q: NtkCnn| q.single(&x)).call(&p))
        .in_dims([None, Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((p, x))?;
    tree_leaves(&jac)
        .into_iter()
        .map(|(_, j)| j.flatten_from(2))
        .collect()
}

/// W15: the NTK `[16, 16, 10, 10]` by the Jacobian contraction.
pub fn ntk(p: &NtkCnn, x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
    let mut total: Option<Tensor> = None;
    for (a, b) in ntk_jacobians(p, x1)?.iter().zip(ntk_jacobians(p, x2)?) {
        let term = ops::einsum("Naf,Mbf->NMab", &[a.clone(), b])?;
        total = Some(match total {
            Some(t) => (t + term)?,
            None => term,
        });
    }
    Ok(total.expect("the model has parameters"))
}

/// With `BATCHRULES_BENCH_CHECKSUMS=1` in the environment, prints the
/// checksum of `result()` for workload `name` (the setup of every group runs
/// whatever the filter, and W15's takes a second).
pub fn print_checksum<T: TensorTree>(name: &str, result: impl FnOnce() -> Result<T>) {
    if std::env::var_os("BATCHRULES_BENCH_CHECKSUMS").is_some() {
        let value = result().expect("the workload runs");
        println!("{name} checksum (sum, sum of |.|): {:?}", checksum(&value));
    }
}

/// The sum and the sum of absolute values of every leaf of `t`, in f64: the
/// checksum `peers_models.py` prints for the same result.
pub fn checksum<T: TensorTree>(t: &T) -> (f64, f64) {
    let mut leaves = Vec::new();
    t.leaves(&mut leaves);
    leaves.iter().fold((0.0, 0.0), |(s, a), l| {
        let v = l.to_array::<f32>().expect("f32 leaves");
        (
            s + v.iter().map(|&x| f64::from(x)).sum::<f64>(),
            a + v.iter().map(|&x| f64::from(x).abs()).sum::<f64>(),
        )
    })
}
