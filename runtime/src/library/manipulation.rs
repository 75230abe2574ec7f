//! Shape manipulation (`ops/manipulation.toml`): `split`, `split_with_sizes`
//! and `chunk` (several tensors), `flip`, `roll`, `repeat`, `masked_fill` and
//! `one_hot`.
//!
//! All but `one_hot` are composites, each with a meta that checks its
//! arguments once on the logical shapes (naming the op and the argument) and
//! a decomposition over ops that have batching rules, vjps and linear jvps:
//!
//! * `split_with_sizes` is the one primitive among them: its kernel makes
//!   each piece a view (one `narrow` of the array each), its batching rule
//!   splits the physical tensor along the physical dim, it is linear (its
//!   jvp splits the tangent), and its vjp concatenates the pieces'
//!   cotangents once (`cat`; the backward pass gives zeros for pieces no
//!   cotangent reached), so a backward through `n` pieces costs what the
//!   input does, not `n` times it (a `narrow` per piece would pad each
//!   piece's cotangent to the whole dim and add the `n` pads up). `split`
//!   and `chunk` are composites over it;
//! * `flip`: an `index_select` with reversed indices (`arange`) per dim;
//! * `roll`: two `narrow`s and a `cat` per dim (a `reshape` to one dim and
//!   back for the flattened roll);
//! * `repeat`: `reshape` to interleave size-1 dims, `expand` them to the
//!   repeats, `reshape` to merge each pair;
//! * `masked_fill`: `where(mask, value, self)`, so the gradient of `self` is 0
//!   where it was filled.
//!
//! `one_hot` is a primitive (its kernel checks the class values, which no
//! meta can see) that is not differentiable; its batching rule is the op
//! itself on the physical tensor (the new dim is last, after the batch dim).

use crate::batching::{bdim_to_front, physical_dim, shape_arg};
use crate::core::alloc::checked_numel;
use crate::core::broadcast::broadcast_or_err;
use crate::core::cast::scalar_like;
use crate::core::wrap_dim::check_dim;
use crate::library::dims::narrow_array;
use crate::{
    batching_rule, decompose, each_dtype, kernel, meta, ops, DType, Error, Result, Tensor,
    TensorMeta,
};

/// The most pieces `chunk` makes of an empty dim (PyTorch makes `chunks`
/// empty tensors, so a hostile `chunks` would exhaust memory).
const MAX_EMPTY_PIECES: usize = 1 << 20;

/// The dim of `x` to split along: `x` must have at least one dim.
fn split_dim(x: &[usize], dim: i64) -> Result<usize> {
    if x.is_empty() {
        return Err(Error::invalid(
            "cannot split a 0-d tensor: it has no dim to split along (unsqueeze it first)",
        ));
    }
    check_dim(dim, x.len())
}

/// The sizes of the pieces of a dim of size `n` split into pieces of
/// `split_size` (PyTorch's rule: at least one piece, the last one smaller).
fn split_sizes(n: usize, split_size: i64) -> Result<Vec<usize>> {
    let s = usize::try_from(split_size).map_err(|_| {
        Error::invalid(format!(
            "`split_size` must be non-negative, got {split_size}"
        ))
    })?;
    if s == 0 {
        if n != 0 {
            return Err(Error::invalid(format!(
                "`split_size` can only be 0 if the dim has size 0, but it has size {n}"
            )));
        }
        return Ok(vec![0]);
    }
    let count = n.div_ceil(s).max(1);
    let mut sizes = vec![s; count];
    // s * (count - 1) < n, or 0 when n is 0.
    sizes[count - 1] = n - s * (count - 1);
    Ok(sizes)
}

/// The sizes of `chunk`'s pieces of a dim of size `n`.
fn chunk_sizes(n: usize, chunks: i64) -> Result<Vec<usize>> {
    if chunks <= 0 {
        return Err(Error::invalid(format!(
            "`chunks` must be positive, got {chunks}"
        )));
    }
    let c = usize::try_from(chunks).unwrap_or(usize::MAX);
    if n == 0 {
        if c > MAX_EMPTY_PIECES {
            return Err(Error::invalid(format!(
                "`chunks` is {chunks}: a dim of size 0 gives that many empty pieces, \
                 more than the {MAX_EMPTY_PIECES} allowed"
            )));
        }
        return Ok(vec![0; c]);
    }
    split_sizes(n, n.div_ceil(c) as i64)
}

/// The metas of the pieces of `x` along dim `d` with the given sizes.
fn piece_metas(x: &TensorMeta, d: usize, sizes: &[usize]) -> Vec<TensorMeta> {
    sizes
        .iter()
        .map(|&s| {
            let mut shape = x.shape().to_vec();
            shape[d] = s;
            TensorMeta::new(shape, x.dtype())
        })
        .collect()
}

/// The pieces of `x` along dim `d`: one `split_with_sizes`.
fn pieces(x: &Tensor, d: usize, sizes: &[usize]) -> Result<Vec<Tensor>> {
    let sizes: Vec<i64> = sizes.iter().map(|&s| s as i64).collect();
    ops::split_with_sizes(x, &sizes, d as i64)
}

#[meta(op = "split")]
fn split_meta(x: &TensorMeta, split_size: i64, dim: i64) -> Result<Vec<TensorMeta>> {
    let d = split_dim(x.shape(), dim)?;
    Ok(piece_metas(x, d, &split_sizes(x.shape()[d], split_size)?))
}

#[decompose(op = "split")]
fn split_decomposition(x: &Tensor, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
    let d = split_dim(x.shape(), dim)?;
    pieces(x, d, &split_sizes(x.shape()[d], split_size)?)
}

/// The sizes of `split_with_sizes`, checked against the size `n` of the dim.
fn given_sizes(n: usize, split_sizes: &[i64]) -> Result<Vec<usize>> {
    let mut total = 0usize;
    let mut sizes = Vec::with_capacity(split_sizes.len());
    for (i, &s) in split_sizes.iter().enumerate() {
        let s = usize::try_from(s).map_err(|_| {
            Error::invalid(format!(
                "`split_sizes[{i}]` is {s}, but a size must be non-negative"
            ))
        })?;
        total = total.saturating_add(s);
        sizes.push(s);
    }
    if total != n {
        return Err(Error::invalid(format!(
            "`split_sizes` {split_sizes:?} must add up to the size {n} of the dim"
        )));
    }
    Ok(sizes)
}

#[meta(op = "split_with_sizes")]
fn split_with_sizes_meta(x: &TensorMeta, split_sizes: &[i64], dim: i64) -> Result<Vec<TensorMeta>> {
    let d = split_dim(x.shape(), dim)?;
    Ok(piece_metas(x, d, &given_sizes(x.shape()[d], split_sizes)?))
}

/// Each piece a view of `x`: one `narrow` of its array each, in one pass.
#[kernel(op = "split_with_sizes")]
fn split_with_sizes_kernel(x: &Tensor, split_sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    let d = split_dim(x.shape(), dim)?;
    let sizes = given_sizes(x.shape()[d], split_sizes)?;
    let data = x.data()?;
    let mut start = 0usize;
    let mut out = Vec::with_capacity(sizes.len());
    for s in sizes {
        out.push(each_dtype!(data, a => narrow_array(a, d, start, s)));
        start += s;
    }
    Ok(out)
}

/// The physical tensor split along the physical dim (the batch dim moved to
/// the front): every piece batched at 0.
#[batching_rule(op = "split_with_sizes")]
fn split_with_sizes_rule(
    x: &Tensor,
    bdim: Option<usize>,
    split_sizes: &[i64],
    dim: i64,
) -> Result<(Vec<Tensor>, Vec<Option<usize>>)> {
    let x = bdim_to_front(x, bdim)?;
    let d = physical_dim(&x, bdim.is_some(), dim)?;
    let out = ops::split_with_sizes(&x, split_sizes, d as i64)?;
    let bdims = vec![bdim.map(|_| 0); out.len()];
    Ok((out, bdims))
}

#[meta(op = "chunk")]
fn chunk_meta(x: &TensorMeta, chunks: i64, dim: i64) -> Result<Vec<TensorMeta>> {
    let d = split_dim(x.shape(), dim)?;
    Ok(piece_metas(x, d, &chunk_sizes(x.shape()[d], chunks)?))
}

#[decompose(op = "chunk")]
fn chunk_decomposition(x: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    let d = split_dim(x.shape(), dim)?;
    pieces(x, d, &chunk_sizes(x.shape()[d], chunks)?)
}

// ---------------------------------------------------------------------------
// flip

/// The dims of `flip`, resolved; each at most once.
fn flip_dims(shape: &[usize], dims: &[i64]) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = Vec::with_capacity(dims.len());
    for &d in dims {
        let r = check_dim(d, shape.len())?;
        if out.contains(&r) {
            return Err(Error::invalid(format!(
                "dim {r} appears more than once in `dims` {dims:?}"
            )));
        }
        out.push(r);
    }
    Ok(out)
}

#[meta(op = "flip")]
fn flip_meta(x: &TensorMeta, dims: &[i64]) -> Result<TensorMeta> {
    flip_dims(x.shape(), dims)?;
    Ok(x.clone())
}

#[decompose(op = "flip")]
fn flip_decomposition(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let mut y = x.clone();
    for d in flip_dims(x.shape(), dims)? {
        let n = x.shape().get(d).copied().unwrap_or(1);
        if n > 1 {
            let reversed = ops::arange(n as f64 - 1.0, -1.0, -1.0, DType::I64)?;
            y = ops::index_select(&y, d as i64, &reversed)?;
        }
    }
    Ok(y)
}

// ---------------------------------------------------------------------------
// roll

/// `(dim, shift)` pairs of a `roll` over `shape` with `dims` given.
fn roll_pairs(shape: &[usize], shifts: &[i64], dims: &[i64]) -> Result<Vec<(usize, i64)>> {
    if dims.is_empty() {
        if shifts.len() != 1 {
            return Err(Error::invalid(format!(
                "with `dims` empty (a roll of the flattened tensor) `shifts` must have one entry, got {shifts:?}"
            )));
        }
        return Ok(Vec::new());
    }
    if shifts.len() != dims.len() {
        return Err(Error::invalid(format!(
            "`shifts` {shifts:?} and `dims` {dims:?} must have the same length"
        )));
    }
    if shape.is_empty() {
        return Err(Error::invalid(
            "a 0-d tensor has no dim to roll along (pass `dims` empty to roll it flattened)",
        ));
    }
    dims.iter()
        .zip(shifts)
        .map(|(&d, &s)| Ok((check_dim(d, shape.len())?, s)))
        .collect()
}

#[meta(op = "roll")]
fn roll_meta(x: &TensorMeta, shifts: &[i64], dims: &[i64]) -> Result<TensorMeta> {
    roll_pairs(x.shape(), shifts, dims)?;
    Ok(x.clone())
}

/// `x` rolled by `shift` along dim `d`: its last `k` elements (`k = shift mod
/// n`) then its first `n - k`.
fn roll_one(x: &Tensor, d: usize, shift: i64) -> Result<Tensor> {
    let n = x.shape()[d] as i64;
    if n == 0 {
        return Ok(x.clone());
    }
    let k = shift.rem_euclid(n);
    if k == 0 {
        return Ok(x.clone());
    }
    let tail = ops::narrow(x, d as i64, n - k, k)?;
    let head = ops::narrow(x, d as i64, 0, n - k)?;
    ops::cat(&[tail, head], d as i64)
}

#[decompose(op = "roll")]
fn roll_decomposition(x: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if dims.is_empty() {
        let numel = checked_numel(x.shape())?;
        let flat = ops::reshape(x, &shape_arg(None, &[numel]))?;
        let rolled = roll_one(&flat, 0, shifts[0])?;
        return ops::reshape(&rolled, &shape_arg(None, x.shape()));
    }
    let mut y = x.clone();
    for (d, s) in roll_pairs(x.shape(), shifts, dims)? {
        y = roll_one(&y, d, s)?;
    }
    Ok(y)
}

// ---------------------------------------------------------------------------
// repeat

/// The shape of `self` with leading 1s up to the length of `repeats`, and the
/// shape of the result.
fn repeat_shapes(shape: &[usize], repeats: &[i64]) -> Result<(Vec<usize>, Vec<usize>)> {
    if repeats.len() < shape.len() {
        return Err(Error::invalid(format!(
            "`repeats` {repeats:?} has {} entries, fewer than the {} dims of self (shape {shape:?})",
            repeats.len(),
            shape.len()
        )));
    }
    let mut padded = vec![1usize; repeats.len() - shape.len()];
    padded.extend_from_slice(shape);
    let mut out = Vec::with_capacity(repeats.len());
    for (i, (&r, &s)) in repeats.iter().zip(&padded).enumerate() {
        let r = usize::try_from(r).map_err(|_| {
            Error::invalid(format!(
                "`repeats[{i}]` is {r}, but a repeat count must be non-negative"
            ))
        })?;
        out.push(r.checked_mul(s).ok_or_else(|| {
            Error::invalid(format!(
                "repeating a dim of size {s} {r} times gives more than {} elements",
                usize::MAX
            ))
        })?);
    }
    checked_numel(&out)?;
    Ok((padded, out))
}

#[meta(op = "repeat")]
fn repeat_meta(x: &TensorMeta, repeats: &[i64]) -> Result<TensorMeta> {
    let (_, out) = repeat_shapes(x.shape(), repeats)?;
    Ok(TensorMeta::new(out, x.dtype()))
}

/// `self` viewed as `[1, s0, 1, s1, ...]`, expanded to `[r0, s0, r1, s1,
/// ...]`, reshaped to `[r0 * s0, r1 * s1, ...]`.
#[decompose(op = "repeat")]
fn repeat_decomposition(x: &Tensor, repeats: &[i64]) -> Result<Tensor> {
    let (padded, out) = repeat_shapes(x.shape(), repeats)?;
    let mut ones = Vec::with_capacity(2 * padded.len());
    let mut expanded = Vec::with_capacity(2 * padded.len());
    for (&r, &s) in repeats.iter().zip(&padded) {
        ones.extend([1, s as i64]);
        expanded.extend([r, s as i64]);
    }
    let interleaved = ops::reshape(x, &ones)?;
    let copies = ops::expand(&interleaved, &expanded)?;
    ops::reshape(&copies, &shape_arg(None, &out))
}

// ---------------------------------------------------------------------------
// masked_fill

/// Rejects a fill value that the tensor's dtype cannot hold (PyTorch: "value
/// cannot be converted to type ... without overflow").
fn check_fill_value(dtype: DType, value: f64) -> Result<()> {
    let ok = match dtype {
        DType::F64 | DType::Bool => true,
        DType::F32 => !value.is_finite() || value.abs() <= f64::from(f32::MAX),
        // i64::MAX as f64 is 2^63, itself out of range.
        DType::I64 => value.is_finite() && value >= -(2f64.powi(63)) && value < 2f64.powi(63),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "`value` {value} cannot be converted to the tensor's dtype {dtype} without overflow"
        )))
    }
}

#[meta(op = "masked_fill")]
fn masked_fill_meta(x: &TensorMeta, mask: &TensorMeta, value: f64) -> Result<TensorMeta> {
    if mask.dtype() != DType::Bool {
        return Err(Error::invalid(format!(
            "`mask` must be a bool tensor, got {}; compare with eq/lt/gt to get one",
            mask.dtype()
        )));
    }
    check_fill_value(x.dtype(), value)?;
    let shape = broadcast_or_err(x.shape(), mask.shape())?;
    Ok(TensorMeta::new(shape, x.dtype()))
}

#[decompose(op = "masked_fill")]
fn masked_fill_decomposition(x: &Tensor, mask: &Tensor, value: f64) -> Result<Tensor> {
    let fill = scalar_like(&TensorMeta::of(x), value);
    ops::where_(mask, &fill, x)
}

// ---------------------------------------------------------------------------
// one_hot

#[meta(op = "one_hot")]
fn one_hot_meta(x: &TensorMeta, num_classes: i64) -> Result<TensorMeta> {
    if x.dtype() != DType::I64 {
        return Err(Error::invalid(format!(
            "needs an i64 tensor of class indices, got {}",
            x.dtype()
        )));
    }
    if num_classes < 1 {
        let why = if num_classes == -1 {
            "PyTorch's -1 infers it from the largest class in the data, but an op's \
             output shape is computed from shapes alone (under vmap, from one example's \
             shape), so pass the number of classes"
        } else {
            "PyTorch rejects 0 and other values below -1 too"
        };
        return Err(Error::invalid(format!(
            "`num_classes` must be at least 1, got {num_classes}: {why}"
        )));
    }
    let mut shape = x.shape().to_vec();
    shape.push(usize::try_from(num_classes).unwrap_or(usize::MAX));
    checked_numel(&shape)?;
    Ok(TensorMeta::new(shape, DType::I64))
}

#[kernel(op = "one_hot")]
fn one_hot_kernel(x: &Tensor, num_classes: i64) -> Result<Tensor> {
    let a = x.dense_as::<i64>("one_hot")?;
    let nc = num_classes as usize;
    let mut out = vec![0i64; a.len() * nc];
    for (i, &v) in a.iter().enumerate() {
        if v < 0 || v >= num_classes {
            return Err(Error::invalid(format!(
                "class value {v} is out of range for `num_classes` {num_classes} (valid: 0..{num_classes})"
            )));
        }
        out[i * nc + v as usize] = 1;
    }
    let mut shape = x.shape().to_vec();
    shape.push(nc);
    Tensor::from_shape_vec(&shape, out)
}

/// The new dim is the last one, after the batch dim wherever that is.
#[batching_rule(op = "one_hot")]
fn one_hot_rule(
    x: &Tensor,
    bdim: Option<usize>,
    num_classes: i64,
) -> Result<(Tensor, Option<usize>)> {
    Ok((ops::one_hot(x, num_classes)?, bdim))
}
