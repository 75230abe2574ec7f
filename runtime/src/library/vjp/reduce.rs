//! vjps of the reductions: the cotangent expanded back over the reduced dims
//! (divided by the count for `mean`; for `amax`/`amin`, shared evenly among
//! the elements equal to the extreme, as PyTorch's `amax` does).

use super::{erased, grad_for, scalar, unreduce, ErasedVjp};
use crate::batching::shape_arg;
use crate::library::composites::reduced_count;
use crate::{ops, Result, Tensor};

pub(super) fn sum_vjp(
    x: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    _y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || unreduce(g, x, dim, keepdim))
}

pub(super) fn mean_vjp(
    x: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    _y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || {
        let n = reduced_count(x, dim)? as f64;
        ops::div(&unreduce(g, x, dim, keepdim)?, &scalar(g, n)?)
    })
}

/// `amax`/`amin`: each element equal to the result gets an even share of the
/// cotangent (ties split evenly; a NaN result gives NaN gradients, as in
/// PyTorch).
pub(super) fn extreme_vjp(
    x: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || {
        let hit = ops::to_dtype(&ops::eq(x, &unreduce(y, x, dim, keepdim)?)?, g.dtype())?;
        let count = ops::sum(&hit, dim, true)?;
        let share = ops::div(&unreduce(g, x, dim, keepdim)?, &count)?;
        ops::mul(&share, &hit)
    })
}

/// `sum_to_size` is the reverse of `expand`, and its vjp is `expand`.
pub(super) fn sum_to_size_vjp(
    x: &Tensor,
    _size: &[i64],
    _y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || ops::expand(g, &shape_arg(None, x.shape())))
}

pub(super) fn vjps() -> Vec<(&'static str, ErasedVjp)> {
    vec![
        ("sum", erased!(sum_vjp, 0 1 2)),
        ("mean", erased!(mean_vjp, 0 1 2)),
        ("amax", erased!(extreme_vjp, 0 1 2)),
        ("amin", erased!(extreme_vjp, 0 1 2)),
        ("sum_to_size", erased!(sum_to_size_vjp, 0 1)),
    ]
}
