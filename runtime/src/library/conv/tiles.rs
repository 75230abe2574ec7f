//! The tiled kernels of `conv2d_tiled` (a convolution's forward pass) and
//! `conv2d_weight_grads` (each example's weight gradient): im2col of one
//! example's block rows at a time into a small scratch matrix that stays in
//! the L2 cache, and a GEMM straight from it into the output. The full
//! unfolded input (`unfold`'s `[N, C * kh * kw, L]`, 58 MB for W16) is never
//! built.
//!
//! A tile is `rows` consecutive rows of the grid of blocks of one example:
//! its scratch is `[C * kh * kw, rows * bw]`, at most about [`TILE_BYTES`].
//! The tiles depend only on the shapes, never on the number of threads, and
//! each example is computed by one thread, in the same order: with the
//! `rayon` feature the examples are split over the pool, and the results are
//! the same bits for any number of threads.

use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};

use super::Geometry;
use crate::core::buffers::{filled, Cached};
use crate::library::gemm::Gemm;

/// The most bytes of one tile's scratch matrix (unless one block row alone
/// is larger): W16's `[288, 7 * 28]` f32 tile is 226 KB, which an L2 cache of
/// 512 KB holds beside the GEMM's packed panels.
pub(super) const TILE_BYTES: usize = 256 << 10;

/// The tile size in use: [`TILE_BYTES`], or (for measurements)
/// `BATCHRULES_CONV_TILE_BYTES`.
fn tile_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("BATCHRULES_CONV_TILE_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(TILE_BYTES)
    })
}

/// The block rows of each tile of an example whose grid of blocks is `bh`
/// rows of `bw`, with `k` rows of the scratch (`C * kh * kw`) of `elem`
/// bytes each: as many tiles as the size limit needs, of equal rows (the last
/// one shorter).
fn tile_rows(k: usize, [bh, bw]: [usize; 2], elem: usize) -> usize {
    let row_bytes = k.saturating_mul(bw).saturating_mul(elem).max(1);
    let fit = (tile_limit() / row_bytes).clamp(1, bh.max(1));
    let tiles = bh.max(1).div_ceil(fit);
    bh.max(1).div_ceil(tiles)
}

/// The tiles of an example: the ranges of block rows, in order.
fn tiles(k: usize, blocks: [usize; 2], elem: usize) -> impl Iterator<Item = (usize, usize)> {
    let rows = tile_rows(k, blocks, elem);
    (0..blocks[0])
        .step_by(rows)
        .map(move |o| (o, (o + rows).min(blocks[0])))
}

/// The shapes of one convolution: its geometry (`n` images of `c` channels),
/// the output channels and the groups.
pub(super) struct Conv<'a> {
    pub geometry: &'a Geometry,
    pub c_out: usize,
    pub groups: usize,
}

impl Conv<'_> {
    /// Rows of the scratch (`C * kh * kw`), and per group.
    fn k(&self) -> usize {
        self.geometry.c * self.geometry.window.kernel.iter().product::<usize>()
    }

    /// Output positions per example.
    fn l(&self) -> usize {
        self.geometry.blocks[0] * self.geometry.blocks[1]
    }

    /// Values of one input image.
    fn image(&self) -> usize {
        self.geometry.c * self.geometry.size[0] * self.geometry.size[1]
    }

    /// The scratch values of the largest tile.
    fn scratch_len<T>(&self) -> usize {
        let rows = tile_rows(self.k(), self.geometry.blocks, std::mem::size_of::<T>());
        self.k() * rows * self.geometry.blocks[1]
    }

    /// im2col of the block rows `o0..o1` of image `n` of `x` into `dst`
    /// (`[C * kh * kw, (o1 - o0) * bw]`, row-major; padding as zeros).
    fn pack<T: ndarray::LinalgScalar>(&self, x: &[T], n: usize, (o0, o1): (usize, usize), dst: &mut [T]) {
        let g = self.geometry;
        let [h, w] = g.size;
        let bw = g.blocks[1];
        let stride = g.window.stride[1];
        let mut at = 0;
        g.for_each_row_in(n * g.c..(n + 1) * g.c, o0..o1, |nc, input_row, (lo, hi), first| {
            let out = &mut dst[at..at + bw];
            at += bw;
            let Some(r) = input_row else {
                out.fill(T::zero());
                return;
            };
            let src = &x[(nc * h + r) * w..(nc * h + r + 1) * w];
            out[..lo].fill(T::zero());
            out[hi..].fill(T::zero());
            if hi == lo {
                // No block column reads this row (`first` is then meaningless).
            } else if stride == 1 {
                out[lo..hi].copy_from_slice(&src[first..first + (hi - lo)]);
            } else {
                for (o, &v) in out[lo..hi].iter_mut().zip(src[first..].iter().step_by(stride)) {
                    *o = v;
                }
            }
        });
    }

    /// Runs `example(n, out_n, scratch)` for each example `n` with its part
    /// `out_n` (`per` values) of `out`: on this thread, or, with the `rayon`
    /// feature and when there is enough work, on the pool (one example per
    /// task; each has the same work whatever thread runs it).
    fn each_example<T: Gemm>(
        &self,
        out: &mut [T],
        per: usize,
        example: impl Fn(usize, &mut [T], &mut Vec<T>) + Sync + Send,
    ) {
        if per == 0 {
            return;
        }
        let scratch = || vec![T::zero(); self.scratch_len::<T>()];
        #[cfg(feature = "rayon")]
        {
            let work = self.k().saturating_mul(self.l()).saturating_mul(self.c_out);
            if self.geometry.n > 1 && work >= PARALLEL_WORK && rayon::current_num_threads() > 1 {
                use rayon::prelude::*;
                crate::core::spin::region();
                out.par_chunks_mut(per)
                    .enumerate()
                    .for_each_init(scratch, |s, (n, o)| example(n, o, s));
                return;
            }
        }
        let mut s = scratch();
        for (n, o) in out.chunks_mut(per).enumerate() {
            example(n, o, &mut s);
        }
    }
}

/// The fewest multiply-adds per example for which the examples are split
/// over the pool.
#[cfg(feature = "rayon")]
const PARALLEL_WORK: usize = 1 << 18;

/// `[N, C_out, L]`: the convolution of `x` (`[N, C, H, W]`, standard layout)
/// with `w` (`[C_out, C / groups, kh, kw]`), without bias.
pub(super) fn forward<T: Gemm + Cached>(x: &[T], w: &[T], conv: &Conv) -> Vec<T> {
    let (k, l, groups) = (conv.k(), conv.l(), conv.groups);
    let (kg, cog) = (k / groups, conv.c_out / groups);
    let bw = conv.geometry.blocks[1];
    let per = conv.c_out * l;
    let mut out = filled(conv.geometry.n * per, T::zero());
    let image = conv.image();
    conv.each_example(&mut out, per, |n, out_n, scratch| {
        for (o0, o1) in tiles(k, conv.geometry.blocks, std::mem::size_of::<T>()) {
            let tl = (o1 - o0) * bw;
            let tile = &mut scratch[..k * tl];
            conv.pack(&x[n * image..(n + 1) * image], 0, (o0, o1), tile);
            for gi in 0..groups {
                let a = ArrayView2::from_shape((cog, kg), &w[gi * cog * kg..(gi + 1) * cog * kg]);
                let b = ArrayView2::from_shape((kg, tl), &tile[gi * kg * tl..(gi + 1) * kg * tl]);
                let c = ArrayViewMut2::from_shape(
                    (cog, tl).strides((l, 1)),
                    &mut out_n[gi * cog * l + o0 * bw..],
                );
                // (The shapes hold by construction; from_shape only checks them.)
                if let (Ok(a), Ok(b), Ok(mut c)) = (a, b, c) {
                    T::gemm_unsplit(&a, &b, &mut c, false);
                }
            }
        }
    });
    out
}

/// `[N, C_out, C / groups * kh * kw]`: each example's gradient of the
/// weight, `g_n [C_out, L] @ blocks_n^T` per group, from `x` (`[N, C, H, W]`)
/// and the output gradient `g` (`[N, C_out, L]`), both standard layout.
pub(super) fn weight_grads<T: Gemm + Cached>(x: &[T], g: &[T], conv: &Conv) -> Vec<T> {
    let (k, l, groups) = (conv.k(), conv.l(), conv.groups);
    let (kg, cog) = (k / groups, conv.c_out / groups);
    let bw = conv.geometry.blocks[1];
    let per = conv.c_out * kg;
    let mut out = filled(conv.geometry.n * per, T::zero());
    let image = conv.image();
    let per_g = conv.c_out * l;
    conv.each_example(&mut out, per, |n, out_n, scratch| {
        let g_n = &g[n * per_g..(n + 1) * per_g];
        for (t, (o0, o1)) in tiles(k, conv.geometry.blocks, std::mem::size_of::<T>()).enumerate() {
            let tl = (o1 - o0) * bw;
            let tile = &mut scratch[..k * tl];
            conv.pack(&x[n * image..(n + 1) * image], 0, (o0, o1), tile);
            for gi in 0..groups {
                let a = ArrayView2::from_shape((cog, tl).strides((l, 1)), &g_n[gi * cog * l + o0 * bw..]);
                let b = ArrayView2::from_shape((kg, tl), &tile[gi * kg * tl..(gi + 1) * kg * tl]);
                let c = ArrayViewMut2::from_shape((cog, kg), &mut out_n[gi * cog * kg..(gi + 1) * cog * kg]);
                if let (Ok(a), Ok(b), Ok(mut c)) = (a, b, c) {
                    T::gemm_unsplit(&a, &b.t(), &mut c, t > 0);
                }
            }
        }
    });
    out
}
