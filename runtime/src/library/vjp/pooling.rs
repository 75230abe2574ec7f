//! The vjp of `max_pool2d_with_indices`: each window's cotangent goes to
//! the position of its maximum (the first one on a tie, as PyTorch), summed
//! where windows overlap: a `scatter_add` over the flattened `H x W` planes
//! at the recorded indices. The indices carry no gradient.

use super::grad_for;
use crate::batching::shape_arg;
use crate::library::pooling::pool_fn;
use crate::{ops, vjp, Result, Tensor};

pool_fn! {
    #[vjp(op = "max_pool2d_with_indices")]
    max fn max_pool2d_with_indices_vjp(
        x: &Tensor;
        a,
        _values: &Tensor,
        indices: &Tensor,
        grad: &Tensor,
        _indices_grad: &Tensor,
    ) -> Result<Option<Tensor>> {
        grad_for(x, || {
            let g = a.max_pool2d(x)?;
            let (plane, windows) = (g.plane(), g.windows());
            // A window of padding only points one past the plane: scatter into a
            // plane one longer, then drop that element.
            let padded = plane + usize::from(g.has_empty_window());
            let d = g.lead.len() as i64;
            let zeros = ops::zeros(&g.flat(padded), x.dtype())?;
            let mut out = ops::scatter_add(
                &zeros,
                d,
                &ops::reshape(indices, &g.flat(windows))?,
                &ops::reshape(grad, &g.flat(windows))?,
            )?;
            if padded != plane {
                out = ops::narrow(&out, d, 0, plane as i64)?;
            }
            ops::reshape(&out, &shape_arg(None, x.shape()))
        })
    }
}

/// `window_sum` and `window_sum_backward` are each other's transpose: each
/// one's vjp is the other.
#[vjp(op = "window_sum")]
fn window_sum_vjp(
    x: &Tensor,
    starts: &[i64],
    ends: &[i64],
    _y: &Tensor,
    grad: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || {
        let size = x.shape().last().copied().unwrap_or(0) as i64;
        ops::window_sum_backward(grad, starts, ends, size)
    })
}

#[vjp(op = "window_sum_backward")]
fn window_sum_backward_vjp(
    g: &Tensor,
    starts: &[i64],
    ends: &[i64],
    _size: i64,
    _y: &Tensor,
    grad: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(g, || ops::window_sum(grad, starts, ends))
}
