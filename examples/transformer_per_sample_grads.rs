//! Per-sample gradients of a transformer block:
//! `cargo run --example transformer_per_sample_grads`.
//!
//! A one-block pre-LN transformer encoder over sequences of 32 tokens
//! (vocabulary 100, width 64): token and position embeddings, causal
//! `scaled_dot_product_attention` with 4 heads, `layer_norm`, a GELU MLP
//! (64 -> 256 -> 64) and a linear head, with each sequence's mean
//! cross-entropy over its 32 positions as its loss. One `vmap(grad(loss))`
//! gives the gradients of 32 sequences at once, with nothing on the
//! fallback loop (`FallbackPolicy::Error`; torch.func falls back to a loop
//! for CPU attention here, and warns).
//!
//! Checked against torch.func (`vmap(grad(loss), in_dims=(None, 0, 0))`,
//! recorded by `scripts/reference/record_model_examples.py` from the same
//! parameters and tokens) to 1e-4, and against single-sequence gradients
//! for a few sequences. Exits with status 1 if a check fails.

#[path = "support/mod.rs"]
mod support;

use batchrules::prelude::*;
use support::{labels, max_abs_diff, torch_bound, uniform, Reference};

const V: usize = 100;
const L: usize = 32;
const D: usize = 64;
const HEADS: usize = 4;
const FF: usize = 256;
const BATCH: usize = 32;

/// The block's parameters, named as the reference script names them.
#[derive(Clone, TensorTree)]
struct Block {
    tok_emb: Tensor,
    pos_emb: Tensor,
    #[tree(rename = "ln1.weight")]
    ln1_w: Tensor,
    #[tree(rename = "ln1.bias")]
    ln1_b: Tensor,
    #[tree(rename = "qkv.weight")]
    qkv_w: Tensor,
    #[tree(rename = "qkv.bias")]
    qkv_b: Tensor,
    #[tree(rename = "out.weight")]
    out_w: Tensor,
    #[tree(rename = "out.bias")]
    out_b: Tensor,
    #[tree(rename = "ln2.weight")]
    ln2_w: Tensor,
    #[tree(rename = "ln2.bias")]
    ln2_b: Tensor,
    #[tree(rename = "fc1.weight")]
    fc1_w: Tensor,
    #[tree(rename = "fc1.bias")]
    fc1_b: Tensor,
    #[tree(rename = "fc2.weight")]
    fc2_w: Tensor,
    #[tree(rename = "fc2.bias")]
    fc2_b: Tensor,
    #[tree(rename = "lnf.weight")]
    lnf_w: Tensor,
    #[tree(rename = "lnf.bias")]
    lnf_b: Tensor,
    #[tree(rename = "head.weight")]
    head_w: Tensor,
    #[tree(rename = "head.bias")]
    head_b: Tensor,
}

impl Block {
    /// Leaf k from the stream 40 + k (the reference script's
    /// `transformer_params`): linear layers within PyTorch's default bounds,
    /// embeddings in [-1, 1), layer-norm weights 1 + 0.1 u and biases 0.1 u.
    fn new() -> Result<Self> {
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
        // q, k and v as [heads, L, D / heads].
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

/// One sequence's mean cross-entropy over its positions.
fn loss((p, x, y): (Block, Tensor, Tensor)) -> Result<Tensor> {
    p.forward(&x)?.cross_entropy(&y)
}

fn main() -> Result<()> {
    let params = Block::new()?;
    let shape = [BATCH as i64, L as i64];
    let tokens = labels(BATCH * L, 600, V)?.reshape(&shape)?;
    let targets = labels(BATCH * L, 601, V)?.reshape(&shape)?;
    let mut reference = Reference::load("transformer_per_sample_grads.json");
    let (rtol, atol) = (1e-4, 1e-4);

    let losses = vmap(loss)
        .in_dims([None, Some(0), Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((&params, &tokens, &targets))?;
    println!(
        "{BATCH} sequences of {L} tokens: losses {:?}",
        losses.shape()
    );
    reference.check("losses", &losses, rtol, atol)?;

    let grads: Block = vmap(|(p, x, y): (Block, Tensor, Tensor)| grad(loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((&params, &tokens, &targets))?;
    for (key, g) in tree_leaves(&grads) {
        reference.check(&format!("grad.{key}"), &g, rtol, atol)?;
    }

    // Single-sequence gradients of a few sequences give the same.
    let mut worst = 0.0f64;
    for i in [0, 13, BATCH - 1] {
        let one: Block =
            grad(loss).call((&params, &tokens.select(0, i)?, &targets.select(0, i)?))?;
        for ((_, batched), (_, single)) in tree_leaves(&grads).into_iter().zip(tree_leaves(&one)) {
            worst = worst.max(max_abs_diff(&batched.select(0, i)?, &single)?);
        }
    }
    println!("  single-sequence gradients of sequences 0, 13, 31: max |difference| {worst:.1e}");
    if worst > 1e-5 {
        reference.fail(format!(
            "vmap(grad) differs from single-sequence gradients by {worst:e}"
        ));
    }
    reference.finish();
    Ok(())
}
