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

use crate::{Error, Result, Tensor};

/// The output of a batching rule: a tensor and where its batch dim is.
pub type RuleOutput = Result<(Tensor, Option<usize>)>;

/// The rank of `x` without its batch dim.
pub fn logical_rank(x: &Tensor, bdim: Option<usize>) -> usize {
    x.ndim() - usize::from(bdim.is_some())
}

/// `x` with its batch dim (if any) moved to dim 0.
pub fn bdim_to_front(x: &Tensor, bdim: Option<usize>) -> Result<Tensor> {
    match bdim {
        Some(b) => x.moved_dim(b, 0),
        None => Ok(x.clone()),
    }
}

/// Resolves a possibly negative logical dim against `logical_rank`, returning
/// it in `0..logical_rank`. The meta has already validated `dim`; this errors
/// rather than panics if called with one it did not.
pub fn wrap_dim(dim: i64, logical_rank: usize) -> Result<usize> {
    // The same resolution the metas use, so a rule accepts exactly what they do.
    crate::core::dims::check_dim(dim, logical_rank)
}

/// The physical dim of logical `dim` once the batch dim is at the front.
pub fn physical_dim(dim: i64, logical_rank: usize) -> Result<usize> {
    Ok(wrap_dim(dim, logical_rank)? + 1)
}

/// `x` with its batch dim at the front and size-1 dims inserted after it until
/// its logical rank is `rank`, so it broadcasts against other operands of
/// logical rank `rank` with their batch dims at the front. An unbatched `x` is
/// returned as is: NumPy broadcasting already aligns it to the trailing dims.
pub fn align_to_front(x: &Tensor, bdim: Option<usize>, rank: usize) -> Result<Tensor> {
    let Some(b) = bdim else {
        return Ok(x.clone());
    };
    let mut t = x.moved_dim(b, 0)?;
    for _ in logical_rank(x, bdim)..rank {
        t = t.unsqueezed(1)?;
    }
    Ok(t)
}

/// The rule of a pointwise unary op: apply it to the physical tensor.
pub fn unary_pointwise(
    op: impl FnOnce(&Tensor) -> Result<Tensor>,
    x: &Tensor,
    bdim: Option<usize>,
) -> RuleOutput {
    Ok((op(x)?, bdim))
}

/// Prepares the operands of a broadcasting op: if any is batched, each batched
/// one gets its batch dim at the front and size-1 dims after it up to the
/// largest logical rank, so NumPy broadcasting lines up the batch dims and the
/// logical dims alike. Returns the operands and the output's batch dim.
pub fn broadcast_operands(
    operands: &[(&Tensor, Option<usize>)],
) -> Result<(Vec<Tensor>, Option<usize>)> {
    if operands.iter().all(|(_, b)| b.is_none()) {
        return Ok((operands.iter().map(|(t, _)| (*t).clone()).collect(), None));
    }
    let rank = operands
        .iter()
        .map(|(t, b)| logical_rank(t, *b))
        .max()
        .unwrap_or(0);
    let aligned = operands
        .iter()
        .map(|(t, b)| align_to_front(t, *b, rank))
        .collect::<Result<_>>()?;
    Ok((aligned, Some(0)))
}

/// The rule of a broadcasting binary op: [`broadcast_operands`], then the op
/// itself on the physical tensors.
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

/// The rule of a reduction over an optional dim (`None`: all dims), such as
/// `sum(Tensor self, int? dim=None, bool keepdim=False)`: batch dim to the front,
/// then reduce the physical dims that hold logical ones.
pub fn reduce_dim(
    op: impl Fn(&Tensor, Option<i64>, bool) -> Result<Tensor>,
    x: &Tensor,
    bdim: Option<usize>,
    dim: Option<i64>,
    keepdim: bool,
) -> RuleOutput {
    let Some(b) = bdim else {
        return Ok((op(x, dim, keepdim)?, None));
    };
    let rank = logical_rank(x, bdim);
    let mut t = x.moved_dim(b, 0)?;
    match dim {
        // Reducing a 0-d example over "its" dim 0 leaves it as it is (up to the
        // result dtype): reduce a dummy size-1 dim instead of the batch dim.
        Some(_) if rank == 0 => t = op(&t.unsqueezed(1)?, Some(1), false)?,
        Some(d) => t = op(&t, Some(physical_dim(d, rank)? as i64), keepdim)?,
        None => {
            for d in (1..=rank).rev() {
                t = op(&t, Some(d as i64), keepdim)?;
            }
        }
    }
    Ok((t, Some(0)))
}

/// The rule of an op that acts on trailing dims only and treats leading dims as
/// batch (`triu`, `tril`, ...): batch dim to the front, then the op as is.
pub fn leading_batch(
    op: impl FnOnce(&Tensor) -> Result<Tensor>,
    x: &Tensor,
    bdim: Option<usize>,
) -> RuleOutput {
    match bdim {
        Some(b) => Ok((op(&x.moved_dim(b, 0)?)?, Some(0))),
        None => Ok((op(x)?, None)),
    }
}

/// `x` with a size-1 dim inserted at logical position `dim` (`0..=` its logical
/// rank) and its batch dim, if any, moved to the front; returns the tensor and
/// its new batch dim (`Some(0)` or `None`). A batched vector of logical shape
/// `[n]` (physical `[B, n]`) becomes a row `[B, 1, n]` for `dim = 0` and a
/// column `[B, n, 1]` for `dim = 1`, so an op that treats leading dims as batch
/// cannot mistake it for a matrix of `B` rows.
pub fn unsqueeze_logical(
    x: &Tensor,
    bdim: Option<usize>,
    dim: usize,
) -> Result<(Tensor, Option<usize>)> {
    match bdim {
        Some(b) => Ok((x.moved_dim(b, 0)?.unsqueezed(dim + 1)?, Some(0))),
        None => Ok((x.unsqueezed(dim)?, None)),
    }
}

/// The batch size: the size of the batch dim of the first batched tensor in
/// `xs` (`bdims[i]` is where the batch dim of `xs[i]` is), or `None` if no
/// tensor is batched.
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
/// Errors if no tensor is batched: then the batch size is unknown (and there
/// is nothing to batch; call the op itself instead).
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

/// The physical position, once the batch dim is at the front, of a *new* dim
/// inserted at logical position `dim` (as in `unsqueeze` or `stack`) into a
/// tensor of logical rank `logical_rank`: `dim` may be in
/// `-(logical_rank + 1)..=logical_rank`.
pub fn physical_new_dim(dim: i64, logical_rank: usize) -> Result<usize> {
    physical_dim(dim, logical_rank + 1)
}

/// A logical shape as the `int[]` argument of a shape op (`reshape`,
/// `expand`), with `leading` (usually the batch size) put first.
pub fn shape_arg(leading: Option<usize>, shape: &[usize]) -> Vec<i64> {
    leading
        .into_iter()
        .chain(shape.iter().copied())
        .map(|s| s as i64)
        .collect()
}
