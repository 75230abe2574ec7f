//! The pooling kernels: the maxima of `max_pool2d_with_indices` and the
//! sums of `window_sum` and `window_sum_backward`, each scanning a row of
//! windows at once.
//!
//! **Max pooling.** PyTorch's CPU kernel, and this crate's before it, scans
//! one window at a time: a loop of a few taps per output element, which
//! does not vectorize. Here the windows that lie wholly inside the input
//! (all but a border as wide as the padding, or the `ceil_mode` overhang)
//! are scanned a row of windows at a time: for each tap of the window (row
//! by row, as before), the input values under that tap of every window of
//! the row (a contiguous slice at stride 1, a strided one otherwise) are
//! compared with the row of running maxima, and the greater ones, or a NaN,
//! replace them with the tap's number. So each window sees its taps in the
//! same order with the same rule as the window-at-a-time scan: the first
//! maximum wins a tie, a NaN is taken (and a later NaN replaces it), and
//! the values and indices are the same bit for bit. With stride 1 on both
//! dims, the rows of windows of a plane are scanned as one row (`flat`):
//! the windows starting at every position of the plane from the first
//! inner window to the last, those starting past the last column of
//! windows computed and dropped. The border windows are scanned one at a
//! time, as before. The loops run through [`vectorized`].
//!
//! **Window sums.** A list of windows is cut into runs of windows of one
//! length, each starting a fixed step after the last (all of an average
//! pooling's windows but its border ones form one run). A run is summed a
//! row at a time: for each position `u` of the window, the values at `u`
//! of every window of the run are added to the row of sums, which starts
//! at zero: each sum is `0 + x[s] + x[s + 1] + ...` in that order, as
//! before. The transpose spreads each window's value over its positions in
//! runs the same way, `u` from the last position to the first, so that each
//! output position receives its windows' values in the order of the
//! windows, as the window-by-window loop added them.
//!
//! **Threads** (the `rayon` feature): the planes of a max pooling, and the
//! rows of a window sum, are split into pieces on rayon's pool when the
//! work is large enough ([`parallel`](crate::core::broadcast::parallel)).
//! Each output element is computed by the same code whatever piece it falls
//! in, so the results do not depend on the number of threads.

use std::ops::Range;

use super::Planes;
use crate::core::simd::vectorized;
use crate::library::window::Axis;
use crate::Element;

// ---------------------------------------------------------------------------
// Max pooling

/// An element type of the max-pooling scan, with the unsigned integer of its
/// width that numbers a window's taps (so that a lane's compare and its two
/// selects are of one width, and vectorize together).
pub(crate) trait MaxElem: Element + PartialOrd {
    /// A tap's number in its window.
    type Tap: Copy + Default + Send + Sync + TryFrom<usize> + Into<u64>;
    /// `-inf`.
    const NEG_INF: Self;
}

impl MaxElem for f32 {
    type Tap = u32;
    const NEG_INF: f32 = f32::NEG_INFINITY;
}

impl MaxElem for f64 {
    type Tap = u64;
    const NEG_INF: f64 = f64::NEG_INFINITY;
}

/// What the max-pooling kernel computes once per call: each output row's
/// and column's valid taps, the output rows and columns whose windows are
/// wholly inside the input, and the offset of each tap from its window's
/// first position.
pub(crate) struct MaxLayout {
    rows: Vec<(usize, usize)>,
    cols: Vec<(usize, usize)>,
    dh: usize,
    dw: usize,
    width: usize,
    /// `H * W`: the position a window of padding only reports.
    past: usize,
    /// The output rows and columns whose windows lie inside the input (both
    /// empty if the scan cannot number the taps in `Tap`).
    inner_rows: Range<usize>,
    inner_cols: Range<usize>,
    /// Each tap's offset from its window's first position, row-major.
    offsets: Vec<usize>,
    /// The distance between the first positions of two windows of a row.
    step: usize,
    /// Whether the inner windows of a plane are scanned as one row
    /// (stride 1 on both dims, and at most a third of the row dropped).
    flat: bool,
    /// The longest row scanned.
    lanes: usize,
}

/// The output indices `0..a.out` whose windows are wholly inside the input:
/// the first run of them (they are one run: a window's start grows with
/// its index).
fn inner(a: &Axis, taps: &[(usize, usize)]) -> Range<usize> {
    let full = |i: usize| {
        let (first, count) = taps[i];
        count == a.kernel && first as i128 == a.start(i)
    };
    let lo = (0..a.out).find(|&i| full(i)).unwrap_or(a.out);
    let hi = (lo..a.out).find(|&i| !full(i)).unwrap_or(a.out);
    lo..hi
}

impl MaxLayout {
    pub(crate) fn new<T: MaxElem>(g: &Planes) -> Self {
        let [h, w] = &g.window.axes;
        let rows: Vec<(usize, usize)> = (0..h.out).map(|i| h.taps(i)).collect();
        let cols: Vec<(usize, usize)> = (0..w.out).map(|j| w.taps(j)).collect();
        let (dh, dw) = (h.dilation, w.dilation);
        let width = w.size;
        let (mut inner_rows, mut inner_cols) = (inner(h, &rows), inner(w, &cols));
        let mut offsets = Vec::new();
        if !inner_rows.is_empty() && !inner_cols.is_empty() {
            // A window inside the input has at most `H * W` taps.
            let (kh, kw) = (h.kernel, w.kernel);
            offsets = (0..kh)
                .flat_map(|t| (0..kw).map(move |u| t * dh * width + u * dw))
                .collect();
            if T::Tap::try_from(offsets.len()).is_err() {
                (inner_rows, inner_cols) = (0..0, 0..0);
                offsets.clear();
            }
        }
        let step = if inner_cols.len() > 1 { w.stride } else { 1 };
        let n = inner_cols.len();
        let flat = h.stride == 1 && step == 1 && inner_rows.len() > 1 && 3 * (width - n) <= width;
        let lanes = if flat {
            (inner_rows.len() - 1) * width + n
        } else {
            n
        };
        MaxLayout {
            rows,
            cols,
            dh,
            dw,
            width,
            past: g.plane(),
            inner_rows,
            inner_cols,
            offsets,
            step,
            flat,
            lanes,
        }
    }

    /// The scratch rows of a scan.
    pub(crate) fn scratch<T: MaxElem>(&self) -> (Vec<T>, Vec<T::Tap>) {
        (
            vec![T::NEG_INF; self.lanes],
            vec![T::Tap::default(); self.lanes],
        )
    }
}

/// The maximum of one window (rows `r0, r0 + dh, ...`, `nr` of them, and
/// likewise the columns) of a plane `width` wide, and its position, as
/// PyTorch scans it: row-major, starting at `-inf` with the first position;
/// a greater value or a NaN replaces the maximum. A window of no position
/// gives `-inf` at `past`.
#[inline(always)]
pub(crate) fn window_max<T: MaxElem>(
    plane: &[T],
    l: &MaxLayout,
    (r0, nr): (usize, usize),
    (c0, nc): (usize, usize),
) -> (T, usize) {
    if nr == 0 || nc == 0 {
        return (T::NEG_INF, l.past);
    }
    // Branch-free selects: which tap wins is data-dependent, and a
    // mispredicted branch per tap cost more than the loads.
    let mut best = T::NEG_INF;
    let mut at = r0 * l.width + c0;
    for t in 0..nr {
        let row = (r0 + t * l.dh) * l.width;
        for u in 0..nc {
            let i = row + c0 + u * l.dw;
            let v = plane.get(i).copied().unwrap_or(T::NEG_INF);
            #[allow(clippy::eq_op)]
            let take = (v > best) | (v != v);
            best = if take { v } else { best };
            at = if take { i } else { at };
        }
    }
    (best, at)
}

/// One tap over a row of windows: each value of `src` that is greater than
/// the running maximum of its window, or a NaN, replaces it, with tap `k`.
#[inline(always)]
fn take_greater<T: MaxElem>(
    best: &mut [T],
    tap: &mut [T::Tap],
    src: impl Iterator<Item = T>,
    k: T::Tap,
) {
    for ((b, a), v) in best.iter_mut().zip(tap.iter_mut()).zip(src) {
        #[allow(clippy::eq_op)]
        let take = (v > *b) | (v != v);
        *b = if take { v } else { *b };
        *a = if take { k } else { *a };
    }
}

/// The running maxima and tap numbers of the windows whose first positions
/// are `base, base + step, ...` (`best.len()` of them), over every tap of
/// the layout. `None` (nothing scanned) if a window reaches past the plane,
/// which the layout rules out.
#[inline(always)]
fn scan_row<T: MaxElem>(
    plane: &[T],
    l: &MaxLayout,
    base: usize,
    best: &mut [T],
    tap: &mut [T::Tap],
) -> Option<()> {
    let n = best.len();
    let last = (n.checked_sub(1)?)
        .checked_mul(l.step)?
        .checked_add(base)?
        .checked_add(*l.offsets.last()?)?;
    if last >= plane.len() {
        return None;
    }
    // At stride 1, blocks of `BLOCK` windows go through every tap with
    // their maxima in registers; the rest as a row in memory.
    let mut done = 0;
    if l.step == 1 {
        for (b_out, a_out) in best
            .chunks_exact_mut(BLOCK)
            .zip(tap.chunks_exact_mut(BLOCK))
        {
            let mut b = [T::NEG_INF; BLOCK];
            let mut a = [T::Tap::default(); BLOCK];
            for (k, &off) in l.offsets.iter().enumerate() {
                let k = T::Tap::try_from(k).unwrap_or_default();
                let src = plane.get(base + done + off..)?.first_chunk::<BLOCK>()?;
                take_greater(&mut b, &mut a, src.iter().copied(), k);
            }
            b_out.copy_from_slice(&b);
            a_out.copy_from_slice(&a);
            done += BLOCK;
        }
    }
    let (best, tap) = (&mut best[done..], &mut tap[done..]);
    best.fill(T::NEG_INF);
    tap.fill(T::Tap::default());
    let base = base + done * l.step;
    for (k, &off) in l.offsets.iter().enumerate() {
        let k = T::Tap::try_from(k).unwrap_or_default();
        let start = base + off;
        if l.step == 1 {
            take_greater(
                best,
                tap,
                plane[start..start + best.len()].iter().copied(),
                k,
            );
        } else {
            let src = plane[start..].iter().step_by(l.step).copied();
            take_greater(best, tap, src, k);
        }
    }
    Some(())
}

/// The windows a block of the stride-1 scan holds in registers.
const BLOCK: usize = 16;

/// The position of tap `k` of the window whose first position is `start`.
#[inline(always)]
fn tap_position<T: MaxElem>(l: &MaxLayout, start: usize, k: T::Tap) -> i64 {
    let k = usize::try_from(k.into()).unwrap_or(0);
    (start + l.offsets.get(k).copied().unwrap_or(0)) as i64
}

/// The maxima and positions of the windows of one plane, into `values` and
/// `indices` (`h_out * w_out` each, row-major), with the scratch rows of
/// [`MaxLayout::scratch`].
#[inline(always)]
pub(crate) fn max_pool_plane<T: MaxElem>(
    plane: &[T],
    l: &MaxLayout,
    (best, tap): (&mut [T], &mut [T::Tap]),
    values: &mut [T],
    indices: &mut [i64],
) {
    let w_out = l.cols.len();
    let (ir, ic) = (l.inner_rows.clone(), l.inner_cols.clone());
    let mut put = |i: usize, j: usize, (v, at): (T, usize)| {
        values[i * w_out + j] = v;
        indices[i * w_out + j] = at as i64;
    };
    // The border windows, one at a time.
    for (i, &r) in l.rows.iter().enumerate() {
        let inner_row = ir.contains(&i);
        for (j, &c) in l.cols.iter().enumerate() {
            if !(inner_row && ic.contains(&j)) {
                put(i, j, window_max(plane, l, r, c));
            }
        }
    }
    if ir.is_empty() || ic.is_empty() {
        return;
    }
    let n = ic.len();
    let first_col = l.cols[ic.start].0;
    let scanned = if l.flat {
        // Every window from the first inner one to the last, as one row:
        // the window at lane q is that of output (ir.start + q / W,
        // ic.start + q % W), if q % W < n.
        let base = l.rows[ir.start].0 * l.width + first_col;
        let lanes = (ir.len() - 1) * l.width + n;
        let (best, tap) = (&mut best[..lanes], &mut tap[..lanes]);
        scan_row(plane, l, base, best, tap).map(|()| {
            for i in ir.clone() {
                let q0 = (i - ir.start) * l.width;
                for (j, q) in ic.clone().zip(q0..q0 + n) {
                    values[i * w_out + j] = best[q];
                    indices[i * w_out + j] = tap_position::<T>(l, base + q, tap[q]);
                }
            }
        })
    } else {
        let (best, tap) = (&mut best[..n], &mut tap[..n]);
        ir.clone().try_for_each(|i| {
            let base = l.rows[i].0 * l.width + first_col;
            scan_row(plane, l, base, best, tap)?;
            for (lane, j) in ic.clone().enumerate() {
                values[i * w_out + j] = best[lane];
                indices[i * w_out + j] = tap_position::<T>(l, base + lane * l.step, tap[lane]);
            }
            Some(())
        })
    };
    if scanned.is_none() {
        // Not reached (the layout keeps inner windows inside the plane):
        // the windows one at a time.
        for i in ir {
            for j in ic.clone() {
                let (v, at) = window_max(plane, l, l.rows[i], l.cols[j]);
                values[i * w_out + j] = v;
                indices[i * w_out + j] = at as i64;
            }
        }
    }
}

/// The maxima and positions over the planes of `x` (standard layout,
/// `g.plane()` elements each) into `values` and `indices` (`g.windows()`
/// per plane). With the `rayon` feature, large calls are split by planes
/// over the pool.
pub(crate) fn max_pool_planes<T: MaxElem>(
    x: &[T],
    g: &Planes,
    values: &mut [T],
    indices: &mut [i64],
) {
    let l = MaxLayout::new::<T>(g);
    let (plane, windows) = (g.plane(), g.windows());
    if plane == 0 || windows == 0 {
        return;
    }
    let serial = |x: &[T], values: &mut [T], indices: &mut [i64]| {
        let (mut best, mut tap) = l.scratch::<T>();
        vectorized(
            #[inline(always)]
            || {
                let planes = x
                    .chunks_exact(plane)
                    .zip(values.chunks_exact_mut(windows))
                    .zip(indices.chunks_exact_mut(windows));
                for ((p, v), i) in planes {
                    max_pool_plane(p, &l, (&mut best, &mut tap), v, i);
                }
            },
        )
    };
    #[cfg(feature = "rayon")]
    {
        let taps = l.offsets.len().max(1);
        let planes = x.len() / plane;
        if planes > 1 && crate::core::broadcast::parallel(values.len().saturating_mul(taps)) {
            use rayon::prelude::*;
            crate::core::spin::region();
            let piece = crate::core::buffers::piece_rows(
                values.len(),
                windows,
                crate::core::broadcast::PIECE_MIN,
            );
            let per = (piece / windows).max(1);
            x.par_chunks(per * plane)
                .zip(values.par_chunks_mut(per * windows))
                .zip(indices.par_chunks_mut(per * windows))
                .for_each(|((x, v), i)| serial(x, v, i));
            return;
        }
    }
    serial(x, values, indices)
}

// ---------------------------------------------------------------------------
// Window sums

/// Windows `first, first + 1, ..., first + count - 1` of a list: `len`
/// positions each, each starting `step` after the one before, the first at
/// `start`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Run {
    first: usize,
    count: usize,
    start: usize,
    len: usize,
    step: usize,
}

/// `windows` (each `[start, end)`) cut into runs, in order: each as long as
/// its windows keep the first two's length and the step between their
/// starts (not negative).
pub(crate) fn runs(windows: &[(usize, usize)]) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for (j, &(s, e)) in windows.iter().enumerate() {
        let len = e.saturating_sub(s);
        if let Some(r) = out.last_mut() {
            let prev = r.start + (r.count - 1) * r.step;
            let fits = len == r.len && s >= prev && (r.count == 1 || s - prev == r.step);
            if fits {
                if r.count == 1 {
                    r.step = s - prev;
                }
                r.count += 1;
                continue;
            }
        }
        out.push(Run {
            first: j,
            count: 1,
            start: s,
            len,
            step: 0,
        });
    }
    out
}

/// The sum of each window of `x`, into `out` (one per window), added in
/// order of position from zero, run by run.
#[inline(always)]
pub(crate) fn sum_runs<T: Copy + Default + std::ops::Add<Output = T>>(
    runs: &[Run],
    x: &[T],
    out: &mut [T],
) {
    for r in runs {
        let sums = &mut out[r.first..r.first + r.count];
        sums.fill(T::default());
        for u in 0..r.len {
            let start = r.start + u;
            match r.step {
                0 => {
                    let v = x[start];
                    for o in sums.iter_mut() {
                        *o = *o + v;
                    }
                }
                1 => {
                    for (o, &v) in sums.iter_mut().zip(&x[start..start + r.count]) {
                        *o = *o + v;
                    }
                }
                step => {
                    for (o, &v) in sums.iter_mut().zip(x[start..].iter().step_by(step)) {
                        *o = *o + v;
                    }
                }
            }
        }
    }
}

/// Each window's value `g` added to its positions of `out` (zeros), run by
/// run: each position receives its windows' values in the order of the
/// windows.
#[inline(always)]
pub(crate) fn spread_runs<T: Copy + std::ops::Add<Output = T>>(
    runs: &[Run],
    g: &[T],
    out: &mut [T],
) {
    for r in runs {
        let g = &g[r.first..r.first + r.count];
        // Last position first: a position `p` gets window j's value at
        // `u = p - start - j*step`, so going down in `u` goes up in `j`.
        for u in (0..r.len).rev() {
            let start = r.start + u;
            match r.step {
                0 => {
                    for &v in g {
                        out[start] = out[start] + v;
                    }
                }
                1 => {
                    for (o, &v) in out[start..start + r.count].iter_mut().zip(g) {
                        *o = *o + v;
                    }
                }
                step => {
                    for (o, &v) in out[start..].iter_mut().step_by(step).zip(g) {
                        *o = *o + v;
                    }
                }
            }
        }
    }
}

/// `f` run on each row of `len` values of `x` (standard layout), writing
/// `width` values of `out` per row, in pieces of whole rows on rayon's pool
/// when large (the `rayon` feature; `work` is the work of one row).
pub(crate) fn for_rows<T: Copy + Send + Sync>(
    x: &[T],
    len: usize,
    out: &mut [T],
    width: usize,
    work: usize,
    f: impl Fn(&[T], &mut [T]) + Sync + Send,
) {
    if width == 0 {
        return;
    }
    let rows = out.len() / width;
    let serial = |x: &[T], out: &mut [T]| {
        vectorized(
            #[inline(always)]
            || {
                for (r, o) in out.chunks_exact_mut(width).enumerate() {
                    f(&x[r * len..(r + 1) * len], o);
                }
            },
        )
    };
    #[cfg(feature = "rayon")]
    if rows > 1 && len > 0 && crate::core::broadcast::parallel(rows.saturating_mul(work.max(1))) {
        use rayon::prelude::*;
        crate::core::spin::region();
        let piece =
            crate::core::buffers::piece_rows(out.len(), width, crate::core::broadcast::PIECE_MIN);
        let per = (piece / width).max(1);
        x.par_chunks(per * len)
            .zip(out.par_chunks_mut(per * width))
            .for_each(|(x, o)| serial(x, o));
        return;
    }
    let _ = (rows, work);
    serial(x, out)
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;
    use crate::library::pooling::{geometry, PoolArgs};
    use crate::{DType, TensorMeta};

    /// The window-at-a-time kernel this module replaced, kept as the reference.
    fn reference_max_pool<T: Element + PartialOrd>(
        x: &[T],
        g: &Planes,
        neg_inf: T,
        values: &mut Vec<T>,
        indices: &mut Vec<i64>,
    ) {
        let [h, w] = &g.window.axes;
        let rows: Vec<(usize, usize)> = (0..h.out).map(|i| h.taps(i)).collect();
        let cols: Vec<(usize, usize)> = (0..w.out).map(|j| w.taps(j)).collect();
        let (dh, dw) = (h.dilation, w.dilation);
        let width = w.size;
        let past_plane = g.plane() as i64;
        for plane in x.chunks_exact(g.plane()) {
            for &(r0, nr) in &rows {
                for &(c0, nc) in &cols {
                    if nr == 0 || nc == 0 {
                        values.push(neg_inf);
                        indices.push(past_plane);
                        continue;
                    }
                    // As PyTorch: start at -inf with the first valid position; a
                    // greater value or a NaN replaces the maximum.
                    // Branch-free selects: which tap wins is data-dependent, and a
                    // mispredicted branch per tap cost more than the loads.
                    let mut best = neg_inf;
                    let mut at = r0 * width + c0;
                    for t in 0..nr {
                        let row = (r0 + t * dh) * width;
                        for u in 0..nc {
                            let i = row + c0 + u * dw;
                            let v = plane[i];
                            #[allow(clippy::eq_op)]
                            let take = (v > best) | (v != v);
                            best = if take { v } else { best };
                            at = if take { i } else { at };
                        }
                    }
                    values.push(best);
                    indices.push(at as i64);
                }
            }
        }
    }

    /// The window sums the runs replaced, kept as the reference.
    fn reference_sums<T: Copy + Default + std::ops::Add<Output = T>>(
        windows: &[(usize, usize)],
        x: &[T],
        out: &mut [T],
    ) {
        for (o, &(s, e)) in out.iter_mut().zip(windows) {
            *o = x[s..e].iter().fold(T::default(), |acc, &v| acc + v);
        }
    }

    /// The spread the runs replaced, kept as the reference.
    fn reference_spread<T: Copy + std::ops::Add<Output = T>>(
        windows: &[(usize, usize)],
        g: &[T],
        out: &mut [T],
    ) {
        for (&v, &(s, e)) in g.iter().zip(windows) {
            for o in &mut out[s..e] {
                *o = *o + v;
            }
        }
    }

    /// A small deterministic generator (xorshift).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// Mostly small integers (many ties), some NaNs, infinities and
        /// signed zeros.
        fn value(&mut self) -> f64 {
            match self.below(40) {
                0 => f64::NAN,
                1 => f64::INFINITY,
                2 | 3 => f64::NEG_INFINITY,
                4 => -0.0,
                5 => 0.0,
                6 => -f64::NAN,
                _ => self.below(5) as f64 - 2.0,
            }
        }
    }

    fn bits<T: Into<f64> + Copy>(v: &[T]) -> Vec<u64> {
        v.iter().map(|&x| x.into().to_bits()).collect()
    }

    /// The arguments of a max pooling: kernel, stride, padding, dilation.
    fn pool_args<'a>(
        kernel_size: &'a [i64],
        stride: &'a [i64],
        padding: &'a [i64],
        dilation: &'a [i64],
        ceil_mode: bool,
    ) -> PoolArgs<'a> {
        PoolArgs {
            kernel_size,
            stride: Some(stride),
            padding,
            dilation,
            ceil_mode,
        }
    }

    /// Runs the kernel and the reference on `x` pooled with `args`, and
    /// compares the values bit for bit and the positions.
    fn agree<T: MaxElem + Into<f64>>(x: &[T], shape: &[usize], args: &PoolArgs) -> bool {
        let Ok(g) = geometry(&TensorMeta::new(shape, T::DTYPE), args) else {
            return false;
        };
        let n = g.lead.iter().product::<usize>() * g.windows();
        let (mut values, mut indices) = (vec![T::NEG_INF; n], vec![0i64; n]);
        max_pool_planes(x, &g, &mut values, &mut indices);
        let (mut want_v, mut want_i) = (Vec::new(), Vec::new());
        reference_max_pool(x, &g, T::NEG_INF, &mut want_v, &mut want_i);
        assert_eq!(
            (bits(&values), &indices),
            (bits(&want_v), &want_i),
            "shape {shape:?}, kernel {:?}, stride {:?}, padding {:?}, dilation {:?}, ceil {}",
            args.kernel_size,
            args.stride,
            args.padding,
            args.dilation,
            args.ceil_mode
        );
        true
    }

    pub(crate) fn max_pooling_scans_as_the_window_at_a_time_kernel() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut checked = 0;
        for case in 0..3000 {
            let (h, w) = (1 + rng.below(9) as usize, 1 + rng.below(19) as usize);
            let lead = 1 + rng.below(3) as usize;
            let k = [1 + rng.below(4) as i64, 1 + rng.below(4) as i64];
            let s = [1 + rng.below(3) as i64, 1 + rng.below(3) as i64];
            let p = [
                rng.below(k[0] as u64 / 2 + 1) as i64,
                rng.below(k[1] as u64 / 2 + 1) as i64,
            ];
            let d = [1 + rng.below(3) as i64, 1 + rng.below(3) as i64];
            let ceil_mode = rng.below(2) == 0;
            let args = pool_args(&k, &s, &p, &d, ceil_mode);
            let shape = [lead, h, w];
            let x: Vec<f64> = (0..lead * h * w).map(|_| rng.value()).collect();
            let ok = if case % 2 == 0 {
                agree(&x, &shape, &args)
            } else {
                let x: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                agree(&x, &shape, &args)
            };
            checked += usize::from(ok);
        }
        assert!(checked > 1500, "only {checked} cases had an output");
    }

    pub(crate) fn max_pooling_of_wide_planes_and_large_kernels() {
        // Rows longer than a vector, flat and row-by-row scans, strides
        // along rows, windows of many taps.
        let mut rng = Rng(7);
        // Kernel, stride, padding, dilation.
        type Case = ([i64; 2], [i64; 2], [i64; 2], [i64; 2]);
        let cases: [Case; 6] = [
            ([2, 2], [1, 1], [0, 0], [1, 1]),
            ([3, 3], [1, 1], [1, 1], [1, 1]),
            ([2, 3], [2, 2], [1, 0], [1, 2]),
            ([5, 4], [1, 3], [2, 2], [1, 1]),
            ([3, 3], [1, 1], [0, 0], [4, 5]),
            ([9, 40], [1, 1], [4, 0], [1, 1]),
        ];
        for (k, s, p, d) in cases {
            for ceil_mode in [false, true] {
                let args = pool_args(&k, &s, &p, &d, ceil_mode);
                let shape = [2, 23, 61];
                let x: Vec<f64> = (0..2 * 23 * 61).map(|_| rng.value()).collect();
                assert!(agree(&x, &shape, &args));
                let x: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                assert!(agree(&x, &shape, &args));
            }
        }
    }

    pub(crate) fn a_nan_wins_and_a_later_nan_moves_the_index() {
        let x = [
            1.0f32,
            f32::NAN,
            3.0,
            f32::NAN,
            f32::INFINITY,
            2.0,
            2.0,
            2.0,
            2.0,
        ];
        let args = pool_args(&[1, 3], &[1, 1], &[0, 0], &[1, 1], false);
        let g = geometry(&TensorMeta::new([1, 1, 9], DType::F32), &args).unwrap();
        let (mut v, mut i) = (vec![0.0f32; 7], vec![0i64; 7]);
        max_pool_planes(&x, &g, &mut v, &mut i);
        assert!(v[..4].iter().all(|v| v.is_nan()));
        assert_eq!(&v[4..], [f32::INFINITY, 2.0, 2.0]);
        assert_eq!(i, [1, 3, 3, 3, 4, 5, 6]);
    }

    /// Windows of one dim: regular runs (as the poolings make) and
    /// arbitrary ones.
    fn some_windows(rng: &mut Rng, size: usize) -> Vec<(usize, usize)> {
        let count = rng.below(12) as usize;
        if rng.below(2) == 0 {
            (0..count)
                .map(|_| {
                    let s = rng.below(size as u64 + 1) as usize;
                    (s, s + rng.below((size - s) as u64 + 1) as usize)
                })
                .collect()
        } else {
            let (len, step) = (rng.below(5) as usize, rng.below(4) as usize);
            (0..count)
                .map(|j| (j * step, j * step + len))
                .filter(|&(_, e)| e <= size)
                .collect()
        }
    }

    pub(crate) fn window_sums_add_in_the_order_of_the_window_at_a_time_loops() {
        let mut rng = Rng(99);
        for _ in 0..3000 {
            let size = rng.below(30) as usize;
            let mut windows = some_windows(&mut rng, size);
            if rng.below(3) == 0 {
                // A border window before and after, as padding makes them.
                windows.insert(0, (0, size.min(1)));
                windows.push((size.saturating_sub(1), size));
            }
            // Magnitudes far apart, so that another order rounds otherwise.
            let mut value = || match rng.below(4) {
                0 => 1e16,
                1 => -1e16,
                _ => rng.below(100) as f64 * 0.37 - 17.0,
            };
            let x: Vec<f64> = (0..size).map(|_| value()).collect();
            let g: Vec<f64> = (0..windows.len()).map(|_| value()).collect();
            let runs = runs(&windows);
            let (mut got, mut want) = (vec![0.0; windows.len()], vec![0.0; windows.len()]);
            sum_runs(&runs, &x, &mut got);
            reference_sums(&windows, &x, &mut want);
            assert_eq!(bits(&got), bits(&want), "{windows:?}");
            let (mut got, mut want) = (vec![0.0; size], vec![0.0; size]);
            spread_runs(&runs, &g, &mut got);
            reference_spread(&windows, &g, &mut want);
            assert_eq!(bits(&got), bits(&want), "{windows:?}");
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let (mut got, mut want) = (vec![0.0f32; windows.len()], vec![0.0f32; windows.len()]);
            sum_runs(&runs, &x32, &mut got);
            reference_sums(&windows, &x32, &mut want);
            assert_eq!(bits(&got), bits(&want), "{windows:?}");
        }
    }

    /// The window geometry the kernels read (`window.rs`, shared with the
    /// convolutions) against its definition, position by position: the
    /// number of windows (with and without `ceil_mode`), each window's taps
    /// inside the input, and, the other way round, the windows each tap
    /// reads inside the input.
    pub(crate) fn window_geometry_matches_its_definition() {
        use crate::library::window::Params;
        let mut rng = Rng(31);
        let mut fitted = 0;
        for _ in 0..4000 {
            let size = 1 + rng.below(12) as usize;
            let (k, s) = (1 + rng.below(5) as usize, 1 + rng.below(4) as usize);
            let ceil_mode = rng.below(2) == 0;
            // (A pooling's padding, with ceil_mode, is at most half the kernel.)
            let p = rng.below(if ceil_mode { k as u64 / 2 + 1 } else { 4 }) as usize;
            let d = 1 + rng.below(3) as usize;
            let params = Params::<1> {
                kernel: [k],
                stride: [s],
                padding: [p],
                dilation: [d],
                ceil_mode,
            };
            // Window i spans [i*s - p, i*s - p + span) in input positions;
            // it must end inside the padded input, or with ceil_mode start
            // inside the input or its left padding and overhang the padded
            // end by less than the stride.
            let (span, padded_end) = ((k - 1) * d + 1, size + p);
            let fits = |i: usize| {
                let end = i * s + span; // (shifted by p)
                if ceil_mode {
                    end < padded_end + p + s && i * s < padded_end
                } else {
                    end <= padded_end + p
                }
            };
            let want = (0..).take_while(|&i| fits(i)).count();
            let Ok(window) = params.over([size]) else {
                assert_eq!(want, 0, "{params:?} on {size}");
                continue;
            };
            fitted += 1;
            let [a] = window.axes;
            assert_eq!(a.out, want, "{params:?} on {size}");
            for i in 0..a.out {
                let inside: Vec<usize> = (0..k)
                    .map(|t| (i * s + t * d) as i128 - p as i128)
                    .filter(|&at| at >= 0 && at < size as i128)
                    .map(|at| at as usize)
                    .collect();
                let (first, count) = a.taps(i);
                let taps: Vec<usize> = (0..count).map(|c| first + c * d).collect();
                assert_eq!(taps, inside, "window {i} of {params:?} on {size}");
            }
            for t in 0..k {
                let reads: Vec<usize> = (0..a.out)
                    .filter(|&i| {
                        let at = (i * s + t * d) as i128 - p as i128;
                        at >= 0 && at < size as i128
                    })
                    .collect();
                let (lo, hi) = a.reading(t);
                assert_eq!((lo..hi).collect::<Vec<_>>(), reads, "tap {t} of {params:?}");
            }
        }
        assert!(fitted > 2000, "only {fitted} cases fit a window");
    }

    pub(crate) fn runs_cover_the_windows_in_order() {
        let windows = [
            (0, 1),
            (0, 2),
            (1, 3),
            (2, 4),
            (3, 5),
            (4, 5),
            (4, 5),
            (4, 5),
            (2, 2),
        ];
        let got = runs(&windows);
        let starts: Vec<(usize, usize, usize)> =
            got.iter().map(|r| (r.first, r.count, r.step)).collect();
        assert_eq!(starts, [(0, 1, 0), (1, 4, 1), (5, 3, 0), (8, 1, 0)]);
    }

    /// The split over threads changes no value: pools of one and two
    /// threads against the reference, on inputs above the split's threshold.
    #[cfg(feature = "rayon")]
    pub(crate) fn one_thread_and_two_give_the_same_bits() {
        let mut rng = Rng(5);
        let shape = [67, 29, 31];
        let x: Vec<f32> = (0..67 * 29 * 31).map(|_| rng.value() as f32).collect();
        let args = pool_args(&[3, 2], &[1, 1], &[1, 1], &[1, 1], false);
        let g = geometry(&TensorMeta::new(shape, DType::F32), &args).unwrap();
        let n = 67 * g.windows();
        let (mut want_v, mut want_i) = (Vec::new(), Vec::new());
        reference_max_pool(&x, &g, f32::NEG_INFINITY, &mut want_v, &mut want_i);
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (v, i) = pool.install(|| {
                let (mut v, mut i) = (vec![0.0f32; n], vec![0i64; n]);
                max_pool_planes(&x, &g, &mut v, &mut i);
                (v, i)
            });
            assert_eq!(
                (bits(&v), &i),
                (bits(&want_v), &want_i),
                "{threads} threads"
            );
        }
    }

    crate::core::unit_test::test_list! {
        max_pooling_scans_as_the_window_at_a_time_kernel,
        max_pooling_of_wide_planes_and_large_kernels,
        a_nan_wins_and_a_later_nan_moves_the_index,
        window_sums_add_in_the_order_of_the_window_at_a_time_loops,
        runs_cover_the_windows_in_order,
        window_geometry_matches_its_definition,
        #[cfg(feature = "rayon")]
        one_thread_and_two_give_the_same_bits,
    }
}
