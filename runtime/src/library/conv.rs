//! Convolution (`ops/conv.toml`): the sliding-block primitives `unfold`
//! (im2col) and `fold` (col2im), the tiled products `conv2d_tiled` (a
//! convolution without bias) and `conv2d_weight_grads` (each example's
//! weight gradient), whose kernels are in `conv/tiles.rs`, and
//! `conv1d`/`conv2d` as composites over `conv2d_tiled`.
//!
//! `unfold` and `fold` are linear and each other's transpose, so each one's
//! vjp is the other (`vjp/conv.rs`) and neither needs a jvp. Their batching
//! rules fold the vmap dim into the image batch `N` (one kernel call, no
//! loop). A convolution is `weight [C_out, C_in * kh * kw] @ unfold(x)
//! [N, C_in * kh * kw, L]`, which `conv2d_tiled` computes one example's
//! blocks at a time without building `unfold(x)`; under `vmap(grad(...))`
//! the examples join its batch, and the per-example weight gradient is
//! `conv2d_weight_grads`, `g [B, C_out, L] @ blocks^T [B, L, C_in * kh *
//! kw]` from the same tiles, one batched contraction (the way Opacus
//! computes them). Both have batching rules, vjps (written with `unfold`,
//! `matmul` and `fold`, in `vjp/conv.rs`) and jvps (the product rule).
//!
//! The window of every one of them (kernel, stride, padding and dilation
//! per spatial dim, the blocks they give, and the checks) is the poolings'
//! too: `window.rs`.

use ndarray::{ArcArray, ArrayD, IxDyn, LinalgScalar};

use super::window::{batch_as_images, check_rank, height_one, per_axis, widen, Params, Window};
use crate::batching::{
    bdim_to_front, materialize_at_front, reshape_dim_into, reshape_dim_outof, shape_arg,
};
use crate::core::buffers::{filled, take, Cached};
use crate::core::meta_rules::require_float;
use crate::{
    batching_rule, decompose, jvp, kernel, meta, ops, Data, Error, Result, Tensor, TensorMeta,
};

pub(crate) mod tiles;

// ---------------------------------------------------------------------------
// The arguments of the sliding-block ops and of the convolutions

/// The window arguments of `unfold`/`fold` as the user wrote them.
#[derive(Clone, Copy)]
pub(crate) struct WindowArgs<'a> {
    pub kernel_size: &'a [i64],
    pub dilation: &'a [i64],
    pub padding: &'a [i64],
    pub stride: &'a [i64],
}

impl WindowArgs<'_> {
    /// The window, checked.
    fn params(&self) -> Result<Params<2>> {
        Params::parse(self.kernel_size, self.dilation, self.padding, self.stride)
    }
}

/// Declares a function of `unfold` or `fold`: `x` and the parameters before
/// the window (`fold`'s `output_size`, a batching rule's `bdim`), the op
/// table's window arguments (`kernel_size`, `dilation`, `padding`,
/// `stride`), then the `rest`. The body sees the window as one
/// [`WindowArgs`] `$w`. The metas, kernels, batching rules and vjps of the
/// sliding-block ops are declared with it.
macro_rules! window_fn {
    ($($(#[$attr:meta])* fn $name:ident($($p:ident: $t:ty),*; $w:ident $(, $q:ident: $u:ty)* $(,)?)
        -> $ret:ty $body:block)*) => {$(
        $(#[$attr])*
        #[allow(clippy::too_many_arguments)]
        fn $name(
            $($p: $t,)*
            kernel_size: &[i64],
            dilation: &[i64],
            padding: &[i64],
            stride: &[i64],
            $($q: $u,)*
        ) -> $ret {
            let $w = $crate::library::conv::WindowArgs { kernel_size, dilation, padding, stride };
            $body
        }
    )*};
}
pub(crate) use window_fn;

/// The arguments of a convolution after its operands, as the user wrote
/// them (`padding` is a list, or a word for `conv*_padding`).
#[derive(Clone, Copy)]
struct ConvArgs<'a, P> {
    stride: &'a [i64],
    padding: P,
    dilation: &'a [i64],
    groups: i64,
}

impl ConvArgs<'_, &[i64]> {
    /// The window of a kernel of spatial shape `kernel` (a weight's), checked.
    fn params<const D: usize>(&self, kernel: &[usize]) -> Result<Params<D>> {
        let kernel = shape_arg(None, kernel);
        Params::parse(&kernel, self.dilation, self.padding, self.stride)
    }
}

/// Declares a function of a convolution: its parameters before the op
/// table's convolution arguments (`x`, `weight`, `bias`; a batching rule's
/// batch dims; `conv2d_weight_grads`' `kernel_size`), then `stride`,
/// `padding` (of type `$pt`), `dilation` and `groups`, which the body sees
/// as one [`ConvArgs`] `$a`, then the `rest`. The metas, kernels,
/// decompositions, batching rules and jvps of the convolutions are declared
/// with it.
macro_rules! conv_fn {
    ($($(#[$attr:meta])* fn $name:ident($($p:ident: $t:ty),*; $a:ident: $pt:ty
        $(, $q:ident: $u:ty)* $(,)?) -> $ret:ty $body:block)*) => {$(
        $(#[$attr])*
        #[allow(clippy::too_many_arguments)]
        fn $name(
            $($p: $t,)*
            stride: &[i64],
            padding: $pt,
            dilation: &[i64],
            groups: i64,
            $($q: $u,)*
        ) -> $ret {
            let $a = ConvArgs { stride, padding, dilation, groups };
            $body
        }
    )*};
}

/// The kernel dims of a weight with `D` spatial dims, as its shape is
/// described in errors.
pub(super) fn kernel_dims<const D: usize>() -> &'static str {
    if D == 1 {
        "k"
    } else {
        "kh, kw"
    }
}

/// Checks the rank of a weight with `D` spatial dims, `[channels,
/// *kernel]` (`channels` names its first two dims).
fn check_weight_rank<const D: usize>(ws: &[usize], channels: &str) -> Result<()> {
    if ws.len() != D + 2 {
        return Err(Error::invalid(format!(
            "expected a {}-d weight [{channels}, {}], got shape {ws:?}",
            D + 2,
            kernel_dims::<D>()
        )));
    }
    Ok(())
}

/// What a convolution and a transposed one (`conv_transpose.rs`) check
/// alike of their operands, with `D` spatial dims: a float input, a weight
/// and bias of its dtype, an input of `D + 1` (unbatched) or `D + 2`
/// (batched) dims, a weight of `D + 2` (`[channels, *kernel]`), and
/// positive `groups`. Gives whether the input is batched, and the groups.
pub(super) fn check_operands<const D: usize>(
    x: &TensorMeta,
    w: &TensorMeta,
    bias: Option<&TensorMeta>,
    groups: i64,
    channels: &str,
) -> Result<(bool, usize)> {
    require_float(x)?;
    for (name, t) in [("weight", Some(w)), ("bias", bias)] {
        if let Some(t) = t
            && t.dtype() != x.dtype()
        {
            return Err(Error::invalid(format!(
                "the input ({}) and {name} ({}) must have the same dtype",
                x.dtype(),
                t.dtype()
            )));
        }
    }
    let batched = check_rank(x.shape(), D)?;
    check_weight_rank::<D>(w.shape(), channels)?;
    if groups < 1 {
        return Err(Error::invalid(format!(
            "`groups` must be positive, got {groups}"
        )));
    }
    Ok((batched, usize::try_from(groups).unwrap_or(usize::MAX)))
}

/// The metas of a convolution's operands, for its checks.
pub(super) fn metas(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
) -> (TensorMeta, TensorMeta, Option<TensorMeta>) {
    (
        TensorMeta::of(x),
        TensorMeta::of(w),
        bias.map(TensorMeta::of),
    )
}

/// Checks that `bias`, if any, is `[c_out]` (`why`: where `c_out` comes from).
pub(super) fn check_bias(bias: Option<&TensorMeta>, c_out: usize, why: &str) -> Result<()> {
    if let Some(b) = bias
        && b.shape() != [c_out]
    {
        return Err(Error::invalid(format!(
            "bias must have shape [{c_out}] ({why}), got {:?}",
            b.shape()
        )));
    }
    Ok(())
}

/// `a * b`, or an error naming the shape being computed.
fn mul(a: usize, b: usize, what: &str) -> Result<usize> {
    a.checked_mul(b)
        .ok_or_else(|| Error::invalid(format!("{what} is too large: {a} * {b} overflows")))
}

/// A 2-d sliding-block op on a standard-layout batch `[n, c, h, w]`: the
/// window over the images' spatial dims, whose positions are the grid of
/// blocks `[bh, bw]`.
struct Blocks {
    n: usize,
    c: usize,
    window: Window<2>,
}

impl Blocks {
    /// The blocks of an op on `n` images of `c` channels, with its output
    /// shape: the `n` images if `batched`, then `dims` (checked against the
    /// allocation limit).
    fn with_output(
        (n, c): (usize, usize),
        window: Window<2>,
        batched: bool,
        dims: &[usize],
    ) -> Result<(Vec<usize>, Blocks)> {
        let mut out = if batched { vec![n] } else { vec![] };
        out.extend_from_slice(dims);
        crate::core::alloc::checked_numel(&out)?;
        Ok((out, Blocks { n, c, window }))
    }

    /// The images' spatial size `[h, w]`.
    fn size(&self) -> [usize; 2] {
        self.window.size()
    }

    /// The grid of blocks, `[bh, bw]`.
    fn grid(&self) -> [usize; 2] {
        self.window.out()
    }

    /// For each (image and channel, kernel row, kernel column, block row):
    /// calls `row(image_channel, input_row, cols)` with the input row it reads
    /// (`None`: all padding) and the valid block columns `cols` with the first
    /// input column they read; in the order of the rows of `unfold`'s output.
    fn for_each_row(&self, row: impl FnMut(usize, Option<usize>, (usize, usize), usize)) {
        self.for_each_row_in(0..self.n * self.c, 0..self.grid()[0], row);
    }

    /// [`Blocks::for_each_row`] over the images and channels `ncs` (flat
    /// indices `image * c + channel`) and the block rows `oys` only.
    fn for_each_row_in(
        &self,
        ncs: std::ops::Range<usize>,
        oys: std::ops::Range<usize>,
        mut row: impl FnMut(usize, Option<usize>, (usize, usize), usize),
    ) {
        let [rows, cols] = &self.window.axes;
        for nc in ncs {
            for ki in 0..rows.kernel {
                let off_h = rows.offset(ki);
                let (rlo, rhi) = rows.reading(ki);
                for kj in 0..cols.kernel {
                    let off_w = cols.offset(kj);
                    let (clo, chi) = cols.reading(kj);
                    // The input column of block column `clo` (in range only
                    // when `clo < chi`: the callers read nothing otherwise).
                    let first = (clo as i128 * cols.stride as i128 + off_w).max(0) as usize;
                    for oy in oys.clone() {
                        let input_row = (oy >= rlo && oy < rhi)
                            .then(|| (oy as i128 * rows.stride as i128 + off_h) as usize);
                        row(nc, input_row, (clo, chi), first);
                    }
                }
            }
        }
    }
}

/// im2col of a standard-layout `[n, c, h, w]` buffer: `[n, c * kh * kw, bh *
/// bw]`, written once, in order (the padding as zeros, a stride-1 row as one
/// copy).
fn unfold_values<T: LinalgScalar + Cached>(x: &[T], g: &Blocks) -> Result<Vec<T>> {
    let [h, w] = g.size();
    let [bh, bw] = g.grid();
    let rows = mul(
        mul(g.n * g.c, g.window.params().kernel_numel()?, "unfold")?,
        bh,
        "unfold",
    )?;
    let mut out = take::<T>(mul(rows, bw, "unfold")?);
    let stride = g.window.axes[1].stride;
    g.for_each_row(|nc, input_row, (lo, hi), first| {
        let Some(r) = input_row else {
            out.extend(std::iter::repeat_n(T::zero(), bw));
            return;
        };
        let src = &x[(nc * h + r) * w..(nc * h + r + 1) * w];
        out.extend(std::iter::repeat_n(T::zero(), lo));
        if hi == lo {
            // No block column reads this row (`first` is then meaningless).
        } else if stride == 1 {
            out.extend_from_slice(&src[first..first + (hi - lo)]);
        } else {
            out.extend(src[first..].iter().step_by(stride).take(hi - lo).copied());
        }
        out.extend(std::iter::repeat_n(T::zero(), bw - hi));
    });
    Ok(out)
}

/// col2im: the transpose of [`unfold_values`], `cols` `[n, c * kh * kw, bh *
/// bw]` summed into `[n, c, h, w]`.
///
/// Each output plane (one channel of one image) sums only its own block
/// rows, so with the `rayon` feature and enough values, pieces of whole
/// planes run on the pool, each adding in the serial loop's order.
fn fold_values<T: LinalgScalar + Cached + Send + Sync>(cols: &[T], g: &Blocks) -> Result<Vec<T>> {
    let [h, w] = g.size();
    let [bh, bw] = g.grid();
    let plane = h * w;
    let planes = g.n * g.c;
    let [rows, cols_axis] = &g.window.axes;
    let cols_per_plane = rows.kernel * cols_axis.kernel * bh * bw;
    let stride = cols_axis.stride;
    // Adds the block rows of planes `ncs` into `out` (those planes' values).
    let fold_planes = |ncs: std::ops::Range<usize>, out: &mut [T]| {
        let first_plane = ncs.start;
        let mut at = first_plane * cols_per_plane;
        g.for_each_row_in(ncs, 0..bh, |nc, input_row, (lo, hi), first| {
            let src = &cols[at..at + bw];
            at += bw;
            let Some(r) = input_row else { return };
            let row = ((nc - first_plane) * h + r) * w;
            let dst = &mut out[row..row + w];
            for (j, &v) in src[lo..hi].iter().enumerate() {
                let d = &mut dst[first + j * stride];
                *d = *d + v;
            }
        });
    };
    #[cfg(feature = "rayon")]
    if plane > 0 && crate::core::broadcast::parallel(cols.len().max(planes * plane)) {
        let piece = crate::core::buffers::piece_rows(planes * plane, plane, 1 << 14);
        return crate::core::buffers::par_build(planes * plane, piece, |start, p| {
            p.extend(std::iter::repeat_n(T::zero(), p.len()));
            let nc = start / plane;
            fold_planes(nc..nc + p.len() / plane, p.written_mut());
        });
    }
    let mut out = filled(planes * plane, T::zero());
    fold_planes(0..planes, &mut out);
    Ok(out)
}

/// A float tensor as a standard-layout array of its dtype, applied to `f`.
macro_rules! on_float {
    ($x:expr, $a:ident => $body:expr) => {
        match $x.data()? {
            Data::F32($a) => $body,
            Data::F64($a) => $body,
            _ => Err(Error::invalid(format!(
                "needs a floating-point tensor (f32 or f64), got {}",
                $x.dtype()
            ))),
        }
    };
}

/// `values` (`unfold_values` or `fold_values`) of the standard-layout
/// values of `a`, shaped as `shape`; `what` names the op in errors.
fn blocks_array<T: LinalgScalar + Cached + crate::Element>(
    a: &ArcArray<T, IxDyn>,
    shape: &[usize],
    what: &str,
    values: impl FnOnce(&[T]) -> Result<Vec<T>>,
) -> Result<Tensor> {
    let a = crate::core::buffers::standard(a.view());
    let x = a
        .as_slice()
        .ok_or_else(|| Error::invalid(format!("{what}: the input is not contiguous")))?;
    ArrayD::from_shape_vec(IxDyn(shape), values(x)?)
        .map(Tensor::from)
        .map_err(|e| Error::invalid(format!("{what}: {e}")))
}

// ---------------------------------------------------------------------------
// unfold

/// The output shape of `unfold` for an input of shape `shape` (3-d or 4-d),
/// and its geometry.
fn unfold_geometry(shape: &[usize], w: &WindowArgs) -> Result<(Vec<usize>, Blocks)> {
    if !matches!(shape.len(), 3 | 4) {
        return Err(Error::invalid(format!(
            "expected a 3-d [C, H, W] or 4-d [N, C, H, W] input, got shape {shape:?}"
        )));
    }
    let r = shape.len();
    if shape[r - 3..].contains(&0) {
        return Err(Error::invalid(format!(
            "expected non-zero channel and spatial dims (only the batch may be empty), got shape \
             {shape:?}"
        )));
    }
    let params = w.params()?;
    let window = params.over([shape[r - 2], shape[r - 1]])?;
    let (n, c) = if r == 4 {
        (shape[0], shape[1])
    } else {
        (1, shape[0])
    };
    let rows = mul(c, params.kernel_numel()?, "unfold's block size C * kh * kw")?;
    let l = window.positions()?;
    Blocks::with_output((n, c), window, r == 4, &[rows, l])
        .map_err(|_| window.too_large("the output"))
}

window_fn! {
    #[meta(op = "unfold")]
    fn unfold_meta(x: &TensorMeta; w) -> Result<TensorMeta> {
        require_float(x)?;
        let (shape, _) = unfold_geometry(x.shape(), &w)?;
        Ok(TensorMeta::new(&shape, x.dtype()))
    }

    #[kernel(op = "unfold")]
    fn unfold_kernel(x: &Tensor; w) -> Result<Tensor> {
        let (shape, g) = unfold_geometry(x.shape(), &w)?;
        on_float!(x, a => blocks_array(a, &shape, "unfold", |v| unfold_values(v, &g)))
    }

    /// The vmap dim joins the image batch: `[B, C, H, W]` for an unbatched
    /// example, `[B * N, C, H, W]` for a batch of images; one kernel call.
    #[batching_rule(op = "unfold")]
    fn unfold_rule(x: &Tensor, bdim: Option<usize>; w) -> Result<(Tensor, Option<usize>)> {
        let unfold = |t: &Tensor| Ok([ops::unfold(t, w.kernel_size, w.dilation, w.padding, w.stride)?]);
        let [y] = batch_as_images(x, bdim, 3, unfold)?;
        Ok(y)
    }
}

// ---------------------------------------------------------------------------
// fold

/// The output shape of `fold` for an input of shape `shape` (2-d or 3-d), and
/// its geometry.
fn fold_geometry(
    shape: &[usize],
    output_size: &[i64],
    w: &WindowArgs,
) -> Result<(Vec<usize>, Blocks)> {
    if !matches!(shape.len(), 2 | 3) {
        return Err(Error::invalid(format!(
            "expected a 2-d [C * kh * kw, L] or 3-d [N, C * kh * kw, L] input, got shape {shape:?}"
        )));
    }
    let size = per_axis::<2>("output_size", output_size, 1)?;
    let p = w.params()?;
    let r = shape.len();
    let (rows, l) = (shape[r - 2], shape[r - 1]);
    let k = p.kernel_numel()?;
    if rows == 0 || rows % k != 0 {
        return Err(Error::invalid(format!(
            "the input's dim {} (size {rows}) must be a positive multiple of kh * kw = {k} (kernel_size {:?})",
            r - 2,
            p.kernel
        )));
    }
    let window = p.over(size)?;
    let [bh, bw] = window.out();
    let expected = bh.checked_mul(bw);
    if expected != Some(l) && (0..2).any(|i| p.padding[i] as u128 * 2 > size[i] as u128) {
        return Err(Error::invalid(format!(
            "`padding` {:?} is larger than the output of size {size:?}: with kernel_size {:?}, \
             dilation {:?} and stride {:?} it gives more blocks than the input's last dim (size \
             {l}) holds",
            p.padding, p.kernel, p.dilation, p.stride
        )));
    }
    if expected != Some(l) {
        return Err(Error::invalid(format!(
            "the input's last dim (size {l}) must be the number of blocks of an {size:?} output \
             with kernel_size {:?}, dilation {:?}, padding {:?} and stride {:?}: {bh} x {bw}",
            p.kernel, p.dilation, p.padding, p.stride
        )));
    }
    let n = if r == 3 { shape[0] } else { 1 };
    let c = rows / k;
    Blocks::with_output((n, c), window, r == 3, &[c, size[0], size[1]])
}

window_fn! {
    #[meta(op = "fold")]
    fn fold_meta(x: &TensorMeta, output_size: &[i64]; w) -> Result<TensorMeta> {
        require_float(x)?;
        let (shape, _) = fold_geometry(x.shape(), output_size, &w)?;
        Ok(TensorMeta::new(&shape, x.dtype()))
    }

    #[kernel(op = "fold")]
    fn fold_kernel(x: &Tensor, output_size: &[i64]; w) -> Result<Tensor> {
        let (shape, g) = fold_geometry(x.shape(), output_size, &w)?;
        on_float!(x, a => blocks_array(a, &shape, "fold", |v| fold_values(v, &g)))
    }

    /// The vmap dim joins the batch of block matrices, as for `unfold`.
    #[batching_rule(op = "fold")]
    fn fold_rule(x: &Tensor, bdim: Option<usize>, output_size: &[i64]; w)
        -> Result<(Tensor, Option<usize>)> {
        let fold = |t: &Tensor| {
            Ok([ops::fold(t, output_size, w.kernel_size, w.dilation, w.padding, w.stride)?])
        };
        let [y] = batch_as_images(x, bdim, 2, fold)?;
        Ok(y)
    }
}

// ---------------------------------------------------------------------------
// conv2d and conv1d

/// Checks a convolution with `D` spatial dims and gives its output shape:
/// `input` `[N, C_in, *spatial]` or `[C_in, *spatial]`, `weight` `[C_out,
/// C_in / groups, *kernel]`, `bias` `[C_out]`, all of one float dtype.
fn conv_shape<const D: usize>(
    x: &TensorMeta,
    w: &TensorMeta,
    bias: Option<&TensorMeta>,
    a: &ConvArgs<&[i64]>,
) -> Result<Vec<usize>> {
    let (batched, g) = check_operands::<D>(x, w, bias, a.groups, "C_out, C_in / groups")?;
    let (xs, ws) = (x.shape(), w.shape());
    // No input or output channels is allowed, as in PyTorch (every output
    // element is then its bias); an empty spatial dim or kernel is not.
    if xs[xs.len() - D..].contains(&0) || ws[2..].contains(&0) {
        return Err(Error::invalid(format!(
            "expected non-zero spatial dims of the input and of the kernel (only the batch and \
             the channels may be empty), got input {xs:?} and weight {ws:?}"
        )));
    }
    let c_in = xs[usize::from(batched)];
    let c_out = ws[0];
    if ws[1].checked_mul(g) != Some(c_in) {
        return Err(Error::invalid(format!(
            "the weight {ws:?} with groups = {} expects {} input channels (weight.shape[1] \
             * groups), got an input of shape {xs:?}",
            a.groups,
            ws[1].saturating_mul(g)
        )));
    }
    if c_out % g != 0 {
        return Err(Error::invalid(format!(
            "the weight's output channels ({c_out}) must be a multiple of groups ({})",
            a.groups
        )));
    }
    check_bias(bias, c_out, "the weight's output channels")?;
    let params = a.params::<D>(&ws[2..])?;
    let mut size = [0usize; D];
    size.copy_from_slice(&xs[xs.len() - D..]);
    let window = params.over(size)?;
    let mut out = if batched { vec![xs[0]] } else { vec![] };
    out.push(c_out);
    out.extend(window.out());
    // The output, and the blocks matrix of the decomposition (`unfold`'s
    // `[N, C_in * kernel elements, output positions]`), must be allocatable.
    // Either too large is the window's doing (the input and the weight
    // exist): the error names its arguments, not an internal shape.
    let l = window.positions()?;
    crate::core::alloc::check_alloc(&out, x.dtype()).map_err(|_| window.too_large("the output"))?;
    let n = if batched { xs[0] } else { 1 };
    let rows = mul(c_in, params.kernel_numel()?, "the convolution's block size")?;
    crate::core::alloc::check_alloc(&[n, rows, l], x.dtype())
        .map_err(|_| window.too_large("the unfolded input (the blocks the kernel sees)"))?;
    Ok(out)
}

conv_fn! {
    #[meta(op = "conv2d")]
    fn conv2d_meta(x: &TensorMeta, weight: &TensorMeta, bias: Option<&TensorMeta>; a: &[i64])
        -> Result<TensorMeta> {
        Ok(TensorMeta::new(&conv_shape::<2>(x, weight, bias, &a)?, x.dtype()))
    }

    /// `unfold` of the input, then one product with the weight: `[C_out, C_in *
    /// kh * kw] @ [N, C_in * kh * kw, L]`, or per group `[g, C_out / g, K] @ [N,
    /// g, K, L]` (the blocks' rows are channel-major, so a group's channels are
    /// consecutive rows).
    #[decompose(op = "conv2d")]
    fn conv2d_decomposition(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>; a: &[i64])
        -> Result<Tensor> {
        conv2d_by_unfold(x, weight, bias, &a)
    }

    #[meta(op = "conv1d")]
    fn conv1d_meta(x: &TensorMeta, weight: &TensorMeta, bias: Option<&TensorMeta>; a: &[i64])
        -> Result<TensorMeta> {
        Ok(TensorMeta::new(&conv_shape::<1>(x, weight, bias, &a)?, x.dtype()))
    }

    /// `conv2d` of the input as a height-1 image (`[N, C, 1, L]`) with a height-1
    /// kernel.
    #[decompose(op = "conv1d")]
    fn conv1d_decomposition(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>; a: &[i64])
        -> Result<Tensor> {
        let weight = ops::unsqueeze(weight, -2)?;
        let (stride, padding) = (widen(a.stride, 1), widen(a.padding, 0));
        let dilation = widen(a.dilation, 1);
        height_one(x, |x| ops::conv2d(x, &weight, bias, &stride, &padding, &dilation, a.groups))
    }
}

/// The decomposition of `conv2d` (see `conv2d_decomposition`).
fn conv2d_by_unfold(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    a: &ConvArgs<&[i64]>,
) -> Result<Tensor> {
    let (xm, wm, bm) = metas(x, weight, bias);
    let out_shape = conv_shape::<2>(&xm, &wm, bm.as_ref(), a)?;
    let batched = x.ndim() == 4;
    let ws = weight.shape();
    if ws[0] == 0 || ws[1] == 0 {
        return without_channels(x, bias, &out_shape);
    }
    let x4 = if batched {
        x.clone()
    } else {
        ops::unsqueeze(x, 0)?
    };
    let mut y = ops::conv2d_tiled(&x4, weight, a.stride, a.padding, a.dilation, a.groups)?;
    if let Some(b) = bias {
        y = ops::add(&y, &ops::reshape(b, &[-1, 1, 1])?)?;
    }
    if batched {
        Ok(y)
    } else {
        ops::squeeze(&y, Some(0))
    }
}

/// A convolution with no input or no output channels: every output element
/// is its channel's bias, or zero without one (PyTorch's result; `unfold`
/// refuses zero channels, as PyTorch's does). Built on the sum of `x` (zero
/// when it has no channels; any value when there are no output channels,
/// whose output is empty), so the result is batched where the input is,
/// under every transform.
fn without_channels(x: &Tensor, bias: Option<&Tensor>, out_shape: &[usize]) -> Result<Tensor> {
    let zero = ops::sum(x, None, false)?;
    let y = ops::expand(&zero, &shape_arg(None, out_shape))?;
    match bias {
        Some(b) => ops::add(
            &y,
            &ops::reshape(b, &shape_arg(None, &[b.shape()[0], 1, 1]))?,
        ),
        None => Ok(y),
    }
}

// ---------------------------------------------------------------------------
// conv2d_tiled and conv2d_weight_grads: the tiled products behind conv2d

/// The output shape of `conv2d_tiled`: `conv2d`'s, for a 4-d input only.
fn tiled_shape(x: &TensorMeta, w: &TensorMeta, a: &ConvArgs<&[i64]>) -> Result<Vec<usize>> {
    if x.ndim() != 4 {
        return Err(Error::invalid(format!(
            "expected a 4-d input [N, C_in, H, W], got shape {:?}",
            x.shape()
        )));
    }
    conv_shape::<2>(x, w, None, a)
}

/// The blocks of a checked 2-d convolution of a 4-d input `xs` with a
/// weight of shape `ws`.
fn conv_blocks(xs: &[usize], ws: &[usize], a: &ConvArgs<&[i64]>) -> Result<Blocks> {
    Ok(Blocks {
        n: xs[0],
        c: xs[1],
        window: a.params::<2>(&ws[2..])?.over([xs[2], xs[3]])?,
    })
}

/// `f` of the standard-layout values of two arrays of one element type, as
/// a tensor of shape `shape`; `what` names the op in errors.
fn two_arrays<T: LinalgScalar + Cached + crate::Element>(
    a: &ArcArray<T, IxDyn>,
    b: &ArcArray<T, IxDyn>,
    shape: &[usize],
    what: &str,
    f: impl FnOnce(&[T], &[T]) -> Vec<T>,
) -> Result<Tensor> {
    let (a, b) = (
        crate::core::buffers::standard(a.view()),
        crate::core::buffers::standard(b.view()),
    );
    let not_contiguous = || Error::invalid(format!("{what}: an operand is not contiguous"));
    let (x, y) = (
        a.as_slice().ok_or_else(not_contiguous)?,
        b.as_slice().ok_or_else(not_contiguous)?,
    );
    ArrayD::from_shape_vec(IxDyn(shape), f(x, y))
        .map(Tensor::from)
        .map_err(|e| Error::invalid(format!("{what}: {e}")))
}

/// The tiled products of `tiles.rs`.
#[derive(Clone, Copy)]
enum Product {
    /// `conv2d_tiled`: the convolution of an input with a weight.
    Forward,
    /// `conv2d_weight_grads`: each example's weight gradient, from an input
    /// and an output gradient.
    WeightGrads,
}

/// `product` of `x` and `y` (of one float dtype) over `blocks`, with `c_out`
/// output channels in `groups` groups, as a tensor of shape `shape`.
fn tiled_product(
    x: &Tensor,
    y: &Tensor,
    (blocks, c_out, groups): (&Blocks, usize, i64),
    shape: &[usize],
    product: Product,
) -> Result<Tensor> {
    let conv = tiles::Conv {
        blocks,
        c_out,
        groups: groups as usize,
        tile_bytes: tiles::TILE_BYTES,
    };
    fn run<'a, T: crate::library::gemm::Gemm>(
        conv: &'a tiles::Conv<'a>,
        product: Product,
    ) -> impl FnOnce(&[T], &[T]) -> Vec<T> + 'a {
        move |x, y| match product {
            Product::Forward => tiles::forward(x, y, conv),
            Product::WeightGrads => tiles::weight_grads(x, y, conv),
        }
    }
    let (what, other) = match product {
        Product::Forward => ("conv2d_tiled", "weight"),
        Product::WeightGrads => ("conv2d_weight_grads", "grad_output"),
    };
    match (x.data()?, y.data()?) {
        (Data::F32(p), Data::F32(q)) => two_arrays(p, q, shape, what, run(&conv, product)),
        (Data::F64(p), Data::F64(q)) => two_arrays(p, q, shape, what, run(&conv, product)),
        _ => Err(Error::invalid(format!(
            "the input ({}) and {other} ({}) must have the same floating-point dtype",
            x.dtype(),
            y.dtype()
        ))),
    }
}

conv_fn! {
    #[meta(op = "conv2d_tiled")]
    fn conv2d_tiled_meta(x: &TensorMeta, weight: &TensorMeta; a: &[i64]) -> Result<TensorMeta> {
        Ok(TensorMeta::new(&tiled_shape(x, weight, &a)?, x.dtype()))
    }

    #[kernel(op = "conv2d_tiled")]
    fn conv2d_tiled_kernel(x: &Tensor, weight: &Tensor; a: &[i64]) -> Result<Tensor> {
        let shape = tiled_shape(&TensorMeta::of(x), &TensorMeta::of(weight), &a)?;
        let blocks = conv_blocks(x.shape(), weight.shape(), &a)?;
        let conv = (&blocks, weight.shape()[0], a.groups);
        tiled_product(x, weight, conv, &shape, Product::Forward)
    }

    /// The examples of the vmap join the batch of images (one call); a batched
    /// weight joins the groups: the vmap's `B` weights `[B * C_out, C_in /
    /// groups, kh, kw]` over the input's channels `[N, B * C_in, H, W]` with
    /// `B * groups` groups (as functorch's convolution rule).
    #[batching_rule(op = "conv2d_tiled")]
    fn conv2d_tiled_rule(
        x: &Tensor, x_bdim: Option<usize>, weight: &Tensor, w_bdim: Option<usize>; a: &[i64]
    ) -> Result<(Tensor, Option<usize>)> {
        let conv = |x: &Tensor, w: &Tensor, groups: i64| {
            ops::conv2d_tiled(x, w, a.stride, a.padding, a.dilation, groups)
        };
        if w_bdim.is_none() {
            if x_bdim.is_some() && x.ndim() != 5 {
                // Not a batch of 4-d inputs: the op's own error.
                let xm = TensorMeta::new(&x.shape()[1..], x.dtype());
                tiled_shape(&xm, &TensorMeta::of(weight), &a)?;
            }
            // (Rank 3: a 5-d batch is folded into the images, as for `unfold`.)
            let [y] = batch_as_images(x, x_bdim, 3, |t| Ok([conv(t, weight, a.groups)?]))?;
            return Ok(y);
        }
        let ts = materialize_at_front(&[x.clone(), weight.clone()], &[x_bdim, w_bdim])?;
        let (xs, ws) = (ts[0].shape(), ts[1].shape());
        let b = xs[0];
        let bg = i64::try_from(b)
            .ok()
            .and_then(|b| b.checked_mul(a.groups))
            .filter(|&bg| bg > 0);
        let Some(bg) = bg else {
            // No examples (or bad groups): the meta's error, or the empty result.
            let (xm, wm) = (
                TensorMeta::new(&xs[1..], x.dtype()),
                TensorMeta::new(&ws[1..], weight.dtype()),
            );
            return empty_batch(&tiled_shape(&xm, &wm, &a)?, x.dtype());
        };
        // [B, N, C, H, W] -> [N, B * C, H, W]; [B, C_out, ...] -> [B * C_out, ...]
        let y = conv(&reshape_dim_into(0, 1, &ts[0])?, &reshape_dim_into(0, 0, &ts[1])?, bg)?;
        // [N, B * C_out, H_out, W_out] -> [N, B, C_out, H_out, W_out]
        Ok((reshape_dim_outof(1, [b, ws[1]], &y)?, Some(1)))
    }

    /// `conv2d_tiled` is bilinear: its jvp is `conv(tx, w) + conv(x, tw)`.
    #[jvp(op = "conv2d_tiled")]
    fn conv2d_tiled_jvp(
        x: &Tensor, weight: &Tensor; a: &[i64], _y: &Tensor,
        x_tangent: Option<&Tensor>, w_tangent: Option<&Tensor>
    ) -> Result<Option<Tensor>> {
        let conv = |x: &Tensor, w: &Tensor| {
            ops::conv2d_tiled(x, w, a.stride, a.padding, a.dilation, a.groups)
        };
        sum_of(
            x_tangent.map(|t| conv(t, weight)).transpose()?,
            w_tangent.map(|t| conv(x, t)).transpose()?,
        )
    }
}

/// The result of a batching rule over a vmap of no examples: zeros of
/// shape `[0, *shape]`, batched along dim 0.
fn empty_batch(shape: &[usize], dtype: crate::DType) -> Result<(Tensor, Option<usize>)> {
    let mut full = vec![0];
    full.extend_from_slice(shape);
    Ok((ops::zeros(&shape_arg(None, &full), dtype)?, Some(0)))
}

/// The sum of two tangent contributions, `None` being zero.
fn sum_of(a: Option<Tensor>, b: Option<Tensor>) -> Result<Option<Tensor>> {
    match (a, b) {
        (Some(a), Some(b)) => ops::add(&a, &b).map(Some),
        (a, None) => Ok(a),
        (None, b) => Ok(b),
    }
}

/// Checks `conv2d_weight_grads`' operands and gives its output shape and the
/// convolution's blocks and output channels.
fn weight_grads_shape(
    x: &TensorMeta,
    g: &TensorMeta,
    kernel_size: &[i64],
    a: &ConvArgs<&[i64]>,
) -> Result<(Vec<usize>, Blocks, usize)> {
    require_float(x)?;
    if g.dtype() != x.dtype() {
        return Err(Error::invalid(format!(
            "the input ({}) and grad_output ({}) must have the same dtype",
            x.dtype(),
            g.dtype()
        )));
    }
    let (xs, gs) = (x.shape(), g.shape());
    if xs.len() != 4 || gs.len() != 4 || xs[0] != gs[0] {
        return Err(Error::invalid(format!(
            "expected a 4-d input [N, C_in, H, W] and a 4-d grad_output [N, C_out, H_out, \
             W_out] with the same N, got shapes {xs:?} and {gs:?}"
        )));
    }
    if a.groups < 1 {
        return Err(Error::invalid(format!(
            "`groups` must be positive, got {}",
            a.groups
        )));
    }
    let groups = usize::try_from(a.groups).unwrap_or(usize::MAX);
    let (c_in, c_out) = (xs[1], gs[1]);
    if c_in % groups != 0 || c_out % groups != 0 {
        return Err(Error::invalid(format!(
            "the input's channels ({c_in}) and grad_output's ({c_out}) must be multiples of \
             groups ({groups})"
        )));
    }
    if xs[2..].contains(&0) {
        return Err(Error::invalid(format!(
            "expected non-zero spatial dims of the input, got shape {xs:?}"
        )));
    }
    let p = Params::<2>::parse(kernel_size, a.dilation, a.padding, a.stride)?;
    let window = p.over([xs[2], xs[3]])?;
    let blocks = window.out();
    if gs[2..] != blocks {
        return Err(Error::invalid(format!(
            "grad_output {gs:?} must have the spatial size of the output, {blocks:?} (input \
             {xs:?}, kernel_size {:?}, stride {:?}, padding {:?}, dilation {:?})",
            p.kernel, p.stride, p.padding, p.dilation
        )));
    }
    let mut out = vec![xs[0], c_out, c_in / groups];
    out.extend(p.kernel);
    crate::core::alloc::check_alloc(&out, x.dtype())?;
    let blocks = Blocks {
        n: xs[0],
        c: c_in,
        window,
    };
    Ok((out, blocks, c_out))
}

conv_fn! {
    #[meta(op = "conv2d_weight_grads")]
    fn conv2d_weight_grads_meta(x: &TensorMeta, g: &TensorMeta, kernel_size: &[i64]; a: &[i64])
        -> Result<TensorMeta> {
        let (shape, _, _) = weight_grads_shape(x, g, kernel_size, &a)?;
        Ok(TensorMeta::new(&shape, x.dtype()))
    }

    #[kernel(op = "conv2d_weight_grads")]
    fn conv2d_weight_grads_kernel(x: &Tensor, g: &Tensor, kernel_size: &[i64]; a: &[i64])
        -> Result<Tensor> {
        let (shape, blocks, c_out) =
            weight_grads_shape(&TensorMeta::of(x), &TensorMeta::of(g), kernel_size, &a)?;
        tiled_product(x, g, (&blocks, c_out, a.groups), &shape, Product::WeightGrads)
    }

    /// Both batched (per-sample gradients): the vmap's examples join `N`, one
    /// call. A shared input with batched output gradients (the rows of a
    /// Jacobian) and one group: the gradients join the output channels
    /// (`[N, B * C_out, ...]`), so the input's blocks are packed once.
    #[batching_rule(op = "conv2d_weight_grads")]
    fn conv2d_weight_grads_rule(
        x: &Tensor, x_bdim: Option<usize>, g: &Tensor, g_bdim: Option<usize>,
        kernel_size: &[i64]; a: &[i64]
    ) -> Result<(Tensor, Option<usize>)> {
        let wg = |x: &Tensor, g: &Tensor| {
            ops::conv2d_weight_grads(x, g, kernel_size, a.stride, a.padding, a.dilation, a.groups)
        };
        if let (None, Some(gb)) = (x_bdim, g_bdim)
            && a.groups == 1
            && x.ndim() == 4
            && g.ndim() == 5
        {
            let g = bdim_to_front(g, Some(gb))?;
            // [B, N, C_out, ...] -> [N, B * C_out, ...]
            let y = wg(x, &reshape_dim_into(0, 1, &g)?)?;
            // [N, B * C_out, C_in, kh, kw] -> [N, B, C_out, C_in, kh, kw]
            return Ok((reshape_dim_outof(1, [g.shape()[0], g.shape()[2]], &y)?, Some(1)));
        }
        let ts = materialize_at_front(&[x.clone(), g.clone()], &[x_bdim, g_bdim])?;
        let (xs, gs) = (ts[0].shape().to_vec(), ts[1].shape().to_vec());
        if xs.len() != 5 || gs.len() != 5 || xs[0] == 0 {
            // Not 4-d examples, or none: the meta's error, or the empty result.
            let (xm, gm) = (
                TensorMeta::new(&xs[1..], x.dtype()),
                TensorMeta::new(&gs[1..], g.dtype()),
            );
            let (shape, _, _) = weight_grads_shape(&xm, &gm, kernel_size, &a)?;
            return empty_batch(&shape, x.dtype());
        }
        // [B, N, ...] -> [B * N, ...], and back for the output.
        let y = wg(&reshape_dim_into(0, 0, &ts[0])?, &reshape_dim_into(0, 0, &ts[1])?)?;
        Ok((reshape_dim_outof(0, [xs[0], xs[1]], &y)?, Some(0)))
    }

    /// Bilinear in its two tensors: `wg(tx, g) + wg(x, tg)`.
    #[jvp(op = "conv2d_weight_grads")]
    fn conv2d_weight_grads_jvp(
        x: &Tensor, g: &Tensor, kernel_size: &[i64]; a: &[i64], _y: &Tensor,
        x_tangent: Option<&Tensor>, g_tangent: Option<&Tensor>
    ) -> Result<Option<Tensor>> {
        let wg = |x: &Tensor, g: &Tensor| {
            ops::conv2d_weight_grads(x, g, kernel_size, a.stride, a.padding, a.dilation, a.groups)
        };
        sum_of(
            x_tangent.map(|t| wg(t, g)).transpose()?,
            g_tangent.map(|t| wg(x, t)).transpose()?,
        )
    }
}

// ---------------------------------------------------------------------------
// conv2d_padding and conv1d_padding: padding "valid" or "same"

/// The padding of `conv*_padding` along each of `D` spatial dims: none for
/// "valid"; for "same", `dilation * (k - 1)` in all, `left` before and
/// `left + extra` after (`extra` is 0 or 1, PyTorch's placement of the odd
/// element), which needs `stride` 1.
fn word_padding<const D: usize>(
    w: &TensorMeta,
    a: &ConvArgs<&str>,
) -> Result<([i64; D], [usize; D])> {
    let ConvArgs {
        stride,
        padding,
        dilation,
        ..
    } = *a;
    match padding {
        "valid" => Ok(([0; D], [0; D])),
        "same" => {
            let ws = w.shape();
            check_weight_rank::<D>(ws, "C_out, C_in / groups")?;
            if per_axis::<D>("stride", stride, 1)?.iter().any(|&s| s != 1) {
                return Err(Error::invalid(format!(
                    "padding \"same\" needs stride 1 (as in PyTorch), got stride {stride:?}"
                )));
            }
            let dilation = per_axis::<D>("dilation", dilation, 1)?;
            let (mut left, mut extra) = ([0i64; D], [0usize; D]);
            for i in 0..D {
                let total = dilation[i] as i128 * (ws[2 + i] as i128 - 1).max(0);
                left[i] = i64::try_from(total / 2).map_err(|_| {
                    Error::invalid(format!(
                        "padding \"same\" with dilation {dilation:?} and weight {ws:?} is too large"
                    ))
                })?;
                extra[i] = (total % 2) as usize;
            }
            Ok((left, extra))
        }
        other => Err(Error::invalid(format!(
            "`padding` must be \"valid\" or \"same\", got {other:?}"
        ))),
    }
}

/// The output meta of `conv*_padding` with `D` spatial dims: that of the
/// convolution with the symmetric padding, of the input with the extra
/// padding appended.
fn conv_padding_meta<const D: usize>(
    x: &TensorMeta,
    w: &TensorMeta,
    bias: Option<&TensorMeta>,
    a: &ConvArgs<&str>,
) -> Result<TensorMeta> {
    let (left, extra) = word_padding::<D>(w, a)?;
    let mut shape = x.shape().to_vec();
    if shape.len() >= D {
        let r = shape.len();
        for i in 0..D {
            shape[r - D + i] = shape[r - D + i].saturating_add(extra[i]);
        }
    }
    let a = ConvArgs {
        stride: a.stride,
        padding: &left[..],
        dilation: a.dilation,
        groups: a.groups,
    };
    let shape = conv_shape::<D>(&TensorMeta::new(&shape, x.dtype()), w, bias, &a)?;
    Ok(TensorMeta::new(&shape, x.dtype()))
}

/// A convolution op's function: input, weight, bias, stride, padding,
/// dilation, groups.
type ConvFn = fn(&Tensor, &Tensor, Option<&Tensor>, &[i64], &[i64], &[i64], i64) -> Result<Tensor>;

/// `conv` (`ops::conv2d` or `ops::conv1d`, `D` spatial dims) with the
/// padding the word asks for: "same" with an odd total pads the input's
/// last row or column first, then convolves with the symmetric rest.
fn conv_padded<const D: usize>(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    a: &ConvArgs<&str>,
    conv: ConvFn,
) -> Result<Tensor> {
    let (left, extra) = word_padding::<D>(&TensorMeta::of(weight), a)?;
    let mut x = x.clone();
    for (i, &e) in extra.iter().enumerate() {
        if e > 0 {
            x = ops::pad_dim(&x, i as i64 - D as i64, 0, e as i64)?;
        }
    }
    conv(&x, weight, bias, a.stride, &left, a.dilation, a.groups)
}

conv_fn! {
    #[meta(op = "conv2d_padding")]
    fn conv2d_padding_meta(x: &TensorMeta, weight: &TensorMeta, bias: Option<&TensorMeta>; a: &str)
        -> Result<TensorMeta> {
        conv_padding_meta::<2>(x, weight, bias, &a)
    }

    /// `conv2d` with the padding the word asks for: "same" with an odd total
    /// pads the input's bottom row or right column first, then convolves with
    /// the symmetric rest.
    #[decompose(op = "conv2d_padding")]
    fn conv2d_padding_decomposition(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>; a: &str)
        -> Result<Tensor> {
        conv_padded::<2>(x, weight, bias, &a, ops::conv2d)
    }

    #[meta(op = "conv1d_padding")]
    fn conv1d_padding_meta(x: &TensorMeta, weight: &TensorMeta, bias: Option<&TensorMeta>; a: &str)
        -> Result<TensorMeta> {
        conv_padding_meta::<1>(x, weight, bias, &a)
    }

    /// As `conv2d_padding`, along the one spatial dim.
    #[decompose(op = "conv1d_padding")]
    fn conv1d_padding_decomposition(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>; a: &str)
        -> Result<Tensor> {
        conv_padded::<1>(x, weight, bias, &a, ops::conv1d)
    }
}
