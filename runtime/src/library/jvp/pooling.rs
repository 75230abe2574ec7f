//! The jvp of `max_pool2d_with_indices`: the tangent of each maximum is the
//! input's tangent at its position, a `gather` from the flattened `H x W`
//! planes at the recorded indices (the transpose of the vjp's
//! `scatter_add`). The indices are integers: no tangent.

use super::{output, through};
use crate::batching::shape_arg;
use crate::library::pooling::pool_fn;
use crate::{jvp, ops, Result, Tensor};

pool_fn! {
    #[jvp(op = "max_pool2d_with_indices")]
    max fn max_pool2d_with_indices_jvp(
        x: &Tensor;
        a,
        values: &Tensor,
        indices: &Tensor,
        input_tangent: Option<&Tensor>,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let t = through(values, input_tangent, |t| {
            let g = a.max_pool2d(x)?;
            let d = g.lead.len() as i64;
            let mut t = ops::reshape(t, &g.flat(g.plane()))?;
            if g.has_empty_window() {
                // A window of padding only points one past the plane, at a zero.
                t = ops::pad_dim(&t, d, 0, 1)?;
            }
            let picked = ops::gather(&t, d, &ops::reshape(indices, &g.flat(g.windows()))?)?;
            ops::reshape(&picked, &shape_arg(None, values.shape()))
        })?;
        Ok((output(values, t)?, None))
    }
}
