//! Shape ops: `reshape`, `expand`, and the composite `flatten` (a reshape),
//! which give the same elements another shape. Semantics follow PyTorch. A
//! `reshape` of a contiguous tensor shares its storage; other reshapes and
//! `expand` copy.
//!
//! Their rules move the batch dim to the front and put the batch size (or, for
//! `expand`, -1) before the logical shape argument.

use ndarray::{ArcArray, IxDyn};

use super::dims::dim_in;
use crate::batching::{align_to_front, bdim_to_front, shape_arg};
use crate::{
    batching_rule, decompose, each_dtype, kernel, meta, ops, Element, Error, Result, Tensor,
    TensorMeta,
};

// ---------------------------------------------------------------------------
// reshape

/// The shape `shape` asks for, for a tensor of shape `from`, with its -1 (if
/// any) inferred.
fn resolve_shape(from: &[usize], shape: &[i64]) -> Result<Vec<usize>> {
    let numel: usize = from.iter().product();
    let mut inferred = None;
    let mut known = 1usize;
    for (i, &s) in shape.iter().enumerate() {
        match s {
            -1 if inferred.is_some() => {
                return Err(Error::invalid(format!(
                    "only one size can be -1 (inferred), got shape {shape:?}"
                )))
            }
            -1 => inferred = Some(i),
            s if s < 0 => {
                return Err(Error::invalid(format!(
                    "size {s} in shape {shape:?} is negative (only -1, to infer a size, is allowed)"
                )))
            }
            s => {
                known = known.checked_mul(s as usize).ok_or_else(|| {
                    Error::invalid(format!("shape {shape:?} has too many elements"))
                })?
            }
        }
    }
    let mut out: Vec<usize> = shape.iter().map(|&s| s.max(0) as usize).collect();
    match inferred {
        Some(_) if known == 0 => Err(Error::invalid(format!(
            "cannot infer the -1 in shape {shape:?} for a tensor of shape {from:?}: \
             the other sizes hold 0 elements, so any size would fit"
        ))),
        // (`numel / known * known` rather than `is_multiple_of`, which needs Rust 1.87.)
        Some(_) if numel / known * known != numel => Err(Error::invalid(format!(
            "shape {shape:?} is invalid for a tensor of shape {from:?} ({numel} elements): \
             {numel} is not a multiple of {known}"
        ))),
        Some(i) => {
            out[i] = numel / known;
            Ok(out)
        }
        None if known != numel => Err(Error::invalid(format!(
            "shape {shape:?} holds {known} elements, but the tensor of shape {from:?} has {numel}"
        ))),
        None => Ok(out),
    }
}

#[meta(op = "reshape")]
fn reshape_meta(x: &TensorMeta, shape: &[i64]) -> Result<TensorMeta> {
    Ok(TensorMeta::new(resolve_shape(x.shape(), shape)?, x.dtype()))
}

fn reshape_array<T: Element + crate::core::buffers::Cached>(
    a: &ArcArray<T, IxDyn>,
    shape: &[usize],
) -> Result<Tensor> {
    let out = if a.is_standard_layout() {
        a.clone().into_shape_with_order(IxDyn(shape))
    } else {
        crate::core::buffers::row_major(&a.view())
            .into_shape_with_order(IxDyn(shape))
            .map(|o| o.into_shared())
    };
    out.map(Tensor::from).map_err(|e| {
        Error::invalid(format!(
            "cannot reshape shape {:?} to {shape:?}: {e}",
            a.shape()
        ))
    })
}

#[kernel(op = "reshape")]
fn reshape_kernel(x: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let shape = resolve_shape(x.shape(), shape)?;
    each_dtype!(x.data()?, a => reshape_array(a, &shape))
}

#[batching_rule(op = "reshape")]
fn reshape_rule(x: &Tensor, bdim: Option<usize>, shape: &[i64]) -> Result<(Tensor, Option<usize>)> {
    let x = bdim_to_front(x, bdim)?;
    let (batch, example) = x.shape().split_at(usize::from(bdim.is_some()));
    let logical = resolve_shape(example, shape)?;
    let physical = shape_arg(batch.first().copied(), &logical);
    Ok((ops::reshape(&x, &physical)?, bdim.map(|_| 0)))
}

// ---------------------------------------------------------------------------
// expand

/// The shape a tensor of shape `from` expands to for the `size` argument.
fn expand_shape(from: &[usize], size: &[i64]) -> Result<Vec<usize>> {
    if size.len() < from.len() {
        return Err(Error::invalid(format!(
            "cannot expand a tensor of shape {from:?} to size {size:?}: the size has {} dims, \
             fewer than the tensor's {}",
            size.len(),
            from.len()
        )));
    }
    let lead = size.len() - from.len();
    size.iter()
        .enumerate()
        .map(|(i, &s)| {
            if i < lead {
                return usize::try_from(s).map_err(|_| {
                    Error::invalid(format!(
                        "size {s} at dim {i} of {size:?} is not allowed when expanding a tensor \
                         of shape {from:?}: dim {i} is a new leading dim, whose size must be given"
                    ))
                });
            }
            let have = from[i - lead];
            match s {
                -1 => Ok(have),
                s if s < 0 => Err(Error::invalid(format!(
                    "size {s} at dim {i} of {size:?} is negative (only -1, to keep a dim, is allowed)"
                ))),
                s if s as usize == have || have == 1 => Ok(s as usize),
                s => Err(Error::invalid(format!(
                    "cannot expand dim {} of size {have} to {s} (tensor shape {from:?}, size \
                     {size:?}): only size-1 dims can grow",
                    i - lead
                ))),
            }
        })
        .collect()
}

#[meta(op = "expand")]
fn expand_meta(x: &TensorMeta, size: &[i64]) -> Result<TensorMeta> {
    Ok(TensorMeta::new(expand_shape(x.shape(), size)?, x.dtype()))
}

fn expand_array<T: Element + crate::core::buffers::Cached>(
    a: &ArcArray<T, IxDyn>,
    shape: &[usize],
) -> Result<Tensor> {
    let view = a.broadcast(IxDyn(shape)).ok_or_else(|| {
        Error::invalid(format!("cannot expand shape {:?} to {shape:?}", a.shape()))
    })?;
    Ok(Tensor::from(crate::core::buffers::row_major(&view)))
}

#[kernel(op = "expand")]
fn expand_kernel(x: &Tensor, size: &[i64]) -> Result<Tensor> {
    let shape = expand_shape(x.shape(), size)?;
    each_dtype!(x.data()?, a => expand_array(a, &shape))
}

#[batching_rule(op = "expand")]
fn expand_rule(x: &Tensor, bdim: Option<usize>, size: &[i64]) -> Result<(Tensor, Option<usize>)> {
    // The new leading dims go after the batch dim, as size-1 dims to grow (an
    // unbatched tensor gets them from expand itself); -1 keeps the batch dim.
    let x = align_to_front(x, bdim, size.len())?;
    let full: Vec<i64> = bdim
        .map(|_| -1)
        .into_iter()
        .chain(size.iter().copied())
        .collect();
    Ok((ops::expand(&x, &full)?, bdim.map(|_| 0)))
}

// ---------------------------------------------------------------------------
// flatten (composite)

/// The shape of `shape` with dims `start..=end` merged; `[1]` for a 0-d shape.
fn flatten_shape(shape: &[usize], start: i64, end: i64) -> Result<Vec<usize>> {
    let (s, e) = (dim_in(start, shape)?, dim_in(end, shape)?);
    if s > e {
        return Err(Error::invalid(format!(
            "start_dim {start} comes after end_dim {end} in a tensor of shape {shape:?}"
        )));
    }
    if shape.is_empty() {
        return Ok(vec![1]);
    }
    let mut out = shape[..s].to_vec();
    out.push(shape[s..=e].iter().product());
    out.extend_from_slice(&shape[e + 1..]);
    Ok(out)
}

#[meta(op = "flatten")]
fn flatten_meta(x: &TensorMeta, start_dim: i64, end_dim: i64) -> Result<TensorMeta> {
    Ok(TensorMeta::new(
        flatten_shape(x.shape(), start_dim, end_dim)?,
        x.dtype(),
    ))
}

#[decompose(op = "flatten")]
fn flatten_decomposition(x: &Tensor, start_dim: i64, end_dim: i64) -> Result<Tensor> {
    let shape = flatten_shape(x.shape(), start_dim, end_dim)?;
    ops::reshape(x, &shape_arg(None, &shape))
}
