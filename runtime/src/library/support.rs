//! Shared pieces of kernels and metas.

use ndarray::{ArcArray, ArrayD, IxDyn};

use crate::value::Shape;
use crate::{DType, Data, Element, Error, Result, Tensor, TensorMeta};

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
pub(crate) const PARALLEL_ELEMENTS: usize = 1 << 18;

/// [`broadcast_shapes`], or an error that shows both shapes.
pub(crate) fn broadcast_or_err(a: &[usize], b: &[usize]) -> Result<Shape> {
    broadcast_shapes(a, b)
        .ok_or_else(|| Error::invalid(format!("shapes {a:?} and {b:?} do not broadcast")))
}

/// Meta of a broadcasting binary op whose result has the promoted dtype.
pub(crate) fn broadcast_meta(a: &TensorMeta, b: &TensorMeta) -> Result<TensorMeta> {
    let shape = broadcast_or_err(a.shape(), b.shape())?;
    Ok(TensorMeta::new(shape, a.dtype().promote(b.dtype())))
}

/// Rejects a non-float dtype, saying which op needs a float.
pub(crate) fn require_float(m: &TensorMeta) -> Result<()> {
    if m.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "needs a floating-point tensor (f32 or f64), got {}; pass an f32 or f64 tensor (integers are promoted to f32 by div and pow)",
            m.dtype()
        )))
    }
}

/// Resolves a possibly negative dim against `rank`, or explains why it cannot.
pub(crate) fn check_dim(dim: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    let lo = -(r.max(1));
    let hi = r.max(1) - 1;
    if dim < lo || dim > hi {
        return Err(Error::invalid(format!(
            "dim {dim} is out of range for a tensor of rank {rank} (valid: {lo}..={hi})"
        )));
    }
    Ok(if dim < 0 {
        (dim + r.max(1)) as usize
    } else {
        dim as usize
    })
}

fn convert<T: Element, U: Element>(a: &ArcArray<T, IxDyn>, f: impl Fn(T) -> U) -> Data {
    U::wrap(a.mapv(f).into_shared())
}

/// The dense data of `t` converted to `dtype`.
///
/// Borrows the tensor's own data when it already has that dtype.
pub(crate) fn cast(t: &Tensor, dtype: DType) -> Result<std::borrow::Cow<'_, Data>> {
    let data = t.data()?;
    if data.dtype() == dtype {
        return Ok(std::borrow::Cow::Borrowed(data));
    }
    Ok(std::borrow::Cow::Owned(match (data, dtype) {
        (Data::Bool(a), DType::I64) => convert(a, i64::from),
        (Data::Bool(a), DType::F32) => convert(a, |v| f32::from(u8::from(v))),
        (Data::Bool(a), DType::F64) => convert(a, |v| f64::from(u8::from(v))),
        (Data::I64(a), DType::Bool) => convert(a, |v| v != 0),
        (Data::I64(a), DType::F32) => convert(a, |v| v as f32),
        (Data::I64(a), DType::F64) => convert(a, |v| v as f64),
        (Data::F32(a), DType::Bool) => convert(a, |v| v != 0.0),
        (Data::F32(a), DType::I64) => convert(a, |v| v as i64),
        (Data::F32(a), DType::F64) => convert(a, f64::from),
        (Data::F64(a), DType::Bool) => convert(a, |v| v != 0.0),
        (Data::F64(a), DType::I64) => convert(a, |v| v as i64),
        (Data::F64(a), DType::F32) => convert(a, |v| v as f32),
        (d, _) => d.clone(),
    }))
}

/// Elementwise `f` of two same-typed arrays, broadcast to each other.
pub(crate) fn zip_broadcast<T: Element, U: Element>(
    a: &ArcArray<T, IxDyn>,
    b: &ArcArray<T, IxDyn>,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Result<Tensor> {
    if a.shape() == b.shape() {
        let zip = ndarray::Zip::from(a).and(b);
        #[cfg(feature = "rayon")]
        if a.len() >= PARALLEL_ELEMENTS {
            return Ok(Tensor::from(zip.par_map_collect(|&x, &y| f(x, y))));
        }
        return Ok(Tensor::from(zip.map_collect(|&x, &y| f(x, y))));
    }
    // A row operand (one whose shape is a suffix of the other's, such as a bias)
    // broadcast over contiguous data: a plain loop over rows.
    if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
        let suffix = |long: &[usize], short: &[usize]| long.ends_with(short) && !short.is_empty();
        if suffix(a.shape(), b.shape()) && !y.is_empty() {
            let mut out = Vec::with_capacity(x.len());
            for row in x.chunks_exact(y.len()) {
                out.extend(row.iter().zip(y).map(|(&p, &q)| f(p, q)));
            }
            return Tensor::from_shape_vec(a.shape(), out);
        }
        if suffix(b.shape(), a.shape()) && !x.is_empty() {
            let mut out = Vec::with_capacity(y.len());
            for row in y.chunks_exact(x.len()) {
                out.extend(x.iter().zip(row).map(|(&p, &q)| f(p, q)));
            }
            return Tensor::from_shape_vec(b.shape(), out);
        }
    }
    // One operand holding one value per block of trailing dims (the other's
    // shape with its trailing dims set to 1, as a `keepdim` reduction gives):
    // each value meets a contiguous block.
    if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
        if let Some(block) = trailing_block(a.shape(), b.shape()) {
            let mut out = Vec::with_capacity(x.len());
            for (chunk, &q) in x.chunks_exact(block).zip(y) {
                out.extend(chunk.iter().map(|&p| f(p, q)));
            }
            return Tensor::from_shape_vec(a.shape(), out);
        }
        if let Some(block) = trailing_block(b.shape(), a.shape()) {
            let mut out = Vec::with_capacity(y.len());
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

/// A 0-d tensor holding `value` in the dtype of `like` (so it does not promote
/// `like` when combined with it).
pub(crate) fn scalar_like(like: &TensorMeta, value: f64) -> Tensor {
    match like.dtype() {
        DType::F32 => Tensor::scalar(value as f32),
        DType::F64 => Tensor::scalar(value),
        DType::I64 => Tensor::scalar(value as i64),
        DType::Bool => Tensor::scalar(value != 0.0),
    }
}

/// Output meta of a reduction; `nonempty` rejects reducing zero elements.
pub(crate) fn reduce_meta(
    x: &TensorMeta,
    dim: Option<i64>,
    keepdim: bool,
    nonempty: bool,
) -> Result<TensorMeta> {
    let mut shape = x.shape().to_vec();
    match dim {
        Some(d) => {
            let d = check_dim(d, x.ndim())?;
            if x.ndim() > 0 {
                if nonempty && shape[d] == 0 {
                    return Err(Error::invalid(format!(
                        "cannot reduce over dim {d} of size 0 (shape {:?}): the result is undefined",
                        x.shape()
                    )));
                }
                if keepdim {
                    shape[d] = 1;
                } else {
                    shape.remove(d);
                }
            }
        }
        None => {
            if nonempty && shape.contains(&0) {
                return Err(Error::invalid(format!(
                    "cannot reduce an empty tensor (shape {:?}): the result is undefined",
                    x.shape()
                )));
            }
            shape = if keepdim {
                vec![1; shape.len()]
            } else {
                Vec::new()
            };
        }
    }
    Ok(TensorMeta::new(shape, x.dtype()))
}

/// The number of elements of `shape`, or an error if a tensor of that shape
/// could not be allocated (ndarray and `Vec` would panic on it): the product of
/// its non-zero dims, times 8 bytes per element, must fit in `isize`.
pub(crate) fn checked_numel(shape: &[usize]) -> Result<usize> {
    let limit = isize::MAX as usize / 8;
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d).filter(|&n| n <= limit));
    match nonzero {
        Some(_) if shape.contains(&0) => Ok(0),
        Some(n) => Ok(n),
        None => Err(Error::invalid(format!(
            "a tensor of shape {shape:?} is too large to allocate"
        ))),
    }
}
