//! Composite ops: implemented by decomposing into other ops. Under vmap each
//! constituent op is batched on its own, so none of these needs a rule. Their
//! metas check the arguments once, on logical shapes, before the decomposition
//! runs.

use crate::library::support::{broadcast_meta, check_dim, reduce_meta, require_float, scalar_like};
use crate::{decompose, meta, ops, Error, Result, Tensor, TensorMeta};

/// Meta of an op that maps a float tensor to one of the same shape along `dim`.
fn along_dim_meta(x: &TensorMeta, dim: i64) -> Result<TensorMeta> {
    require_float(x)?;
    check_dim(dim, x.ndim())?;
    Ok(x.clone())
}

#[meta(op = "softmax")]
fn softmax_meta(x: &TensorMeta, dim: i64) -> Result<TensorMeta> {
    along_dim_meta(x, dim)
}

#[decompose(op = "softmax")]
fn softmax_decomposition(x: &Tensor, dim: i64) -> Result<Tensor> {
    let shifted = ops::sub(x, &ops::amax(x, Some(dim), true)?)?;
    let e = ops::exp(&shifted)?;
    ops::div(&e, &ops::sum(&e, Some(dim), true)?)
}

#[meta(op = "logsumexp")]
fn logsumexp_meta(x: &TensorMeta, dim: i64, keepdim: bool) -> Result<TensorMeta> {
    along_dim_meta(x, dim)?;
    reduce_meta(x, Some(dim), keepdim, true)
}

#[decompose(op = "logsumexp")]
fn logsumexp_decomposition(x: &Tensor, dim: i64, keepdim: bool) -> Result<Tensor> {
    let m = ops::amax(x, Some(dim), true)?;
    let s = ops::sum(&ops::exp(&ops::sub(x, &m)?)?, Some(dim), keepdim)?;
    ops::add(&ops::log(&s)?, &ops::amax(x, Some(dim), keepdim)?)
}

#[meta(op = "log_softmax")]
fn log_softmax_meta(x: &TensorMeta, dim: i64) -> Result<TensorMeta> {
    along_dim_meta(x, dim)
}

#[decompose(op = "log_softmax")]
fn log_softmax_decomposition(x: &Tensor, dim: i64) -> Result<Tensor> {
    ops::sub(x, &ops::logsumexp(x, dim, true)?)
}

#[meta(op = "var")]
fn var_meta(
    x: &TensorMeta,
    dim: Option<i64>,
    _correction: i64,
    keepdim: bool,
) -> Result<TensorMeta> {
    require_float(x)?;
    reduce_meta(x, dim, keepdim, false)
}

#[decompose(op = "var")]
fn var_decomposition(
    x: &Tensor,
    dim: Option<i64>,
    correction: i64,
    keepdim: bool,
) -> Result<Tensor> {
    // `x.shape()` is the logical shape, under vmap too.
    let n: usize = match dim {
        Some(d) if x.ndim() > 0 => x.shape()[check_dim(d, x.ndim())?],
        _ => x.shape().iter().product(),
    };
    let centered = ops::sub(x, &ops::mean(x, dim, true)?)?;
    let squares = ops::sum(&ops::mul(&centered, &centered)?, dim, keepdim)?;
    let divisor = scalar_like(&TensorMeta::of(x), (n as i64 - correction) as f64);
    ops::div(&squares, &divisor)
}

#[meta(op = "mse_loss")]
fn mse_loss_meta(x: &TensorMeta, target: &TensorMeta, reduction: i64) -> Result<TensorMeta> {
    require_float(x)?;
    let m = broadcast_meta(x, target)?;
    match reduction {
        0 => Ok(m),
        1 | 2 => Ok(TensorMeta::new(Vec::new(), m.dtype())),
        other => Err(Error::invalid(format!(
            "reduction must be 0 (none), 1 (mean) or 2 (sum), got {other}"
        ))),
    }
}

#[decompose(op = "mse_loss")]
fn mse_loss_decomposition(x: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
    let diff = ops::sub(x, target)?;
    let sq = ops::mul(&diff, &diff)?;
    match reduction {
        0 => Ok(sq),
        1 => ops::mean(&sq, None, false),
        _ => ops::sum(&sq, None, false),
    }
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

fn logsumexp_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2, 3]), -1i64, false],
        crate::args![&f64s(&[2, 3]), 0i64, true],
        crate::args![&f32s(&[4]), 0i64, false],
        crate::args![&f64s(&[]), 0i64, true],
    ]
}

fn logsumexp_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2, 3]), 2i64, false],
        crate::args![&i64s(&[3], 4), 0i64, false],
        crate::args![&f64s(&[2, 0]), 1i64, false],
    ]
}

fn var_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[3, 4]), Some(1i64), 1i64, false],
        crate::args![&f64s(&[3, 4]), Some(-2i64), 0i64, true],
        crate::args![&f32s(&[5]), None::<i64>, 1i64, false],
        crate::args![&f64s(&[2, 3]), None::<i64>, 0i64, true],
    ]
}

fn var_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[3, 4]), Some(2i64), 1i64, false],
        crate::args![&i64s(&[3], 4), None::<i64>, 1i64, false],
    ]
}

fn mse_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2, 3]), &f64s(&[2, 3]), 1i64],
        crate::args![&f64s(&[2, 3]), &f64s(&[3]), 0i64],
        crate::args![&f32s(&[4]), &f32s(&[4]), 2i64],
        crate::args![&f64s(&[]), &f64s(&[]), 1i64],
    ]
}

fn mse_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2]), &f64s(&[3]), 1i64],
        crate::args![&f64s(&[2]), &f64s(&[2]), 3i64],
        crate::args![&i64s(&[2], 3), &f64s(&[2]), 1i64],
    ]
}

crate::op_samples!(
    op = "softmax",
    samples = softmax_samples,
    errors = softmax_errors
);
crate::op_samples!(
    op = "logsumexp",
    samples = logsumexp_samples,
    errors = logsumexp_errors
);
crate::op_samples!(
    op = "log_softmax",
    samples = softmax_samples,
    errors = softmax_errors
);
crate::op_samples!(op = "var", samples = var_samples, errors = var_errors);
crate::op_samples!(op = "mse_loss", samples = mse_samples, errors = mse_errors);
