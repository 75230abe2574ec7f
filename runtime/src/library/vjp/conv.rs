//! vjps of the sliding-block primitives: `unfold` and `fold` are linear and
//! each other's transpose, so each one's cotangent goes through the other
//! with the same window (and `unfold`'s input size as `fold`'s output size).
//! The tiled convolution products `conv2d_tiled` and `conv2d_weight_grads`
//! have theirs written with `unfold`, `matmul` and `fold`, and the weight
//! gradients with `conv2d_weight_grads` itself.

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

/// The gradient of a convolution's input, `[N, C_in, H, W]` (`size` its
/// spatial size), from the output gradient `g` `[N, C_out, H_out, W_out]`
/// and the per-group matrices `m` `[.., groups, C_out / groups, C_in /
/// groups * kh * kw]` (the weight, or per example): `fold` of `m^T @ g` per
/// group.
#[allow(clippy::too_many_arguments)]
fn input_grad(
    g: &Tensor,
    m: &Tensor,
    size: &[usize],
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let gs = g.shape().to_vec();
    let (n, c_out, l) = (gs[0], gs[1], gs[2] * gs[3]);
    let groups_n = groups as usize;
    let g4 = ops::reshape(g, &shape_arg(None, &[n, groups_n, c_out / groups_n, l]))?;
    let cols = ops::matmul(&ops::transpose(m, -1, -2)?, &g4)?;
    let k = cols.shape()[2] * groups_n;
    let cols = ops::reshape(&cols, &shape_arg(None, &[n, k, l]))?;
    ops::fold(
        &cols,
        &shape_arg(None, size),
        kernel,
        dilation,
        padding,
        stride,
    )
}

/// The weight `[C_out, C_in / groups, kh, kw]` as per-group matrices
/// `[groups, C_out / groups, C_in / groups * kh * kw]`.
fn group_matrices(w: &Tensor, groups: i64) -> Result<Tensor> {
    let ws = w.shape();
    let g = groups as usize;
    let k: usize = ws[1..].iter().product();
    ops::reshape(w, &shape_arg(None, &[g, ws[0] / g, k]))
}

/// The input's gradient is `fold` of the weight (transposed, per group)
/// times the output gradient; the weight's is the sum over the examples of
/// `conv2d_weight_grads` (which `grad_for` sums to the weight's shape).
#[vjp(op = "conv2d_tiled")]
#[allow(clippy::too_many_arguments)]
fn conv2d_tiled_vjp(
    x: &Tensor,
    w: &Tensor,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    _y: &Tensor,
    g: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let kernel = shape_arg(None, &w.shape()[2..]);
    Ok((
        grad_for(x, || {
            let m = group_matrices(w, groups)?;
            let size = &x.shape()[2..];
            input_grad(g, &m, size, &kernel, stride, padding, dilation, groups)
        })?,
        grad_for(w, || {
            ops::conv2d_weight_grads(x, g, &kernel, stride, padding, dilation, groups)
        })?,
    ))
}

/// With `c` the cotangent of the per-example weight gradients `[N, C_out,
/// C_in / groups, kh, kw]`: the output gradient's is each example's
/// convolution with its own `c[n]` (`c[n] @ blocks_n` per group), the
/// input's is `fold` of `c[n]^T @ grad_output[n]` per group.
#[vjp(op = "conv2d_weight_grads")]
#[allow(clippy::too_many_arguments)]
fn conv2d_weight_grads_vjp(
    x: &Tensor,
    g: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    _y: &Tensor,
    c: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let cs = c.shape().to_vec();
    let gn = groups as usize;
    let k: usize = cs[2..].iter().product();
    let m = ops::reshape(c, &shape_arg(None, &[cs[0], gn, cs[1] / gn, k]))?;
    Ok((
        grad_for(x, || {
            let size = &x.shape()[2..];
            input_grad(g, &m, size, kernel_size, stride, padding, dilation, groups)
        })?,
        grad_for(g, || {
            let cols = ops::unfold(x, kernel_size, dilation, padding, stride)?;
            let (n, l) = (cols.shape()[0], cols.shape()[2]);
            let cols = ops::reshape(&cols, &shape_arg(None, &[n, gn, k, l]))?;
            let y = ops::matmul(&m, &cols)?;
            ops::reshape(&y, &shape_arg(None, g.shape()))
        })?,
    ))
}
