//! The jvp of `max_pool2d_with_indices`: the tangent of each maximum is the
//! input's tangent at its position, a `gather` from the flattened `H x W`
//! planes at the recorded indices (the transpose of the vjp's
//! `scatter_add`). The indices are integers: no tangent.

use super::{output, through};
use crate::library::pooling::max_pool2d_geometry;
use crate::{jvp, ops, Result, Tensor};

#[jvp(op = "max_pool2d_with_indices")]
#[allow(clippy::too_many_arguments)]
fn max_pool2d_with_indices_jvp(
    x: &Tensor,
    kernel_size: &[i64],
    stride: Option<&[i64]>,
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
    values: &Tensor,
    indices: &Tensor,
    input_tangent: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let t = through(values, input_tangent, |t| {
        let g = max_pool2d_geometry(
            x.shape(),
            x.dtype(),
            kernel_size,
            stride,
            padding,
            dilation,
            ceil_mode,
        )?;
        let (plane, windows) = (g.plane(), g.h.out * g.w.out);
        let d = g.lead.len() as i64;
        let mut t = ops::reshape(t, &g.flat(plane))?;
        if g.has_empty_window() {
            // A window of padding only points one past the plane, at a zero.
            t = ops::pad_dim(&t, d, 0, 1)?;
        }
        let picked = ops::gather(&t, d, &ops::reshape(indices, &g.flat(windows))?)?;
        let shape: Vec<i64> = values.shape().iter().map(|&v| v as i64).collect();
        ops::reshape(&picked, &shape)
    })?;
    Ok((output(values, t)?, None))
}
