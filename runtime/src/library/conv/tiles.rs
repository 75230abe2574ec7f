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

use std::mem::size_of;

use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};

use super::Blocks;
use crate::core::buffers::{filled, Cached};
use crate::library::gemm::Gemm;

/// The most bytes of one tile's scratch matrix (unless one block row alone
/// is larger): W16's whole example, `[288, 784]` f32, is one tile of 903 KB.
/// Smaller tiles were slower (W16 on a loaded core, two rounds: 64 KiB tiles
/// 71-72 ms, 256 KiB 63 ms, 1 MiB 59 ms, one tile per example 59 ms): the
/// `gemm` crate packs its operands into cache-sized panels itself, and each
/// product more pays its packing of the weight again.
pub(super) const TILE_BYTES: usize = 1 << 20;

/// The block rows of each tile of an example whose grid of blocks is `bh`
/// rows of `bw`, with `k` rows of the scratch (`C * kh * kw`) of `elem`
/// bytes each: as many tiles as the size limit of `limit` bytes needs, of
/// equal rows (the last one shorter).
fn tile_rows(k: usize, [bh, bw]: [usize; 2], elem: usize, limit: usize) -> usize {
    let row_bytes = k.saturating_mul(bw).saturating_mul(elem).max(1);
    let fit = (limit / row_bytes).clamp(1, bh.max(1));
    let tiles = bh.max(1).div_ceil(fit);
    bh.max(1).div_ceil(tiles)
}

/// The tiles of an example: the ranges of block rows, in order.
fn tiles(
    k: usize,
    blocks: [usize; 2],
    elem: usize,
    limit: usize,
) -> impl Iterator<Item = (usize, usize)> {
    let rows = tile_rows(k, blocks, elem, limit);
    (0..blocks[0])
        .step_by(rows)
        .map(move |o| (o, (o + rows).min(blocks[0])))
}

/// The shapes of one convolution: its blocks (over `n` images of `c`
/// channels), the output channels and the groups.
pub(super) struct Conv<'a> {
    pub blocks: &'a Blocks,
    pub c_out: usize,
    pub groups: usize,
    /// The most bytes of a tile's scratch ([`TILE_BYTES`]; smaller in the
    /// tests, to cut examples into several tiles).
    pub tile_bytes: usize,
}

impl Conv<'_> {
    /// Rows of the scratch (`C * kh * kw`), and per group.
    fn k(&self) -> usize {
        let [rows, cols] = &self.blocks.window.axes;
        self.blocks.c * rows.kernel * cols.kernel
    }

    /// Output positions per example.
    fn l(&self) -> usize {
        let [bh, bw] = self.blocks.grid();
        bh * bw
    }

    /// Values of one input image.
    fn image(&self) -> usize {
        let [h, w] = self.blocks.size();
        self.blocks.c * h * w
    }

    /// The scratch values of the largest tile.
    fn scratch_len<T>(&self) -> usize {
        let elem = std::mem::size_of::<T>();
        let grid = self.blocks.grid();
        let rows = tile_rows(self.k(), grid, elem, self.tile_bytes);
        self.k() * rows * grid[1]
    }

    /// im2col of the block rows `o0..o1` of image `n` of `x` into `dst`
    /// (`[C * kh * kw, (o1 - o0) * bw]`, row-major; padding as zeros).
    fn pack<T: ndarray::LinalgScalar>(
        &self,
        x: &[T],
        n: usize,
        (o0, o1): (usize, usize),
        dst: &mut [T],
    ) {
        let g = self.blocks;
        let [h, w] = g.size();
        let bw = g.grid()[1];
        let stride = g.window.axes[1].stride;
        let mut at = 0;
        g.for_each_row_in(
            n * g.c..(n + 1) * g.c,
            o0..o1,
            |nc, input_row, (lo, hi), first| {
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
                    // Every `stride`-th value from `first` on: the last one
                    // read ends the slice, so each chunk holds its value
                    // first (a plain loop; `step_by` cost a division and a
                    // compare per value here).
                    let span = (hi - lo - 1) * stride + 1;
                    for (o, chunk) in out[lo..hi]
                        .iter_mut()
                        .zip(src[first..first + span].chunks(stride))
                    {
                        *o = chunk[0];
                    }
                }
            },
        );
    }

    /// The output of `per` values per example, each example's part written
    /// by `example(n, out_n, scratch)` (zeroed first): on this thread, or,
    /// with the `rayon` feature and enough work, in pieces of whole examples
    /// on the pool, each piece zeroed by its own task (a serial zeroing of
    /// the output took 2% of W14 on two threads). Each example has the same
    /// work whatever thread runs it.
    fn each_example<T: Gemm + Cached>(
        &self,
        per: usize,
        example: impl Fn(usize, &mut [T], &mut Vec<T>) + Sync + Send,
    ) -> Vec<T> {
        let n = self.blocks.n;
        if per == 0 || n == 0 {
            // Nothing to compute (and no scratch to size: an empty batch may
            // have huge spatial dims).
            return filled(n * per, T::zero());
        }
        let scratch = || vec![T::zero(); self.scratch_len::<T>()];
        #[cfg(feature = "rayon")]
        {
            let work = (self.k().saturating_mul(self.l()))
                .saturating_mul(self.c_out)
                .saturating_mul(n);
            if n > 1 && work >= PARALLEL_WORK && crate::core::threads::parallel() {
                // Pieces of whole examples, a few per thread (one scratch
                // each; the pieces' sizes change no value).
                let piece = crate::core::buffers::piece_rows(n * per, per, per);
                let built = crate::core::buffers::par_build(n * per, piece, |start, p| {
                    p.extend(std::iter::repeat_n(T::zero(), p.len()));
                    let mut s = scratch();
                    for (i, o) in p.written_mut().chunks_mut(per).enumerate() {
                        example(start / per + i, o, &mut s);
                    }
                });
                if let Ok(out) = built {
                    return out;
                }
            }
        }
        let mut out = filled(n * per, T::zero());
        let mut s = scratch();
        for (i, o) in out.chunks_mut(per).enumerate() {
            example(i, o, &mut s);
        }
        out
    }
}

/// The fewest multiply-adds in all (every example's) for which the examples
/// are split over the pool. (A bound per example left W12's two layers, 2e5
/// multiply-adds an example, 5e7 a batch, on one thread.)
#[cfg(feature = "rayon")]
const PARALLEL_WORK: usize = 1 << 18;

/// `[N, C_out, L]`: the convolution of `x` (`[N, C, H, W]`, standard layout)
/// with `w` (`[C_out, C / groups, kh, kw]`), without bias.
pub(super) fn forward<T: Gemm + Cached>(x: &[T], w: &[T], conv: &Conv) -> Vec<T> {
    let (k, l, groups) = (conv.k(), conv.l(), conv.groups);
    let (kg, cog) = (k / groups, conv.c_out / groups);
    let grid = conv.blocks.grid();
    let bw = grid[1];
    let per = conv.c_out * l;
    let image = conv.image();
    conv.each_example(per, |n, out_n, scratch| {
        for (o0, o1) in tiles(k, grid, size_of::<T>(), conv.tile_bytes) {
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
    })
}

/// `[N, C_out, C / groups * kh * kw]`: each example's gradient of the
/// weight, `g_n [C_out, L] @ blocks_n^T` per group, from `x` (`[N, C, H, W]`)
/// and the output gradient `g` (`[N, C_out, L]`), both standard layout.
pub(super) fn weight_grads<T: Gemm + Cached>(x: &[T], g: &[T], conv: &Conv) -> Vec<T> {
    let (k, l, groups) = (conv.k(), conv.l(), conv.groups);
    let (kg, cog) = (k / groups, conv.c_out / groups);
    let grid = conv.blocks.grid();
    let bw = grid[1];
    let per = conv.c_out * kg;
    let image = conv.image();
    let per_g = conv.c_out * l;
    conv.each_example(per, |n, out_n, scratch| {
        let g_n = &g[n * per_g..(n + 1) * per_g];
        for (t, (o0, o1)) in tiles(k, grid, size_of::<T>(), conv.tile_bytes).enumerate() {
            let tl = (o1 - o0) * bw;
            let tile = &mut scratch[..k * tl];
            conv.pack(&x[n * image..(n + 1) * image], 0, (o0, o1), tile);
            for gi in 0..groups {
                let a = ArrayView2::from_shape(
                    (cog, tl).strides((l, 1)),
                    &g_n[gi * cog * l + o0 * bw..],
                );
                let b = ArrayView2::from_shape((kg, tl), &tile[gi * kg * tl..(gi + 1) * kg * tl]);
                let c = ArrayViewMut2::from_shape(
                    (cog, kg),
                    &mut out_n[gi * cog * kg..(gi + 1) * cog * kg],
                );
                if let (Ok(a), Ok(b), Ok(mut c)) = (a, b, c) {
                    T::gemm_unsplit(&a, &b.t(), &mut c, t > 0);
                }
            }
        }
    })
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;
    use crate::library::window::Params;

    /// Values in [-1, 1) from a simple generator.
    fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect()
    }

    /// One convolution's shapes: input `[n, c, h, w]`, `c_out`, kernel,
    /// stride, padding, dilation, groups.
    type Case = (
        [usize; 4],
        usize,
        [usize; 2],
        [usize; 2],
        [usize; 2],
        [usize; 2],
        usize,
    );

    const CASES: &[Case] = &[
        ([2, 3, 7, 6], 4, [3, 3], [1, 1], [1, 1], [1, 1], 1),
        ([3, 4, 9, 7], 6, [3, 2], [2, 1], [2, 0], [1, 2], 2),
        // W12's first layer: 1 channel, 8x8 kernel, stride 2, padding 3.
        ([2, 1, 28, 28], 16, [8, 8], [2, 2], [3, 3], [1, 1], 1),
        // Padding wider than the kernel reaches (rows of zeros only).
        ([1, 2, 3, 4], 2, [2, 2], [3, 1], [4, 2], [1, 1], 1),
    ];

    fn blocks(&(xs, _, kernel, stride, padding, dilation, _): &Case) -> Blocks {
        let int = |v: [usize; 2]| v.map(|v| v as i64);
        let params = Params::parse(&int(kernel), &int(dilation), &int(padding), &int(stride));
        Blocks {
            n: xs[0],
            c: xs[1],
            window: params
                .and_then(|p| p.over([xs[2], xs[3]]))
                .expect("a valid case"),
        }
    }

    /// The direct definition: for each output element, the sum over its
    /// group's channels and the kernel of input times weight (zero outside
    /// the input); and each example's weight gradient likewise.
    fn scalar_reference(case: &Case, x: &[f64], w: &[f64], g: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let ([n, c, h, wd], c_out, [kh, kw], [sh, sw], [ph, pw], [dh, dw], groups) = *case;
        let [bh, bw] = blocks(case).grid();
        let (cg, cog) = (c / groups, c_out / groups);
        let mut y = vec![0.0; n * c_out * bh * bw];
        let mut gw = vec![0.0; n * c_out * cg * kh * kw];
        for b in 0..n {
            for o in 0..c_out {
                let gi = o / cog;
                for oy in 0..bh {
                    for ox in 0..bw {
                        let at = ((b * c_out + o) * bh + oy) * bw + ox;
                        for ci in 0..cg {
                            for ki in 0..kh {
                                for kj in 0..kw {
                                    let iy = (oy * sh + ki * dh) as isize - ph as isize;
                                    let ix = (ox * sw + kj * dw) as isize - pw as isize;
                                    if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                                        continue;
                                    }
                                    let xi = ((b * c + gi * cg + ci) * h + iy as usize) * wd
                                        + ix as usize;
                                    let wi = ((o * cg + ci) * kh + ki) * kw + kj;
                                    y[at] += x[xi] * w[wi];
                                    gw[b * c_out * cg * kh * kw + wi] += x[xi] * g[at];
                                }
                            }
                        }
                    }
                }
            }
        }
        (y, gw)
    }

    fn close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            assert!(
                (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                "at {i}: {a} against {b}"
            );
        }
    }

    /// Both kernels against the scalar definition, with one tile per example
    /// and with tiles of one block row (several per example).
    pub(crate) fn tiled_kernels_match_the_direct_definition() {
        for case in CASES {
            let geo = blocks(case);
            let ([n, c, h, wd], c_out, [kh, kw], .., groups) = *case;
            let x = values(n * c * h * wd, 1);
            let w = values(c_out * c / groups * kh * kw, 2);
            let [bh, bw] = geo.grid();
            let g = values(n * c_out * bh * bw, 3);
            let (y_ref, gw_ref) = scalar_reference(case, &x, &w, &g);
            let mut results = vec![];
            for tile_bytes in [TILE_BYTES, 1] {
                let conv = Conv {
                    blocks: &geo,
                    c_out,
                    groups,
                    tile_bytes,
                };
                let (y, gw) = (forward(&x, &w, &conv), weight_grads(&x, &g, &conv));
                close(&y, &y_ref);
                close(&gw, &gw_ref);
                results.push(y);
            }
            // Column tiles never change an output element's sum.
            assert_eq!(results[0], results[1], "{case:?}");
        }
    }

    /// The same programs on pools of 1 and 2 threads give the same bits:
    /// W16's forward, W17's per-sample weight gradients and W12's first
    /// layer under `vmap(grad)`, at reduced batch sizes.
    #[cfg(feature = "rayon")]
    pub(crate) fn one_and_two_threads_give_the_same_bits() {
        use crate::{grad, ops, vmap, Tensor};
        let tensor = |shape: &[usize], seed: u64| {
            let n = shape.iter().product();
            let v: Vec<f32> = values(n, seed).into_iter().map(|v| v as f32).collect();
            Tensor::from_shape_vec(shape, v).expect("a tensor")
        };
        let per_sample = |x: &Tensor, w: &Tensor, stride: i64, padding: i64| {
            vmap(|(w, x): (Tensor, Tensor)| {
                grad(|(w, x): (Tensor, Tensor)| {
                    let y = ops::conv2d(&x, &w, None, &[stride], &[padding], &[1], 1)?;
                    ops::sum(&ops::tanh(&y)?, None, false)
                })
                .call((&w, &x))
            })
            .in_dims([None, Some(0)])
            .call((w, x))
        };
        let programs = || -> crate::Result<Vec<Vec<u32>>> {
            let (x16, w16) = (tensor(&[8, 32, 28, 28], 4), tensor(&[64, 32, 3, 3], 5));
            let (x12, w12) = (tensor(&[16, 1, 28, 28], 6), tensor(&[16, 1, 8, 8], 7));
            let outs = [
                ops::conv2d(&x16, &w16, None, &[1], &[1], &[1], 1)?,
                per_sample(&x16, &w16, 1, 1)?,
                per_sample(&x12, &w12, 2, 3)?,
            ];
            outs.iter()
                .map(|t| {
                    let a = t.to_array::<f32>()?;
                    Ok(a.iter().map(|v| v.to_bits()).collect())
                })
                .collect()
        };
        let on = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a pool")
                .install(programs)
                .expect("the programs run")
        };
        assert_eq!(on(1), on(2));
    }

    crate::core::unit_test::test_list! {
        tiled_kernels_match_the_direct_definition,
        #[cfg(feature = "rayon")]
        one_and_two_threads_give_the_same_bits,
    }
}
