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

fn softmax_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2, 3]), -1i64],
        crate::args![&f64s(&[2, 3]), 0i64],
        crate::args![&f32s(&[4]), 0i64],
        crate::args![&f64s(&[]), 0i64],
    ]
}

fn softmax_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2, 3]), 2i64],
        crate::args![&i64s(&[3], 4), 0i64],
    ]
}

crate::op_samples!(
    op = "softmax",
    samples = softmax_samples,
    errors = softmax_errors
);
