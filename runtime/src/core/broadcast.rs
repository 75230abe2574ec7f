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
        let zip = ndarray::Zip::from(a).and(b);
        #[cfg(feature = "rayon")]
        if parallel(a.len()) {
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
            crate::core::spin::region();
            return Ok(Tensor::from(zip.par_map_collect(|&x, &y| f(x, y))));
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
        return Ok(Tensor::from(zip.map_collect(|&x, &y| f(x, y))));
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
    // One operand holding one value per block of trailing dims (the other's
    // shape with its trailing dims set to 1, as a `keepdim` reduction gives):
    // each value meets a contiguous block.
    if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
        if let Some(block) = trailing_block(a.shape(), b.shape()) {
            let mut out = take(x.len());
            for (chunk, &q) in x.chunks_exact(block).zip(y) {
                out.extend(chunk.iter().map(|&p| f(p, q)));
            }
            return Tensor::from_shape_vec(a.shape(), out);
        }
        if let Some(block) = trailing_block(b.shape(), a.shape()) {
            let mut out = take(y.len());
            for (chunk, &p) in y.chunks_exact(block).zip(x) {
                out.extend(chunk.iter().map(|&q| f(p, q)));
            }
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

/// If `short` is `long` with some trailing dims set to 1 (and the rest equal),
/// the number of elements of `long` each element of `short` stands for.
fn trailing_block(long: &[usize], short: &[usize]) -> Option<usize> {
    if long.len() != short.len() || long == short {
        return None;
    }
    let split = short.iter().rposition(|&d| d != 1).map_or(0, |i| i + 1);
    let block: usize = long[split..].iter().product();
    (long[..split] == short[..split] && block > 0).then_some(block)
}
