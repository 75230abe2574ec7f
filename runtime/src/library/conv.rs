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

use ndarray::{ArcArray, ArrayD, IxDyn, LinalgScalar};

use crate::batching::{bdim_to_front, materialize_at_front, shape_arg};
use crate::core::buffers::{filled, take, Cached};
use crate::core::meta_rules::require_float;
use crate::{
    batching_rule, decompose, jvp, kernel, meta, ops, Data, Error, Result, Tensor, TensorMeta,
};

pub(crate) mod tiles;

// ---------------------------------------------------------------------------
// The window of a sliding-block op: kernel size, dilation, padding and stride
// per spatial dim, checked.

/// The window arguments of `unfold`/`fold`/`conv*` for `D` spatial dims,
/// checked: kernel, dilation and stride at least 1, padding at least 0.
#[derive(Clone, Copy, Debug)]
struct Window<const D: usize> {
    kernel: [usize; D],
    dilation: [usize; D],
    padding: [usize; D],
    stride: [usize; D],
}

/// The window arguments of `unfold`/`fold` as the user wrote them.
#[derive(Clone, Copy)]
pub(crate) struct WindowArgs<'a> {
    pub kernel_size: &'a [i64],
    pub dilation: &'a [i64],
    pub padding: &'a [i64],
    pub stride: &'a [i64],
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

/// The arguments of a convolution after its input, weight and bias, as the
/// user wrote them (`padding` is a list, or a word for `conv*_padding`).
#[derive(Clone, Copy)]
struct ConvArgs<'a, P> {
    stride: &'a [i64],
    padding: P,
    dilation: &'a [i64],
    groups: i64,
}

/// Declares a function of a convolution: `x`, `weight` and `bias`, then the
/// op table's `stride`, `padding` (of type `$pt`), `dilation` and `groups`,
/// which the body sees as one [`ConvArgs`] `$a`. The metas and
/// decompositions of the convolutions are declared with it.
macro_rules! conv_fn {
    ($($(#[$attr:meta])* fn $name:ident($x:ident: $xt:ty, $w:ident: $wt:ty, $b:ident: $bt:ty;
        $a:ident: $pt:ty) -> $ret:ty $body:block)*) => {$(
        $(#[$attr])*
        fn $name(
            $x: $xt,
            $w: $wt,
            $b: $bt,
            stride: &[i64],
            padding: $pt,
            dilation: &[i64],
            groups: i64,
        ) -> $ret {
            let $a = ConvArgs { stride, padding, dilation, groups };
            $body
        }
    )*};
}

/// The `int[]` argument `name` as `D` values: one value per spatial dim, or
/// one for all of them (PyTorch's `stride=2`); each at least `min`. Shared
/// with the transposed convolutions (`conv_transpose.rs`).
pub(super) fn per_dim<const D: usize>(name: &str, values: &[i64], min: i64) -> Result<[usize; D]> {
    let dims = if D == 1 {
        "1 value".to_string()
    } else {
        format!("1 or {D} values (one per spatial dim)")
    };
    if values.len() != 1 && values.len() != D {
        return Err(Error::invalid(format!(
            "`{name}` must have {dims}, got {values:?}"
        )));
    }
    let mut out = [0usize; D];
    for (i, o) in out.iter_mut().enumerate() {
        let v = values[if values.len() == 1 { 0 } else { i }];
        if v < min {
            let what = if min == 0 { "non-negative" } else { "positive" };
            return Err(Error::invalid(format!(
                "`{name}` must be {what}, got {values:?}"
            )));
        }
        // Non-negative i64 fits usize on the 64-bit targets ndarray indexes.
        *o = usize::try_from(v)
            .map_err(|_| Error::invalid(format!("`{name}` {values:?} is too large")))?;
    }
    Ok(out)
}

impl<const D: usize> Window<D> {
    fn of(w: &WindowArgs) -> Result<Self> {
        Self::new(w.kernel_size, w.dilation, w.padding, w.stride)
    }

    fn new(kernel: &[i64], dilation: &[i64], padding: &[i64], stride: &[i64]) -> Result<Self> {
        Ok(Window {
            kernel: per_dim("kernel_size", kernel, 1)?,
            dilation: per_dim("dilation", dilation, 1)?,
            padding: per_dim("padding", padding, 0)?,
            stride: per_dim("stride", stride, 1)?,
        })
    }

    /// The number of blocks along each dim of an input of spatial size
    /// `size`: `(size + 2 * padding - dilation * (kernel - 1) - 1) / stride +
    /// 1`, computed in i128 (no overflow for any argument), or an error if
    /// that is below 1 along some dim (the window is larger than the padded
    /// input), or too large.
    fn blocks(&self, size: [usize; D]) -> Result<[usize; D]> {
        let mut out = [0usize; D];
        for i in 0..D {
            let padded = size[i] as i128 + 2 * self.padding[i] as i128;
            let span = self.dilation[i] as i128 * (self.kernel[i] as i128 - 1) + 1;
            if padded < span {
                return Err(Error::invalid(format!(
                    "the window (kernel_size {:?}, dilation {:?}) spans {:?}, larger than the \
                     input's spatial size {size:?} with padding {:?}: no block fits",
                    self.kernel,
                    self.dilation,
                    self.spans(),
                    self.padding
                )));
            }
            let n = (padded - span) / self.stride[i] as i128 + 1;
            out[i] = usize::try_from(n).map_err(|_| self.too_large(size, "the output"))?;
        }
        Ok(out)
    }

    /// The number of blocks along each dim, in `u128` (no overflow: only
    /// shown in an error), 0 where none fits.
    fn block_counts(&self, size: [usize; D]) -> [u128; D] {
        let mut out = [0u128; D];
        for (i, o) in out.iter_mut().enumerate() {
            let padded = size[i] as i128 + 2 * self.padding[i] as i128;
            let span = self.dilation[i] as i128 * (self.kernel[i] as i128 - 1) + 1;
            *o = ((padded - span).max(-1) / self.stride[i] as i128 + 1) as u128;
        }
        out
    }

    /// The error for a window that gives `what` (the output, or the unfolded
    /// input behind a convolution) more positions than can be allocated, in
    /// the user's terms: the argument responsible (the `padding`, when it is
    /// larger than the input; else the input's size) and the number of
    /// positions per spatial dim, never an internal shape whose sizes
    /// overflowed.
    fn too_large(&self, size: [usize; D], what: &str) -> Error {
        let blocks = self.block_counts(size);
        // (A convolution's kernel_size is its weight's spatial shape.)
        let others = format!(
            "kernel_size {:?}, dilation {:?} and stride {:?}",
            self.kernel, self.dilation, self.stride
        );
        let args = format!(
            "kernel_size {:?}, dilation {:?}, padding {:?} and stride {:?}",
            self.kernel, self.dilation, self.padding, self.stride
        );
        let limit = crate::core::alloc::allocation_limit();
        if (0..D).any(|i| self.padding[i] as u128 * 2 > size[i] as u128) {
            Error::invalid(format!(
                "`padding` {:?} is too large: on an input of spatial size {size:?}, with {others}, \
                 {what} would have {blocks:?} positions per spatial dim, more than can be \
                 allocated (the allocation limit is {limit} bytes)",
                self.padding
            ))
        } else {
            Error::invalid(format!(
                "the input's spatial size {size:?} is too large: with {args}, {what} would have \
                 {blocks:?} positions per spatial dim, more than can be allocated (the \
                 allocation limit is {limit} bytes)"
            ))
        }
    }

    /// The extent of the dilated kernel along each dim (saturating: only shown).
    fn spans(&self) -> [usize; D] {
        let mut out = [0usize; D];
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.dilation[i]
                .saturating_mul(self.kernel[i] - 1)
                .saturating_add(1);
        }
        out
    }

    fn kernel_numel(&self) -> Result<usize> {
        self.kernel
            .iter()
            .try_fold(1usize, |a, &k| a.checked_mul(k))
            .ok_or_else(|| Error::invalid(format!("kernel_size {:?} is too large", self.kernel)))
    }
}

/// `a * b`, or an error naming the shape being computed.
fn mul(a: usize, b: usize, what: &str) -> Result<usize> {
    a.checked_mul(b)
        .ok_or_else(|| Error::invalid(format!("{what} is too large: {a} * {b} overflows")))
}

/// The valid output positions along one axis for kernel offset `offset =
/// k * dilation - padding`: those `o` in `0..blocks` whose input position `o *
/// stride + offset` lies in `0..size`, as a range (they are consecutive).
fn valid_range(offset: i128, stride: usize, size: usize, blocks: usize) -> (usize, usize) {
    let s = stride as i128;
    // o * s + offset >= 0  <=>  o >= ceil(-offset / s)
    let lo = if offset >= 0 {
        0
    } else {
        (-offset + s - 1) / s
    };
    // o * s + offset <= size - 1  <=>  o <= floor((size - 1 - offset) / s)
    let top = size as i128 - 1 - offset;
    let hi = if top < 0 { 0 } else { top / s + 1 };
    let clamp = |v: i128| v.clamp(0, blocks as i128) as usize;
    let (lo, hi) = (clamp(lo), clamp(hi));
    (lo, hi.max(lo))
}

/// The geometry of one 2-d sliding-block op on a standard-layout batch
/// `[n, c, h, w]`: the window and the grid of blocks `[bh, bw]`.
struct Geometry {
    n: usize,
    c: usize,
    size: [usize; 2],
    window: Window<2>,
    blocks: [usize; 2],
}

impl Geometry {
    /// The geometry of an op on `n` images of `c` channels of spatial size
    /// `size`, with its output shape: the `n` images if `batched`, then
    /// `dims` (checked against the allocation limit).
    fn with_output(
        (n, c, size): (usize, usize, [usize; 2]),
        window: Window<2>,
        blocks: [usize; 2],
        batched: bool,
        dims: &[usize],
    ) -> Result<(Vec<usize>, Geometry)> {
        let mut out = if batched { vec![n] } else { vec![] };
        out.extend_from_slice(dims);
        crate::core::alloc::checked_numel(&out)?;
        let g = Geometry {
            n,
            c,
            size,
            window,
            blocks,
        };
        Ok((out, g))
    }

    /// For each (image and channel, kernel row, kernel column, block row):
    /// calls `row(image_channel, input_row, cols)` with the input row it reads
    /// (`None`: all padding) and the valid block columns `cols` with the first
    /// input column they read; in the order of the rows of `unfold`'s output.
    fn for_each_row(&self, row: impl FnMut(usize, Option<usize>, (usize, usize), usize)) {
        self.for_each_row_in(0..self.n * self.c, 0..self.blocks[0], row);
    }

    /// [`Geometry::for_each_row`] over the images and channels `ncs` (flat
    /// indices `image * c + channel`) and the block rows `oys` only.
    fn for_each_row_in(
        &self,
        ncs: std::ops::Range<usize>,
        oys: std::ops::Range<usize>,
        mut row: impl FnMut(usize, Option<usize>, (usize, usize), usize),
    ) {
        let w = &self.window;
        let [bh, bw] = self.blocks;
        for nc in ncs {
            for ki in 0..w.kernel[0] {
                let off_h = ki as i128 * w.dilation[0] as i128 - w.padding[0] as i128;
                let (rlo, rhi) = valid_range(off_h, w.stride[0], self.size[0], bh);
                for kj in 0..w.kernel[1] {
                    let off_w = kj as i128 * w.dilation[1] as i128 - w.padding[1] as i128;
                    let (clo, chi) = valid_range(off_w, w.stride[1], self.size[1], bw);
                    // The input column of block column `clo` (in range only
                    // when `clo < chi`: the callers read nothing otherwise).
                    let first = (clo as i128 * w.stride[1] as i128 + off_w).max(0) as usize;
                    for oy in oys.clone() {
                        let input_row = (oy >= rlo && oy < rhi)
                            .then(|| (oy as i128 * w.stride[0] as i128 + off_h) as usize);
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
fn unfold_values<T: LinalgScalar + Cached>(x: &[T], g: &Geometry) -> Result<Vec<T>> {
    let [h, w] = g.size;
    let [_, bw] = g.blocks;
    let rows = mul(
        mul(g.n * g.c, g.window.kernel_numel()?, "unfold")?,
        g.blocks[0],
        "unfold",
    )?;
    let mut out = take::<T>(mul(rows, bw, "unfold")?);
    let stride = g.window.stride[1];
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
fn fold_values<T: LinalgScalar + Cached + Send + Sync>(cols: &[T], g: &Geometry) -> Result<Vec<T>> {
    let [h, w] = g.size;
    let [bh, bw] = g.blocks;
    let plane = h * w;
    let planes = g.n * g.c;
    let cols_per_plane = g.window.kernel.iter().product::<usize>() * bh * bw;
    let stride = g.window.stride[1];
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
fn unfold_geometry(shape: &[usize], w: &WindowArgs) -> Result<(Vec<usize>, Geometry)> {
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
    let window = Window::<2>::of(w)?;
    let size = [shape[r - 2], shape[r - 1]];
    let blocks = window.blocks(size)?;
    let (n, c) = if r == 4 {
        (shape[0], shape[1])
    } else {
        (1, shape[0])
    };
    let rows = mul(c, window.kernel_numel()?, "unfold's block size C * kh * kw")?;
    let l = blocks[0]
        .checked_mul(blocks[1])
        .ok_or_else(|| window.too_large(size, "the output"))?;
    Geometry::with_output((n, c, size), window, blocks, r == 4, &[rows, l])
        .map_err(|_| window.too_large(size, "the output"))
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
        let unfold = |t: &Tensor| ops::unfold(t, w.kernel_size, w.dilation, w.padding, w.stride);
        batch_as_images(x, bdim, 3, unfold)
    }
}

/// The batching rule of `unfold` and `fold`, `op`, whose unbatched input
/// has `rank` dims: the vmap dim moved to the front, then, for an input
/// that already has a batch of its own, folded into it for one call and
/// split again after.
fn batch_as_images(
    x: &Tensor,
    bdim: Option<usize>,
    rank: usize,
    op: impl Fn(&Tensor) -> Result<Tensor>,
) -> Result<(Tensor, Option<usize>)> {
    let Some(_) = bdim else {
        return Ok((op(x)?, None));
    };
    let x = bdim_to_front(x, bdim)?;
    if x.ndim() == rank + 1 {
        return Ok((op(&x)?, Some(0)));
    }
    let s = x.shape().to_vec();
    let mut merged = vec![s[0] * s[1]];
    merged.extend_from_slice(&s[2..]);
    let y = op(&ops::reshape(&x, &shape_arg(None, &merged))?)?;
    let mut split = vec![s[0], s[1]];
    split.extend_from_slice(&y.shape()[1..]);
    Ok((ops::reshape(&y, &shape_arg(None, &split))?, Some(0)))
}

// ---------------------------------------------------------------------------
// fold

/// The output shape of `fold` for an input of shape `shape` (2-d or 3-d), and
/// its geometry.
fn fold_geometry(
    shape: &[usize],
    output_size: &[i64],
    w: &WindowArgs,
) -> Result<(Vec<usize>, Geometry)> {
    if !matches!(shape.len(), 2 | 3) {
        return Err(Error::invalid(format!(
            "expected a 2-d [C * kh * kw, L] or 3-d [N, C * kh * kw, L] input, got shape {shape:?}"
        )));
    }
    let size = per_dim::<2>("output_size", output_size, 1)?;
    let window = Window::<2>::of(w)?;
    let r = shape.len();
    let (rows, l) = (shape[r - 2], shape[r - 1]);
    let k = window.kernel_numel()?;
    if rows == 0 || rows % k != 0 {
        return Err(Error::invalid(format!(
            "the input's dim {} (size {rows}) must be a positive multiple of kh * kw = {k} (kernel_size {:?})",
            r - 2,
            window.kernel
        )));
    }
    let blocks = window.blocks(size)?;
    let expected = blocks[0].checked_mul(blocks[1]);
    if expected != Some(l) && (0..2).any(|i| window.padding[i] as u128 * 2 > size[i] as u128) {
        return Err(Error::invalid(format!(
            "`padding` {:?} is larger than the output of size {size:?}: with kernel_size {:?}, \
             dilation {:?} and stride {:?} it gives more blocks than the input's last dim (size \
             {l}) holds",
            window.padding, window.kernel, window.dilation, window.stride
        )));
    }
    if expected != Some(l) {
        return Err(Error::invalid(format!(
            "the input's last dim (size {l}) must be the number of blocks of an {size:?} output \
             with kernel_size {:?}, dilation {:?}, padding {:?} and stride {:?}: {} x {}",
            window.kernel, window.dilation, window.padding, window.stride, blocks[0], blocks[1]
        )));
    }
    let n = if r == 3 { shape[0] } else { 1 };
    let c = rows / k;
    Geometry::with_output((n, c, size), window, blocks, r == 3, &[c, size[0], size[1]])
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
            ops::fold(t, output_size, w.kernel_size, w.dilation, w.padding, w.stride)
        };
        batch_as_images(x, bdim, 2, fold)
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
    let ConvArgs {
        stride,
        padding,
        dilation,
        groups,
    } = *a;
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
    let (xs, ws) = (x.shape(), w.shape());
    if xs.len() != D + 1 && xs.len() != D + 2 {
        return Err(Error::invalid(format!(
            "expected a {}-d (unbatched) or {}-d (batched) input, got shape {xs:?}",
            D + 1,
            D + 2
        )));
    }
    if ws.len() != D + 2 {
        return Err(Error::invalid(format!(
            "expected a {}-d weight [C_out, C_in / groups, {}], got shape {ws:?}",
            D + 2,
            if D == 1 { "k" } else { "kh, kw" }
        )));
    }
    if groups < 1 {
        return Err(Error::invalid(format!(
            "`groups` must be positive, got {groups}"
        )));
    }
    let g = usize::try_from(groups).unwrap_or(usize::MAX);
    let batched = xs.len() == D + 2;
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
            "the weight {ws:?} with groups = {groups} expects {} input channels (weight.shape[1] \
             * groups), got an input of shape {xs:?}",
            ws[1].saturating_mul(g)
        )));
    }
    if c_out % g != 0 {
        return Err(Error::invalid(format!(
            "the weight's output channels ({c_out}) must be a multiple of groups ({groups})"
        )));
    }
    if let Some(b) = bias
        && b.shape() != [c_out]
    {
        return Err(Error::invalid(format!(
            "bias must have shape [{c_out}] (the weight's output channels), got {:?}",
            b.shape()
        )));
    }
    let kernel: Vec<i64> = ws[2..]
        .iter()
        .map(|&k| i64::try_from(k).unwrap_or(i64::MAX))
        .collect();
    let window = Window::<D>::new(&kernel, dilation, padding, stride)?;
    let mut size = [0usize; D];
    size.copy_from_slice(&xs[xs.len() - D..]);
    let blocks = window.blocks(size)?;
    let mut out = if batched { vec![xs[0]] } else { vec![] };
    out.push(c_out);
    out.extend(blocks);
    // The output, and the blocks matrix of the decomposition (`unfold`'s
    // `[N, C_in * kernel elements, output positions]`), must be allocatable.
    // Either too large is the window's doing (the input and the weight
    // exist): the error names its arguments, not an internal shape.
    let l = blocks
        .iter()
        .try_fold(1usize, |a, &b| a.checked_mul(b))
        .ok_or_else(|| window.too_large(size, "the output"))?;
    crate::core::alloc::check_alloc(&out, x.dtype())
        .map_err(|_| window.too_large(size, "the output"))?;
    let n = if batched { xs[0] } else { 1 };
    let rows = mul(c_in, window.kernel_numel()?, "the convolution's block size")?;
    crate::core::alloc::check_alloc(&[n, rows, l], x.dtype())
        .map_err(|_| window.too_large(size, "the unfolded input (the blocks the kernel sees)"))?;
    Ok(out)
}

/// The output meta of a convolution with `D` spatial dims.
fn conv_meta<const D: usize>(
    x: &TensorMeta,
    weight: &TensorMeta,
    bias: Option<&TensorMeta>,
    a: &ConvArgs<&[i64]>,
) -> Result<TensorMeta> {
    Ok(TensorMeta::new(
        &conv_shape::<D>(x, weight, bias, a)?,
        x.dtype(),
    ))
}

conv_fn! {
    #[meta(op = "conv2d")]
    fn conv2d_meta(x: &TensorMeta, weight: &TensorMeta, bias: Option<&TensorMeta>; a: &[i64])
        -> Result<TensorMeta> {
        conv_meta::<2>(x, weight, bias, &a)
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
        conv_meta::<1>(x, weight, bias, &a)
    }

    /// `conv2d` of the input as a height-1 image (`[N, C, 1, L]`) with a height-1
    /// kernel.
    #[decompose(op = "conv1d")]
    fn conv1d_decomposition(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>; a: &[i64])
        -> Result<Tensor> {
        let y = ops::conv2d(
            &ops::unsqueeze(x, -2)?,
            &ops::unsqueeze(weight, -2)?,
            bias,
            &[1, a.stride[0]],
            &[0, a.padding[0]],
            &[1, a.dilation[0]],
            a.groups,
        )?;
        ops::squeeze(&y, Some(-2))
    }
}

/// The decomposition of `conv2d` (see `conv2d_decomposition`).
fn conv2d_by_unfold(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    a: &ConvArgs<&[i64]>,
) -> Result<Tensor> {
    let out_shape = conv_shape::<2>(
        &TensorMeta::of(x),
        &TensorMeta::of(weight),
        bias.map(TensorMeta::of).as_ref(),
        a,
    )?;
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

/// The geometry of a checked 2-d convolution of a 4-d input `xs` with a
/// weight of shape `ws`.
fn conv_geometry(xs: &[usize], ws: &[usize], a: &ConvArgs<&[i64]>) -> Result<Geometry> {
    let kernel = shape_arg(None, &ws[2..]);
    let window = Window::<2>::new(&kernel, a.dilation, a.padding, a.stride)?;
    let size = [xs[2], xs[3]];
    let blocks = window.blocks(size)?;
    Ok(Geometry {
        n: xs[0],
        c: xs[1],
        size,
        window,
        blocks,
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

#[meta(op = "conv2d_tiled")]
fn conv2d_tiled_meta(
    x: &TensorMeta,
    weight: &TensorMeta,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<TensorMeta> {
    let a = ConvArgs {
        stride,
        padding,
        dilation,
        groups,
    };
    Ok(TensorMeta::new(&tiled_shape(x, weight, &a)?, x.dtype()))
}

#[kernel(op = "conv2d_tiled")]
fn conv2d_tiled_kernel(
    x: &Tensor,
    weight: &Tensor,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let a = ConvArgs {
        stride,
        padding,
        dilation,
        groups,
    };
    let shape = tiled_shape(&TensorMeta::of(x), &TensorMeta::of(weight), &a)?;
    let geometry = conv_geometry(x.shape(), weight.shape(), &a)?;
    let conv = tiles::Conv {
        geometry: &geometry,
        c_out: weight.shape()[0],
        groups: groups as usize,
        tile_bytes: tiles::TILE_BYTES,
    };
    fn run<'a, T: crate::library::gemm::Gemm>(
        conv: &'a tiles::Conv<'a>,
    ) -> impl FnOnce(&[T], &[T]) -> Vec<T> + 'a {
        move |x, w| tiles::forward(x, w, conv)
    }
    match (x.data()?, weight.data()?) {
        (Data::F32(p), Data::F32(q)) => two_arrays(p, q, &shape, "conv2d_tiled", run(&conv)),
        (Data::F64(p), Data::F64(q)) => two_arrays(p, q, &shape, "conv2d_tiled", run(&conv)),
        _ => Err(Error::invalid(format!(
            "the input ({}) and weight ({}) must have the same floating-point dtype",
            x.dtype(),
            weight.dtype()
        ))),
    }
}

/// The examples of the vmap join the batch of images (one call); a batched
/// weight joins the groups: the vmap's `B` weights `[B * C_out, C_in /
/// groups, kh, kw]` over the input's channels `[N, B * C_in, H, W]` with
/// `B * groups` groups (as functorch's convolution rule).
#[batching_rule(op = "conv2d_tiled")]
#[allow(clippy::too_many_arguments)]
fn conv2d_tiled_rule(
    x: &Tensor,
    x_bdim: Option<usize>,
    weight: &Tensor,
    w_bdim: Option<usize>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<(Tensor, Option<usize>)> {
    let conv = |x: &Tensor, w: &Tensor, groups: i64| {
        ops::conv2d_tiled(x, w, stride, padding, dilation, groups)
    };
    if w_bdim.is_none() {
        if x_bdim.is_some() && x.ndim() != 5 {
            // Not a batch of 4-d inputs: the op's own error.
            let xm = TensorMeta::new(&x.shape()[1..], x.dtype());
            let a = ConvArgs {
                stride,
                padding,
                dilation,
                groups,
            };
            tiled_shape(&xm, &TensorMeta::of(weight), &a)?;
        }
        // (Rank 3: a 5-d batch is merged into the images, as for `unfold`.)
        return batch_as_images(x, x_bdim, 3, |t| conv(t, weight, groups));
    }
    let ts = materialize_at_front(&[x.clone(), weight.clone()], &[x_bdim, w_bdim])?;
    let (xs, ws) = (ts[0].shape().to_vec(), ts[1].shape().to_vec());
    let b = xs[0];
    let bg = i64::try_from(b)
        .ok()
        .and_then(|b| b.checked_mul(groups))
        .filter(|&bg| bg > 0);
    let Some(bg) = bg else {
        // No examples (or bad groups): the meta's error, or the empty result.
        let a = ConvArgs {
            stride,
            padding,
            dilation,
            groups,
        };
        let (xm, wm) = (
            TensorMeta::new(&xs[1..], x.dtype()),
            TensorMeta::new(&ws[1..], weight.dtype()),
        );
        return empty_batch(&tiled_shape(&xm, &wm, &a)?, x.dtype());
    };
    // [B, N, C, H, W] -> [N, B * C, H, W]
    let xm = ops::reshape(
        &ops::transpose(&ts[0], 0, 1)?,
        &shape_arg(None, &[xs[1], b * xs[2], xs[3], xs[4]]),
    )?;
    let wm = ops::reshape(&ts[1], &shape_arg(None, &[b * ws[1], ws[2], ws[3], ws[4]]))?;
    let y = conv(&xm, &wm, bg)?;
    let ys = y.shape().to_vec();
    let y = ops::reshape(&y, &shape_arg(None, &[ys[0], b, ws[1], ys[2], ys[3]]))?;
    Ok((y, Some(1)))
}

/// `conv2d_tiled` is bilinear: its jvp is `conv(tx, w) + conv(x, tw)`.
#[jvp(op = "conv2d_tiled")]
#[allow(clippy::too_many_arguments)]
fn conv2d_tiled_jvp(
    x: &Tensor,
    weight: &Tensor,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    _y: &Tensor,
    x_tangent: Option<&Tensor>,
    w_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let conv = |x: &Tensor, w: &Tensor| ops::conv2d_tiled(x, w, stride, padding, dilation, groups);
    sum_of(
        x_tangent.map(|t| conv(t, weight)).transpose()?,
        w_tangent.map(|t| conv(x, t)).transpose()?,
    )
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
/// convolution's geometry and output channels.
fn weight_grads_shape(
    x: &TensorMeta,
    g: &TensorMeta,
    kernel_size: &[i64],
    a: &ConvArgs<&[i64]>,
) -> Result<(Vec<usize>, Geometry, usize)> {
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
    let window = Window::<2>::new(kernel_size, a.dilation, a.padding, a.stride)?;
    let size = [xs[2], xs[3]];
    let blocks = window.blocks(size)?;
    if gs[2..] != blocks {
        return Err(Error::invalid(format!(
            "grad_output {gs:?} must have the spatial size of the output, {blocks:?} (input \
             {xs:?}, kernel_size {:?}, stride {:?}, padding {:?}, dilation {:?})",
            window.kernel, window.stride, window.padding, window.dilation
        )));
    }
    let mut out = vec![xs[0], c_out, c_in / groups];
    out.extend(window.kernel);
    crate::core::alloc::check_alloc(&out, x.dtype())?;
    let geometry = Geometry {
        n: xs[0],
        c: c_in,
        size,
        window,
        blocks,
    };
    Ok((out, geometry, c_out))
}

/// Declares a function of `conv2d_weight_grads`: its `input` and
/// `grad_output` (each followed by its batch dim in a batching rule), then
/// `kernel_size`, `stride`, `padding`, `dilation` and `groups`, which the
/// body sees as `$k` and one [`ConvArgs`] `$a`, then the `rest`.
macro_rules! weight_grads_fn {
    ($($(#[$attr:meta])* fn $name:ident($($p:ident: $t:ty),*; $k:ident, $a:ident $(, $q:ident: $u:ty)* $(,)?)
        -> $ret:ty $body:block)*) => {$(
        $(#[$attr])*
        #[allow(clippy::too_many_arguments)]
        fn $name(
            $($p: $t,)*
            $k: &[i64],
            stride: &[i64],
            padding: &[i64],
            dilation: &[i64],
            groups: i64,
            $($q: $u,)*
        ) -> $ret {
            let $a = ConvArgs { stride, padding, dilation, groups };
            $body
        }
    )*};
}

weight_grads_fn! {
    #[meta(op = "conv2d_weight_grads")]
    fn conv2d_weight_grads_meta(x: &TensorMeta, g: &TensorMeta; kernel_size, a)
        -> Result<TensorMeta> {
        let (shape, _, _) = weight_grads_shape(x, g, kernel_size, &a)?;
        Ok(TensorMeta::new(&shape, x.dtype()))
    }

    #[kernel(op = "conv2d_weight_grads")]
    fn conv2d_weight_grads_kernel(x: &Tensor, g: &Tensor; kernel_size, a) -> Result<Tensor> {
        let (shape, geometry, c_out) =
            weight_grads_shape(&TensorMeta::of(x), &TensorMeta::of(g), kernel_size, &a)?;
        let conv = tiles::Conv {
            geometry: &geometry,
            c_out,
            groups: a.groups as usize,
            tile_bytes: tiles::TILE_BYTES,
        };
        fn run<'a, T: crate::library::gemm::Gemm>(
            conv: &'a tiles::Conv<'a>,
        ) -> impl FnOnce(&[T], &[T]) -> Vec<T> + 'a {
            move |x, g| tiles::weight_grads(x, g, conv)
        }
        let what = "conv2d_weight_grads";
        match (x.data()?, g.data()?) {
            (Data::F32(p), Data::F32(q)) => two_arrays(p, q, &shape, what, run(&conv)),
            (Data::F64(p), Data::F64(q)) => two_arrays(p, q, &shape, what, run(&conv)),
            _ => Err(Error::invalid(format!(
                "the input ({}) and grad_output ({}) must have the same floating-point dtype",
                x.dtype(),
                g.dtype()
            ))),
        }
    }

    /// Both batched (per-sample gradients): the vmap's examples join `N`, one
    /// call. A shared input with batched output gradients (the rows of a
    /// Jacobian) and one group: the gradients join the output channels
    /// (`[N, B * C_out, ...]`), so the input's blocks are packed once.
    #[batching_rule(op = "conv2d_weight_grads")]
    fn conv2d_weight_grads_rule(
        x: &Tensor, x_bdim: Option<usize>, g: &Tensor, g_bdim: Option<usize>; kernel_size, a
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
            let gs = g.shape().to_vec();
            // [B, N, C_out, ...] -> [N, B * C_out, ...]
            let gm = ops::reshape(
                &ops::transpose(&g, 0, 1)?,
                &shape_arg(None, &[gs[1], gs[0] * gs[2], gs[3], gs[4]]),
            )?;
            let y = wg(x, &gm)?;
            let ys = y.shape().to_vec();
            let split = [ys[0], gs[0], gs[2], ys[2], ys[3], ys[4]];
            return Ok((ops::reshape(&y, &shape_arg(None, &split))?, Some(1)));
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
        let merge = |t: &Tensor, s: &[usize]| {
            let mut m = vec![s[0] * s[1]];
            m.extend_from_slice(&s[2..]);
            ops::reshape(t, &shape_arg(None, &m))
        };
        let y = wg(&merge(&ts[0], &xs)?, &merge(&ts[1], &gs)?)?;
        let mut split = vec![xs[0], xs[1]];
        split.extend_from_slice(&y.shape()[1..]);
        Ok((ops::reshape(&y, &shape_arg(None, &split))?, Some(0)))
    }

    /// Bilinear in its two tensors: `wg(tx, g) + wg(x, tg)`.
    #[jvp(op = "conv2d_weight_grads")]
    fn conv2d_weight_grads_jvp(
        x: &Tensor, g: &Tensor; kernel_size, a, _y: &Tensor,
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
            if ws.len() != D + 2 {
                return Err(Error::invalid(format!(
                    "expected a {}-d weight [C_out, C_in / groups, {}], got shape {ws:?}",
                    D + 2,
                    if D == 1 { "k" } else { "kh, kw" }
                )));
            }
            if per_dim::<D>("stride", stride, 1)?.iter().any(|&s| s != 1) {
                return Err(Error::invalid(format!(
                    "padding \"same\" needs stride 1 (as in PyTorch), got stride {stride:?}"
                )));
            }
            let dilation = per_dim::<D>("dilation", dilation, 1)?;
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
