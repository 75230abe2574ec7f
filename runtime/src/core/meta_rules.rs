//! Shape rules shared by many metas: broadcasting, float-only ops, reductions.

use crate::core::broadcast::broadcast_or_err;
use crate::core::wrap_dim::check_dim;
use crate::{Error, Result, TensorMeta};

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
