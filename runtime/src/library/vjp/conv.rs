//! vjps of the sliding-block primitives: `unfold` and `fold` are linear and
//! each other's transpose, so each one's cotangent goes through the other
//! with the same window (and `unfold`'s input size as `fold`'s output size).

use super::grad_for;
use crate::batching::shape_arg;
use crate::{ops, vjp, Result, Tensor};

#[vjp(op = "unfold")]
fn unfold_vjp(
    x: &Tensor,
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
    _y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || {
        let size = shape_arg(None, &x.shape()[x.ndim() - 2..]);
        ops::fold(g, &size, kernel_size, dilation, padding, stride)
    })
}

/// (Eight parameters: the op's six, its result and the cotangent.)
#[vjp(op = "fold")]
#[allow(clippy::too_many_arguments)]
fn fold_vjp(
    x: &Tensor,
    _output_size: &[i64],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
    _y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || ops::unfold(g, kernel_size, dilation, padding, stride))
}
