//! Shape and indexing ops: `reshape`, `permute`, `transpose`, `unsqueeze`,
//! `squeeze`, `expand`, `narrow`, `cat`, `stack`, `index_select`, `gather`, and
//! the composite `flatten`. Semantics follow PyTorch.
//!
//! `permute`, `transpose`, `unsqueeze`, `squeeze`, `narrow` and a `reshape` of a
//! contiguous tensor share their input's storage; the others copy.
//!
//! The rules of the one-tensor ops move the batch dim to the front and call the
//! op itself on the physical tensor with every dim shifted by one. `cat` and
//! `stack` batch every operand at the front (materializing unbatched ones). The
//! indexing ops never materialize `self` when only the index is batched: the
//! batch of indices is folded into the indexed dim instead.

use ndarray::{ArcArray, ArrayD, Axis, IxDyn, Slice};

use crate::batching::{
    logical_rank, materialize_at_front, physical_dim, physical_new_dim, shape_arg, wrap_dim,
};
use crate::core::cast::cast;
use crate::{
    batching_rule, decompose, each_dtype, kernel, meta, ops, DType, Data, Element, Error, Result,
    Tensor, TensorMeta,
};

/// Runs `$body` with the type alias `$t` set to the element type of `$dtype`.
macro_rules! with_element {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            DType::Bool => {
                type $t = bool;
                $body
            }
            DType::I64 => {
                type $t = i64;
                $body
            }
            DType::F32 => {
                type $t = f32;
                $body
            }
            DType::F64 => {
                type $t = f64;
                $body
            }
        }
    };
}

// ---------------------------------------------------------------------------
// Shared checks (on logical shapes) and dense helpers.

/// Resolves `dim` (negative counts from the end) against `shape`. A 0-d tensor
/// takes dims -1 and 0, as in PyTorch.
fn dim_in(dim: i64, shape: &[usize]) -> Result<usize> {
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
fn new_dim_in(dim: i64, shape: &[usize]) -> Result<usize> {
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

/// The dtype all of `dtypes` promote to (bool < i64 < f32 < f64).
fn promoted(mut dtypes: impl Iterator<Item = DType>) -> Result<DType> {
    let first = dtypes
        .next()
        .ok_or_else(|| Error::invalid("expected a non-empty list of tensors, got an empty list"))?;
    Ok(dtypes.fold(first, DType::promote))
}

/// Checks `index` is an i64 tensor.
fn require_i64_index(index: &TensorMeta) -> Result<()> {
    if index.dtype() == DType::I64 {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "index must be an i64 tensor, got an index of dtype {} and shape {:?}",
            index.dtype(),
            index.shape()
        )))
    }
}

/// The i64 values of `index` as positions in a dim of `size`; errors on a
/// value out of `0..size`.
fn positions(index: &Tensor, size: usize) -> Result<Vec<usize>> {
    let Data::I64(ix) = index.data()? else {
        return Err(Error::invalid(format!(
            "index must be an i64 tensor, got dtype {}",
            index.dtype()
        )));
    };
    ix.iter().map(|&v| checked_position(v, size)).collect()
}

/// `v` as a position in a dim of `size`. The message names only the value and
/// the size: under vmap this runs on physical tensors, whose dims and shapes are
/// not the ones the user wrote.
fn checked_position(v: i64, size: usize) -> Result<usize> {
    match usize::try_from(v) {
        Ok(p) if p < size => Ok(p),
        _ if size == 0 => Err(Error::invalid(format!(
            "index {v} is out of range: the indexed dim has size 0"
        ))),
        _ => Err(Error::invalid(format!(
            "index {v} is out of range for a dim of size {size} (valid: 0..={})",
            size - 1
        ))),
    }
}

/// A dense 1-d tensor of shape `[0]`.
fn empty_1d(dtype: DType) -> Result<Tensor> {
    with_element!(dtype, T => Tensor::from_shape_vec::<T>(&[0], Vec::new()))
}

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

fn reshape_array<T: Element>(a: &ArcArray<T, IxDyn>, shape: &[usize]) -> Result<Tensor> {
    let out = if a.is_standard_layout() {
        a.clone().into_shape_with_order(IxDyn(shape))
    } else {
        ArrayD::from_shape_vec(IxDyn(shape), a.iter().copied().collect()).map(|o| o.into_shared())
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
    let Some(b) = bdim else {
        return Ok((ops::reshape(x, shape)?, None));
    };
    let x = x.moved_dim(b, 0)?;
    let size = x.shape()[0];
    let logical = resolve_shape(&x.shape()[1..], shape)?;
    Ok((ops::reshape(&x, &shape_arg(Some(size), &logical))?, Some(0)))
}

fn reshape_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[2, 3]);
    let mut s = Vec::new();
    for shape in [&[3i64, 2][..], &[6], &[-1], &[1, -1, 3], &[3, -1], &[2, 3]] {
        s.push(crate::args![&x, shape]);
    }
    for shape in [&[] as &[i64], &[1], &[-1], &[1, 1]] {
        s.push(crate::args![&f64s(&[]), shape]);
    }
    s.push(crate::args![&f64s(&[2, 0]), &[0i64, 5][..]]);
    s.push(crate::args![&f64s(&[2, 0]), &[-1i64][..]]);
    s.push(crate::args![&f64s(&[2, 0]), &[5i64, 0, 2][..]]);
    s.push(crate::args![&f64s(&[1, 4, 1]), &[2i64, -1][..]]);
    s.push(crate::args![&f32s(&[4]), &[2i64, 2][..]]);
    s.push(crate::args![&i64s(&[2, 3], 5), &[3i64, -1][..]]);
    s.push(crate::args![&bools(&[1, 4]), &[4i64, 1][..]]);
    s
}

fn reshape_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[2, 3]);
    vec![
        crate::args![&x, &[4i64][..]],
        crate::args![&x, &[-1i64, -1][..]],
        crate::args![&x, &[-1i64, 4][..]],
        crate::args![&x, &[-2i64, -3][..]],
        crate::args![&x, &[] as &[i64]],
        crate::args![&f64s(&[]), &[2i64][..]],
        crate::args![&f64s(&[2, 0]), &[-1i64, 0][..]],
    ]
}

crate::op_samples!(
    op = "reshape",
    samples = reshape_samples,
    errors = reshape_errors
);

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
    let Some(b) = bdim else {
        return Ok((ops::permute(x, dims)?, None));
    };
    let rank = logical_rank(x, bdim);
    let mut perm = vec![0i64];
    for &d in dims {
        perm.push(physical_dim(d, rank)? as i64);
    }
    Ok((ops::permute(&x.moved_dim(b, 0)?, &perm)?, Some(0)))
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
    let Some(b) = bdim else {
        return Ok((ops::transpose(x, dim0, dim1)?, None));
    };
    let rank = logical_rank(x, bdim);
    if rank == 0 {
        // Transposing a 0-d tensor leaves it as it is.
        return Ok((x.clone(), bdim));
    }
    let (p0, p1) = (physical_dim(dim0, rank)?, physical_dim(dim1, rank)?);
    Ok((
        ops::transpose(&x.moved_dim(b, 0)?, p0 as i64, p1 as i64)?,
        Some(0),
    ))
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
    let Some(b) = bdim else {
        return Ok((ops::unsqueeze(x, dim)?, None));
    };
    let d = physical_new_dim(dim, logical_rank(x, bdim))?;
    Ok((ops::unsqueeze(&x.moved_dim(b, 0)?, d as i64)?, Some(0)))
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
    let Some(b) = bdim else {
        return Ok((ops::squeeze(x, dim)?, None));
    };
    // Squeeze the logical dims one by one, never the batch dim (which may have
    // size 1 too).
    let mut out = x.moved_dim(b, 0)?;
    for d in squeezed_dims(&out.shape()[1..], dim)?.into_iter().rev() {
        out = ops::squeeze(&out, Some(d as i64 + 1))?;
    }
    Ok((out, Some(0)))
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

fn expand_array<T: Element>(a: &ArcArray<T, IxDyn>, shape: &[usize]) -> Result<Tensor> {
    let view = a.broadcast(IxDyn(shape)).ok_or_else(|| {
        Error::invalid(format!("cannot expand shape {:?} to {shape:?}", a.shape()))
    })?;
    Ok(Tensor::from(view.to_owned()))
}

#[kernel(op = "expand")]
fn expand_kernel(x: &Tensor, size: &[i64]) -> Result<Tensor> {
    let shape = expand_shape(x.shape(), size)?;
    each_dtype!(x.data()?, a => expand_array(a, &shape))
}

#[batching_rule(op = "expand")]
fn expand_rule(x: &Tensor, bdim: Option<usize>, size: &[i64]) -> Result<(Tensor, Option<usize>)> {
    let Some(b) = bdim else {
        return Ok((ops::expand(x, size)?, None));
    };
    // The new leading dims go after the batch dim, as size-1 dims to grow.
    let mut t = x.moved_dim(b, 0)?;
    for _ in logical_rank(x, bdim)..size.len() {
        t = t.unsqueezed(1)?;
    }
    let full: Vec<i64> = std::iter::once(-1).chain(size.iter().copied()).collect();
    Ok((ops::expand(&t, &full)?, Some(0)))
}

fn expand_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[3, 1]);
    let mut s = Vec::new();
    for size in [
        &[3i64, 4][..],
        &[-1, 4],
        &[3, 1],
        &[-1, -1],
        &[2, 3, 4],
        &[2, -1, -1],
        &[0, 3, 1],
        &[3, 0],
    ] {
        s.push(crate::args![&x, size]);
    }
    s.push(crate::args![&f64s(&[]), &[] as &[i64]]);
    s.push(crate::args![&f64s(&[]), &[3i64, 2][..]]);
    s.push(crate::args![&f64s(&[1]), &[0i64][..]]);
    s.push(crate::args![&f64s(&[2, 0]), &[3i64, 2, 0][..]]);
    s.push(crate::args![&f32s(&[1, 2]), &[2i64, -1][..]]);
    s.push(crate::args![&i64s(&[1], 4), &[5i64][..]]);
    s.push(crate::args![&bools(&[2, 1]), &[2i64, 3][..]]);
    s
}

fn expand_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[3, 1]);
    vec![
        crate::args![&x, &[4i64, 4][..]],
        crate::args![&x, &[1i64, 1][..]],
        crate::args![&x, &[4i64][..]],
        crate::args![&x, &[-1i64, 3, 1][..]],
        crate::args![&x, &[3i64, -2][..]],
        crate::args![&f64s(&[2, 0]), &[2i64, 1][..]],
    ]
}

crate::op_samples!(
    op = "expand",
    samples = expand_samples,
    errors = expand_errors
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

fn narrow_array<T: Element>(a: &ArcArray<T, IxDyn>, d: usize, start: usize, len: usize) -> Tensor {
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
    let Some(b) = bdim else {
        return Ok((ops::narrow(x, dim, start, length)?, None));
    };
    let d = physical_dim(dim, logical_rank(x, bdim))?;
    Ok((
        ops::narrow(&x.moved_dim(b, 0)?, d as i64, start, length)?,
        Some(0),
    ))
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
// cat and stack

/// As in PyTorch, `cat` skips 1-d empty tensors (shape `[0]`) when some other
/// tensor has another shape.
fn skipped_by_cat(shape: &[usize]) -> bool {
    shape == [0]
}

/// The indices of the tensors `cat` concatenates: those not skipped, or all of
/// them if every one is skipped.
fn cat_operands(shapes: &[&[usize]]) -> Vec<usize> {
    let kept: Vec<usize> = (0..shapes.len())
        .filter(|&i| !skipped_by_cat(shapes[i]))
        .collect();
    if kept.is_empty() {
        (0..shapes.len()).collect()
    } else {
        kept
    }
}

/// The output shape of `cat`, and the resolved dim.
fn cat_shape(shapes: &[&[usize]], dim: i64) -> Result<(Vec<usize>, usize)> {
    if shapes.is_empty() {
        return Err(Error::invalid(
            "expected a non-empty list of tensors, got an empty list",
        ));
    }
    if let Some(i) = shapes.iter().position(|s| s.is_empty()) {
        return Err(Error::invalid(format!(
            "tensor {i} is 0-d and cannot be concatenated (unsqueeze it first, or use stack)"
        )));
    }
    let kept = cat_operands(shapes);
    let i0 = kept[0];
    let first = shapes[i0];
    let d = dim_in(dim, first)?;
    let mut out = first.to_vec();
    out[d] = 0;
    for &i in &kept {
        let s = shapes[i];
        if s.len() != first.len() {
            return Err(Error::invalid(format!(
                "tensor {i} has shape {s:?} and tensor {i0} has shape {first:?}: \
                 the tensors must have the same number of dims"
            )));
        }
        if let Some(k) = (0..s.len()).find(|&k| k != d && s[k] != first[k]) {
            return Err(Error::invalid(format!(
                "tensor {i} has shape {s:?} and tensor {i0} has shape {first:?}: \
                 they must agree in every dim but dim {d}, and differ in dim {k}"
            )));
        }
        out[d] += s[d];
    }
    Ok((out, d))
}

#[meta(op = "cat")]
fn cat_meta(tensors: &[TensorMeta], dim: i64) -> Result<TensorMeta> {
    let shapes: Vec<&[usize]> = tensors.iter().map(TensorMeta::shape).collect();
    let (shape, _) = cat_shape(&shapes, dim)?;
    let dtype = promoted(tensors.iter().map(TensorMeta::dtype))?;
    Ok(TensorMeta::new(shape, dtype))
}

/// How [`join`] combines arrays.
#[derive(Clone, Copy)]
enum Join {
    Concatenate,
    Stack,
}

fn join_as<T: Element>(datas: &[Data], axis: usize, how: Join) -> Result<Tensor> {
    let views = datas
        .iter()
        .map(|d| {
            T::unwrap(d).map(|a| a.view()).ok_or_else(|| {
                Error::invalid(format!("expected {} data, got {}", T::DTYPE, d.dtype()))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let out = match how {
        Join::Concatenate => ndarray::concatenate(Axis(axis), &views),
        Join::Stack => ndarray::stack(Axis(axis), &views),
    };
    out.map(Tensor::from)
        .map_err(|e| Error::invalid(format!("cannot join the tensors along dim {axis}: {e}")))
}

/// `tensors` converted to `dtype` and concatenated or stacked along `axis`.
fn join(tensors: &[&Tensor], dtype: DType, axis: usize, how: Join) -> Result<Tensor> {
    let datas = tensors
        .iter()
        .map(|t| cast(t, dtype).map(std::borrow::Cow::into_owned))
        .collect::<Result<Vec<_>>>()?;
    with_element!(dtype, T => join_as::<T>(&datas, axis, how))
}

#[kernel(op = "cat")]
fn cat_kernel(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let shapes: Vec<&[usize]> = tensors.iter().map(Tensor::shape).collect();
    let (_, d) = cat_shape(&shapes, dim)?;
    let dtype = promoted(tensors.iter().map(Tensor::dtype))?;
    let kept: Vec<&Tensor> = cat_operands(&shapes)
        .into_iter()
        .map(|i| &tensors[i])
        .collect();
    join(&kept, dtype, d, Join::Concatenate)
}

#[batching_rule(op = "cat")]
fn cat_rule(
    tensors: &[Tensor],
    bdims: &[Option<usize>],
    dim: i64,
) -> Result<(Tensor, Option<usize>)> {
    if bdims.iter().all(Option::is_none) {
        return Ok((ops::cat(tensors, dim)?, None));
    }
    let mut physical = materialize_at_front(tensors, bdims)?;
    let logical: Vec<&[usize]> = physical.iter().map(|t| &t.shape()[1..]).collect();
    let kept = cat_operands(&logical);
    let rank = logical[kept[0]].len();
    if kept.len() < physical.len() {
        // The skipped examples are [0]-shaped; stand in an unbatched [0] tensor
        // of the same dtype, which the physical cat skips too (and promotes).
        for (i, t) in physical.iter_mut().enumerate() {
            if !kept.contains(&i) {
                *t = empty_1d(t.dtype())?;
            }
        }
    }
    let d = physical_dim(dim, rank)?;
    Ok((ops::cat(&physical, d as i64)?, Some(0)))
}

fn cat_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[2, 3]);
    vec![
        crate::args![&[x.clone(), f64s(&[1, 3])][..], 0i64],
        crate::args![&[x.clone(), f64s(&[2, 2]), f64s(&[2, 0])][..], -1i64],
        crate::args![&[x.clone()][..], 1i64],
        crate::args![&[x.clone(), x.clone()][..], -2i64],
        crate::args![&[f32s(&[2]), f64s(&[3])][..], 0i64],
        crate::args![&[i64s(&[2, 2], 5), bools(&[1, 2])][..], 0i64],
        crate::args![&[f64s(&[0, 3]), f64s(&[0, 3])][..], 1i64],
        crate::args![&[f64s(&[1, 1, 2]), f64s(&[1, 2, 2])][..], 1i64],
        // 1-d empty tensors are skipped next to tensors of other shapes (their
        // dtype still counts for the promotion).
        crate::args![&[x.clone(), f64s(&[0]), f64s(&[2, 1])][..], 1i64],
        crate::args![&[f64s(&[0]), f32s(&[2, 3])][..], 0i64],
        crate::args![&[f32s(&[0]), f64s(&[0])][..], -1i64],
        crate::args![&[f64s(&[0]), f64s(&[3])][..], 0i64],
    ]
}

fn cat_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[2, 3]);
    vec![
        crate::args![&[] as &[Tensor], 0i64],
        crate::args![&[x.clone(), f64s(&[3, 3])][..], 1i64],
        crate::args![&[x.clone(), f64s(&[3])][..], 0i64],
        crate::args![&[x.clone(), f64s(&[2, 3, 1])][..], 0i64],
        crate::args![&[f64s(&[]), f64s(&[])][..], 0i64],
        crate::args![&[x.clone(), f64s(&[0]), f64s(&[])][..], 0i64],
        crate::args![&[x.clone(), x.clone()][..], 2i64],
        crate::args![&[f64s(&[0]), f64s(&[0])][..], 1i64],
    ]
}

crate::op_samples!(op = "cat", samples = cat_samples, errors = cat_errors);

/// The output shape of `stack`, and the resolved new dim.
fn stack_shape(shapes: &[&[usize]], dim: i64) -> Result<(Vec<usize>, usize)> {
    let Some(first) = shapes.first() else {
        return Err(Error::invalid(
            "expected a non-empty list of tensors, got an empty list",
        ));
    };
    if let Some(i) = shapes.iter().position(|s| s != first) {
        return Err(Error::invalid(format!(
            "the tensors must have equal shapes, but tensor 0 has shape {first:?} and tensor {i} \
             has shape {:?}",
            shapes[i]
        )));
    }
    let d = new_dim_in(dim, first)?;
    let mut out = first.to_vec();
    out.insert(d, shapes.len());
    Ok((out, d))
}

#[meta(op = "stack")]
fn stack_meta(tensors: &[TensorMeta], dim: i64) -> Result<TensorMeta> {
    let shapes: Vec<&[usize]> = tensors.iter().map(TensorMeta::shape).collect();
    let (shape, _) = stack_shape(&shapes, dim)?;
    let dtype = promoted(tensors.iter().map(TensorMeta::dtype))?;
    Ok(TensorMeta::new(shape, dtype))
}

#[kernel(op = "stack")]
fn stack_kernel(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let shapes: Vec<&[usize]> = tensors.iter().map(Tensor::shape).collect();
    let (_, d) = stack_shape(&shapes, dim)?;
    let dtype = promoted(tensors.iter().map(Tensor::dtype))?;
    join(&tensors.iter().collect::<Vec<_>>(), dtype, d, Join::Stack)
}

#[batching_rule(op = "stack")]
fn stack_rule(
    tensors: &[Tensor],
    bdims: &[Option<usize>],
    dim: i64,
) -> Result<(Tensor, Option<usize>)> {
    if bdims.iter().all(Option::is_none) {
        return Ok((ops::stack(tensors, dim)?, None));
    }
    let physical = materialize_at_front(tensors, bdims)?;
    let rank = physical[0].ndim() - 1;
    let d = physical_new_dim(dim, rank)?;
    Ok((ops::stack(&physical, d as i64)?, Some(0)))
}

fn stack_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[2, 3]);
    let mut s: Vec<_> = [0i64, 1, 2, -1, -3]
        .into_iter()
        .map(|d| crate::args![&[x.clone(), x.clone()][..], d])
        .collect();
    s.push(crate::args![&[f64s(&[]), f64s(&[]), f64s(&[])][..], 0i64]);
    s.push(crate::args![&[f64s(&[])][..], -1i64]);
    s.push(crate::args![&[f64s(&[0, 2])][..], 1i64]);
    s.push(crate::args![&[f32s(&[2]), f64s(&[2])][..], 0i64]);
    s.push(crate::args![&[i64s(&[3], 5), bools(&[3])][..], -1i64]);
    s
}

fn stack_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&[] as &[Tensor], 0i64],
        crate::args![&[f64s(&[2, 3]), f64s(&[3, 2])][..], 0i64],
        crate::args![&[f64s(&[2]), f64s(&[2, 1])][..], 0i64],
        crate::args![&[f64s(&[2]), f64s(&[2])][..], 2i64],
        crate::args![&[f64s(&[2]), f64s(&[2])][..], -3i64],
    ]
}

crate::op_samples!(op = "stack", samples = stack_samples, errors = stack_errors);

// ---------------------------------------------------------------------------
// index_select

#[meta(op = "index_select")]
fn index_select_meta(x: &TensorMeta, dim: i64, index: &TensorMeta) -> Result<TensorMeta> {
    require_i64_index(index)?;
    if index.ndim() > 1 {
        return Err(Error::invalid(format!(
            "index must be 1-d (or 0-d), got shape {:?}",
            index.shape()
        )));
    }
    let d = dim_in(dim, x.shape())?;
    let n: usize = index.shape().iter().product();
    let mut shape = x.shape().to_vec();
    if shape.is_empty() {
        if n != 1 {
            return Err(Error::invalid(format!(
                "a 0-d tensor can only be indexed by an index of one element, got index shape {:?}",
                index.shape()
            )));
        }
    } else {
        shape[d] = n;
    }
    Ok(TensorMeta::new(shape, x.dtype()))
}

fn index_select_array<T: Element>(a: &ArcArray<T, IxDyn>, d: usize, at: &[usize]) -> Tensor {
    if a.ndim() == 0 {
        // The one index is 0 (checked): the element itself.
        return Tensor::from(a.clone());
    }
    Tensor::from(a.select(Axis(d), at))
}

#[kernel(op = "index_select")]
fn index_select_kernel(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = dim_in(dim, x.shape())?;
    // A 0-d tensor is indexed as if it had shape [1].
    let size = x.shape().get(d).copied().unwrap_or(1);
    let at = positions(index, size)?;
    Ok(each_dtype!(x.data()?, a => index_select_array(a, d, &at)))
}

#[batching_rule(op = "index_select")]
fn index_select_rule(
    x: &Tensor,
    x_bdim: Option<usize>,
    dim: i64,
    index: &Tensor,
    index_bdim: Option<usize>,
) -> Result<(Tensor, Option<usize>)> {
    let rank = logical_rank(x, x_bdim);
    match (x_bdim, index_bdim) {
        (None, None) => Ok((ops::index_select(x, dim, index)?, None)),
        (Some(xb), None) => {
            let x = x.moved_dim(xb, 0)?;
            if rank == 0 {
                // 0-d examples: select from [B, 1] and drop the 1.
                let out = ops::index_select(&x.unsqueezed(1)?, 1, index)?;
                return Ok((ops::squeeze(&out, Some(1))?, Some(0)));
            }
            let d = physical_dim(dim, rank)?;
            Ok((ops::index_select(&x, d as i64, index)?, Some(0)))
        }
        (None, Some(ib)) => {
            // One index_select with the whole batch of indices, flattened; the
            // selected dim is then split into (batch, indices).
            let index = index.moved_dim(ib, 0)?;
            let b = index.shape()[0];
            let n: usize = index.shape()[1..].iter().product();
            let flat = ops::reshape(&index, &[(b * n) as i64])?;
            if rank == 0 {
                let out = ops::index_select(&x.unsqueezed(0)?, 0, &flat)?;
                return Ok((out, Some(0)));
            }
            let d = wrap_dim(dim, rank)?;
            let out = ops::index_select(x, d as i64, &flat)?;
            let mut split = out.shape().to_vec();
            split.splice(d..=d, [b, n]);
            Ok((ops::reshape(&out, &shape_arg(None, &split))?, Some(d)))
        }
        (Some(xb), Some(ib)) => {
            // A gather along the selected dim, with each example's indices
            // expanded over the other dims.
            let mut x = x.moved_dim(xb, 0)?;
            if rank == 0 {
                x = x.unsqueezed(1)?;
            }
            let index = index.moved_dim(ib, 0)?;
            let b = index.shape()[0];
            let n: usize = index.shape()[1..].iter().product();
            let d = physical_dim(dim, rank.max(1))?;
            let mut target: Vec<i64> = vec![-1; x.ndim()];
            let mut shape = vec![1i64; x.ndim()];
            shape[0] = b as i64;
            shape[d] = n as i64;
            for (k, &s) in x.shape().iter().enumerate().skip(1) {
                if k != d {
                    target[k] = s as i64;
                }
            }
            let index = ops::expand(&ops::reshape(&index, &shape)?, &target)?;
            let mut out = ops::gather(&x, d as i64, &index)?;
            if rank == 0 {
                out = ops::squeeze(&out, Some(1))?;
            }
            Ok((out, Some(0)))
        }
    }
}

fn index_select_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[3, 4]);
    vec![
        crate::args![&x, 0i64, &i64s(&[5], 3)],
        crate::args![&x, -1i64, &i64s(&[2], 4)],
        crate::args![&x, 1i64, &i64s(&[0], 4)],
        crate::args![&x, 0i64, &i64s(&[], 3)],
        crate::args![&f32s(&[2, 3, 2]), 1i64, &i64s(&[4], 3)],
        crate::args![&f64s(&[1, 3]), 0i64, &i64s(&[3], 1)],
        crate::args![&f64s(&[0, 3]), 1i64, &i64s(&[2], 3)],
        crate::args![&f64s(&[]), 0i64, &i64s(&[1], 1)],
        crate::args![&f64s(&[]), -1i64, &i64s(&[], 1)],
        crate::args![&i64s(&[4], 9), 0i64, &i64s(&[3], 4)],
        crate::args![&bools(&[2, 3]), 1i64, &i64s(&[4], 3)],
    ]
}

fn index_select_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[3, 4]);
    vec![
        crate::args![&x, 2i64, &i64s(&[2], 3)],
        crate::args![&x, -3i64, &i64s(&[2], 3)],
        // Index values 3, 0, 7: out of range for a dim of size 3.
        crate::args![&x, 0i64, &i64s(&[3], 10)],
        // A 0-d index holding 3.
        crate::args![&x, 0i64, &i64s(&[], 7)],
        crate::args![&f64s(&[0, 3]), 0i64, &i64s(&[1], 1)],
        crate::args![&f64s(&[]), 0i64, &i64s(&[], 5)],
        crate::args![&x, 0i64, &f64s(&[2])],
        crate::args![&x, 0i64, &bools(&[2])],
        crate::args![&x, 0i64, &i64s(&[2, 2], 3)],
        crate::args![&f64s(&[]), 0i64, &i64s(&[2], 1)],
    ]
}

crate::op_samples!(
    op = "index_select",
    samples = index_select_samples,
    errors = index_select_errors
);

// ---------------------------------------------------------------------------
// gather

/// `shape`, with a 0-d shape read as `[1]` (gather treats 0-d as 1-d).
fn at_least_1d(shape: &[usize]) -> &[usize] {
    if shape.is_empty() {
        &[1]
    } else {
        shape
    }
}

#[meta(op = "gather")]
fn gather_meta(x: &TensorMeta, dim: i64, index: &TensorMeta) -> Result<TensorMeta> {
    require_i64_index(index)?;
    let (xs, is) = (at_least_1d(x.shape()), at_least_1d(index.shape()));
    if xs.len() != is.len() {
        return Err(Error::invalid(format!(
            "index must have as many dims as self: self has shape {:?}, index has shape {:?}",
            x.shape(),
            index.shape()
        )));
    }
    let d = dim_in(dim, x.shape())?;
    // As in PyTorch, an empty index is not compared with self.
    if !index.shape().contains(&0) {
        if let Some(k) = (0..xs.len()).find(|&k| k != d && is[k] > xs[k]) {
            return Err(Error::invalid(format!(
                "index of shape {:?} is larger than self of shape {:?} in dim {k}; \
                 only dim {d}, the gathered dim, may be larger",
                index.shape(),
                x.shape()
            )));
        }
    }
    Ok(TensorMeta::new(index.shape(), x.dtype()))
}

fn gather_array<T: Element>(
    a: &ArcArray<T, IxDyn>,
    d: usize,
    index: &ArcArray<i64, IxDyn>,
) -> Result<Tensor> {
    // 0-d arrays are read as shape [1].
    let src = match a.ndim() {
        0 => a.view().insert_axis(Axis(0)),
        _ => a.view(),
    };
    let idx = match index.ndim() {
        0 => index.view().insert_axis(Axis(0)),
        _ => index.view(),
    };
    if src.ndim() != idx.ndim() || d >= src.ndim() {
        return Err(Error::invalid(format!(
            "gather: index of shape {:?} does not fit self of shape {:?} at dim {d}",
            index.shape(),
            a.shape()
        )));
    }
    let size = src.shape()[d];
    let mut pos = vec![0usize; src.ndim()];
    let mut out = Vec::with_capacity(idx.len());
    for (p, &v) in idx.indexed_iter() {
        pos.copy_from_slice(ndarray::Dimension::slice(&p));
        pos[d] = checked_position(v, size)?;
        let value = src.get(pos.as_slice()).ok_or_else(|| {
            Error::invalid(format!(
                "index of shape {:?} is larger than self of shape {:?} at position {pos:?}",
                index.shape(),
                a.shape()
            ))
        })?;
        out.push(*value);
    }
    ArrayD::from_shape_vec(IxDyn(index.shape()), out)
        .map(Tensor::from)
        .map_err(|e| Error::invalid(format!("gather: {e}")))
}

#[kernel(op = "gather")]
fn gather_kernel(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = dim_in(dim, x.shape())?;
    let Data::I64(ix) = index.data()? else {
        return Err(Error::invalid(format!(
            "index must be an i64 tensor, got dtype {}",
            index.dtype()
        )));
    };
    each_dtype!(x.data()?, a => gather_array(a, d, ix))
}

#[batching_rule(op = "gather")]
fn gather_rule(
    x: &Tensor,
    x_bdim: Option<usize>,
    dim: i64,
    index: &Tensor,
    index_bdim: Option<usize>,
) -> Result<(Tensor, Option<usize>)> {
    let (x_rank, index_rank) = (logical_rank(x, x_bdim), logical_rank(index, index_bdim));
    match (x_bdim, index_bdim) {
        (None, None) => Ok((ops::gather(x, dim, index)?, None)),
        (Some(_), _) => {
            // Both at the front (an unbatched index repeated over the batch);
            // 0-d examples as [1].
            let [mut x, mut index]: [Tensor; 2] =
                materialize_at_front(&[x.clone(), index.clone()], &[x_bdim, index_bdim])?
                    .try_into()
                    .map_err(|_| Error::invalid("gather: expected two tensors"))?;
            if x_rank == 0 {
                x = x.unsqueezed(1)?;
            }
            if index_rank == 0 {
                index = index.unsqueezed(1)?;
            }
            let d = physical_dim(dim, x_rank.max(1))?;
            let mut out = ops::gather(&x, d as i64, &index)?;
            if index_rank == 0 {
                out = ops::squeeze(&out, Some(1))?;
            }
            Ok((out, Some(0)))
        }
        (None, Some(ib)) => {
            // Only the index is batched: fold its batch dim into the gathered dim
            // (which has no size constraint), gather once from the unbatched
            // self, and split the dim again.
            let x = if x_rank == 0 {
                x.unsqueezed(0)?
            } else {
                x.clone()
            };
            let d = wrap_dim(dim, x_rank.max(1))?;
            let mut index = index.moved_dim(ib, 0)?;
            if index_rank == 0 {
                index = index.unsqueezed(1)?;
            }
            let b = index.shape()[0];
            let mut shape = index.shape()[1..].to_vec();
            let index = index.moved_dim(0, d)?;
            let mut folded = shape.clone();
            folded[d] *= b;
            let out = ops::gather(
                &x,
                d as i64,
                &ops::reshape(&index, &shape_arg(None, &folded))?,
            )?;
            shape.insert(d, b);
            let mut out = ops::reshape(&out, &shape_arg(None, &shape))?;
            if index_rank == 0 {
                out = ops::squeeze(&out, Some(1))?;
            }
            Ok((out, Some(d)))
        }
    }
}

fn gather_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[3, 4]);
    vec![
        crate::args![&x, 0i64, &i64s(&[2, 4], 3)],
        crate::args![&x, 1i64, &i64s(&[3, 2], 4)],
        crate::args![&x, -1i64, &i64s(&[2, 6], 4)],
        crate::args![&x, 0i64, &i64s(&[5, 1], 3)],
        crate::args![&x, 1i64, &i64s(&[2, 0], 4)],
        crate::args![&f64s(&[]), 0i64, &i64s(&[], 1)],
        crate::args![&f64s(&[]), -1i64, &i64s(&[3], 1)],
        crate::args![&f64s(&[3]), 0i64, &i64s(&[], 3)],
        crate::args![&f32s(&[4]), 0i64, &i64s(&[1], 4)],
        crate::args![&i64s(&[2, 3], 5), 1i64, &i64s(&[1, 3], 3)],
        crate::args![&bools(&[2, 2, 3]), 2i64, &i64s(&[1, 2, 5], 3)],
        crate::args![&f64s(&[0, 3]), 1i64, &i64s(&[0, 2], 3)],
    ]
}

fn gather_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[3, 4]);
    vec![
        crate::args![&x, 0i64, &i64s(&[4], 3)],
        crate::args![&x, 0i64, &i64s(&[2, 5], 3)],
        crate::args![&x, 1i64, &i64s(&[4, 2], 4)],
        // Index values up to 8: out of range for a dim of size 4.
        crate::args![&x, 1i64, &i64s(&[3, 4], 9)],
        crate::args![&f64s(&[]), 0i64, &i64s(&[], 5)],
        crate::args![&x, 0i64, &f64s(&[2, 4])],
        crate::args![&x, 2i64, &i64s(&[3, 4], 3)],
        crate::args![&x, -3i64, &i64s(&[3, 4], 3)],
        crate::args![&f64s(&[3]), 0i64, &i64s(&[1, 1], 3)],
    ]
}

crate::op_samples!(
    op = "gather",
    samples = gather_samples,
    errors = gather_errors
);

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

fn flatten_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[2, 3, 4]);
    let mut s: Vec<_> = [(0i64, -1i64), (1, 2), (0, 0), (-2, -1), (0, 1)]
        .into_iter()
        .map(|(a, b)| crate::args![&x, a, b])
        .collect();
    s.push(crate::args![&f64s(&[]), 0i64, -1i64]);
    s.push(crate::args![&f64s(&[]), -1i64, 0i64]);
    s.push(crate::args![&f64s(&[2, 0, 3]), 0i64, 1i64]);
    s.push(crate::args![&f32s(&[1, 3]), 0i64, -1i64]);
    s.push(crate::args![&i64s(&[2, 2], 5), 0i64, 1i64]);
    s.push(crate::args![&bools(&[3]), 0i64, 0i64]);
    s
}

fn flatten_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2, 3]), 1i64, 0i64],
        crate::args![&f64s(&[2, 3]), 0i64, 2i64],
        crate::args![&f64s(&[2, 3]), -3i64, 1i64],
        crate::args![&f64s(&[]), 1i64, 0i64],
    ]
}

crate::op_samples!(
    op = "flatten",
    samples = flatten_samples,
    errors = flatten_errors
);
