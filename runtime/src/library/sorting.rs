//! Sorting and selection along a dim (`ops/sorting.toml`): `max_dim`,
//! `min_dim`, `argsort`, `sort` and `topk`.
//!
//! `argsort` is the one primitive: a stable sort of each lane along the dim
//! (NaN after every number, `-0.0` equal to `0.0`), not differentiable (its
//! result is an index), batched by sorting along the physical dim.
//!
//! The others are composites that choose indices with a non-differentiable
//! op (`argmax`, or `argsort` and a `narrow` for `topk`) and take the values
//! with `gather`. So the values are differentiable through `gather`, whose
//! vjp scatters (`scatter_add`) the cotangent to the chosen indices and whose
//! jvp (it is linear) gathers the tangent at them; and vmap batches them
//! through the batching rules of `argmax`, `argsort`, `narrow`, `gather` and
//! `squeeze`. `min_dim` takes `argmax` of a key that reverses the order (the
//! negation of a float, `-1 - x` of an `i64`, `!x` of a bool), computed on a
//! detached copy so no derivative is recorded for it; ties still resolve to
//! the first occurrence, and NaN (which negation keeps) still wins.

use std::cmp::Ordering;

use ndarray::{ArcArray, ArrayD, Axis, IxDyn, Zip};

use crate::batching::{bdim_to_front, logical_rank, physical_dim, shape_arg};
use crate::core::meta_rules::reduce_meta;
use crate::core::wrap_dim::check_dim;
use crate::{
    batching_rule, decompose, kernel, meta, ops, DType, Element, Error, Result, Tensor, TensorMeta,
};

// ---------------------------------------------------------------------------
// max_dim, min_dim

#[meta(op = "max_dim")]
fn max_dim_meta(x: &TensorMeta, dim: i64, keepdim: bool) -> Result<(TensorMeta, TensorMeta)> {
    let values = reduce_meta(x, Some(dim), keepdim, true)?;
    let indices = values.with_dtype(DType::I64);
    Ok((values, indices))
}

#[meta(op = "min_dim")]
fn min_dim_meta(x: &TensorMeta, dim: i64, keepdim: bool) -> Result<(TensorMeta, TensorMeta)> {
    max_dim_meta(x, dim, keepdim)
}

/// The values of `x` at the first maximum of `key` along `dim`, and its
/// indices.
fn at_first_max(x: &Tensor, key: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let indices = ops::argmax(key, Some(dim), true)?;
    let values = ops::gather(x, dim, &indices)?;
    if keepdim || x.ndim() == 0 {
        return Ok((values, indices));
    }
    Ok((
        ops::squeeze(&values, Some(dim))?,
        ops::squeeze(&indices, Some(dim))?,
    ))
}

#[decompose(op = "max_dim")]
fn max_dim_decomposition(x: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    at_first_max(x, &ops::detach(x)?, dim, keepdim)
}

/// A key whose first maximum is the first minimum of `x` (NaN staying the
/// maximum, as it is for PyTorch's `min`).
fn reversed_key(x: &Tensor) -> Result<Tensor> {
    let x = ops::detach(x)?;
    match x.dtype() {
        DType::F32 | DType::F64 => ops::neg(&x),
        // -1 - v reverses the order of every i64 without overflow.
        DType::I64 => ops::sub(&Tensor::scalar(-1i64), &x),
        DType::Bool => ops::eq(&x, &Tensor::scalar(false)),
    }
}

#[decompose(op = "min_dim")]
fn min_dim_decomposition(x: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    at_first_max(x, &reversed_key(x)?, dim, keepdim)
}

// ---------------------------------------------------------------------------
// argsort

#[meta(op = "argsort")]
fn argsort_meta(x: &TensorMeta, dim: i64, _descending: bool, _stable: bool) -> Result<TensorMeta> {
    check_dim(dim, x.ndim())?;
    Ok(x.with_dtype(DType::I64))
}

/// A total order on the elements: NaN after every number (and equal to
/// NaN), numbers by value (so `-0.0 == 0.0`).
fn total<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    a.partial_cmp(b).unwrap_or_else(|| {
        let a_nan = a.partial_cmp(a).is_none();
        let b_nan = b.partial_cmp(b).is_none();
        a_nan.cmp(&b_nan)
    })
}

fn argsort_array<T: Element + PartialOrd>(
    a: &ArcArray<T, IxDyn>,
    dim: i64,
    descending: bool,
) -> Result<Tensor> {
    if a.ndim() == 0 {
        return Ok(Tensor::scalar(0i64));
    }
    let d = check_dim(dim, a.ndim())?;
    let mut out = ArrayD::<i64>::zeros(a.raw_dim());
    let mut order: Vec<usize> = Vec::new();
    Zip::from(out.lanes_mut(Axis(d)))
        .and(a.lanes(Axis(d)))
        .for_each(|mut slots, lane| {
            order.clear();
            order.extend(0..lane.len());
            // `sort_by` is stable: ties keep their order in both directions.
            order.sort_by(|&i, &j| {
                let o = total(&lane[i], &lane[j]);
                if descending {
                    o.reverse()
                } else {
                    o
                }
            });
            for (slot, &i) in slots.iter_mut().zip(&order) {
                *slot = i as i64;
            }
        });
    Ok(Tensor::from(out))
}

#[kernel(op = "argsort")]
fn argsort_kernel(x: &Tensor, dim: i64, descending: bool, _stable: bool) -> Result<Tensor> {
    crate::each_dtype!(x.data()?, a => argsort_array(a, dim, descending))
}

/// The sort along the physical dim of the logical one (the indices along it
/// are the same); a batch of 0-d examples sorts to zeros.
#[batching_rule(op = "argsort")]
fn argsort_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim: i64,
    descending: bool,
    stable: bool,
) -> Result<(Tensor, Option<usize>)> {
    let rank = logical_rank(x, bdim)?;
    let t = bdim_to_front(x, bdim)?;
    let out = if rank == 0 {
        ops::zeros(&shape_arg(None, t.shape()), DType::I64)?
    } else {
        let p = physical_dim(&t, bdim.is_some(), dim)?;
        ops::argsort(&t, p as i64, descending, stable)?
    };
    Ok((out, bdim.map(|_| 0)))
}

// ---------------------------------------------------------------------------
// sort, topk

#[meta(op = "sort")]
fn sort_meta(
    x: &TensorMeta,
    dim: i64,
    _descending: bool,
    _stable: bool,
) -> Result<(TensorMeta, TensorMeta)> {
    check_dim(dim, x.ndim())?;
    Ok((x.clone(), x.with_dtype(DType::I64)))
}

#[decompose(op = "sort")]
fn sort_decomposition(
    x: &Tensor,
    dim: i64,
    descending: bool,
    stable: bool,
) -> Result<(Tensor, Tensor)> {
    let indices = ops::argsort(&ops::detach(x)?, dim, descending, stable)?;
    Ok((ops::gather(x, dim, &indices)?, indices))
}

/// The resolved dim of a `topk` and the shape of its results.
fn topk_shape(shape: &[usize], k: i64, dim: i64) -> Result<(usize, Vec<usize>)> {
    let d = check_dim(dim, shape.len())?;
    let n = shape.get(d).copied().unwrap_or(1);
    let k_ok = usize::try_from(k).ok().filter(|&k| k <= n);
    let Some(k) = k_ok else {
        return Err(Error::invalid(format!(
            "`k` must be in 0..={n} (the size of dim {d} of a tensor of shape {shape:?}), got {k}"
        )));
    };
    let mut out = shape.to_vec();
    if let Some(s) = out.get_mut(d) {
        *s = k;
    }
    Ok((d, out))
}

#[meta(op = "topk")]
fn topk_meta(
    x: &TensorMeta,
    k: i64,
    dim: i64,
    _largest: bool,
    _sorted: bool,
) -> Result<(TensorMeta, TensorMeta)> {
    let (_, shape) = topk_shape(x.shape(), k, dim)?;
    let values = TensorMeta::new(shape, x.dtype());
    let indices = values.with_dtype(DType::I64);
    Ok((values, indices))
}

#[decompose(op = "topk")]
fn topk_decomposition(
    x: &Tensor,
    k: i64,
    dim: i64,
    largest: bool,
    _sorted: bool,
) -> Result<(Tensor, Tensor)> {
    let mut indices = ops::argsort(&ops::detach(x)?, dim, largest, true)?;
    if x.ndim() > 0 {
        indices = ops::narrow(&indices, dim, 0, k)?;
    }
    Ok((ops::gather(x, dim, &indices)?, indices))
}
