//! Composite ops: implemented by decomposing into other ops.

use crate::library::support::{check_dim, require_float};
use crate::{decompose, meta, ops, Result, Tensor, TensorMeta};

#[meta(op = "softmax")]
fn softmax_meta(x: &TensorMeta, dim: i64) -> Result<TensorMeta> {
    require_float(x)?;
    check_dim(dim, x.ndim())?;
    Ok(x.clone())
}

#[decompose(op = "softmax")]
fn softmax_decomposition(x: &Tensor, dim: i64) -> Result<Tensor> {
    let shifted = ops::sub(x, &ops::amax(x, Some(dim), true)?)?;
    let e = ops::exp(&shifted)?;
    ops::div(&e, &ops::sum(&e, Some(dim), true)?)
}
