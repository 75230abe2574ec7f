//! Attention and the ops around it (`ops/attention.toml`).
//!
//! * `baddbmm` and `scaled_dot_product_attention` are
//!   composites: their decompositions use batched ops only (`bmm`, `matmul`,
//!   `where`, `softmax`, reductions over one trailing dim), so vmap batches
//!   them and grad and jvp differentiate them with no rule of their own.
//!   Where PyTorch's derivative is 0 at a point where the formula's is not
//!   finite (a fully masked attention row), the
//!   decomposition feeds the unsafe op a harmless value and selects the exact
//!   result with `where`, whose untaken branch gets a zero gradient.

use super::like;
use crate::core::alloc::checked_numel;
use crate::core::broadcast::broadcast_or_err;
use crate::core::meta_rules::require_float;
use crate::{decompose, meta, ops, DType, Error, Result, Tensor, TensorMeta};

// ---------------------------------------------------------------------------
// baddbmm

#[meta(op = "baddbmm")]
fn baddbmm_meta(
    x: &TensorMeta,
    batch1: &TensorMeta,
    batch2: &TensorMeta,
    beta: f64,
    alpha: f64,
) -> Result<TensorMeta> {
    if batch1.ndim() != 3 || batch2.ndim() != 3 {
        return Err(Error::invalid(format!(
            "batch1 and batch2 must be 3-D ([b, n, k] and [b, k, m]), got shapes {:?} and {:?}",
            batch1.shape(),
            batch2.shape()
        )));
    }
    let (a, b) = (batch1.shape(), batch2.shape());
    if a[0] != b[0] || a[2] != b[1] {
        return Err(Error::invalid(format!(
            "batch1 {a:?} and batch2 {b:?} do not multiply: need [b, n, k] and [b, k, m]"
        )));
    }
    let dtype = x.dtype();
    if dtype == DType::Bool || batch1.dtype() != dtype || batch2.dtype() != dtype {
        return Err(Error::invalid(format!(
            "self, batch1 and batch2 must have one dtype, f32, f64 or i64; got {}, {} and {}",
            dtype,
            batch1.dtype(),
            batch2.dtype()
        )));
    }
    if dtype == DType::I64 {
        for (name, v) in [("beta", beta), ("alpha", alpha)] {
            if v.fract() != 0.0 || v.abs() >= 9.2e18 || v.is_nan() {
                return Err(Error::invalid(format!(
                    "`{name}` must be a whole number (within i64) for i64 tensors, got {v}"
                )));
            }
        }
    }
    let out = [a[0], a[1], b[2]];
    checked_numel(&out)?;
    let fits = broadcast_or_err(x.shape(), &out).map(|s| s.as_slice() == out);
    if fits != Ok(true) {
        return Err(Error::invalid(format!(
            "self of shape {:?} does not broadcast to the product's shape {out:?}",
            x.shape()
        )));
    }
    Ok(TensorMeta::new(out, dtype))
}

/// `beta * self + alpha * bmm(batch1, batch2)`, skipping the multiplications
/// by 1 and, for `beta = 0`, `self` itself (as PyTorch).
#[decompose(op = "baddbmm")]
fn baddbmm_decomposition(
    x: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: f64,
    alpha: f64,
) -> Result<Tensor> {
    let mut product = ops::bmm(batch1, batch2)?;
    if alpha != 1.0 {
        product = ops::mul(&product, &like(&product, alpha))?;
    }
    if beta == 0.0 {
        return Ok(product);
    }
    let scaled = if beta == 1.0 {
        x.clone()
    } else {
        ops::mul(x, &like(x, beta))?
    };
    ops::add(&scaled, &product)
}

// ---------------------------------------------------------------------------
// scaled_dot_product_attention

/// The last two dims and the leading ones of an attention operand.
fn split_last2(name: &str, t: &TensorMeta) -> Result<(Vec<usize>, usize, usize)> {
    let s = t.shape();
    if s.len() < 2 {
        return Err(Error::invalid(format!(
            "{name} must have at least 2 dims ([..., rows, features]), got shape {s:?}"
        )));
    }
    let n = s.len();
    Ok((s[..n - 2].to_vec(), s[n - 2], s[n - 1]))
}

#[allow(clippy::too_many_arguments)]
#[meta(op = "scaled_dot_product_attention")]
fn sdpa_meta(
    q: &TensorMeta,
    k: &TensorMeta,
    v: &TensorMeta,
    attn_mask: Option<&TensorMeta>,
    dropout_p: f64,
    is_causal: bool,
    _scale: Option<f64>,
    _seed: i64,
) -> Result<TensorMeta> {
    let (qb, l, e) = split_last2("query", q)?;
    let (kb, s, ke) = split_last2("key", k)?;
    let (vb, vs, ev) = split_last2("value", v)?;
    require_float(q)?;
    if k.dtype() != q.dtype() || v.dtype() != q.dtype() {
        return Err(Error::invalid(format!(
            "query, key and value must have one dtype, got {}, {} and {}",
            q.dtype(),
            k.dtype(),
            v.dtype()
        )));
    }
    if ke != e {
        return Err(Error::invalid(format!(
            "query {:?} and key {:?} must have the same last dim (the embedding E)",
            q.shape(),
            k.shape()
        )));
    }
    if vs != s {
        return Err(Error::invalid(format!(
            "key {:?} and value {:?} must have the same second-to-last dim (the source length S)",
            k.shape(),
            v.shape()
        )));
    }
    let batch = broadcast_or_err(&broadcast_or_err(&qb, &kb)?, &vb).map_err(|_| {
        Error::invalid(format!(
            "the leading (batch) dims of query {:?}, key {:?} and value {:?} do not broadcast",
            q.shape(),
            k.shape(),
            v.shape()
        ))
    })?;
    let mut weights = batch.to_vec();
    weights.extend([l, s]);
    checked_numel(&weights)?;
    let mut out = batch.to_vec();
    out.extend([l, ev]);
    checked_numel(&out)?;
    if let Some(m) = attn_mask {
        if is_causal {
            return Err(Error::invalid(
                "attn_mask and is_causal cannot both be given (as in PyTorch): put the causal mask into attn_mask",
            ));
        }
        if m.dtype() != DType::Bool && m.dtype() != q.dtype() {
            return Err(Error::invalid(format!(
                "attn_mask must be bool or of query's dtype {}, got {}",
                q.dtype(),
                m.dtype()
            )));
        }
        let fits = broadcast_or_err(m.shape(), &weights).map(|s| s.as_slice() == weights);
        if fits != Ok(true) {
            return Err(Error::invalid(format!(
                "attn_mask of shape {:?} does not broadcast to the attention weights' shape {weights:?}",
                m.shape()
            )));
        }
    }
    if !(0.0..=1.0).contains(&dropout_p) {
        return Err(Error::invalid(format!(
            "dropout_p must be in [0, 1], got {dropout_p}"
        )));
    }
    Ok(TensorMeta::new(out, q.dtype()))
}

/// `softmax(q k^T scale + mask) v`; see the op's doc. A fully masked row
/// (all scores `-inf`) would be NaN through `softmax`: when a mask is given,
/// such rows' scores are replaced by 0 before it and their weights by 0
/// after it (a causal mask alone never hides every key of a row).
#[allow(clippy::too_many_arguments)]
#[decompose(op = "scaled_dot_product_attention")]
fn sdpa_decomposition(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    attn_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
    seed: i64,
) -> Result<Tensor> {
    let (l, e) = (q.shape()[q.ndim() - 2], q.shape()[q.ndim() - 1]);
    let s_len = k.shape()[k.ndim() - 2];
    let scale = scale.unwrap_or(1.0 / (e as f64).sqrt());
    let scores = ops::matmul(q, &ops::transpose(k, -2, -1)?)?;
    let mut scores = ops::mul(&scores, &like(q, scale))?;
    let minus_inf = like(q, f64::NEG_INFINITY);
    if is_causal {
        // Key j is hidden from query i when j > i.
        let rows = ops::arange(0.0, l as f64, 1.0, DType::I64)?;
        let rows = ops::reshape(&rows, &[l as i64, 1])?;
        let cols = ops::arange(0.0, s_len as f64, 1.0, DType::I64)?;
        let hidden = ops::gt(&cols, &rows)?;
        scores = ops::where_(&hidden, &minus_inf, &scores)?;
    }
    let weights = match attn_mask {
        Some(m) => {
            scores = if m.dtype() == DType::Bool {
                ops::where_(m, &scores, &minus_inf)?
            } else {
                ops::add(&scores, m)?
            };
            if scores.shape().contains(&0) {
                ops::softmax(&scores, -1)?
            } else {
                let top = ops::amax(&ops::detach(&scores)?, Some(-1), true)?;
                let dead = ops::eq(&top, &minus_inf)?;
                let zero = like(q, 0.0);
                let safe = ops::where_(&dead, &zero, &scores)?;
                ops::where_(&dead, &zero, &ops::softmax(&safe, -1)?)?
            }
        }
        None => ops::softmax(&scores, -1)?,
    };
    let weights = if dropout_p > 0.0 {
        ops::dropout(&weights, dropout_p, seed)?
    } else {
        weights
    };
    ops::matmul(&weights, v)
}
