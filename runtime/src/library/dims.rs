//! Dim ops: `permute`, `transpose`, `unsqueeze`, `squeeze` and `narrow`, which
//! reorder, add, remove or narrow dims. Semantics follow PyTorch; each result
//! shares its input's storage.
//!
//! Their rules move the batch dim to the front and call the op itself on the
//! physical tensor with every logical dim shifted by one
//! ([`physical_dim`]).
//!
//! The dim resolution here ([`dim_in`], [`new_dim_in`]) names the shape in its
//! errors; the other view families ([`super::shape`], [`super::join`],
//! [`super::indexing`]) use it too.

use ndarray::{ArcArray, Axis, IxDyn, Slice};

use crate::batching::{bdim_to_front, logical_rank, physical_dim, physical_new_dim};
use crate::{
    batching_rule, each_dtype, kernel, meta, ops, Element, Error, Result, Tensor, TensorMeta,
};

/// Resolves `dim` (negative counts from the end) against `shape`. A 0-d tensor
/// takes dims -1 and 0, as in PyTorch.
pub(super) fn dim_in(dim: i64, shape: &[usize]) -> Result<usize> {
    let r = shape.len().max(1) as i64;
    if dim < -r || dim >= r {
        return Err(Error::invalid(format!(
            "dim {dim} is out of range for a tensor of shape {shape:?} (valid: {}..={})",
            -r,
            r - 1
        )));
    }
    Ok(if dim < 0 { dim + r } else { dim } as usize)
}

/// Resolves the position of a new dim inserted into a tensor of `shape`:
/// `-(rank + 1)..=rank`.
pub(super) fn new_dim_in(dim: i64, shape: &[usize]) -> Result<usize> {
    let r = shape.len() as i64 + 1;
    if dim < -r || dim >= r {
        return Err(Error::invalid(format!(
            "cannot insert a dim at {dim} into a tensor of shape {shape:?} (valid: {}..={})",
            -r,
            r - 1
        )));
    }
    Ok(if dim < 0 { dim + r } else { dim } as usize)
}

// ---------------------------------------------------------------------------
// permute

/// `dims` resolved against `shape`, checked to be a permutation of its dims.
fn permutation(shape: &[usize], dims: &[i64]) -> Result<Vec<usize>> {
    if dims.len() != shape.len() {
        return Err(Error::invalid(format!(
            "dims {dims:?} has {} entries, but the tensor of shape {shape:?} has {} dims",
            dims.len(),
            shape.len()
        )));
    }
    let mut seen = vec![false; shape.len()];
    dims.iter()
        .map(|&d| {
            let p = dim_in(d, shape)?;
            if std::mem::replace(&mut seen[p], true) {
                return Err(Error::invalid(format!(
                    "dims {dims:?} names dim {p} twice; it must be a permutation of the dims of shape {shape:?}"
                )));
            }
            Ok(p)
        })
        .collect()
}

#[meta(op = "permute")]
fn permute_meta(x: &TensorMeta, dims: &[i64]) -> Result<TensorMeta> {
    let perm = permutation(x.shape(), dims)?;
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
    Ok(TensorMeta::new(shape, x.dtype()))
}

#[kernel(op = "permute")]
fn permute_kernel(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    x.permuted(&permutation(x.shape(), dims)?)
}

#[batching_rule(op = "permute")]
fn permute_rule(x: &Tensor, bdim: Option<usize>, dims: &[i64]) -> Result<(Tensor, Option<usize>)> {
    // The batch dim, if any, stays first; the logical dims follow, permuted.
    let x = bdim_to_front(x, bdim)?;
    let mut perm: Vec<i64> = bdim.map(|_| 0).into_iter().collect();
    for &d in dims {
        perm.push(physical_dim(&x, bdim.is_some(), d)? as i64);
    }
    Ok((ops::permute(&x, &perm)?, bdim.map(|_| 0)))
}

// ---------------------------------------------------------------------------
// transpose

#[meta(op = "transpose")]
fn transpose_meta(x: &TensorMeta, dim0: i64, dim1: i64) -> Result<TensorMeta> {
    let (d0, d1) = (dim_in(dim0, x.shape())?, dim_in(dim1, x.shape())?);
    let mut shape = x.shape().to_vec();
    if !shape.is_empty() {
        shape.swap(d0, d1);
    }
    Ok(TensorMeta::new(shape, x.dtype()))
}

#[kernel(op = "transpose")]
fn transpose_kernel(x: &Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    if x.ndim() == 0 {
        return Ok(x.clone());
    }
    let (d0, d1) = (dim_in(dim0, x.shape())?, dim_in(dim1, x.shape())?);
    let mut perm: Vec<usize> = (0..x.ndim()).collect();
    perm.swap(d0, d1);
    x.permuted(&perm)
}

#[batching_rule(op = "transpose")]
fn transpose_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim0: i64,
    dim1: i64,
) -> Result<(Tensor, Option<usize>)> {
    if logical_rank(x, bdim)? == 0 {
        // Transposing a 0-d tensor leaves it as it is.
        return Ok((x.clone(), bdim));
    }
    let x = bdim_to_front(x, bdim)?;
    let p0 = physical_dim(&x, bdim.is_some(), dim0)?;
    let p1 = physical_dim(&x, bdim.is_some(), dim1)?;
    Ok((ops::transpose(&x, p0 as i64, p1 as i64)?, bdim.map(|_| 0)))
}

// ---------------------------------------------------------------------------
// unsqueeze

#[meta(op = "unsqueeze")]
fn unsqueeze_meta(x: &TensorMeta, dim: i64) -> Result<TensorMeta> {
    let d = new_dim_in(dim, x.shape())?;
    let mut shape = x.shape().to_vec();
    shape.insert(d, 1);
    Ok(TensorMeta::new(shape, x.dtype()))
}

#[kernel(op = "unsqueeze")]
fn unsqueeze_kernel(x: &Tensor, dim: i64) -> Result<Tensor> {
    x.unsqueezed(new_dim_in(dim, x.shape())?)
}

#[batching_rule(op = "unsqueeze")]
fn unsqueeze_rule(x: &Tensor, bdim: Option<usize>, dim: i64) -> Result<(Tensor, Option<usize>)> {
    let x = bdim_to_front(x, bdim)?;
    let d = physical_new_dim(&x, bdim.is_some(), dim)?;
    Ok((ops::unsqueeze(&x, d as i64)?, bdim.map(|_| 0)))
}

// ---------------------------------------------------------------------------
// squeeze

/// The dims `squeeze` removes from a tensor of `shape`, in increasing order.
fn squeezed_dims(shape: &[usize], dim: Option<i64>) -> Result<Vec<usize>> {
    match dim {
        None => Ok((0..shape.len()).filter(|&d| shape[d] == 1).collect()),
        Some(d) => {
            let d = dim_in(d, shape)?;
            Ok(if shape.get(d) == Some(&1) {
                vec![d]
            } else {
                Vec::new()
            })
        }
    }
}

#[meta(op = "squeeze")]
fn squeeze_meta(x: &TensorMeta, dim: Option<i64>) -> Result<TensorMeta> {
    let mut shape = x.shape().to_vec();
    for d in squeezed_dims(x.shape(), dim)?.into_iter().rev() {
        shape.remove(d);
    }
    Ok(TensorMeta::new(shape, x.dtype()))
}

#[kernel(op = "squeeze")]
fn squeeze_kernel(x: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    let mut out = x.clone();
    for d in squeezed_dims(x.shape(), dim)?.into_iter().rev() {
        out = out.select(d, 0)?;
    }
    Ok(out)
}

#[batching_rule(op = "squeeze")]
fn squeeze_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim: Option<i64>,
) -> Result<(Tensor, Option<usize>)> {
    // Squeeze the logical dims one by one, never the batch dim (which may have
    // size 1 too).
    let front = usize::from(bdim.is_some());
    let mut out = bdim_to_front(x, bdim)?;
    for d in squeezed_dims(&out.shape()[front..], dim)?.into_iter().rev() {
        out = ops::squeeze(&out, Some((d + front) as i64))?;
    }
    Ok((out, bdim.map(|_| 0)))
}

// ---------------------------------------------------------------------------
// narrow

/// The dim, start and length of a `narrow` of a tensor of `shape`.
fn narrow_range(
    shape: &[usize],
    dim: i64,
    start: i64,
    length: i64,
) -> Result<(usize, usize, usize)> {
    if shape.is_empty() {
        return Err(Error::invalid(
            "cannot narrow a 0-d tensor: it has no dim to narrow",
        ));
    }
    let d = dim_in(dim, shape)?;
    let size = shape[d] as i64;
    if length < 0 {
        return Err(Error::invalid(format!(
            "length {length} is negative (tensor shape {shape:?})"
        )));
    }
    if start < -size || start > size {
        return Err(Error::invalid(format!(
            "start {start} is out of range for dim {d} of size {size} (tensor shape {shape:?}; \
             valid: {}..={size})",
            -size
        )));
    }
    let s = if start < 0 { start + size } else { start };
    if length > size - s {
        return Err(Error::invalid(format!(
            "start {s} + length {length} exceeds the size {size} of dim {d} (tensor shape {shape:?})"
        )));
    }
    Ok((d, s as usize, length as usize))
}

#[meta(op = "narrow")]
fn narrow_meta(x: &TensorMeta, dim: i64, start: i64, length: i64) -> Result<TensorMeta> {
    let (d, _, len) = narrow_range(x.shape(), dim, start, length)?;
    let mut shape = x.shape().to_vec();
    shape[d] = len;
    Ok(TensorMeta::new(shape, x.dtype()))
}

pub(crate) fn narrow_array<T: Element>(
    a: &ArcArray<T, IxDyn>,
    d: usize,
    start: usize,
    len: usize,
) -> Tensor {
    let mut out = a.clone();
    out.slice_axis_inplace(Axis(d), Slice::from(start..start + len));
    Tensor::from(out)
}

#[kernel(op = "narrow")]
fn narrow_kernel(x: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    let (d, s, len) = narrow_range(x.shape(), dim, start, length)?;
    Ok(each_dtype!(x.data()?, a => narrow_array(a, d, s, len)))
}

#[batching_rule(op = "narrow")]
fn narrow_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim: i64,
    start: i64,
    length: i64,
) -> Result<(Tensor, Option<usize>)> {
    let x = bdim_to_front(x, bdim)?;
    let d = physical_dim(&x, bdim.is_some(), dim)?;
    Ok((ops::narrow(&x, d as i64, start, length)?, bdim.map(|_| 0)))
}

// ---------------------------------------------------------------------------
// pad_dim

/// The dim of a `pad_dim` of a tensor of `shape`, the two counts, and the
/// padded size of that dim.
fn pad_range(
    shape: &[usize],
    dim: i64,
    before: i64,
    after: i64,
) -> Result<(usize, usize, usize, usize)> {
    if shape.is_empty() {
        return Err(Error::invalid(
            "cannot pad a 0-d tensor: it has no dim to pad (unsqueeze it first)",
        ));
    }
    let d = dim_in(dim, shape)?;
    let count = |name: &str, v: i64| {
        usize::try_from(v).map_err(|_| {
            Error::invalid(format!(
                "`{name}` is {v}, but the number of zeros to add must be non-negative \
                 (tensor shape {shape:?}); use narrow to remove entries"
            ))
        })
    };
    let (b, a) = (count("before", before)?, count("after", after)?);
    let size = shape[d]
        .checked_add(b)
        .and_then(|s| s.checked_add(a))
        .ok_or_else(|| {
            Error::invalid(format!(
                "padding dim {d} of size {} by {before} and {after} gives more than {} entries",
                shape[d],
                usize::MAX
            ))
        })?;
    Ok((d, b, a, size))
}

#[meta(op = "pad_dim")]
fn pad_dim_meta(x: &TensorMeta, dim: i64, before: i64, after: i64) -> Result<TensorMeta> {
    let (d, _, _, size) = pad_range(x.shape(), dim, before, after)?;
    let mut shape = x.shape().to_vec();
    shape[d] = size;
    Ok(TensorMeta::new(shape, x.dtype()))
}

fn pad_array<T: Element>(a: &ArcArray<T, IxDyn>, d: usize, before: usize, size: usize) -> Tensor {
    let mut shape = a.shape().to_vec();
    let len = shape[d];
    shape[d] = size;
    let mut out = ndarray::ArrayD::<T>::default(IxDyn(&shape));
    out.slice_axis_mut(Axis(d), Slice::from(before..before + len))
        .assign(a);
    Tensor::from(out)
}

#[kernel(op = "pad_dim")]
fn pad_dim_kernel(x: &Tensor, dim: i64, before: i64, after: i64) -> Result<Tensor> {
    let (d, b, _, size) = pad_range(x.shape(), dim, before, after)?;
    Ok(each_dtype!(x.data()?, a => pad_array(a, d, b, size)))
}

#[batching_rule(op = "pad_dim")]
fn pad_dim_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim: i64,
    before: i64,
    after: i64,
) -> Result<(Tensor, Option<usize>)> {
    let x = bdim_to_front(x, bdim)?;
    let d = physical_dim(&x, bdim.is_some(), dim)?;
    Ok((ops::pad_dim(&x, d as i64, before, after)?, bdim.map(|_| 0)))
}
