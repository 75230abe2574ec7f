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

fn permute_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[2, 3, 4]);
    vec![
        crate::args![&x, &[2i64, 0, 1][..]],
        crate::args![&x, &[-1i64, 0, -2][..]],
        crate::args![&x, &[0i64, 1, 2][..]],
        crate::args![&f64s(&[]), &[] as &[i64]],
        crate::args![&f64s(&[1, 0, 2]), &[2i64, 1, 0][..]],
        crate::args![&i64s(&[2, 3], 5), &[1i64, 0][..]],
        crate::args![&f32s(&[3, 1]), &[1i64, 0][..]],
        crate::args![&bools(&[3]), &[0i64][..]],
    ]
}

fn permute_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[2, 3, 4]);
    vec![
        crate::args![&x, &[0i64, 1][..]],
        crate::args![&x, &[0i64, 0, 1][..]],
        crate::args![&x, &[0i64, -3, 1][..]],
        crate::args![&x, &[0i64, 1, 3][..]],
        crate::args![&f64s(&[]), &[0i64][..]],
    ]
}

crate::op_samples!(
    op = "permute",
    samples = permute_samples,
    errors = permute_errors
);

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

fn transpose_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2, 3]), 0i64, 1i64],
        crate::args![&f64s(&[2, 3, 4]), -1i64, 0i64],
        crate::args![&f64s(&[2, 3, 4]), 1i64, 1i64],
        crate::args![&f64s(&[]), 0i64, -1i64],
        crate::args![&f64s(&[0, 3]), 0i64, 1i64],
        crate::args![&f32s(&[1, 4]), 1i64, -2i64],
        crate::args![&i64s(&[3, 2], 7), 0i64, 1i64],
        crate::args![&bools(&[4]), 0i64, -1i64],
    ]
}

fn transpose_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2, 3]), 2i64, 0i64],
        crate::args![&f64s(&[2, 3]), 0i64, -3i64],
        crate::args![&f64s(&[]), 1i64, 0i64],
        crate::args![&f64s(&[]), 0i64, -2i64],
    ]
}

crate::op_samples!(
    op = "transpose",
    samples = transpose_samples,
    errors = transpose_errors
);

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

fn unsqueeze_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[2, 3]);
    let mut s: Vec<_> = [0i64, 1, 2, -1, -3]
        .into_iter()
        .map(|d| crate::args![&x, d])
        .collect();
    s.push(crate::args![&f64s(&[]), 0i64]);
    s.push(crate::args![&f64s(&[]), -1i64]);
    s.push(crate::args![&f64s(&[0]), 1i64]);
    s.push(crate::args![&f32s(&[1]), 0i64]);
    s.push(crate::args![&i64s(&[2], 5), -1i64]);
    s.push(crate::args![&bools(&[2]), 0i64]);
    s
}

fn unsqueeze_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2, 3]), 3i64],
        crate::args![&f64s(&[2, 3]), -4i64],
        crate::args![&f64s(&[]), 1i64],
        crate::args![&f64s(&[]), -2i64],
    ]
}

crate::op_samples!(
    op = "unsqueeze",
    samples = unsqueeze_samples,
    errors = unsqueeze_errors
);

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

fn squeeze_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[1, 3, 1]);
    let mut s: Vec<_> = [None, Some(0i64), Some(1), Some(2), Some(-1), Some(-3)]
        .into_iter()
        .map(|d| crate::args![&x, d])
        .collect();
    for d in [None, Some(0i64), Some(-1)] {
        s.push(crate::args![&f64s(&[]), d]);
    }
    s.push(crate::args![&f64s(&[1]), None::<i64>]);
    s.push(crate::args![&f64s(&[2, 0, 1]), None::<i64>]);
    s.push(crate::args![&f64s(&[2, 0, 1]), Some(1i64)]);
    s.push(crate::args![&f32s(&[4]), None::<i64>]);
    s.push(crate::args![&i64s(&[1, 1], 3), None::<i64>]);
    s.push(crate::args![&bools(&[1, 2]), Some(0i64)]);
    s
}

fn squeeze_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[1, 3]), Some(2i64)],
        crate::args![&f64s(&[1, 3]), Some(-3i64)],
        crate::args![&f64s(&[]), Some(1i64)],
    ]
}

crate::op_samples!(
    op = "squeeze",
    samples = squeeze_samples,
    errors = squeeze_errors
);

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

fn narrow_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[4, 3]);
    vec![
        crate::args![&x, 0i64, 1i64, 2i64],
        crate::args![&x, -1i64, 0i64, 3i64],
        crate::args![&x, 0i64, -2i64, 2i64],
        crate::args![&x, 1i64, 3i64, 0i64],
        crate::args![&x, 1i64, -3i64, 1i64],
        crate::args![&f64s(&[0, 2]), 0i64, 0i64, 0i64],
        crate::args![&f32s(&[5]), 0i64, 4i64, 1i64],
        crate::args![&i64s(&[2, 3], 5), 1i64, 1i64, 2i64],
        crate::args![&bools(&[3, 1]), 1i64, 0i64, 1i64],
    ]
}

fn narrow_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[4, 3]);
    vec![
        crate::args![&f64s(&[]), 0i64, 0i64, 0i64],
        crate::args![&x, 2i64, 0i64, 1i64],
        crate::args![&x, 0i64, 3i64, 2i64],
        crate::args![&x, 0i64, -5i64, 1i64],
        crate::args![&x, 0i64, 5i64, 0i64],
        crate::args![&x, 0i64, 0i64, -1i64],
        crate::args![&x, 1i64, -1i64, 2i64],
    ]
}

crate::op_samples!(
    op = "narrow",
    samples = narrow_samples,
    errors = narrow_errors
);

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

fn pad_dim_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[4, 3]);
    vec![
        crate::args![&x, 0i64, 1i64, 2i64],
        crate::args![&x, -1i64, 0i64, 3i64],
        crate::args![&x, 1i64, 2i64, 0i64],
        crate::args![&x, 0i64, 0i64, 0i64],
        crate::args![&f64s(&[0, 2]), 0i64, 2i64, 1i64],
        crate::args![&f64s(&[2, 0]), 1i64, 0i64, 0i64],
        crate::args![&f32s(&[5]), 0i64, 1i64, 1i64],
        crate::args![&i64s(&[2, 3], 5), 1i64, 1i64, 2i64],
        crate::args![&bools(&[3, 1]), -2i64, 1i64, 0i64],
    ]
}

fn pad_dim_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[4, 3]);
    vec![
        crate::args![&f64s(&[]), 0i64, 1i64, 0i64],
        crate::args![&x, 2i64, 0i64, 1i64],
        crate::args![&x, -3i64, 0i64, 1i64],
        crate::args![&x, 0i64, -1i64, 2i64],
        crate::args![&x, 0i64, 1i64, -2i64],
        crate::args![&x, 0i64, i64::MAX, 0i64],
    ]
}

crate::op_samples!(
    op = "pad_dim",
    samples = pad_dim_samples,
    errors = pad_dim_errors
);
