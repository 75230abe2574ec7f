//! Attention and the ops around it (`ops/attention.toml`).
//!
//! * `baddbmm`, `scaled_dot_product_attention` and `vector_norm` are
//!   composites: their decompositions use batched ops only (`bmm`, `matmul`,
//!   `where`, `softmax`, reductions over one trailing dim), so vmap batches
//!   them and grad and jvp differentiate them with no rule of their own.
//!   Where PyTorch's derivative is 0 at a point where the formula's is not
//!   finite (a fully masked attention row, the norm of a zero vector), the
//!   decomposition feeds the unsafe op a harmless value and selects the exact
//!   result with `where`, whose untaken branch gets a zero gradient.
//! * `cumsum` is a primitive (kernel, batching rule, vjp; linear, so its jvp
//!   is itself).

use ndarray::{ArcArray, ArrayD, Axis, IxDyn};

use crate::batching::{bdim_to_front, logical_rank, physical_dim, shape_arg};
use crate::core::alloc::checked_numel;
use crate::core::broadcast::broadcast_or_err;
use crate::core::cast::scalar_like;
use crate::core::meta_rules::require_float;
use crate::core::wrap_dim::check_dim;
use crate::{
    batching_rule, decompose, kernel, meta, ops, vjp, DType, Data, Error, Result, Tensor,
    TensorMeta,
};

/// A 0-d tensor holding `value` in the dtype of `x` (it does not promote `x`).
fn like(x: &Tensor, value: f64) -> Tensor {
    scalar_like(&TensorMeta::of(x), value)
}

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

// ---------------------------------------------------------------------------
// cumsum

#[meta(op = "cumsum")]
fn cumsum_meta(x: &TensorMeta, dim: i64) -> Result<TensorMeta> {
    check_dim(dim, x.ndim())?;
    Ok(x.with_dtype(cumsum_dtype(x.dtype())))
}

/// Floats keep their dtype; i64 and bool are summed in i64 (as PyTorch).
fn cumsum_dtype(dtype: DType) -> DType {
    if dtype.is_float() {
        dtype
    } else {
        DType::I64
    }
}

/// The running sums of `a` along `axis`, accumulated in `A` (from `zero` by
/// `add`) and stored as `out(acc)`.
fn scan<T: Copy, A: Copy, U: Clone>(
    a: &ArcArray<T, IxDyn>,
    axis: usize,
    zero: A,
    add: impl Fn(A, T) -> A,
    out: impl Fn(A) -> U,
) -> ArrayD<U> {
    let mut result = ArrayD::from_elem(a.raw_dim(), out(zero));
    for (from, mut to) in a
        .lanes(Axis(axis))
        .into_iter()
        .zip(result.lanes_mut(Axis(axis)))
    {
        let mut acc = zero;
        for (&x, y) in from.iter().zip(to.iter_mut()) {
            acc = add(acc, x);
            *y = out(acc);
        }
    }
    result
}

#[kernel(op = "cumsum")]
fn cumsum_kernel(x: &Tensor, dim: i64) -> Result<Tensor> {
    if x.ndim() == 0 {
        // One element: the sum of itself.
        return ops::to_dtype(x, cumsum_dtype(x.dtype()));
    }
    let d = check_dim(dim, x.ndim())?;
    Ok(match x.data()? {
        Data::F64(a) => Tensor::from(scan(a, d, 0.0f64, |s, v| s + v, |s| s)),
        // PyTorch's CPU kernel accumulates f32 in f64 (its accumulate type).
        Data::F32(a) => Tensor::from(scan(a, d, 0.0f64, |s, v| s + f64::from(v), |s| s as f32)),
        Data::I64(a) => Tensor::from(scan(a, d, 0i64, i64::wrapping_add, |s| s)),
        Data::Bool(a) => Tensor::from(scan(a, d, 0i64, |s, v| s + i64::from(v), |s| s)),
    })
}

/// Batch dim to the front, then `cumsum` along the physical dim. A 0-d
/// example is its own cumulative sum (only the dtype may change).
#[batching_rule(op = "cumsum")]
fn cumsum_rule(x: &Tensor, bdim: Option<usize>, dim: i64) -> Result<(Tensor, Option<usize>)> {
    let x = bdim_to_front(x, bdim)?;
    let out_bdim = bdim.map(|_| 0);
    if logical_rank(&x, out_bdim)? == 0 {
        return Ok((ops::to_dtype(&x, cumsum_dtype(x.dtype()))?, out_bdim));
    }
    let d = physical_dim(&x, bdim.is_some(), dim)?;
    Ok((ops::cumsum(&x, d as i64)?, out_bdim))
}

/// `g` reversed along `dim` (of its logical shape), by `index_select`.
fn flip_dim(g: &Tensor, dim: usize) -> Result<Tensor> {
    let n = g.shape()[dim] as f64;
    let reversed = ops::arange(n - 1.0, -1.0, -1.0, DType::I64)?;
    ops::index_select(g, dim as i64, &reversed)
}

/// The transpose of `cumsum`: each element gets the sum of the cotangent from
/// its position to the end, `flip(cumsum(flip(g)))` (PyTorch's formula; the
/// shortcut `sum(g) - cumsum(g) + g` cancels badly in f32).
#[vjp(op = "cumsum")]
fn cumsum_vjp(x: &Tensor, dim: i64, _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    if !x.dtype().is_float() || !crate::needs_gradient(x) {
        return Ok(None);
    }
    if g.ndim() == 0 {
        return Ok(Some(g.clone()));
    }
    let d = check_dim(dim, g.ndim())?;
    let summed = ops::cumsum(&flip_dim(g, d)?, d as i64)?;
    Ok(Some(flip_dim(&summed, d)?))
}

// ---------------------------------------------------------------------------
// vector_norm

/// The dims `vector_norm` reduces, ascending: every dim for `None` or an
/// empty list (none for a 0-d tensor, whose one element is reduced as it is).
fn norm_dims(x: &TensorMeta, dim: Option<&[i64]>) -> Result<Vec<usize>> {
    let rank = x.ndim();
    let listed = match dim {
        Some(d) if !d.is_empty() => d,
        _ => return Ok((0..rank).collect()),
    };
    let mut dims = Vec::with_capacity(listed.len());
    for &d in listed {
        let r = check_dim(d, rank)?;
        if dims.contains(&r) {
            return Err(Error::invalid(format!(
                "dim {d} appears more than once in dim {listed:?}"
            )));
        }
        dims.push(r);
    }
    if rank == 0 {
        dims.clear();
    }
    dims.sort_unstable();
    Ok(dims)
}

/// The result's shape: the reduced dims removed, or kept as 1.
fn norm_shape(shape: &[usize], dims: &[usize], keepdim: bool) -> Vec<usize> {
    (0..shape.len())
        .filter_map(|d| match (dims.contains(&d), keepdim) {
            (false, _) => Some(shape[d]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

#[meta(op = "vector_norm")]
fn vector_norm_meta(
    x: &TensorMeta,
    ord: f64,
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<TensorMeta> {
    require_float(x)?;
    if ord.is_nan() {
        return Err(Error::invalid("ord must be a number, got NaN"));
    }
    let dims = norm_dims(x, dim)?;
    let count: usize = dims.iter().map(|&d| x.shape()[d]).product();
    if ord.is_infinite() && count == 0 {
        return Err(Error::invalid(format!(
            "ord = {ord} over zero elements (shape {:?}, dims {dims:?}) has no extreme to take",
            x.shape()
        )));
    }
    Ok(TensorMeta::new(
        norm_shape(x.shape(), &dims, keepdim),
        x.dtype(),
    ))
}

/// `s.powf(exponent)` (`sqrt` for 1/2), 0 where `s` is 0 with gradient 0 there
/// (the power sees 1 instead of 0, whose result `where` discards).
fn root_or_zero(s: &Tensor, exponent: f64) -> Result<Tensor> {
    let zero = ops::eq(s, &like(s, 0.0))?;
    let safe = ops::where_(&zero, &like(s, 1.0), s)?;
    let root = if exponent == 0.5 {
        ops::sqrt(&safe)?
    } else {
        ops::pow(&safe, &like(s, exponent))?
    };
    ops::where_(&zero, &like(s, 0.0), &root)
}

/// The norms of the rows of `flat` (its last dim holds each vector).
fn row_norms(flat: &Tensor, ord: f64) -> Result<Tensor> {
    let last = Some(-1);
    if ord == 2.0 {
        let squares = ops::sum(&ops::mul(flat, flat)?, last, false)?;
        return root_or_zero(&squares, 0.5);
    }
    if ord == 0.0 {
        let zero = ops::eq(flat, &like(flat, 0.0))?;
        let nonzero = ops::where_(&zero, &like(flat, 0.0), &like(flat, 1.0))?;
        return ops::sum(&nonzero, last, false);
    }
    let a = ops::abs(flat)?;
    if ord == 1.0 {
        return ops::sum(&a, last, false);
    }
    if ord == f64::INFINITY {
        return ops::amax(&a, last, false);
    }
    if ord == f64::NEG_INFINITY {
        return ops::amin(&a, last, false);
    }
    // |x|^p, with |0|^p written in directly (0, or inf for p < 0) so that the
    // power never sees 0 (whose derivative is infinite for p < 1).
    let zero = ops::eq(&a, &like(&a, 0.0))?;
    let safe = ops::where_(&zero, &like(&a, 1.0), &a)?;
    let at_zero = if ord > 0.0 { 0.0 } else { f64::INFINITY };
    let powers = ops::pow(&safe, &like(&a, ord))?;
    let terms = ops::where_(&zero, &like(&a, at_zero), &powers)?;
    let s = ops::sum(&terms, last, false)?;
    if ord > 0.0 {
        root_or_zero(&s, 1.0 / ord)
    } else {
        ops::pow(&s, &like(&s, 1.0 / ord))
    }
}

/// The reduced dims moved last and flattened into one, the norm taken over
/// it, and the result shaped as the op's.
#[decompose(op = "vector_norm")]
fn vector_norm_decomposition(
    x: &Tensor,
    ord: f64,
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    let shape = x.shape().to_vec();
    let dims = norm_dims(&TensorMeta::of(x), dim)?;
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).collect();
    let count: usize = dims.iter().map(|&d| shape[d]).product();
    let mut order = kept.clone();
    order.extend(&dims);
    let moved = if order.iter().enumerate().all(|(i, &d)| i == d) {
        x.clone()
    } else {
        ops::permute(x, &shape_arg(None, &order))?
    };
    let mut flat_shape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
    flat_shape.push(count);
    let flat = ops::reshape(&moved, &shape_arg(None, &flat_shape))?;
    let norms = row_norms(&flat, ord)?;
    let out = norm_shape(&shape, &dims, keepdim);
    if norms.shape() == out.as_slice() {
        Ok(norms)
    } else {
        ops::reshape(&norms, &shape_arg(None, &out))
    }
}
