//! NumPy broadcasting: of shapes, and of two arrays under an elementwise function.

use ndarray::{ArcArray, ArrayD, IxDyn};

use crate::core::buffers::{take, Cached};
use crate::core::value::Shape;
use crate::{Element, Error, Result, Tensor};

/// NumPy broadcasting of two shapes.
pub(crate) fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Shape> {
    let n = a.len().max(b.len());
    let mut out: Shape = smallvec::smallvec![0; n];
    for (i, o) in out.iter_mut().enumerate() {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        *o = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// Kernels with at least this many elements run on rayon's pool (with the
/// `rayon` feature).
#[cfg(feature = "rayon")]
pub(crate) const PARALLEL_ELEMENTS: usize = 1 << 17;

/// Whether an elementwise kernel of `len` values runs on rayon's pool: at
/// least [`PARALLEL_ELEMENTS`], and a pool of more than one thread (on one,
/// the serial loop is the same work without the pieces).
#[cfg(feature = "rayon")]
pub(crate) fn parallel(len: usize) -> bool {
    len >= PARALLEL_ELEMENTS && crate::core::threads::parallel()
}

/// The fewest values of a piece of a parallel elementwise kernel.
#[cfg(feature = "rayon")]
pub(crate) const PIECE_MIN: usize = 1 << 14;

/// [`broadcast_shapes`], or an error that shows both shapes.
pub(crate) fn broadcast_or_err(a: &[usize], b: &[usize]) -> Result<Shape> {
    broadcast_shapes(a, b)
        .ok_or_else(|| Error::invalid(format!("shapes {a:?} and {b:?} do not broadcast")))
}

/// Elementwise `f` of two same-typed arrays, broadcast to each other.
pub(crate) fn zip_broadcast<T: Element, U: Element + Cached>(
    a: &ArcArray<T, IxDyn>,
    b: &ArcArray<T, IxDyn>,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Result<Tensor> {
    if a.shape() == b.shape() {
        #[cfg(feature = "rayon")]
        if parallel(a.len()) {
            // (Strided operands are made standard first: one parallel path,
            // compiled once per kernel.)
            let (a, b) = (a.as_standard_layout(), b.as_standard_layout());
            if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
                let piece = crate::core::buffers::piece_rows(x.len(), 1, PIECE_MIN);
                let out = crate::core::buffers::par_build(x.len(), piece, |start, out| {
                    let end = start + out.len();
                    let (x, y) = (&x[start..end], &y[start..end]);
                    crate::core::simd::vectorized(
                        #[inline(always)]
                        || out.extend(x.iter().zip(y).map(|(&p, &q)| f(p, q))),
                    );
                })?;
                return Tensor::from_shape_vec(a.shape(), out);
            }
        }
        if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
            // Both standard layout: into a buffer from the cache.
            let mut out = take(x.len());
            crate::core::simd::vectorized(
                #[inline(always)]
                || out.extend(x.iter().zip(y).map(|(&p, &q)| f(p, q))),
            );
            return Tensor::from_shape_vec(a.shape(), out);
        }
        return Ok(Tensor::from(
            ndarray::Zip::from(a).and(b).map_collect(|&x, &y| f(x, y)),
        ));
    }
    // A row operand (one whose shape is a suffix of the other's, such as a bias)
    // broadcast over contiguous data: a plain loop over rows.
    if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
        let suffix = |long: &[usize], short: &[usize]| long.ends_with(short) && !short.is_empty();
        if suffix(a.shape(), b.shape()) && !y.is_empty() {
            #[cfg(feature = "rayon")]
            if parallel(x.len()) {
                // Whole rows per piece, on the pool.
                let piece = crate::core::buffers::piece_rows(x.len(), y.len(), PIECE_MIN);
                let out = crate::core::buffers::par_build(x.len(), piece, |start, out| {
                    for row in x[start..start + out.len()].chunks_exact(y.len()) {
                        out.extend(row.iter().zip(y).map(|(&p, &q)| f(p, q)));
                    }
                })?;
                return Tensor::from_shape_vec(a.shape(), out);
            }
            let mut out = take(x.len());
            for row in x.chunks_exact(y.len()) {
                out.extend(row.iter().zip(y).map(|(&p, &q)| f(p, q)));
            }
            return Tensor::from_shape_vec(a.shape(), out);
        }
        if suffix(b.shape(), a.shape()) && !x.is_empty() {
            let mut out = take(y.len());
            for row in y.chunks_exact(x.len()) {
                out.extend(x.iter().zip(row).map(|(&p, &q)| f(p, q)));
            }
            return Tensor::from_shape_vec(b.shape(), out);
        }
    }
    // One operand of a single value (a 0-dim scalar, as the vjps of relu and
    // friends compare against) over contiguous data of the output's shape.
    if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
        let out_shape = broadcast_or_err(a.shape(), b.shape())?;
        if let ([q], true) = (y, out_shape[..] == *a.shape()) {
            let mut out = take(x.len());
            crate::core::simd::vectorized(
                #[inline(always)]
                || out.extend(x.iter().map(|&p| f(p, *q))),
            );
            return Tensor::from_shape_vec(a.shape(), out);
        }
        if let ([p], true) = (x, out_shape[..] == *b.shape()) {
            let mut out = take(y.len());
            crate::core::simd::vectorized(
                #[inline(always)]
                || out.extend(y.iter().map(|&q| f(*p, q))),
            );
            return Tensor::from_shape_vec(b.shape(), out);
        }
    }
    // One operand holding one value per block of trailing dims, repeated
    // over the leading dims (a bias `[C, 1, 1]` over `[N, C, H, W]`, or a
    // `keepdim` reduction `[N, C, 1, 1]`): each of its values meets a
    // contiguous block of the other's.
    if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
        if let Some(blocks) = Blocks::of(a.shape(), b.shape()) {
            let out = blocks.map(x, y, &f)?;
            return Tensor::from_shape_vec(a.shape(), out);
        }
        if let Some(blocks) = Blocks::of(b.shape(), a.shape()) {
            let out = blocks.map(y, x, |q, p| f(p, q))?;
            return Tensor::from_shape_vec(b.shape(), out);
        }
    }
    let shape = broadcast_or_err(a.shape(), b.shape())?;
    let (Some(av), Some(bv)) = (a.broadcast(IxDyn(&shape)), b.broadcast(IxDyn(&shape))) else {
        return Err(Error::invalid("operands do not broadcast"));
    };
    let out: ArrayD<U> = ndarray::Zip::from(&av)
        .and(&bv)
        .map_collect(|&x, &y| f(x, y));
    Ok(Tensor::from(out))
}

/// How a shorter operand's values each meet a contiguous block of the
/// longer one's: the longer one's flat index `i` meets the shorter's value
/// `(i / block) % period`.
#[derive(Debug, PartialEq)]
struct Blocks {
    /// Elements of the longer operand per value of the shorter.
    block: usize,
    /// Values of the shorter operand.
    period: usize,
}

impl Blocks {
    /// `Some` when `short`, left-padded with 1s to `long`'s rank, equals
    /// `long` on one run of dims and is 1 elsewhere, with a block of more
    /// than one element (a block of 1 is the row case above); `None` for
    /// other broadcasts (and for equal shapes).
    fn of(long: &[usize], short: &[usize]) -> Option<Blocks> {
        if short.len() > long.len() || long == short {
            return None;
        }
        let pad = long.len() - short.len();
        let padded = |i: usize| if i < pad { 1 } else { short[i - pad] };
        let not_one: Vec<usize> = (0..long.len()).filter(|&i| padded(i) != 1).collect();
        let (lo, hi) = match (not_one.first(), not_one.last()) {
            (Some(&lo), Some(&hi)) => (lo, hi + 1),
            // One value: the scalar case above.
            _ => return None,
        };
        if (lo..hi).any(|i| padded(i) != long[i]) {
            return None;
        }
        let block: usize = long[hi..].iter().product();
        let period: usize = long[lo..hi].iter().product();
        (block > 1 && period > 0).then_some(Blocks { block, period })
    }

    /// `f(x[i], y[(i / block) % period])` for every `i`, in a buffer from
    /// the cache; with the `rayon` feature and enough values, pieces of
    /// whole blocks on the pool (each value is computed alone, so the
    /// pieces change no bit).
    fn map<T: Element, U: Element + Cached>(
        &self,
        x: &[T],
        y: &[T],
        f: impl Fn(T, T) -> U + Sync + Send,
    ) -> Result<Vec<U>> {
        #[cfg(feature = "rayon")]
        if parallel(x.len()) {
            let piece = crate::core::buffers::piece_rows(x.len(), self.block, PIECE_MIN);
            return crate::core::buffers::par_build(x.len(), piece, |start, out| {
                let end = start + out.len();
                crate::core::simd::vectorized(
                    #[inline(always)]
                    || self.run(&x[start..end], start / self.block, y, &f, out),
                );
            });
        }
        let mut out = take(x.len());
        crate::core::simd::vectorized(
            #[inline(always)]
            || self.run(x, 0, y, &f, &mut out),
        );
        Ok(out)
    }

    /// [`Blocks::map`] of the whole blocks `x`, the first of them block
    /// number `first`, appended to `out`.
    #[inline(always)]
    fn run<T: Element, U>(
        &self,
        x: &[T],
        first: usize,
        y: &[T],
        f: &impl Fn(T, T) -> U,
        out: &mut impl Extend<U>,
    ) {
        for (k, chunk) in x.chunks_exact(self.block).enumerate() {
            let q = y[(first + k) % self.period];
            out.extend(chunk.iter().map(|&p| f(p, q)));
        }
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::Blocks;

    pub(crate) fn blocks_of_a_bias_a_keepdim_reduction_and_what_is_not_one() {
        let b = |block, period| Some(Blocks { block, period });
        assert_eq!(Blocks::of(&[2, 3, 4, 5], &[3, 1, 1]), b(20, 3));
        assert_eq!(Blocks::of(&[2, 3, 4, 5], &[2, 3, 1, 1]), b(20, 6));
        assert_eq!(Blocks::of(&[2, 3, 4, 5], &[1, 3, 4, 1]), b(5, 12));
        assert_eq!(Blocks::of(&[2, 3, 4, 5], &[4, 1]), b(5, 4));
        // A block of one (the row case), one value, equal shapes, a gap of
        // broadcast dims inside the run, and a mismatch.
        assert_eq!(Blocks::of(&[2, 3, 4, 5], &[4, 5]), None);
        assert_eq!(Blocks::of(&[2, 3], &[1, 1]), None);
        assert_eq!(Blocks::of(&[2, 3], &[2, 3]), None);
        assert_eq!(Blocks::of(&[2, 3, 4, 5], &[3, 1, 5]), None);
        assert_eq!(Blocks::of(&[2, 3, 4, 5], &[2, 1, 1]), None);
        assert_eq!(Blocks::of(&[4, 5], &[2, 4, 5]), None);
        // An empty dim outside the run, and inside it.
        assert_eq!(Blocks::of(&[0, 3, 4], &[3, 1]), b(4, 3));
        assert_eq!(Blocks::of(&[2, 0, 4], &[0, 1]), None);
    }

    crate::core::unit_test::test_list! {
        blocks_of_a_bias_a_keepdim_reduction_and_what_is_not_one,
    }
}
