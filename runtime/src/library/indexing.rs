//! Indexing ops: `index_select` and `gather`, which pick elements by an i64
//! index tensor and copy them. Semantics follow PyTorch. The index values are
//! data, not shapes, so the kernels check them (the metas check the index's
//! dtype and shape).
//!
//! Their rules never materialize `self` when only the index is batched: the
//! batch of indices is folded into the indexed dim instead.

use ndarray::{ArcArray, ArrayD, Axis, IxDyn};

use super::dims::dim_in;
use crate::batching::{
    bdim_to_front, logical_rank, materialize_at_front, physical_dim, shape_arg, wrap_dim,
};
use crate::{
    batching_rule, each_dtype, kernel, meta, ops, DType, Data, Element, Error, Result, Tensor,
    TensorMeta,
};

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
    i64_values(index)?
        .iter()
        .map(|&v| checked_position(v, size))
        .collect()
}

/// The values of `index`, which must be an i64 tensor.
fn i64_values(index: &Tensor) -> Result<&ArcArray<i64, IxDyn>> {
    match index.data()? {
        Data::I64(ix) => Ok(ix),
        _ => Err(Error::invalid(format!(
            "index must be an i64 tensor, got dtype {}",
            index.dtype()
        ))),
    }
}

/// `a` as the gather and scatter kernels read it: a 0-d array as shape [1].
fn view_at_least_1d<T>(a: &ArcArray<T, IxDyn>) -> ndarray::ArrayViewD<'_, T> {
    match a.ndim() {
        0 => a.view().insert_axis(Axis(0)),
        _ => a.view(),
    }
}

/// Checks that an index of rank `index_rank` fits `self` of rank `rank` at
/// dim `d` (the shapes as the user gave them, for the message).
fn check_fits(
    rank: usize,
    index_rank: usize,
    d: usize,
    index: &[usize],
    x: &[usize],
) -> Result<()> {
    if rank != index_rank || d >= rank {
        return Err(Error::invalid(format!(
            "index of shape {index:?} does not fit self of shape {x:?} at dim {d}"
        )));
    }
    Ok(())
}

/// For the gather and scatter kernels' plain-slice path: if `index` has
/// `full`'s shape but at dim `d`, the size `n` of `d` in `index` and the
/// number `inner` of values after `d`, both non-zero, with `d` non-empty in
/// `full` too (so, with `size` the size of `d` in `full`, both arrays are
/// blocks of `size * inner` and `n * inner` values, one per position before
/// `d`).
fn around_dim(full: &[usize], index: &[usize], d: usize) -> Option<(usize, usize)> {
    let same_outside = full.len() == index.len()
        && d < full.len()
        && full
            .iter()
            .zip(index)
            .enumerate()
            .all(|(k, (a, b))| k == d || a == b);
    let inner: usize = full.get(d + 1..)?.iter().product();
    let (size, n) = (*full.get(d)?, *index.get(d)?);
    (same_outside && size > 0 && n > 0 && inner > 0).then_some((n, inner))
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
    let rank = logical_rank(x, x_bdim)?;
    match (x_bdim, index_bdim) {
        (_, None) => {
            // One index for every example: select along the physical dim.
            let x = bdim_to_front(x, x_bdim)?;
            let front = usize::from(x_bdim.is_some());
            if rank == 0 {
                // 0-d examples: select from [B, 1] and drop the 1.
                let at = front as i64;
                let out = ops::index_select(&x.unsqueezed(front)?, at, index)?;
                return Ok((ops::squeeze(&out, Some(at))?, x_bdim.map(|_| 0)));
            }
            let d = physical_dim(&x, x_bdim.is_some(), dim)?;
            Ok((ops::index_select(&x, d as i64, index)?, x_bdim.map(|_| 0)))
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
            let d = physical_dim(&x, true, dim)?;
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
    if !index.shape().contains(&0)
        && let Some(k) = (0..xs.len()).find(|&k| k != d && is[k] > xs[k])
    {
        return Err(Error::invalid(format!(
            "index of shape {:?} is larger than self of shape {:?} in dim {k}; \
                 only dim {d}, the gathered dim, may be larger",
            index.shape(),
            x.shape()
        )));
    }
    Ok(TensorMeta::new(index.shape(), x.dtype()))
}

fn gather_array<T: Element>(
    a: &ArcArray<T, IxDyn>,
    d: usize,
    index: &ArcArray<i64, IxDyn>,
) -> Result<Tensor> {
    let (src, idx) = (view_at_least_1d(a), view_at_least_1d(index));
    check_fits(src.ndim(), idx.ndim(), d, index.shape(), a.shape())?;
    let size = src.shape()[d];
    if let (Some(x), Some(ix), Some((n, inner))) = (
        src.as_slice(),
        idx.as_slice(),
        around_dim(src.shape(), idx.shape(), d),
    ) {
        // Both standard layout and of one shape but at `d`: blocks of plain
        // slices, in the same order as the general loop below.
        let mut out = Vec::with_capacity(ix.len());
        for (from, io) in x.chunks_exact(size * inner).zip(ix.chunks_exact(n * inner)) {
            for row in io.chunks_exact(inner) {
                for (j, &v) in row.iter().enumerate() {
                    out.push(from[checked_position(v, size)? * inner + j]);
                }
            }
        }
        return Tensor::from_shape_vec(index.shape(), out);
    }
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
        .map_err(|e| Error::invalid(format!("cannot shape the result: {e}")))
}

#[kernel(op = "gather")]
fn gather_kernel(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = dim_in(dim, x.shape())?;
    let ix = i64_values(index)?;
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
    let (x_rank, index_rank) = (logical_rank(x, x_bdim)?, logical_rank(index, index_bdim)?);
    match (x_bdim, index_bdim) {
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
        _ => {
            // Self is batched: both at the front (an unbatched index repeated
            // over the batch); 0-d examples as [1].
            let [mut x, mut index]: [Tensor; 2] =
                materialize_at_front(&[x.clone(), index.clone()], &[x_bdim, index_bdim])?
                    .try_into()
                    .map_err(|_| Error::invalid("expected two tensors"))?;
            if x_rank == 0 {
                x = x.unsqueezed(1)?;
            }
            if index_rank == 0 {
                index = index.unsqueezed(1)?;
            }
            let d = physical_dim(&x, true, dim)?;
            let mut out = ops::gather(&x, d as i64, &index)?;
            if index_rank == 0 {
                out = ops::squeeze(&out, Some(1))?;
            }
            Ok((out, Some(0)))
        }
    }
}

// ---------------------------------------------------------------------------
// index_add and scatter_add: the reverses of index_select and gather

/// Checks the two tensors an accumulating op adds (`self` and the values
/// added to it) have one dtype, and one it can add: i64 or a float.
fn require_summable(x: &TensorMeta, added: &TensorMeta, name: &str) -> Result<()> {
    if x.dtype() == DType::Bool {
        return Err(Error::invalid(
            "is not defined for bool tensors, got self of dtype bool; convert it with \
             to_dtype to i64 or a float first",
        ));
    }
    if added.dtype() != x.dtype() {
        return Err(Error::invalid(format!(
            "{name} must have self's dtype {}, got {}; convert it with to_dtype first",
            x.dtype(),
            added.dtype()
        )));
    }
    Ok(())
}

/// An element an accumulating kernel adds: i64 wraps on overflow (as `add`).
trait Summand: Element + crate::core::buffers::Cached {
    fn plus(self, other: Self) -> Self;
}
impl Summand for i64 {
    fn plus(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
}
impl Summand for f32 {
    fn plus(self, other: Self) -> Self {
        self + other
    }
}
impl Summand for f64 {
    fn plus(self, other: Self) -> Self {
        self + other
    }
}

/// Runs `$body` with `$a` and `$s` bound to the arrays of `$x` and `$src`,
/// which must hold the same summable element type.
macro_rules! summable_pair {
    ($x:expr, $src:expr, |$a:ident, $s:ident| $body:expr) => {
        match ($x.data()?, $src.data()?) {
            (Data::I64($a), Data::I64($s)) => $body,
            (Data::F32($a), Data::F32($s)) => $body,
            (Data::F64($a), Data::F64($s)) => $body,
            (a, s) => Err(Error::invalid(format!(
                "cannot add {} values into a {} tensor",
                s.dtype(),
                a.dtype()
            ))),
        }
    };
}

#[meta(op = "index_add")]
fn index_add_meta(
    x: &TensorMeta,
    dim: i64,
    index: &TensorMeta,
    source: &TensorMeta,
) -> Result<TensorMeta> {
    // `source` has the shape index_select would give for the same arguments.
    let selected = index_select_meta(x, dim, index)?;
    if source.shape() != selected.shape() {
        return Err(Error::invalid(format!(
            "source must have shape {:?} (self's shape {:?} with dim {dim} of the index's \
             length {}), got {:?}",
            selected.shape(),
            x.shape(),
            index.shape().iter().product::<usize>(),
            source.shape()
        )));
    }
    require_summable(x, source, "source")?;
    Ok(x.clone())
}

fn index_add_array<T: Summand>(
    a: &ArcArray<T, IxDyn>,
    d: usize,
    at: &[usize],
    source: &ArcArray<T, IxDyn>,
) -> Result<Tensor> {
    let mut out = a.to_owned();
    if out.ndim() == 0 {
        // 0-d: the one index is 0 (checked) and the source is 0-d.
        for (o, &s) in out.iter_mut().zip(source.iter()) {
            *o = o.plus(s);
        }
        return Ok(Tensor::from(out));
    }
    if source.ndim() != out.ndim() || source.shape()[d] != at.len() {
        return Err(Error::invalid(format!(
            "source of shape {:?} does not fit self of shape {:?} and {} indices at dim {d}",
            source.shape(),
            a.shape(),
            at.len()
        )));
    }
    for (i, &p) in at.iter().enumerate() {
        let mut slot = out.index_axis_mut(Axis(d), p);
        let add = source.index_axis(Axis(d), i);
        let Some(add) = add.broadcast(slot.raw_dim()) else {
            return Err(Error::invalid(format!(
                "source of shape {:?} does not fit self of shape {:?}",
                source.shape(),
                a.shape()
            )));
        };
        slot.zip_mut_with(&add, |o, &s| *o = o.plus(s));
    }
    Ok(Tensor::from(out))
}

#[kernel(op = "index_add")]
fn index_add_kernel(x: &Tensor, dim: i64, index: &Tensor, source: &Tensor) -> Result<Tensor> {
    let d = dim_in(dim, x.shape())?;
    // A 0-d tensor is indexed as if it had shape [1].
    let size = x.shape().get(d).copied().unwrap_or(1);
    let at = positions(index, size)?;
    summable_pair!(x, source, |a, s| index_add_array(a, d, &at, s))
}

/// `index` (batch dim at the front, logical rank at most 1) as a gather or
/// scatter index for a tensor of physical shape `shape` (batch dim at the
/// front) at physical dim `d`: each example's indices along `d`, expanded
/// over the other dims.
fn expand_index_along(index: &Tensor, shape: &[usize], d: usize) -> Result<Tensor> {
    let b = index.shape()[0];
    let n: usize = index.shape()[1..].iter().product();
    let mut view = vec![1i64; shape.len()];
    view[0] = b as i64;
    view[d] = n as i64;
    let mut target: Vec<i64> = shape_arg(None, shape);
    target[d] = n as i64;
    ops::expand(&ops::reshape(index, &view)?, &target)
}

#[batching_rule(op = "index_add")]
fn index_add_rule(
    x: &Tensor,
    x_bdim: Option<usize>,
    dim: i64,
    index: &Tensor,
    index_bdim: Option<usize>,
    source: &Tensor,
    source_bdim: Option<usize>,
) -> Result<(Tensor, Option<usize>)> {
    // The result is per example whatever is batched: self and source at the
    // front (repeated over the batch if unbatched), with the index if it is
    // batched (an unbatched one serves every example as it is); 0-d examples
    // as [1].
    let rank = logical_rank(x, x_bdim)?;
    let mut tensors = vec![x.clone(), source.clone()];
    let mut bdims = vec![x_bdim, source_bdim];
    if index_bdim.is_some() {
        tensors.push(index.clone());
        bdims.push(index_bdim);
    }
    let ts = materialize_at_front(&tensors, &bdims)?;
    let (x, source, batched_index) = match &ts[..] {
        [x, source] => (x, source, None),
        [x, source, index] => (x, source, Some(index)),
        _ => return Err(Error::invalid("expected two or three tensors")),
    };
    let (x, source) = if rank == 0 {
        (x.unsqueezed(1)?, source.unsqueezed(1)?)
    } else {
        (x.clone(), source.clone())
    };
    let d = physical_dim(&x, true, dim)?;
    let out = match batched_index {
        // One index for every example: index_add along the physical dim.
        None => ops::index_add(&x, d as i64, index, &source)?,
        // Each example's own indices: a scatter_add with them expanded over
        // the other dims (whose kernel checks every index against the dim).
        Some(batched_index) => {
            let index = expand_index_along(batched_index, source.shape(), d)?;
            ops::scatter_add(&x, d as i64, &index, &source)?
        }
    };
    let out = if rank == 0 {
        ops::squeeze(&out, Some(1))?
    } else {
        out
    };
    Ok((out, Some(0)))
}

#[meta(op = "scatter_add")]
fn scatter_add_meta(
    x: &TensorMeta,
    dim: i64,
    index: &TensorMeta,
    src: &TensorMeta,
) -> Result<TensorMeta> {
    require_i64_index(index)?;
    let (xs, is, ss) = (
        at_least_1d(x.shape()),
        at_least_1d(index.shape()),
        at_least_1d(src.shape()),
    );
    if is.len() != xs.len() || ss.len() != xs.len() {
        return Err(Error::invalid(format!(
            "self, index and src must have the same number of dims, got shapes {:?}, {:?} and {:?}",
            x.shape(),
            index.shape(),
            src.shape()
        )));
    }
    let d = dim_in(dim, x.shape())?;
    // As in PyTorch, an empty index is not compared with self and src.
    if !index.shape().contains(&0) {
        if let Some(k) = (0..is.len()).find(|&k| is[k] > ss[k]) {
            return Err(Error::invalid(format!(
                "index of shape {:?} is larger than src of shape {:?} in dim {k}",
                index.shape(),
                src.shape()
            )));
        }
        if let Some(k) = (0..is.len()).find(|&k| k != d && is[k] > xs[k]) {
            return Err(Error::invalid(format!(
                "index of shape {:?} is larger than self of shape {:?} in dim {k}; \
                 only dim {d}, the scattered dim, may be larger",
                index.shape(),
                x.shape()
            )));
        }
    }
    require_summable(x, src, "src")?;
    Ok(x.clone())
}

/// The fast path of [`scatter_add_array`]: everything standard layout, the
/// index and `src` of `self`'s shape but `n` at the dim (of `size`), with
/// `inner` values after it. Adds each block of `n * inner` values of `s` into
/// its block of `size * inner` values of `to`, in order.
fn scatter_blocks<T: Summand>(
    to: &mut [T],
    ix: &[i64],
    s: &[T],
    size: usize,
    n: usize,
    inner: usize,
) -> Result<()> {
    let block = n * inner;
    for ((to, io), so) in to
        .chunks_exact_mut(size * inner)
        .zip(ix.chunks_exact(block))
        .zip(s.chunks_exact(block))
    {
        for (row, values) in io.chunks_exact(inner).zip(so.chunks_exact(inner)) {
            for (j, (&v, &value)) in row.iter().zip(values).enumerate() {
                let o = &mut to[checked_position(v, size)? * inner + j];
                *o = o.plus(value);
            }
        }
    }
    Ok(())
}

/// [`scatter_blocks`] into a copy of `base`, on rayon's pool: pieces of whole
/// blocks, each copied and then added into by its own task (the additions
/// into one value stay in order, so the bits are the serial loop's). The
/// error of the first bad index in order, as the serial loop gives.
#[cfg(feature = "rayon")]
fn scatter_blocks_parallel<T: Summand>(
    base: &[T],
    ix: &[i64],
    s: &[T],
    size: usize,
    n: usize,
    inner: usize,
) -> Result<Vec<T>> {
    let (chunk, block) = (size * inner, n * inner);
    let piece = crate::core::buffers::piece_rows(base.len(), chunk, 1 << 14);
    let errors = std::sync::Mutex::new(Vec::new());
    let out = crate::core::buffers::par_build(base.len(), piece, |start, p| {
        let end = start + p.len();
        p.extend(base[start..end].iter().copied());
        let (b0, b1) = (start / chunk * block, end / chunk * block);
        if let Err(e) = scatter_blocks(p.written_mut(), &ix[b0..b1], &s[b0..b1], size, n, inner) {
            p.unwrite();
            if let Ok(mut errors) = errors.lock() {
                errors.push((start, e));
            }
        }
    });
    let mut errors = errors
        .into_inner()
        .map_err(|_| Error::invalid("scatter_add: a parallel piece panicked"))?;
    errors.sort_by_key(|&(start, _)| start);
    match errors.into_iter().next() {
        Some((_, e)) => Err(e),
        None => out,
    }
}

fn scatter_add_array<T: Summand>(
    a: &ArcArray<T, IxDyn>,
    d: usize,
    index: &ArcArray<i64, IxDyn>,
    src: &ArcArray<T, IxDyn>,
) -> Result<Tensor> {
    let (src, idx) = (view_at_least_1d(src), view_at_least_1d(index));
    // The fast path's blocks, from the shape `self` is read as (a 0-d one as
    // [1]): `around_dim` checks the ranks and the dim, and that no size is 0.
    let shape: &[usize] = if a.ndim() == 0 { &[1] } else { a.shape() };
    let fast = around_dim(shape, idx.shape(), d).filter(|_| src.shape() == idx.shape());
    #[cfg(feature = "rayon")]
    if let (Some((n, inner)), Some(base), Some(s), Some(ix)) =
        (fast, a.as_slice(), src.as_slice(), idx.as_slice())
        && crate::core::broadcast::parallel(base.len().max(ix.len()))
    {
        return scatter_blocks_parallel(base, ix, s, shape[d], n, inner)
            .and_then(|out| Tensor::from_shape_vec(a.shape(), out));
    }
    let mut out = a.to_owned();
    let mut dest = match out.ndim() {
        0 => out.view_mut().insert_axis(Axis(0)),
        _ => out.view_mut(),
    };
    check_fits(dest.ndim(), idx.ndim(), d, index.shape(), a.shape())?;
    let size = dest.shape()[d];
    if let (Some(s), Some(ix), Some(to), Some((n, inner))) =
        (src.as_slice(), idx.as_slice(), dest.as_slice_mut(), fast)
    {
        scatter_blocks(to, ix, s, size, n, inner)?;
        return Ok(Tensor::from(out));
    }
    let mut pos = vec![0usize; dest.ndim()];
    for (p, &v) in idx.indexed_iter() {
        let from = ndarray::Dimension::slice(&p);
        pos.copy_from_slice(from);
        pos[d] = checked_position(v, size)?;
        let (Some(&s), Some(o)) = (src.get(from), dest.get_mut(pos.as_slice())) else {
            return Err(Error::invalid(format!(
                "index of shape {:?} does not fit self of shape {:?} and src of shape {:?}",
                index.shape(),
                a.shape(),
                src.shape()
            )));
        };
        *o = o.plus(s);
    }
    Ok(Tensor::from(out))
}

#[kernel(op = "scatter_add")]
fn scatter_add_kernel(x: &Tensor, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    let d = dim_in(dim, x.shape())?;
    let ix = i64_values(index)?;
    summable_pair!(x, src, |a, s| scatter_add_array(a, d, ix, s))
}

#[batching_rule(op = "scatter_add")]
fn scatter_add_rule(
    x: &Tensor,
    x_bdim: Option<usize>,
    dim: i64,
    index: &Tensor,
    index_bdim: Option<usize>,
    src: &Tensor,
    src_bdim: Option<usize>,
) -> Result<(Tensor, Option<usize>)> {
    // Every operand at the front (repeated over the batch if unbatched), 0-d
    // examples as [1]; then scatter along the physical dim.
    let ranks = [
        logical_rank(x, x_bdim)?,
        logical_rank(index, index_bdim)?,
        logical_rank(src, src_bdim)?,
    ];
    let mut ts = materialize_at_front(
        &[x.clone(), index.clone(), src.clone()],
        &[x_bdim, index_bdim, src_bdim],
    )?;
    for (t, &rank) in ts.iter_mut().zip(&ranks) {
        if rank == 0 {
            *t = t.unsqueezed(1)?;
        }
    }
    let [x, index, src] = &ts[..] else {
        return Err(Error::invalid("expected three tensors"));
    };
    let d = physical_dim(x, true, dim)?;
    let out = ops::scatter_add(x, d as i64, index, src)?;
    let out = if ranks[0] == 0 {
        ops::squeeze(&out, Some(1))?
    } else {
        out
    };
    Ok((out, Some(0)))
}
