//! The sliding window of the convolutions (`conv.rs`: `unfold`, `fold`,
//! `conv1d`, `conv2d` and the tiled products; `conv_transpose.rs`) and of
//! the poolings (`pooling.rs`), in one place: per spatial axis, the input's
//! size, the kernel, stride, padding and dilation, `ceil_mode` where a
//! pooling asks for it, and the number of window positions (the output's
//! size), with the checks that make them valid. A convolution's block and a
//! pooling's window are the same thing here; so are their batching rules,
//! which fold the vmap dim into the op's own image batch
//! ([`batch_as_images`]).
//!
//! Every size is computed in `i128` (no argument, however large, can
//! overflow it), and a window that fits no position, or too many, is an
//! error in the user's terms: the arguments and the input's spatial size,
//! never an internal shape whose sizes overflowed.

use crate::batching::{bdim_to_front, logical_rank, reshape_dim_into, reshape_dim_outof};
use crate::{Error, Result, Tensor};

/// The `int[]` argument `name` as `D` values: one value per spatial axis, or
/// one for all of them (PyTorch's `stride=2`); each at least `min`.
pub(crate) fn per_axis<const D: usize>(name: &str, values: &[i64], min: i64) -> Result<[usize; D]> {
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

/// Checks that a windowed op's input of shape `shape` has its `dims`
/// spatial dims after the channels, and perhaps a batch before them: `dims +
/// 1` dims (unbatched) or `dims + 2` (batched). Gives whether it is batched.
pub(crate) fn check_rank(shape: &[usize], dims: usize) -> Result<bool> {
    if shape.len() != dims + 1 && shape.len() != dims + 2 {
        return Err(Error::invalid(format!(
            "expected a {}-d (unbatched) or {}-d (batched) input, got shape {shape:?}",
            dims + 1,
            dims + 2
        )));
    }
    Ok(shape.len() == dims + 2)
}

/// A size argument of a 1-d op (one value, checked by its meta) as the 2-d
/// op's that computes it: `[fill, v]`, `fill` the height-1 window's (1 for a
/// kernel, stride or dilation, 0 for a padding).
pub(crate) fn widen(v: &[i64], fill: i64) -> [i64; 2] {
    [fill, v.first().copied().unwrap_or(fill)]
}

/// A 1-d windowed op as the 2-d `op` of `x` seen as an image of height 1
/// (unsqueezed at dim -2, and squeezed back after), with a window of height
/// 1 ([`widen`]).
pub(crate) fn height_one(x: &Tensor, op: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    crate::ops::squeeze(&op(&crate::ops::unsqueeze(x, -2)?)?, Some(-2))
}

/// The arguments of a window along `D` spatial axes, checked (kernel,
/// stride and dilation at least 1, padding at least 0), before it is laid
/// over an input ([`Params::over`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params<const D: usize> {
    pub kernel: [usize; D],
    pub stride: [usize; D],
    pub padding: [usize; D],
    pub dilation: [usize; D],
    /// Whether a last window may overhang the padded input by less than the
    /// stride (a pooling's `ceil_mode`; a convolution's blocks never do).
    pub ceil_mode: bool,
}

impl<const D: usize> Params<D> {
    /// The window of the `int[]` arguments as the user wrote them, checked
    /// in this order, without `ceil_mode`.
    pub(crate) fn parse(
        kernel: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
    ) -> Result<Self> {
        Ok(Params {
            kernel: per_axis("kernel_size", kernel, 1)?,
            dilation: per_axis("dilation", dilation, 1)?,
            padding: per_axis("padding", padding, 0)?,
            stride: per_axis("stride", stride, 1)?,
            ceil_mode: false,
        })
    }

    /// The number of window positions along axis `i` of an input of size
    /// `size`: `floor((size + 2 * padding - dilation * (kernel - 1) - 1 [+
    /// stride - 1 with ceil_mode]) / stride) + 1`, less one with `ceil_mode`
    /// if the last window would start past the input and its left padding
    /// (PyTorch's `pooling_output_shape`); below 1 when none fits. In `i128`:
    /// every term is below 2^64 and the product below 2^127, so no overflow.
    fn count(&self, i: usize, size: usize) -> i128 {
        let (k, s) = (self.kernel[i] as i128, self.stride[i] as i128);
        let (p, d) = (self.padding[i] as i128, self.dilation[i] as i128);
        let room = size as i128 + 2 * p - (d * (k - 1) + 1);
        let slack = if self.ceil_mode { s - 1 } else { 0 };
        let mut out = (room + slack).div_euclid(s) + 1;
        if self.ceil_mode && (out - 1) * s >= size as i128 + p {
            out -= 1;
        }
        out
    }

    /// The window laid over an input of spatial size `size`: each axis with
    /// its number of positions, or an error if some axis has none (the
    /// window is larger than the padded input) or more than can be
    /// allocated.
    pub(crate) fn over(&self, size: [usize; D]) -> Result<Window<D>> {
        let mut out = [0usize; D];
        for (i, o) in out.iter_mut().enumerate() {
            let n = self.count(i, size[i]);
            if n < 1 {
                return Err(self.none_fits(size));
            }
            *o = usize::try_from(n).map_err(|_| self.too_large(size, "the output"))?;
        }
        Ok(Window {
            axes: std::array::from_fn(|i| Axis {
                size: size[i],
                kernel: self.kernel[i],
                stride: self.stride[i],
                padding: self.padding[i],
                dilation: self.dilation[i],
                ceil_mode: self.ceil_mode,
                out: out[i],
            }),
        })
    }

    /// The error for a window that fits no position along some axis of an
    /// input of spatial size `size`.
    fn none_fits(&self, size: [usize; D]) -> Error {
        let by = if self.ceil_mode {
            format!(" by at least the stride {:?} (ceil_mode)", self.stride)
        } else {
            String::new()
        };
        Error::invalid(format!(
            "the window (kernel_size {:?}, dilation {:?}) spans {:?}, larger than the input's \
             spatial size {size:?} with padding {:?}{by}: no block fits, so the output would be \
             empty",
            self.kernel,
            self.dilation,
            self.spans(),
            self.padding
        ))
    }

    /// The number of positions along each axis, in `u128` (no overflow:
    /// only shown in an error), 0 where none fits.
    fn counts(&self, size: [usize; D]) -> [u128; D] {
        std::array::from_fn(|i| self.count(i, size[i]).max(0) as u128)
    }

    /// The error for a window that gives `what` (the output, or the unfolded
    /// input behind a convolution) more positions than can be allocated, in
    /// the user's terms: the argument responsible (the `padding`, when it is
    /// larger than the input; else the input's size) and the number of
    /// positions per spatial dim, never an internal shape whose sizes
    /// overflowed.
    pub(crate) fn too_large(&self, size: [usize; D], what: &str) -> Error {
        let blocks = self.counts(size);
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

    /// The extent of the dilated kernel along each axis (saturating: only
    /// shown).
    fn spans(&self) -> [usize; D] {
        std::array::from_fn(|i| {
            self.dilation[i]
                .saturating_mul(self.kernel[i] - 1)
                .saturating_add(1)
        })
    }

    /// The kernel's number of elements, `kh * kw`, or an error if that
    /// overflows.
    pub(crate) fn kernel_numel(&self) -> Result<usize> {
        self.kernel
            .iter()
            .try_fold(1usize, |a, &k| a.checked_mul(k))
            .ok_or_else(|| Error::invalid(format!("kernel_size {:?} is too large", self.kernel)))
    }
}

/// A window along one spatial axis of an input: its size, the window's
/// arguments, and the number of positions they give, `out` (at least 1).
/// Window `i` starts at input position `i * stride - padding` and reads
/// taps `0..kernel`, tap `k` at `dilation * k` from its start; positions
/// outside `0..size` are padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Axis {
    pub size: usize,
    pub kernel: usize,
    pub stride: usize,
    pub padding: usize,
    pub dilation: usize,
    /// Whether `out` counts a last window that overhangs the padded input.
    pub ceil_mode: bool,
    pub out: usize,
}

impl Axis {
    /// The start of window `i` in input coordinates (negative in the left
    /// padding).
    pub(crate) fn start(&self, i: usize) -> i128 {
        i as i128 * self.stride as i128 - self.padding as i128
    }

    /// Where tap `k` of window 0 reads, `k * dilation - padding` (tap `k` of
    /// window `i` reads `stride * i` after it).
    pub(crate) fn offset(&self, k: usize) -> i128 {
        k as i128 * self.dilation as i128 - self.padding as i128
    }

    /// The windows whose tap `k` lies inside the input: those `i` in
    /// `0..out` with `i * stride + offset(k)` in `0..size`, as a range (they
    /// are consecutive), empty at `(lo, lo)` if none.
    pub(crate) fn reading(&self, k: usize) -> (usize, usize) {
        let (offset, s) = (self.offset(k), self.stride as i128);
        // i * s + offset >= 0  <=>  i >= ceil(-offset / s)
        let lo = if offset >= 0 {
            0
        } else {
            (-offset + s - 1) / s
        };
        // i * s + offset <= size - 1  <=>  i <= floor((size - 1 - offset) / s)
        let top = self.size as i128 - 1 - offset;
        let hi = if top < 0 { 0 } else { top / s + 1 };
        let clamp = |v: i128| v.clamp(0, self.out as i128) as usize;
        let (lo, hi) = (clamp(lo), clamp(hi));
        (lo, hi.max(lo))
    }

    /// The taps of window `i` inside the input (every `dilation`-th position
    /// from its start, `kernel` of them at most): the first one's input
    /// position and how many.
    pub(crate) fn taps(&self, i: usize) -> (usize, usize) {
        let start = self.start(i);
        let (size, d, k) = (
            self.size as i128,
            self.dilation as i128,
            self.kernel as i128,
        );
        // The first tap index j with start + j*dilation >= 0.
        let j0 = if start >= 0 { 0 } else { (-start + d - 1) / d };
        if j0 >= k {
            return (0, 0);
        }
        let first = start + j0 * d;
        if first >= size {
            return (0, 0);
        }
        // Taps first, first + d, ... below size, and below the kernel's end.
        let in_input = (size - 1 - first) / d + 1;
        let count = in_input.min(k - j0);
        (first as usize, count as usize)
    }

    /// The `[start, end)` input positions of (undilated) window `i` inside
    /// the input, and its size counting the padding (up to the padding's
    /// end, as PyTorch's `count_include_pad`).
    pub(crate) fn clipped(&self, i: usize) -> (usize, usize, i128) {
        let start = self.start(i);
        let size = self.size as i128;
        let end = (start + self.kernel as i128).min(size + self.padding as i128);
        let with_pad = end - start;
        let (s, e) = (start.max(0), end.min(size));
        (s as usize, e.max(s) as usize, with_pad)
    }
}

/// A window laid over an input's `D` spatial axes ([`Params::over`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window<const D: usize> {
    pub axes: [Axis; D],
}

impl<const D: usize> Window<D> {
    /// The window's arguments.
    pub(crate) fn params(&self) -> Params<D> {
        let a = &self.axes;
        Params {
            kernel: a.map(|a| a.kernel),
            stride: a.map(|a| a.stride),
            padding: a.map(|a| a.padding),
            dilation: a.map(|a| a.dilation),
            ceil_mode: a.iter().any(|a| a.ceil_mode),
        }
    }

    /// The input's spatial size.
    pub(crate) fn size(&self) -> [usize; D] {
        self.axes.map(|a| a.size)
    }

    /// The number of positions along each axis: the output's spatial size.
    pub(crate) fn out(&self) -> [usize; D] {
        self.axes.map(|a| a.out)
    }

    /// [`Params::too_large`] for this input.
    pub(crate) fn too_large(&self, what: &str) -> Error {
        self.params().too_large(self.size(), what)
    }

    /// The number of positions in all, or the error of an output too large.
    pub(crate) fn positions(&self) -> Result<usize> {
        self.axes
            .iter()
            .try_fold(1usize, |n, a| n.checked_mul(a.out))
            .ok_or_else(|| self.too_large("the output"))
    }
}

/// The batching rule of an op over images, `[N, C, ...]` or one image `[C,
/// ...]` of `rank` dims, with `K` outputs batched alike: the vmap dim of an
/// unbatched image becomes `N`, and that of a batch of images is folded
/// into `N` ([`reshape_dim_into`]) for one call of `op`, then split out of
/// each output ([`reshape_dim_outof`]): no loop, whatever the batch.
pub(crate) fn batch_as_images<const K: usize>(
    x: &Tensor,
    bdim: Option<usize>,
    rank: usize,
    op: impl Fn(&Tensor) -> Result<[Tensor; K]>,
) -> Result<[(Tensor, Option<usize>); K]> {
    let Some(b) = bdim else {
        return Ok(op(x)?.map(|y| (y, None)));
    };
    if logical_rank(x, bdim)? == rank {
        return Ok(op(&bdim_to_front(x, bdim)?)?.map(|y| (y, Some(0))));
    }
    let ys = op(&reshape_dim_into(b, 0, x)?)?;
    // (Folding checked that `x` has the batch dim and `N`: 2 dims at least.)
    let sizes = [x.shape()[b], x.shape()[usize::from(b == 0)]];
    let mut out = Vec::with_capacity(K);
    for y in &ys {
        out.push((reshape_dim_outof(0, sizes, y)?, Some(0)));
    }
    out.try_into()
        .map_err(|_| Error::Tensor("batch_as_images: an output went missing".to_string()))
}
