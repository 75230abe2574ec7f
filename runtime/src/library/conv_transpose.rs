//! Transposed convolution (`ops/conv.toml`): `conv_transpose1d` and
//! `conv_transpose2d`, composites over `matmul` and `fold` (col2im).
//!
//! A transposed convolution is the adjoint of a convolution in its input: it
//! spreads each input position over the output through the kernel, where a
//! convolution gathers. `conv2d` is `weight @ unfold(x)`; its transpose is
//! `fold(weight^T @ x)`, with the convolution's geometry (kernel, dilation,
//! padding, stride) and the output size that `output_padding` picks among
//! those of equal block count. Per group: `[g, C_out / g * kh * kw, C_in /
//! g]` (the weight's per-group block, transposed) times `[N, g, C_in / g,
//! H * W]` gives the columns of every output channel's kernel block at each
//! input position, which `fold` sums into the output image.
//!
//! Being a composite over primitives that have batching rules, vjps and
//! jvps, it gets all three from them: under `vmap` the examples are part of
//! the product's batch and of `fold`'s image batch (no loop), and the
//! per-example weight gradient of `vmap(grad(...))` is `matmul`'s vjp, a
//! batched product with `unfold` (`fold`'s vjp) of the output gradient.
//! `conv_transpose1d` is `conv_transpose2d` of a height-1 image.

use super::conv::{check_bias, check_operands, kernel_dims, metas};
use super::window::{height_one, per_axis, widen, Params, Window};
use crate::batching::shape_arg;
use crate::{decompose, meta, ops, Error, Result, Tensor, TensorMeta};

/// The arguments of a transposed convolution after its input, weight and
/// bias, in PyTorch's order (`groups` before `dilation`).
#[derive(Clone, Copy)]
struct Args<'a> {
    stride: &'a [i64],
    padding: &'a [i64],
    output_padding: &'a [i64],
    groups: i64,
    dilation: &'a [i64],
}

/// Declares a function of a transposed convolution: `x`, `weight` and
/// `bias`, then the op table's `stride`, `padding`, `output_padding`,
/// `groups` and `dilation`, which the body sees as one [`Args`] `$a`.
macro_rules! transposed_fn {
    ($($(#[$attr:meta])* fn $name:ident($x:ident: $xt:ty, $w:ident: $wt:ty, $b:ident: $bt:ty;
        $a:ident) -> $ret:ty $body:block)*) => {$(
        $(#[$attr])*
        #[allow(clippy::too_many_arguments)]
        fn $name(
            $x: $xt,
            $w: $wt,
            $b: $bt,
            stride: &[i64],
            padding: &[i64],
            output_padding: &[i64],
            groups: i64,
            dilation: &[i64],
        ) -> $ret {
            let $a = Args { stride, padding, output_padding, groups, dilation };
            $body
        }
    )*};
}

/// A checked transposed convolution with `D` spatial dims: the operands'
/// channels and the window of the convolution it is the transpose of, whose
/// input is this one's output and whose blocks are this one's input
/// positions (and the `extra` ones, see [`Transposed::extra`]).
#[derive(Clone, Debug)]
struct Transposed<const D: usize> {
    /// The input's batch size, if it has a batch dim.
    batch: Option<usize>,
    c_in: usize,
    c_out: usize,
    groups: usize,
    /// The input's spatial size.
    size: [usize; D],
    /// The convolution's window over the output.
    window: Window<D>,
}

impl<const D: usize> Transposed<D> {
    /// The output shape: `[N, C_out, *out]` or `[C_out, *out]`.
    fn output_shape(&self) -> Vec<usize> {
        let mut shape: Vec<usize> = self.batch.into_iter().collect();
        shape.push(self.c_out);
        shape.extend(self.window.size());
        shape
    }

    /// Block positions `fold` needs past the input's, per dim:
    /// `output_padding / stride`, nonzero only where `output_padding` is at
    /// least the stride (allowed when it is below the dilation).
    fn extra(&self) -> [usize; D] {
        std::array::from_fn(|i| self.window.axes[i].out - self.size[i])
    }
}

/// Checks a transposed convolution with `D` spatial dims, as PyTorch does:
/// `input` `[N, C_in, *spatial]` or `[C_in, *spatial]`, `weight` `[C_in,
/// C_out / groups, *kernel]`, `bias` `[C_out]`, all of one float dtype;
/// `output_padding` below the stride or the dilation; an output of at least
/// one position per dim, allocatable, as is the column matrix of the
/// decomposition.
fn geometry<const D: usize>(
    x: &TensorMeta,
    w: &TensorMeta,
    bias: Option<&TensorMeta>,
    a: &Args,
) -> Result<Transposed<D>> {
    let (batched, groups) = check_operands::<D>(x, w, bias, a.groups, "C_in, C_out / groups")?;
    let (xs, ws) = (x.shape(), w.shape());
    // PyTorch refuses a weight without input or output channels here (unlike
    // for conv2d), and so do we; an empty kernel or input image too.
    if ws[0] == 0 || ws[1] == 0 || ws[2..].contains(&0) {
        return Err(Error::invalid(format!(
            "expected a non-empty weight [C_in, C_out / groups, {}] (input and output channels \
             and kernel), got shape {ws:?}",
            kernel_dims::<D>()
        )));
    }
    // (The kernel, from the weight's shape, is positive.)
    let params = Params::<D>::parse(&shape_arg(None, &ws[2..]), a.dilation, a.padding, a.stride)?;
    let Params {
        kernel,
        stride,
        padding,
        dilation,
        ..
    } = params;
    let output_padding = per_axis::<D>("output_padding", a.output_padding, 0)?;
    let c_in = xs[usize::from(batched)];
    if c_in != ws[0] {
        return Err(Error::invalid(format!(
            "the weight {ws:?} expects {} input channels (weight.shape[0]), got an input of \
             shape {xs:?}",
            ws[0]
        )));
    }
    if c_in % groups != 0 {
        return Err(Error::invalid(format!(
            "the input channels ({c_in}, weight.shape[0]) must be a multiple of `groups` \
             ({groups})"
        )));
    }
    if xs[xs.len() - D..].contains(&0) {
        return Err(Error::invalid(format!(
            "expected non-zero spatial dims of the input (only the batch may be empty), got \
             shape {xs:?}"
        )));
    }
    for i in 0..D {
        if output_padding[i] >= stride[i] && output_padding[i] >= dilation[i] {
            return Err(Error::invalid(format!(
                "`output_padding` {:?} must be smaller than either `stride` {:?} or `dilation` \
                 {:?} (as in PyTorch)",
                a.output_padding, a.stride, a.dilation
            )));
        }
    }
    let c_out = ws[1].checked_mul(groups).ok_or_else(|| {
        Error::invalid(format!(
            "the output channels of weight {ws:?} times `groups` ({groups}) are too many"
        ))
    })?;
    check_bias(bias, c_out, "weight.shape[1] * groups, the output channels")?;
    let mut size = [0usize; D];
    size.copy_from_slice(&xs[xs.len() - D..]);
    // (size - 1) * stride - 2 * padding + dilation * (kernel - 1) +
    // output_padding + 1, in i128: every term is below 2^64, so no overflow.
    let mut lengths = [0i128; D];
    for i in 0..D {
        lengths[i] = (size[i] as i128 - 1) * stride[i] as i128 - 2 * padding[i] as i128
            + dilation[i] as i128 * (kernel[i] as i128 - 1)
            + output_padding[i] as i128
            + 1;
    }
    let args = format!(
        "stride {:?}, padding {:?}, output_padding {:?} and dilation {:?}",
        a.stride, a.padding, a.output_padding, a.dilation
    );
    if lengths.iter().any(|&l| l < 1) {
        return Err(Error::invalid(format!(
            "`padding` {:?} is too large: on an input of spatial size {size:?} with kernel size \
             {kernel:?} and {args}, the output's spatial size (size - 1) * stride - 2 * padding \
             + dilation * (kernel_size - 1) + output_padding + 1 would be {lengths:?}, but must \
             be at least 1",
            a.padding
        )));
    }
    let too_large = |what: &str| {
        Error::invalid(format!(
            "the output is too large: on an input of spatial size {size:?} with kernel size \
             {kernel:?} and {args}, {what} would have {lengths:?} positions per spatial dim, more \
             than can be allocated (the allocation limit is {} bytes)",
            crate::core::alloc::allocation_limit()
        ))
    };
    let mut out = [0usize; D];
    for i in 0..D {
        out[i] = usize::try_from(lengths[i]).map_err(|_| too_large("the output"))?;
    }
    // The convolution over the output has `size + output_padding / stride`
    // blocks per dim: `lengths + 2 * padding - dilation * (kernel - 1) - 1`
    // is `(size - 1) * stride + output_padding`.
    let g = Transposed {
        batch: batched.then(|| xs[0]),
        c_in,
        c_out,
        groups,
        size,
        window: params.over(out).map_err(|_| too_large("the output"))?,
    };
    crate::core::alloc::check_alloc(&g.output_shape(), x.dtype())
        .map_err(|_| too_large("the output"))?;
    // The decomposition's columns: `[N, C_out * kernel elements, blocks]`,
    // blocks the input's positions (and the `extra` ones).
    let rows = kernel
        .iter()
        .try_fold(c_out, |r, &k| r.checked_mul(k))
        .ok_or_else(|| too_large("the columns (output channels times kernel size)"))?;
    let mut cols = vec![g.batch.unwrap_or(1), rows];
    cols.extend(g.window.out());
    crate::core::alloc::check_alloc(&cols, x.dtype())
        .map_err(|_| too_large("the columns (the kernel's blocks at every input position)"))?;
    Ok(g)
}

/// The output meta of a transposed convolution with `D` spatial dims.
fn transposed_meta<const D: usize>(
    x: &TensorMeta,
    w: &TensorMeta,
    bias: Option<&TensorMeta>,
    a: &Args,
) -> Result<TensorMeta> {
    let g = geometry::<D>(x, w, bias, a)?;
    Ok(TensorMeta::new(g.output_shape(), x.dtype()))
}

/// The decomposition of `conv_transpose2d`: per group, the weight's block
/// transposed times the input's columns, then `fold` with the convolution's
/// geometry, plus the bias.
fn conv_transpose2d_by_fold(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    a: &Args,
) -> Result<Tensor> {
    let (xm, wm, bm) = metas(x, weight, bias);
    let g = geometry::<2>(&xm, &wm, bm.as_ref(), a)?;
    let lead: Vec<usize> = g.batch.into_iter().collect();
    let [h, w] = g.size;
    let p = g.window.params();
    let kk = p.kernel[0] * p.kernel[1];
    let (groups, c_in, c_out) = (g.groups, g.c_in, g.c_out);
    let rows = c_out * kk;
    let shape = |dims: &[usize]| shape_arg(None, &[&lead[..], dims].concat());
    let cols = if groups == 1 {
        // [C_out * kh * kw, C_in] @ [N, C_in, H * W]
        let wt = ops::transpose(
            &ops::reshape(weight, &shape_arg(None, &[c_in, rows]))?,
            0,
            1,
        )?;
        ops::matmul(&wt, &ops::reshape(x, &shape(&[c_in, h * w]))?)?
    } else {
        // [g, C_out / g * kh * kw, C_in / g] @ [N, g, C_in / g, H * W]
        let per = [groups, c_in / groups, rows / groups];
        let wt = ops::transpose(&ops::reshape(weight, &shape_arg(None, &per))?, 1, 2)?;
        let xg = ops::reshape(x, &shape(&[groups, c_in / groups, h * w]))?;
        ops::reshape(&ops::matmul(&wt, &xg)?, &shape(&[rows, h * w]))?
    };
    // An output_padding of at least the stride (allowed below the dilation)
    // gives the output more block positions than the input has: zero
    // columns at the end of each such dim.
    let extra = g.extra();
    let cols = if extra.iter().any(|&e| e > 0) {
        let mut grid = ops::reshape(&cols, &shape(&[rows, h, w]))?;
        for (i, &e) in extra.iter().enumerate() {
            if e > 0 {
                grid = ops::pad_dim(&grid, i as i64 - 2, 0, e as i64)?;
            }
        }
        let [bh, bw] = g.window.out();
        ops::reshape(&grid, &shape(&[rows, bh * bw]))?
    } else {
        cols
    };
    let y = ops::fold(
        &cols,
        &shape_arg(None, &g.window.size()),
        &shape_arg(None, &p.kernel),
        &shape_arg(None, &p.dilation),
        &shape_arg(None, &p.padding),
        &shape_arg(None, &p.stride),
    )?;
    match bias {
        Some(b) => ops::add(&y, &ops::reshape(b, &[-1, 1, 1])?),
        None => Ok(y),
    }
}

transposed_fn! {
    #[meta(op = "conv_transpose2d")]
    fn conv_transpose2d_meta(x: &TensorMeta, weight: &TensorMeta, bias: Option<&TensorMeta>; a)
        -> Result<TensorMeta> {
        transposed_meta::<2>(x, weight, bias, &a)
    }

    /// `fold` of the weight's transpose times the input (see the module).
    #[decompose(op = "conv_transpose2d")]
    fn conv_transpose2d_decomposition(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>; a)
        -> Result<Tensor> {
        conv_transpose2d_by_fold(x, weight, bias, &a)
    }

    #[meta(op = "conv_transpose1d")]
    fn conv_transpose1d_meta(x: &TensorMeta, weight: &TensorMeta, bias: Option<&TensorMeta>; a)
        -> Result<TensorMeta> {
        transposed_meta::<1>(x, weight, bias, &a)
    }

    /// `conv_transpose2d` of the input as a height-1 image (`[N, C, 1, L]`)
    /// with a height-1 kernel.
    #[decompose(op = "conv_transpose1d")]
    fn conv_transpose1d_decomposition(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>; a)
        -> Result<Tensor> {
        // (The meta checked each list: one value.)
        let weight = ops::unsqueeze(weight, -2)?;
        let (stride, padding) = (widen(a.stride, 1), widen(a.padding, 0));
        let (output_padding, dilation) = (widen(a.output_padding, 0), widen(a.dilation, 1));
        height_one(x, |x| {
            let (p, op) = (&padding, &output_padding);
            ops::conv_transpose2d(x, &weight, bias, &stride, p, op, a.groups, &dilation)
        })
    }
}
