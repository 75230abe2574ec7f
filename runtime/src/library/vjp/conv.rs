//! vjps of the sliding-block primitives: `unfold` and `fold` are linear and
//! each other's transpose, so each one's cotangent goes through the other
//! with the same window (and `unfold`'s input size as `fold`'s output size).

use super::grad_for;
use crate::batching::shape_arg;
use crate::library::conv::window_fn;
use crate::{ops, vjp, Result, Tensor};

window_fn! {
    #[vjp(op = "unfold")]
    fn unfold_vjp(x: &Tensor; w, _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
        grad_for(x, || {
            let size = shape_arg(None, &x.shape()[x.ndim() - 2..]);
            ops::fold(g, &size, w.kernel_size, w.dilation, w.padding, w.stride)
        })
    }

    /// (Eight parameters: the op's six, its result and the cotangent.)
    #[vjp(op = "fold")]
    fn fold_vjp(x: &Tensor, _output_size: &[i64]; w, _y: &Tensor, g: &Tensor)
        -> Result<Option<Tensor>> {
        grad_for(x, || ops::unfold(g, w.kernel_size, w.dilation, w.padding, w.stride))
    }
}
