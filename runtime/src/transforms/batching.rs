//! Helpers for writing batching rules, and rule generators for families of ops.
//!
//! A batching rule receives plain tensors (not batched at the current level),
//! each with `Option<usize>`: where its batch dim is, or `None`. It returns its
//! output with the output's batch dim. The helpers here cover the recurring
//! steps (move the batch dim to the front, align ranks, map a logical dim to a
//! physical one), and the generators turn a whole family of ops into rules with
//! one line each:
//!
//! ```
//! use batchrules::batching::unary_pointwise;
//! use batchrules::{ops, Result, Tensor};
//!
//! // The rule of a pointwise op applies the op to the physical tensor as is.
//! fn neg_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
//!     unary_pointwise(ops::neg, x, bdim)
//! }
//! # let x = Tensor::from(ndarray::array![1.0f32, -2.0].into_dyn());
//! # let (y, b) = neg_rule(&x, Some(0))?;
//! # assert_eq!(b, Some(0));
//! # assert_eq!(y.to_array::<f32>()?, ndarray::array![-1.0f32, 2.0].into_dyn());
//! # Ok::<(), batchrules::Error>(())
//! ```
//!
//! # Nothing batched never reaches a rule
//!
//! The dispatcher calls a rule only when at least one of its tensor arguments
//! has a batch dim at the rule's level: an op call with nothing batched at a
//! level never reaches that level's rules. So a rule has no "nothing batched"
//! case to handle, and in a rule of one tensor argument its batch dim is always
//! set.
//!
//! A rule of several tensor arguments still sees unbatched ones. It need not
//! branch on them either: move each batch dim to the front if there is one
//! ([`bdim_to_front`]), then compute physical dims with [`physical_dim`], which
//! adds one for a batched operand and nothing for an unbatched one, and return
//! `bdim.map(|_| 0)` as the output's batch dim. The same code then serves
//! batched and unbatched operands, as functorch's `getPhysicalDim` and JAX's
//! batchers do:
//!
//! ```
//! use batchrules::batching::{bdim_to_front, physical_dim, RuleOutput};
//! use batchrules::{ops, Tensor};
//!
//! // The rule of `narrow(Tensor self, int dim, int start, int length)`.
//! fn narrow_rule(
//!     x: &Tensor,
//!     bdim: Option<usize>,
//!     dim: i64,
//!     start: i64,
//!     length: i64,
//! ) -> RuleOutput {
//!     let x = bdim_to_front(x, bdim)?;
//!     let d = physical_dim(&x, bdim.is_some(), dim)?;
//!     Ok((ops::narrow(&x, d as i64, start, length)?, bdim.map(|_| 0)))
//! }
//! // A batch of 2 examples of shape [3], batch dim last: logical dim 0 is physical dim 1.
//! let x = Tensor::from(ndarray::array![[1.0f64, 4.0], [2.0, 5.0], [3.0, 6.0]].into_dyn());
//! let (y, b) = narrow_rule(&x, Some(1), 0, 1, 2)?;
//! assert_eq!(b, Some(0));
//! assert_eq!(y.to_array::<f64>()?, ndarray::array![[2.0, 3.0], [5.0, 6.0]].into_dyn());
//! # Ok::<(), batchrules::Error>(())
//! ```
//!
//! In the `transforms` layer (`runtime/src/transforms/`). It may use the
//! `core`, `table` and `dispatch` layers; in its own layer, `transform_fn`.
//! `tests/suite/layers.rs` enforces it.

use crate::{Error, Result, Tensor};

/// The output of a batching rule: a tensor and where its batch dim is.
pub type RuleOutput = Result<(Tensor, Option<usize>)>;

/// The rank of `x` without its batch dim.
///
/// Errors if `bdim` is not one of `x`'s dims: a 0-d `x` has no dim to be a
/// batch dim, and a batch dim past the last dim is a bug in the caller.
///
/// ```
/// use batchrules::batching::logical_rank;
/// use batchrules::Tensor;
///
/// let x = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[4, 2, 3])));
/// assert_eq!(logical_rank(&x, Some(0))?, 2);
/// assert_eq!(logical_rank(&x, None)?, 3);
/// assert!(logical_rank(&Tensor::scalar(1.0f32), Some(0)).is_err());
/// assert!(logical_rank(&x, Some(3)).is_err());
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn logical_rank(x: &Tensor, bdim: Option<usize>) -> Result<usize> {
    match bdim {
        None => Ok(x.ndim()),
        Some(b) if b < x.ndim() => Ok(x.ndim() - 1),
        Some(b) => Err(Error::Tensor(format!(
            "batch dim {b} of a tensor of shape {:?}: it has no such dim{}",
            x.shape(),
            if x.ndim() == 0 {
                " (a 0-d tensor has no dim to be a batch dim)"
            } else {
                ""
            }
        ))),
    }
}

/// The logical rank of `x` when its batch dim, if it has one (`has_bdim`), is
/// at the front; an error if `x` is 0-d and so has no dim to be the batch dim.
fn front_logical_rank(x: &Tensor, has_bdim: bool) -> Result<usize> {
    x.ndim().checked_sub(usize::from(has_bdim)).ok_or_else(|| {
        Error::Tensor(format!(
            "a tensor of shape {:?} has no dim to be its batch dim",
            x.shape()
        ))
    })
}

/// `x` with its batch dim (if any) moved to dim 0; an unbatched `x` as it is.
/// No data is copied.
///
/// ```
/// use batchrules::batching::bdim_to_front;
/// use batchrules::Tensor;
///
/// let x = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[2, 4, 3])));
/// assert_eq!(bdim_to_front(&x, Some(1))?.shape(), &[4, 2, 3]);
/// assert_eq!(bdim_to_front(&x, None)?.shape(), &[2, 4, 3]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn bdim_to_front(x: &Tensor, bdim: Option<usize>) -> Result<Tensor> {
    match bdim {
        Some(b) => x.moved_dim(b, 0),
        None => Ok(x.clone()),
    }
}

/// Resolves a possibly negative logical dim against `logical_rank`, returning
/// it in `0..logical_rank`. The meta has already validated `dim`; this errors
/// rather than panics if called with one it did not.
///
/// ```
/// use batchrules::batching::wrap_dim;
///
/// assert_eq!(wrap_dim(-1, 3)?, 2);
/// assert_eq!(wrap_dim(0, 0)?, 0); // a 0-d tensor takes dims 0 and -1
/// assert!(wrap_dim(3, 3).is_err());
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn wrap_dim(dim: i64, logical_rank: usize) -> Result<usize> {
    // The same resolution the metas use, so a rule accepts exactly what they do.
    crate::core::wrap_dim::check_dim(dim, logical_rank)
}

/// The physical dim of logical `dim` in `x`, whose batch dim, if it has one
/// (`has_bdim`), is at the front (see [`bdim_to_front`]): `dim` resolved
/// against the logical rank, plus one for the batch dim. So one rule body
/// serves batched and unbatched operands (functorch's `getPhysicalDim`).
///
/// ```
/// use batchrules::batching::physical_dim;
/// use batchrules::Tensor;
///
/// // Logical shape [2, 3]: batched (batch dim at the front) and unbatched.
/// let batched = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[4, 2, 3])));
/// let plain = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[2, 3])));
/// assert_eq!(physical_dim(&batched, true, -1)?, 2);
/// assert_eq!(physical_dim(&plain, false, -1)?, 1);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn physical_dim(x: &Tensor, has_bdim: bool, dim: i64) -> Result<usize> {
    let front = usize::from(has_bdim);
    Ok(wrap_dim(dim, front_logical_rank(x, has_bdim)?)? + front)
}

/// The physical position in `x` (batch dim, if any, at the front, as for
/// [`physical_dim`]) of a *new* dim inserted at logical position `dim`, as in
/// `unsqueeze` or `stack`: `dim` may be in `-(r + 1)..=r` for logical rank `r`.
///
/// ```
/// use batchrules::batching::physical_new_dim;
/// use batchrules::Tensor;
///
/// // Logical shape [2, 3], batch dim at the front: a new last dim is physical dim 3.
/// let x = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[4, 2, 3])));
/// assert_eq!(physical_new_dim(&x, true, -1)?, 3);
/// assert_eq!(physical_new_dim(&x, true, 0)?, 1);
/// assert_eq!(physical_new_dim(&x, false, 0)?, 0);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn physical_new_dim(x: &Tensor, has_bdim: bool, dim: i64) -> Result<usize> {
    let front = usize::from(has_bdim);
    Ok(wrap_dim(dim, front_logical_rank(x, has_bdim)? + 1)? + front)
}

/// `x` with its batch dim at the front and size-1 dims inserted after it until
/// its logical rank is `rank`, so it broadcasts against other operands of
/// logical rank `rank` with their batch dims at the front. An unbatched `x` is
/// returned as is: NumPy broadcasting already aligns it to the trailing dims.
///
/// ```
/// use batchrules::batching::align_to_front;
/// use batchrules::Tensor;
///
/// // A batch of 4 vectors of length 3, batch dim last, aligned to logical rank 3.
/// let x = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[3, 4])));
/// assert_eq!(align_to_front(&x, Some(1), 3)?.shape(), &[4, 1, 1, 3]);
/// assert_eq!(align_to_front(&x, None, 3)?.shape(), &[3, 4]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn align_to_front(x: &Tensor, bdim: Option<usize>, rank: usize) -> Result<Tensor> {
    let Some(b) = bdim else {
        return Ok(x.clone());
    };
    let mut t = x.moved_dim(b, 0)?;
    for _ in logical_rank(x, bdim)?..rank {
        t = t.unsqueezed(1)?;
    }
    Ok(t)
}

/// The rule of a pointwise unary op: apply it to the physical tensor.
///
/// ```
/// use batchrules::batching::unary_pointwise;
/// use batchrules::{ops, Tensor};
///
/// let x = Tensor::from(ndarray::array![[1.0f64, -2.0]].into_dyn());
/// let (y, b) = unary_pointwise(ops::abs, &x, Some(1))?;
/// assert_eq!((y.shape(), b), (&[1, 2][..], Some(1)));
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn unary_pointwise(
    op: impl FnOnce(&Tensor) -> Result<Tensor>,
    x: &Tensor,
    bdim: Option<usize>,
) -> RuleOutput {
    Ok((op(x)?, bdim))
}

/// Prepares the operands of a broadcasting op: each batched one gets its batch
/// dim at the front and size-1 dims after it up to the largest logical rank
/// ([`align_to_front`]), so NumPy broadcasting lines up the batch dims and the
/// logical dims alike; unbatched ones stay as they are. Returns the operands
/// and the output's batch dim (`Some(0)` if any operand is batched).
///
/// ```
/// use batchrules::batching::broadcast_operands;
/// use batchrules::Tensor;
///
/// // A batch of 4 examples of shape [3] (batch dim last), and a shared [2, 3].
/// let x = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[3, 4])));
/// let w = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[2, 3])));
/// let (ts, bdim) = broadcast_operands(&[(&x, Some(1)), (&w, None)])?;
/// assert_eq!((ts[0].shape(), ts[1].shape(), bdim), (&[4, 1, 3][..], &[2, 3][..], Some(0)));
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn broadcast_operands(
    operands: &[(&Tensor, Option<usize>)],
) -> Result<(Vec<Tensor>, Option<usize>)> {
    let rank = operands
        .iter()
        .map(|(t, b)| logical_rank(t, *b))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .max()
        .unwrap_or(0);
    let aligned = operands
        .iter()
        .map(|(t, b)| align_to_front(t, *b, rank))
        .collect::<Result<_>>()?;
    let batched = operands.iter().any(|(_, b)| b.is_some());
    Ok((aligned, batched.then_some(0)))
}

/// The rule of a broadcasting binary op: [`broadcast_operands`], then the op
/// itself on the physical tensors.
///
/// ```
/// use batchrules::batching::binary_broadcast;
/// use batchrules::{ops, Tensor};
///
/// let x = Tensor::from(ndarray::array![[1.0f64, 2.0], [3.0, 4.0]].into_dyn());
/// let y = Tensor::from(ndarray::array![10.0f64, 20.0].into_dyn());
/// // Example i of x is column i; y is shared.
/// let (z, b) = binary_broadcast(ops::add, &x, Some(1), &y, None)?;
/// assert_eq!(b, Some(0));
/// assert_eq!(z.to_array::<f64>()?, ndarray::array![[11.0, 23.0], [12.0, 24.0]].into_dyn());
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn binary_broadcast(
    op: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor>,
    x: &Tensor,
    x_bdim: Option<usize>,
    y: &Tensor,
    y_bdim: Option<usize>,
) -> RuleOutput {
    let (t, bdim) = broadcast_operands(&[(x, x_bdim), (y, y_bdim)])?;
    Ok((op(&t[0], &t[1])?, bdim))
}

/// A reduction over an optional dim as the rules of reductions take it,
/// `op(x, dim, keepdim)`: `ops::sum`, `ops::amax`, or any function or
/// closure of that signature (every one is a `ReduceOp`).
///
/// ```
/// use batchrules::batching::{reduce_dim, ReduceOp};
/// use batchrules::{ops, Result, Tensor};
///
/// // A rule generator for reductions, as `reduce_dim` is one.
/// fn over_dim_0(op: impl ReduceOp, x: &Tensor, bdim: Option<usize>) -> Result<Tensor> {
///     Ok(reduce_dim(op, x, bdim, Some(0), false)?.0)
/// }
/// let x = Tensor::from(ndarray::array![[1.0f64, 10.0], [2.0, 20.0]].into_dyn());
/// // Batch dim 1: each example is a column.
/// let sums = over_dim_0(ops::sum, &x, Some(1))?;
/// assert_eq!(sums.to_array::<f64>()?, ndarray::array![3.0, 30.0].into_dyn());
/// // A closure's argument types follow from the bound.
/// let twice = over_dim_0(|t, d, k| ops::add(&ops::sum(t, d, k)?, &ops::sum(t, d, k)?), &x, Some(1))?;
/// assert_eq!(twice.to_array::<f64>()?, ndarray::array![6.0, 60.0].into_dyn());
/// # Ok::<(), batchrules::Error>(())
/// ```
pub trait ReduceOp: Fn(&Tensor, Option<i64>, bool) -> Result<Tensor> {}

impl<F: Fn(&Tensor, Option<i64>, bool) -> Result<Tensor>> ReduceOp for F {}

/// The rule of a reduction over an optional dim (`None`: all dims), such as
/// `sum(Tensor self, int? dim=None, bool keepdim=False)`: batch dim to the front,
/// then reduce the physical dims that hold logical ones.
///
/// ```
/// use batchrules::batching::reduce_dim;
/// use batchrules::{ops, Tensor};
///
/// // Two examples of shape [3], batch dim last: each example sums to one value.
/// let x = Tensor::from(ndarray::array![[1.0f64, 10.0], [2.0, 20.0], [3.0, 30.0]].into_dyn());
/// let (y, b) = reduce_dim(ops::sum, &x, Some(1), None, false)?;
/// assert_eq!(b, Some(0));
/// assert_eq!(y.to_array::<f64>()?, ndarray::array![6.0, 60.0].into_dyn());
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn reduce_dim(
    op: impl ReduceOp,
    x: &Tensor,
    bdim: Option<usize>,
    dim: Option<i64>,
    keepdim: bool,
) -> RuleOutput {
    let rank = logical_rank(x, bdim)?;
    let front = usize::from(bdim.is_some());
    let mut t = bdim_to_front(x, bdim)?;
    match dim {
        // Reducing a 0-d example over "its" dim 0 leaves it as it is (up to the
        // result dtype): reduce a dummy size-1 dim instead of the batch dim.
        Some(_) if rank == 0 => t = op(&t.unsqueezed(front)?, Some(front as i64), false)?,
        Some(d) => {
            let p = physical_dim(&t, bdim.is_some(), d)?;
            t = op(&t, Some(p as i64), keepdim)?;
        }
        None => {
            for d in (front..rank + front).rev() {
                t = op(&t, Some(d as i64), keepdim)?;
            }
        }
    }
    Ok((t, bdim.map(|_| 0)))
}

/// The rule of an op that acts on trailing dims only and treats leading dims as
/// batch (`triu`, `tril`, ...): batch dim to the front, then the op as is.
///
/// ```
/// use batchrules::batching::leading_batch;
/// use batchrules::{ops, Tensor};
///
/// // Three 2x2 matrices, batch dim last.
/// let x = Tensor::from(ndarray::ArrayD::<f64>::ones(ndarray::IxDyn(&[2, 2, 3])));
/// let (y, b) = leading_batch(|t| ops::triu(t, 0), &x, Some(2))?;
/// assert_eq!((y.shape(), b), (&[3, 2, 2][..], Some(0)));
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn leading_batch(
    op: impl FnOnce(&Tensor) -> Result<Tensor>,
    x: &Tensor,
    bdim: Option<usize>,
) -> RuleOutput {
    Ok((op(&bdim_to_front(x, bdim)?)?, bdim.map(|_| 0)))
}

/// `x` with a size-1 dim inserted at logical position `dim` (`0..=` its logical
/// rank) and its batch dim, if any, moved to the front; returns the tensor and
/// its new batch dim (`Some(0)` or `None`). A batched vector of logical shape
/// `[n]` (physical `[B, n]`) becomes a row `[B, 1, n]` for `dim = 0` and a
/// column `[B, n, 1]` for `dim = 1`, so an op that treats leading dims as batch
/// cannot mistake it for a matrix of `B` rows.
///
/// ```
/// use batchrules::batching::unsqueeze_logical;
/// use batchrules::Tensor;
///
/// // A batch of 4 vectors of length 3, batch dim last.
/// let v = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[3, 4])));
/// let (col, b) = unsqueeze_logical(&v, Some(1), 1)?;
/// assert_eq!((col.shape(), b), (&[4, 3, 1][..], Some(0)));
/// let (row, b) = unsqueeze_logical(&v, None, 0)?;
/// assert_eq!((row.shape(), b), (&[1, 3, 4][..], None));
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn unsqueeze_logical(
    x: &Tensor,
    bdim: Option<usize>,
    dim: usize,
) -> Result<(Tensor, Option<usize>)> {
    let front = usize::from(bdim.is_some());
    let at = dim.checked_add(front).ok_or_else(|| {
        Error::Tensor(format!(
            "cannot insert a dim at logical position {dim} into a tensor of shape {:?}",
            x.shape()
        ))
    })?;
    let t = bdim_to_front(x, bdim)?.unsqueezed(at)?;
    Ok((t, bdim.map(|_| 0)))
}
/// The batch size: the size of the batch dim of the first batched tensor in
/// `xs` (`bdims[i]` is where the batch dim of `xs[i]` is), or `None` if no
/// tensor is batched.
///
/// ```
/// use batchrules::batching::batch_size_of;
/// use batchrules::Tensor;
///
/// let a = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[2, 3])));
/// let b = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[2, 5])));
/// assert_eq!(batch_size_of(&[a, b], &[None, Some(1)]), Some(5));
/// ```
pub fn batch_size_of(xs: &[Tensor], bdims: &[Option<usize>]) -> Option<usize> {
    xs.iter()
        .zip(bdims)
        .find_map(|(x, b)| b.and_then(|b| x.shape().get(b).copied()))
}

/// Every tensor of `xs` with its batch dim at dim 0: batched tensors have
/// their batch dim moved there (no copy), unbatched ones are repeated along a
/// new dim 0 of the batch size ([`Tensor::broadcast_new_dim`], which copies).
/// For ops whose operands must agree in every dim, such as `cat` and `stack`.
///
/// Errors if no tensor is batched, as the batch size is then unknown; a rule
/// never sees that case (see [the module doc](self)).
///
/// ```
/// use batchrules::batching::materialize_at_front;
/// use batchrules::Tensor;
///
/// // A batch of 4 examples of shape [3] (batch dim last), and a shared [3].
/// let x = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[3, 4])));
/// let y = Tensor::from(ndarray::ArrayD::<f32>::ones(ndarray::IxDyn(&[3])));
/// let ts = materialize_at_front(&[x, y], &[Some(1), None])?;
/// assert_eq!((ts[0].shape(), ts[1].shape()), (&[4, 3][..], &[4, 3][..]));
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn materialize_at_front(xs: &[Tensor], bdims: &[Option<usize>]) -> Result<Vec<Tensor>> {
    if xs.len() != bdims.len() {
        return Err(Error::Tensor(format!(
            "materialize_at_front: {} tensors but {} batch dims",
            xs.len(),
            bdims.len()
        )));
    }
    let size = batch_size_of(xs, bdims).ok_or_else(|| {
        Error::Tensor(
            "materialize_at_front: no tensor is batched, so the batch size is unknown".to_string(),
        )
    })?;
    xs.iter()
        .zip(bdims)
        .map(|(x, b)| match b {
            Some(b) => x.moved_dim(*b, 0),
            None => x.broadcast_new_dim(0, size),
        })
        .collect()
}

/// `x` with its dim `src` (usually a batch dim) folded into dim `dst`, as
/// functorch's `reshape_dim_into`: the result has one dim fewer, and its dim
/// `dst` (counted without `src`) is `size(src) * size(dst)` long, `src` the
/// outer one: element `b` along `src` and `i` along `dst` lands at `b *
/// size(dst) + i`. An op that already loops over a dim of its own (the
/// images of a convolution, the groups of a grouped one) then runs once for
/// the whole batch; [`reshape_dim_outof`] splits its output again.
///
/// `x`'s dim `src` is moved next to `dst` (no copy) and the two merged with
/// `reshape`, which copies only when they are not already adjacent in
/// memory. Errors if `src` is not a dim of `x` or `dst` not one of the
/// result's.
///
/// ```
/// use batchrules::batching::{reshape_dim_into, reshape_dim_outof};
/// use batchrules::{ops, Tensor};
///
/// // A batch of 2 examples (batch dim last), each 3 rows of 1: dim 1 of x.
/// let x = Tensor::from(ndarray::array![[[1.0f64, 4.0]], [[2.0, 5.0]], [[3.0, 6.0]]].into_dyn());
/// assert_eq!(x.shape(), &[3, 1, 2]);
/// // The batch folded into the rows: example 0's 3 rows, then example 1's.
/// let rows = reshape_dim_into(2, 0, &x)?;
/// assert_eq!(rows.shape(), &[6, 1]);
/// assert_eq!(
///     rows.to_array::<f64>()?,
///     ndarray::array![[1.0], [2.0], [3.0], [4.0], [5.0], [6.0]].into_dyn()
/// );
/// // One op call for every example's rows, then the batch split out again.
/// let y = reshape_dim_outof(0, [2, 3], &ops::mul(&rows, &rows)?)?;
/// assert_eq!(y.shape(), &[2, 3, 1]);
/// assert_eq!(y.to_array::<f64>()?[[1, 2, 0]], 36.0);
/// // The batch folded into the columns instead: [3, 2 * 1].
/// assert_eq!(reshape_dim_into(2, 1, &x)?.shape(), &[3, 2]);
/// assert!(reshape_dim_into(3, 0, &x).is_err());
/// assert!(reshape_dim_into(2, 2, &x).is_err());
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn reshape_dim_into(src: usize, dst: usize, x: &Tensor) -> Result<Tensor> {
    let mut shape = x.shape().to_vec();
    if src >= shape.len() || dst >= shape.len() - 1 {
        return Err(Error::Tensor(format!(
            "reshape_dim_into: cannot fold dim {src} into dim {dst} of the rest of shape {:?} \
             (needs a dim to fold and one to fold it into)",
            x.shape()
        )));
    }
    let size = shape.remove(src);
    shape[dst] = shape[dst].checked_mul(size).ok_or_else(|| {
        Error::Tensor(format!(
            "reshape_dim_into: folding dim {src} into dim {dst} of shape {:?} overflows",
            x.shape()
        ))
    })?;
    crate::ops::reshape(&x.moved_dim(src, dst)?, &shape_arg(None, &shape))
}

/// `x` with its dim `dim` split in two, `[batch_size, size]`, the inverse of
/// [`reshape_dim_into`] (functorch's `reshape_dim_outof`): element `b *
/// size + i` of the dim goes to `b` along the new dim `dim` and `i` along
/// dim `dim + 1`. Both sizes are given, so an empty batch (a dim of `0 *
/// size`) keeps the size of what each example had. No copy when `x` is
/// contiguous.
///
/// Errors if `dim` is not a dim of `x` or its size is not `batch_size *
/// size`.
///
/// ```
/// use batchrules::batching::reshape_dim_outof;
/// use batchrules::Tensor;
///
/// let y = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[5, 6, 7])));
/// assert_eq!(reshape_dim_outof(1, [2, 3], &y)?.shape(), &[5, 2, 3, 7]);
/// // No examples: the per-example size 4 survives the empty dim.
/// let empty = Tensor::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[0, 7])));
/// assert_eq!(reshape_dim_outof(0, [0, 4], &empty)?.shape(), &[0, 4, 7]);
/// assert!(reshape_dim_outof(1, [4, 2], &y).is_err());
/// assert!(reshape_dim_outof(3, [1, 1], &y).is_err());
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn reshape_dim_outof(dim: usize, [batch_size, size]: [usize; 2], x: &Tensor) -> Result<Tensor> {
    let shape = x.shape();
    if shape.get(dim).copied() != batch_size.checked_mul(size) {
        return Err(Error::Tensor(format!(
            "reshape_dim_outof: cannot split dim {dim} of shape {shape:?} into [{batch_size}, \
             {size}]"
        )));
    }
    let mut split = shape[..dim].to_vec();
    split.extend([batch_size, size]);
    split.extend_from_slice(&shape[dim + 1..]);
    crate::ops::reshape(x, &shape_arg(None, &split))
}

/// A logical shape as the `int[]` argument of a shape op (`reshape`,
/// `expand`), with `leading` (usually the batch size) put first.
///
/// A size above `i64::MAX` (no tensor has one) becomes `i64::MAX`, which every
/// shape op rejects as too large, rather than wrapping to a negative size
/// (`-1` would mean "infer this size").
///
/// ```
/// use batchrules::batching::shape_arg;
///
/// assert_eq!(shape_arg(Some(4), &[2, 3]), vec![4, 2, 3]);
/// assert_eq!(shape_arg(None, &[2, 3]), vec![2, 3]);
/// assert_eq!(shape_arg(None, &[usize::MAX]), vec![i64::MAX]);
/// ```
pub fn shape_arg(leading: Option<usize>, shape: &[usize]) -> Vec<i64> {
    leading
        .into_iter()
        .chain(shape.iter().copied())
        .map(crate::ops::usize_args::int)
        .collect()
}
