//! The vjps (reverse-mode derivatives) of the differentiable primitives, one
//! file per op family. Each takes the op's kernel arguments, its result and
//! the cotangent of the result, and returns one gradient per tensor argument
//! (`None` where no gradient flows: integer and bool inputs, index tensors,
//! `where`'s condition).
//!
//! Each is registered with `#[vjp(op = "...")]`, checked at compile time
//! against the op table like the other attributes. Every vjp is written with
//! `ops::` calls only, never reading data, so under an outer `vmap` it is
//! batched like any other code and under an outer `grad` it is recorded again
//! (higher derivatives). The helpers here keep the gradients exact in shape and
//! dtype: [`grad_for`] un-broadcasts a gradient with `sum_to_size` and casts it
//! back to its input's dtype with `to_dtype` (after type promotion), and skips
//! the computation for non-float inputs.
//!
//! At points where an op has no derivative the vjps follow PyTorch: `abs` and
//! `relu` give 0 at 0, `maximum`/`minimum` and `amax`/`amin` split the
//! gradient evenly among tied elements, `clamp` passes it only where
//! `min < x < max`. The formulas that forward mode shares (the pointwise
//! factors and these conventions) live in `library/derivative.rs`.

use crate::batching::shape_arg;
use crate::{ops, Result, Tensor};

mod conv;
mod linalg;
mod pointwise;
mod pooling;
mod reduce;
mod views;

/// The gradient of `input`, computed by `grad` only when `input` is a float
/// tensor (integer and bool tensors get `None`) whose gradient the backward
/// pass keeps ([`needs_gradient`](crate::needs_gradient)), then summed down to
/// `input`'s (logical) shape if it was broadcast and converted to its dtype if
/// the op promoted it.
pub(crate) fn grad_for(
    input: &Tensor,
    grad: impl FnOnce() -> Result<Tensor>,
) -> Result<Option<Tensor>> {
    if !input.dtype().is_float() || !crate::needs_gradient(input) {
        return Ok(None);
    }
    let mut g = grad()?;
    if g.shape() != input.shape() {
        g = ops::sum_to_size(&g, &shape_arg(None, input.shape()))?;
    }
    if g.dtype() != input.dtype() {
        g = ops::to_dtype(&g, input.dtype())?;
    }
    Ok(Some(g))
}

/// Zeros of `like`'s (logical) shape and dtype. Under vmap they are not
/// batched (a factory); the ops they meet broadcast or repeat them.
fn zeros_like(like: &Tensor) -> Result<Tensor> {
    ops::zeros(&shape_arg(None, like.shape()), like.dtype())
}
