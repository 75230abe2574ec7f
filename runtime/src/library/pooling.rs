//! Pooling (`ops/pooling.toml`).
//!
//! `max_pool2d_with_indices` is the one primitive: its kernel takes each
//! window's maximum as PyTorch's CPU kernel does (row-major, the first
//! maximum on a tie, a NaN always taken), scanning a row of windows at once
//! (`pooling/scan.rs`, which also holds the window sums below), and returns
//! the maxima with their positions in the input's `H x W` plane. Its
//! batching rule folds the vmap dim into `N` (one kernel call, no loop, as
//! the convolutions' rules do: `window::batch_as_images`); its vjp (`vjp/pooling.rs`) is a `scatter_add`
//! of the cotangent at those positions and its jvp (`jvp/pooling.rs`) a
//! `gather` of the tangent there, both ops with batching rules and
//! derivatives of their own. `max_pool2d` is a composite returning the
//! values.
//!
//! Average pooling, plain and adaptive, is separable: the sum over a window
//! of rows `R` and columns `S` is the sum over `R` of the sums over `S`
//! (padding contributes zeros, so it is left out of the windows), and every
//! divisor PyTorch uses (`divisor_override`, the window's size with or
//! without the padding, the adaptive window's size) is a fixed number per
//! output element. So `avg_pool2d` and `adaptive_avg_pool2d` are composites:
//! one `window_sum` per pooled dim (a linear primitive summing given
//! `[start, end)` windows of the last dim, whose transpose and gradient is
//! `window_sum_backward`) and a `div` by a constant tensor, which batch and
//! differentiate to every order through those ops. Their cost is the
//! windows' total length, what a direct loop costs, and their memory is
//! linear in the input and output (no `[output, input]` window matrix).
//!
//! The 1-d forms are composites over the 2-d ones, with a window of height
//! 1 on the input unsqueezed at dim -2.
//!
//! The window geometry (sizes, checks, output size, each window's valid
//! positions) is the convolutions' (`window.rs`), with `ceil_mode` and the
//! poolings' own check that the padding is at most half the kernel. It is
//! computed in `i128`, so no argument, however large, can overflow it, and
//! the kernel visits only a window's positions inside the input (a kernel of
//! `i64::MAX` with matching padding costs what the input does).

use ndarray::IxDyn;

use super::window::{batch_as_images, check_rank, height_one, widen, Axis, Params, Window};
use crate::batching::bdim_to_front;
use crate::core::alloc::checked_numel;
use crate::core::cast::scalar_like;
use crate::core::meta_rules::require_float;
use crate::{
    batching_rule, decompose, kernel, meta, ops, DType, Data, Element, Error, Result, Tensor,
    TensorMeta,
};

pub(crate) mod scan;

// ---------------------------------------------------------------------------
// Window geometry

/// The pooled planes of an input: what precedes them (`[N, C]` or `[C]`)
/// and the window over their two dims (`window.rs`, shared with the
/// convolutions).
#[derive(Clone, Debug)]
pub(crate) struct Planes {
    pub lead: Vec<usize>,
    pub window: Window<2>,
}

impl Planes {
    /// Whether a window holds no input position (possible with dilation):
    /// its max is `-inf` at the position one past the plane.
    pub(crate) fn has_empty_window(&self) -> bool {
        let empty = |a: &Axis| (0..a.out).any(|i| a.taps(i).1 == 0);
        self.window.axes.iter().any(empty)
    }

    /// The elements of one plane, `H * W`.
    pub(crate) fn plane(&self) -> usize {
        self.window.size().iter().product()
    }

    /// The windows of one plane, `h_out * w_out`.
    pub(crate) fn windows(&self) -> usize {
        self.window.out().iter().product()
    }

    /// The leading dims with the planes flattened to `n` elements each, as
    /// `reshape` takes it (the vjp and jvp gather and scatter over them).
    pub(crate) fn flat(&self, n: usize) -> Vec<i64> {
        let mut s: Vec<i64> = self.lead.iter().map(|&v| v as i64).collect();
        s.push(n as i64);
        s
    }

    fn out_shape(&self) -> Vec<usize> {
        out_shape(&self.lead, &self.window)
    }
}

/// The output shape of a pooling: the leading dims, then the window's
/// positions along each pooled dim.
fn out_shape<const D: usize>(lead: &[usize], window: &Window<D>) -> Vec<usize> {
    let mut s = lead.to_vec();
    s.extend(window.out());
    s
}

/// The arguments of a max or average pooling, as the user wrote them (an
/// average pooling's dilation is 1).
#[derive(Clone, Copy)]
pub(crate) struct PoolArgs<'a> {
    pub kernel_size: &'a [i64],
    pub stride: Option<&'a [i64]>,
    pub padding: &'a [i64],
    pub dilation: &'a [i64],
    pub ceil_mode: bool,
}

impl PoolArgs<'_> {
    /// The planes of `max_pool2d_with_indices` with these (checked)
    /// arguments on `x` (for its vjp and jvp).
    pub(crate) fn max_pool2d(&self, x: &Tensor) -> Result<Planes> {
        geometry(&TensorMeta::of(x), self)
    }

    /// The arguments of an average pooling, with its dilation of 1 (one
    /// value for every pooled dim, as a user would write it).
    fn avg(self) -> Self {
        PoolArgs {
            dilation: &[1],
            ..self
        }
    }

    /// The 1-d arguments as the 2-d op's: kernel, stride and padding of
    /// height 1, 1 and 0 (checked by the meta), and the dilation if `max`.
    fn widened(&self) -> ([i64; 2], [i64; 2], [i64; 2], [i64; 2]) {
        let stride = match self.stride {
            None | Some([]) => widen(self.kernel_size, 1),
            Some(s) => widen(s, 1),
        };
        let padding = widen(self.padding, 0);
        (
            widen(self.kernel_size, 1),
            stride,
            padding,
            widen(self.dilation, 1),
        )
    }
}

/// Declares a pooling function: `x` (and, for a batching rule, its `bdim`)
/// and the op table's pooling arguments, `max` (`kernel_size`, `stride`,
/// `padding`, `dilation`, `ceil_mode`) or `avg` (the same without
/// `dilation`, which [`PoolArgs::avg`] sets), then the `rest` of its parameters. The body sees the pooling
/// arguments as one [`PoolArgs`] `$a`. The metas, kernels, batching rules,
/// decompositions, vjps and jvps of the poolings are declared with it.
macro_rules! pool_fn {
    ($(#[$attr:meta])* max fn $name:ident($x:ident: $xt:ty $(, $pre:ident: $pt:ty)*;
        $a:ident $(, $rest:ident: $rt:ty)* $(,)?) -> $ret:ty $body:block) => {
        $crate::library::pooling::pool_fn!(@fn $(#[$attr])* $name($x: $xt $(, $pre: $pt)*;
            kernel_size: &[i64], stride: Option<&[i64]>, padding: &[i64], dilation: &[i64],
            ceil_mode: bool $(, $rest: $rt)*) -> $ret {
            let $a = $crate::library::pooling::PoolArgs {
                kernel_size, stride, padding, dilation, ceil_mode,
            };
            $body
        });
    };
    ($(#[$attr:meta])* avg fn $name:ident($x:ident: $xt:ty;
        $a:ident $(, $rest:ident: $rt:ty)* $(,)?) -> $ret:ty $body:block) => {
        $crate::library::pooling::pool_fn!(@fn $(#[$attr])* $name($x: $xt;
            kernel_size: &[i64], stride: Option<&[i64]>, padding: &[i64], ceil_mode: bool
            $(, $rest: $rt)*) -> $ret {
            let $a = $crate::library::pooling::PoolArgs {
                kernel_size, stride, padding, dilation: &[], ceil_mode,
            };
            $body
        });
    };
    (@fn $(#[$attr:meta])* $name:ident($($p:ident: $t:ty),*; $($q:ident: $u:ty),*)
        -> $ret:ty $body:block) => {
        $(#[$attr])*
        #[allow(clippy::too_many_arguments)]
        fn $name($($p: $t,)* $($q: $u,)*) -> $ret $body
    };
}
pub(crate) use pool_fn;

/// Checks that a pooling's input is a float tensor of `dims + 1` (unbatched)
/// or `dims + 2` (batched) dims.
fn check_input(x: &TensorMeta, dims: usize) -> Result<()> {
    require_float(x)?;
    check_rank(x.shape(), dims).map(|_| ())
}

/// Checks the input's rank (`D + 1` or `D + 2`), dtype and sizes (the
/// pooled dims and, for a batched input, the channels, not empty), and the
/// pooling arguments as PyTorch does (the padding at most half the kernel),
/// and returns the leading dims and the window over the last `D`.
fn window<const D: usize>(x: &TensorMeta, a: &PoolArgs) -> Result<(Vec<usize>, Window<D>)> {
    check_input(x, D)?;
    let shape = x.shape();
    let r = shape.len();
    // PyTorch: every dim may be empty but a batched input's first.
    if shape[usize::from(r == D + 2)..].contains(&0) {
        return Err(Error::invalid(format!(
            "`input` of shape {shape:?} is empty in a dim other than the batch dim"
        )));
    }
    let stride = match a.stride {
        None | Some([]) => a.kernel_size,
        Some(s) => s,
    };
    let params = Params::<D> {
        ceil_mode: a.ceil_mode,
        ..Params::parse(a.kernel_size, a.dilation, a.padding, stride)?
    };
    if (0..D).any(|i| params.padding[i] > params.kernel[i] / 2) {
        return Err(Error::invalid(format!(
            "`padding` must be at most half of `kernel_size`, got padding {:?} and kernel_size {:?}",
            a.padding, a.kernel_size
        )));
    }
    let mut size = [0usize; D];
    size.copy_from_slice(&shape[r - D..]);
    let window = params.over(size)?;
    // What the kernels and decompositions build per output position (window
    // lists, divisors) is bounded even when an empty batch empties the output.
    check_positions(&window.out(), || {
        format!("the input's spatial size {size:?}")
    })?;
    let lead = shape[..r - D].to_vec();
    checked_numel(&out_shape(&lead, &window))?;
    Ok((lead, window))
}

/// [`window`] over the two dims of a 2-d pooling, as its planes.
fn geometry(x: &TensorMeta, a: &PoolArgs) -> Result<Planes> {
    let (lead, window) = window::<2>(x, a)?;
    Ok(Planes { lead, window })
}

// ---------------------------------------------------------------------------
// max_pool2d_with_indices: the primitive

pool_fn! {
    #[meta(op = "max_pool2d_with_indices")]
    max fn max_pool2d_with_indices_meta(x: &TensorMeta; a) -> Result<(TensorMeta, TensorMeta)> {
        let out = geometry(x, &a)?.out_shape();
        Ok((
            TensorMeta::new(&out, x.dtype()),
            TensorMeta::new(&out, DType::I64),
        ))
    }
}

pool_fn! {
    #[kernel(op = "max_pool2d_with_indices")]
    max fn max_pool2d_with_indices_kernel(x: &Tensor; a) -> Result<(Tensor, Tensor)> {
        max_pool2d_values(x, &a.max_pool2d(x)?)
    }
}

/// The maxima of the windows of `g` over `x`, and their positions
/// (`scan.rs`).
fn max_pool2d_values(x: &Tensor, g: &Planes) -> Result<(Tensor, Tensor)> {
    let out = g.out_shape();
    let n = checked_numel(&out)?;
    fn run<T: scan::MaxElem + crate::core::buffers::Cached>(
        a: &ndarray::ArcArray<T, IxDyn>,
        g: &Planes,
        out: &[usize],
        n: usize,
    ) -> Result<(Tensor, Tensor)> {
        let a = crate::core::buffers::standard(a.view());
        let x = a
            .as_slice()
            .ok_or_else(|| Error::invalid("max_pool2d: the input is not contiguous"))?;
        let mut values = crate::core::buffers::filled(n, T::NEG_INF);
        let mut indices = crate::core::buffers::filled(n, 0i64);
        scan::max_pool_planes(x, g, &mut values, &mut indices);
        Ok((
            Tensor::from_shape_vec(out, values)?,
            Tensor::from_shape_vec(out, indices)?,
        ))
    }
    match x.data()? {
        Data::F32(a) => run(a, g, &out, n),
        Data::F64(a) => run(a, g, &out, n),
        other => Err(Error::invalid(format!(
            "needs a floating-point tensor, got {}",
            other.dtype()
        ))),
    }
}

pool_fn! {
    /// The vmap dim folded into `N`: a logically unbatched `[C, H, W]` example
    /// is one image of a `[B, C, H, W]` batch, a batched `[N, C, H, W]` one is
    /// `N` of `B * N` images. One kernel call for the whole batch.
    #[batching_rule(op = "max_pool2d_with_indices")]
    #[allow(clippy::type_complexity)]
    max fn max_pool2d_with_indices_rule(x: &Tensor, bdim: Option<usize>; a)
        -> Result<((Tensor, Option<usize>), (Tensor, Option<usize>))> {
        let pool = |t: &Tensor| {
            let (v, i) = ops::max_pool2d_with_indices(
                t, a.kernel_size, a.stride, a.padding, a.dilation, a.ceil_mode,
            )?;
            Ok([v, i])
        };
        let [v, i] = batch_as_images(x, bdim, 3, pool)?;
        Ok((v, i))
    }
}

// ---------------------------------------------------------------------------
// The composites: a meta (the checks, once, naming the op) and the
// decomposition.

pool_fn! {
    #[meta(op = "max_pool2d")]
    max fn max_pool2d_meta(x: &TensorMeta; a) -> Result<TensorMeta> {
        Ok(TensorMeta::new(geometry(x, &a)?.out_shape(), x.dtype()))
    }
}

pool_fn! {
    #[decompose(op = "max_pool2d")]
    max fn max_pool2d_decomposition(x: &Tensor; a) -> Result<Tensor> {
        ops::max_pool2d_with_indices(x, a.kernel_size, a.stride, a.padding, a.dilation, a.ceil_mode)
            .map(|r| r.0)
    }
}

pool_fn! {
    #[meta(op = "max_pool1d")]
    max fn max_pool1d_meta(x: &TensorMeta; a) -> Result<TensorMeta> {
        pooled1d_meta(x, &a)
    }
}

/// The meta of a 1-d pooling of `x` with arguments `a`: the leading dims and
/// the pooled width.
fn pooled1d_meta(x: &TensorMeta, a: &PoolArgs) -> Result<TensorMeta> {
    let (lead, window) = window::<1>(x, a)?;
    Ok(TensorMeta::new(out_shape(&lead, &window), x.dtype()))
}

pool_fn! {
    #[decompose(op = "max_pool1d")]
    max fn max_pool1d_decomposition(x: &Tensor; a) -> Result<Tensor> {
        let (kernel, stride, padding, dilation) = a.widened();
        height_one(x, |x| ops::max_pool2d(x, &kernel, Some(&stride), &padding, &dilation, a.ceil_mode))
    }
}

/// The sums over the windows `rows` (along dim -2) and `cols` (along dim
/// -1), each `[start, end)` in the input, divided by `divisor` (of shape
/// `[rows.len(), cols.len()]`, or 0-d): one `window_sum` per pooled dim, the
/// dim whose sums leave the smaller intermediate first (`H * w_out` or
/// `h_out * W`, whose product is the input's size times the output's, so the
/// smaller is at most their mean: linear in both). A dim whose one window is
/// all of it of size 1 (the 1-d poolings' height) is left as it is.
fn window_sums(
    x: &Tensor,
    rows: &[(usize, usize)],
    cols: &[(usize, usize)],
    divisor: Tensor,
) -> Result<Tensor> {
    let shape = x.shape();
    let (hs, ws) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let bounds = |w: &[(usize, usize)]| -> (Vec<i64>, Vec<i64>) {
        w.iter().map(|&(s, e)| (s as i64, e as i64)).unzip()
    };
    let sum_last = |t: &Tensor, w: &[(usize, usize)]| {
        let (starts, ends) = bounds(w);
        ops::window_sum(t, &starts, &ends)
    };
    let sum_rows = |t: &Tensor| -> Result<Tensor> {
        if hs == 1 && rows == [(0, 1)] {
            return Ok(t.clone());
        }
        let t = ops::transpose(t, -1, -2)?;
        ops::transpose(&sum_last(&t, rows)?, -1, -2)
    };
    let rows_first = rows.len().saturating_mul(ws) < hs.saturating_mul(cols.len());
    let sums = if rows_first {
        sum_last(&sum_rows(x)?, cols)?
    } else {
        sum_rows(&sum_last(x, cols)?)?
    };
    ops::div(&sums, &divisor)
}

/// `values` (row-major, `[rows, cols]`) as a tensor of `like`'s dtype.
fn divisor_tensor(like: &Tensor, rows: usize, cols: usize, values: Vec<f64>) -> Result<Tensor> {
    ops::to_dtype(
        &Tensor::from_shape_vec(&[rows, cols], values)?,
        like.dtype(),
    )
}

fn check_divisor(divisor_override: Option<i64>) -> Result<()> {
    if divisor_override == Some(0) {
        return Err(Error::invalid("`divisor_override` must not be zero"));
    }
    Ok(())
}

/// The poolings' kernels and decompositions build, whatever the batch, a
/// window list per pooled dim and (averages) a divisor per output position:
/// an empty batch makes the output empty but not these (`[0, 1, 2^40, 1]` is
/// a tensor).
/// They must be allocatable too, or the call is an error naming `what`, the
/// argument that made them large.
fn check_positions(spatial: &[usize], what: impl FnOnce() -> String) -> Result<()> {
    use crate::core::alloc::{allocation_limit, check_alloc};
    // The divisors are one f64 per position; each dim's windows are counted
    // as one i64 each, as `window_sum` takes their starts (the ends, and a
    // window's few words in the kernels, are of the same order: what is
    // bounded is the count, against the limit, not the bytes exactly).
    let fits = check_alloc(spatial, DType::F64).is_ok()
        && spatial
            .iter()
            .all(|&n| check_alloc(&[n], DType::I64).is_ok());
    if fits {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "{} is too large: {spatial:?} output positions per plane are more than can be allocated \
         (the allocation limit is {} bytes)",
        what(),
        allocation_limit()
    )))
}

pool_fn! {
    #[meta(op = "avg_pool2d")]
    avg fn avg_pool2d_meta(x: &TensorMeta; a, _count_include_pad: bool, divisor_override: Option<i64>)
        -> Result<TensorMeta> {
        check_divisor(divisor_override)?;
        let g = geometry(x, &a.avg())?;
        Ok(TensorMeta::new(g.out_shape(), x.dtype()))
    }
}

pool_fn! {
    #[decompose(op = "avg_pool2d")]
    avg fn avg_pool2d_decomposition(x: &Tensor; a, count_include_pad: bool, divisor_override: Option<i64>)
        -> Result<Tensor> {
        avg_pool2d_sums(x, &a, count_include_pad, divisor_override)
    }
}

/// `avg_pool2d` of `x` as window sums divided by each window's divisor.
fn avg_pool2d_sums(
    x: &Tensor,
    a: &PoolArgs,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    let m = TensorMeta::of(x);
    let g = geometry(&m, &a.avg())?;
    let windows = |a: &Axis| (0..a.out).map(|i| a.clipped(i)).collect::<Vec<_>>();
    let [rows, cols] = g.window.axes.each_ref().map(windows);
    let span = |w: &[(usize, usize, i128)]| w.iter().map(|&(s, e, _)| (s, e)).collect::<Vec<_>>();
    let divisor = match divisor_override {
        Some(d) => scalar_like(&m, d as f64),
        None => {
            let count = |w: &(usize, usize, i128)| {
                if count_include_pad {
                    w.2 as f64
                } else {
                    (w.1 - w.0) as f64
                }
            };
            let values = rows
                .iter()
                .flat_map(|r| cols.iter().map(move |c| count(r) * count(c)))
                .collect();
            divisor_tensor(x, rows.len(), cols.len(), values)?
        }
    };
    window_sums(x, &span(&rows), &span(&cols), divisor)
}

pool_fn! {
    #[meta(op = "avg_pool1d")]
    avg fn avg_pool1d_meta(x: &TensorMeta; a, _count_include_pad: bool) -> Result<TensorMeta> {
        pooled1d_meta(x, &a.avg())
    }
}

pool_fn! {
    #[decompose(op = "avg_pool1d")]
    avg fn avg_pool1d_decomposition(x: &Tensor; a, count_include_pad: bool) -> Result<Tensor> {
        let (kernel, stride, padding, _) = a.widened();
        height_one(x, |x| {
            ops::avg_pool2d(x, &kernel, Some(&stride), &padding, a.ceil_mode, count_include_pad, None)
        })
    }
}

/// The adaptive windows of one dim: `[floor(i*size/out), ceil((i+1)*size/out))`.
fn adaptive_windows(size: usize, out: usize) -> Vec<(usize, usize)> {
    let (s, o) = (size as u128, out as u128);
    (0..o)
        .map(|i| ((i * s / o) as usize, ((i + 1) * s).div_ceil(o) as usize))
        .collect()
}

/// Checks an adaptive pooling's input (`dims + 1` or `dims + 2` dims, float,
/// the pooled dims not empty) and `output_size` (`dims` values, or one for
/// both dims in 2-d; not negative); returns the output sizes of the pooled
/// dims.
fn adaptive_sizes(x: &TensorMeta, dims: usize, output_size: &[i64]) -> Result<Vec<usize>> {
    check_input(x, dims)?;
    let shape = x.shape();
    let r = shape.len();
    if shape[r - dims..].contains(&0) {
        return Err(Error::invalid(format!(
            "`input` of shape {shape:?} is empty in a pooled dim"
        )));
    }
    let sizes = match (dims, output_size) {
        (2, [a]) => vec![*a, *a],
        (2, [a, b]) => vec![*a, *b],
        (1, [a]) => vec![*a],
        _ => {
            return Err(Error::invalid(format!(
                "`output_size` must be {}, got {output_size:?}",
                if dims == 2 {
                    "one int or two"
                } else {
                    "one int"
                }
            )))
        }
    };
    let sizes = sizes
        .iter()
        .map(|&v| usize::try_from(v))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| {
            Error::invalid(format!(
                "`output_size` must not be negative, got {output_size:?}"
            ))
        })?;
    check_positions(&sizes, || format!("`output_size` {output_size:?}"))?;
    let mut out = shape[..r - dims].to_vec();
    out.extend(&sizes);
    crate::core::alloc::check_alloc(&out, x.dtype()).map_err(|_| {
        Error::invalid(format!(
            "`output_size` {output_size:?} is too large: an output of shape {out:?} is more than \
             can be allocated (the allocation limit is {} bytes)",
            crate::core::alloc::allocation_limit()
        ))
    })?;
    Ok(sizes)
}

/// The meta of an adaptive pooling over the last `dims` dims.
fn adaptive_meta(x: &TensorMeta, dims: usize, output_size: &[i64]) -> Result<TensorMeta> {
    let sizes = adaptive_sizes(x, dims, output_size)?;
    let r = x.shape().len();
    let mut out = x.shape()[..r - dims].to_vec();
    out.extend(sizes);
    Ok(TensorMeta::new(out, x.dtype()))
}

#[meta(op = "adaptive_avg_pool2d")]
fn adaptive_avg_pool2d_meta(x: &TensorMeta, output_size: &[i64]) -> Result<TensorMeta> {
    adaptive_meta(x, 2, output_size)
}

#[decompose(op = "adaptive_avg_pool2d")]
fn adaptive_avg_pool2d_decomposition(x: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    let sizes = adaptive_sizes(&TensorMeta::of(x), 2, output_size)?;
    let r = x.shape().len();
    let rows = adaptive_windows(x.shape()[r - 2], sizes[0]);
    let cols = adaptive_windows(x.shape()[r - 1], sizes[1]);
    let values = rows
        .iter()
        .flat_map(|r| cols.iter().map(move |c| ((r.1 - r.0) * (c.1 - c.0)) as f64))
        .collect();
    let divisor = divisor_tensor(x, rows.len(), cols.len(), values)?;
    window_sums(x, &rows, &cols, divisor)
}

#[meta(op = "adaptive_avg_pool1d")]
fn adaptive_avg_pool1d_meta(x: &TensorMeta, output_size: &[i64]) -> Result<TensorMeta> {
    adaptive_meta(x, 1, output_size)
}

#[decompose(op = "adaptive_avg_pool1d")]
fn adaptive_avg_pool1d_decomposition(x: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    height_one(x, |x| ops::adaptive_avg_pool2d(x, &widen(output_size, 1)))
}

// ---------------------------------------------------------------------------
// window_sum and window_sum_backward: the linear primitives of the average
// poolings

/// Checks windows `[starts[i], ends[i])` of a last dim of `size` elements and
/// returns them.
fn windows_of(starts: &[i64], ends: &[i64], size: usize) -> Result<Vec<(usize, usize)>> {
    if starts.len() != ends.len() {
        return Err(Error::invalid(format!(
            "`starts` and `ends` must have one entry per window, got {} and {}",
            starts.len(),
            ends.len()
        )));
    }
    starts
        .iter()
        .zip(ends)
        .enumerate()
        .map(|(i, (&s, &e))| {
            if s < 0 || s > e || e as i128 > size as i128 {
                return Err(Error::invalid(format!(
                    "window {i} is [{s}, {e}), but a window must have 0 <= start <= end <= {size} \
                     (the size of the last dim)"
                )));
            }
            Ok((s as usize, e as usize))
        })
        .collect()
}

/// The last dim of a float tensor of at least one dim.
fn last_dim(x: &TensorMeta, what: &str) -> Result<usize> {
    require_float(x)?;
    x.shape().last().copied().ok_or_else(|| {
        Error::invalid(format!(
            "`{what}` must have at least one dim, got a 0-d tensor"
        ))
    })
}

#[meta(op = "window_sum")]
fn window_sum_meta(x: &TensorMeta, starts: &[i64], ends: &[i64]) -> Result<TensorMeta> {
    let size = last_dim(x, "self")?;
    let windows = windows_of(starts, ends, size)?;
    let mut shape = x.shape().to_vec();
    *shape.last_mut().expect("one dim at least") = windows.len();
    Ok(TensorMeta::new(shape, x.dtype()))
}

#[meta(op = "window_sum_backward")]
fn window_sum_backward_meta(
    g: &TensorMeta,
    starts: &[i64],
    ends: &[i64],
    size: i64,
) -> Result<TensorMeta> {
    let n = last_dim(g, "grad")?;
    let size = usize::try_from(size)
        .map_err(|_| Error::invalid(format!("`size` must be non-negative, got {size}")))?;
    let windows = windows_of(starts, ends, size)?;
    if windows.len() != n {
        return Err(Error::invalid(format!(
            "`grad`'s last dim has {n} elements, but there are {} windows",
            windows.len()
        )));
    }
    let mut shape = g.shape().to_vec();
    *shape.last_mut().expect("one dim at least") = size;
    Ok(TensorMeta::new(shape, g.dtype()))
}

/// `f` run on each row of the last dim of `x` (in standard layout), writing
/// `width` output elements per row (`work`: the work of a row, which decides
/// whether rows are split over threads): the output, of `x`'s shape with a
/// last dim of `width`.
fn map_rows(
    x: &Tensor,
    width: usize,
    work: usize,
    f32s: impl Fn(&[f32], &mut [f32]) + Sync + Send,
    f64s: impl Fn(&[f64], &mut [f64]) + Sync + Send,
) -> Result<Tensor> {
    fn run<T: Element + crate::core::buffers::Cached>(
        a: &ndarray::ArcArray<T, IxDyn>,
        width: usize,
        work: usize,
        f: impl Fn(&[T], &mut [T]) + Sync + Send,
    ) -> Result<Tensor> {
        let a = crate::core::buffers::standard(a.view());
        let x = a
            .as_slice()
            .ok_or_else(|| Error::invalid("the input is not contiguous"))?;
        let mut shape = a.shape().to_vec();
        let len = shape.pop().unwrap_or(1);
        let rows: usize = shape.iter().product();
        shape.push(width);
        let mut out = crate::core::buffers::filled(rows * width, T::default());
        scan::for_rows(x, len, &mut out, width, work, f);
        Tensor::from_shape_vec(&shape, out)
    }
    match x.data()? {
        Data::F32(a) => run(a, width, work, f32s),
        Data::F64(a) => run(a, width, work, f64s),
        other => Err(Error::invalid(format!(
            "needs a floating-point tensor, got {}",
            other.dtype()
        ))),
    }
}

/// The windows' total length, the work of one row of a window sum.
fn windows_work(windows: &[(usize, usize)]) -> usize {
    windows
        .iter()
        .fold(windows.len(), |n, &(s, e)| n.saturating_add(e - s))
}

#[kernel(op = "window_sum")]
fn window_sum_kernel(x: &Tensor, starts: &[i64], ends: &[i64]) -> Result<Tensor> {
    let size = x.shape().last().copied().unwrap_or(0);
    let windows = windows_of(starts, ends, size)?;
    let runs = scan::runs(&windows);
    map_rows(
        x,
        windows.len(),
        windows_work(&windows),
        #[inline(always)]
        |x, o| scan::sum_runs(&runs, x, o),
        #[inline(always)]
        |x, o| scan::sum_runs(&runs, x, o),
    )
}

#[kernel(op = "window_sum_backward")]
fn window_sum_backward_kernel(
    g: &Tensor,
    starts: &[i64],
    ends: &[i64],
    size: i64,
) -> Result<Tensor> {
    let size = usize::try_from(size).unwrap_or(0);
    let windows = windows_of(starts, ends, size)?;
    let runs = scan::runs(&windows);
    map_rows(
        g,
        size,
        windows_work(&windows),
        #[inline(always)]
        |g, o| scan::spread_runs(&runs, g, o),
        #[inline(always)]
        |g, o| scan::spread_runs(&runs, g, o),
    )
}

/// The batch dim moved to the front: the last dim stays last.
#[batching_rule(op = "window_sum")]
fn window_sum_rule(
    x: &Tensor,
    bdim: Option<usize>,
    starts: &[i64],
    ends: &[i64],
) -> Result<(Tensor, Option<usize>)> {
    let x = bdim_to_front(x, bdim)?;
    Ok((ops::window_sum(&x, starts, ends)?, bdim.map(|_| 0)))
}

#[batching_rule(op = "window_sum_backward")]
fn window_sum_backward_rule(
    g: &Tensor,
    bdim: Option<usize>,
    starts: &[i64],
    ends: &[i64],
    size: i64,
) -> Result<(Tensor, Option<usize>)> {
    let g = bdim_to_front(g, bdim)?;
    Ok((
        ops::window_sum_backward(&g, starts, ends, size)?,
        bdim.map(|_| 0),
    ))
}
