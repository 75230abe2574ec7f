//! A crate that extends batchrules with its own ops, as an outside user would:
//! it declares an op table (`ops.toml`) and registers kernels, metas, a batching
//! rule, a decomposition and derivatives for it with the same attributes the
//! built-in ops use. `cumsum` is marked `linear = true` in the table, so its
//! jvp is `cumsum` of the tangent and it takes no `#[jvp]`.
//!
//! ```
//! use downstream_ops::ops;
//! use batchrules::Tensor;
//!
//! let x = Tensor::from(ndarray::array![1.0f64, 2.0, 3.0].into_dyn());
//! let y = ops::scale(&x, 2.0)?;
//! assert_eq!(y.to_array::<f64>()?, ndarray::array![2.0, 4.0, 6.0].into_dyn());
//! # Ok::<(), batchrules::Error>(())
//! ```
//!
//! A batching rule on this crate's composite op does not compile:
//!
//! ```compile_fail,E0080
//! use batchrules::{batching_rule, Result, Tensor};
//!
//! #[batching_rule(op = "sum_of_squares", table = downstream_ops::ops)]
//! fn rule(x: &Tensor, bdim: Option<usize>, dim: Option<i64>) -> Result<(Tensor, Option<usize>)> {
//!     todo!()
//! }
//! ```

use batchrules::batching::unary_pointwise;
use batchrules::rules::{Data, TensorMeta};
use batchrules::{batching_rule, decompose, jvp, kernel, meta, vjp, Error, Result, Tensor};
use ndarray::Axis;

/// The ops of this crate, generated from `ops.toml`.
pub mod ops {
    batchrules::op_table!("ops.toml");
}

#[meta(op = "scale", table = crate::ops)]
fn scale_meta(x: &TensorMeta, _factor: f64) -> Result<TensorMeta> {
    if !x.dtype().is_float() {
        return Err(Error::invalid(format!(
            "needs a floating-point tensor, got {}",
            x.dtype()
        )));
    }
    Ok(x.clone())
}

#[kernel(op = "scale", table = crate::ops)]
fn scale_kernel(x: &Tensor, factor: f64) -> Result<Tensor> {
    match x.data()? {
        Data::F32(a) => Ok(Tensor::from(a.mapv(|v| v * factor as f32))),
        Data::F64(a) => Ok(Tensor::from(a.mapv(|v| v * factor))),
        other => Err(Error::invalid(format!(
            "unsupported dtype {}",
            other.dtype()
        ))),
    }
}

#[batching_rule(op = "scale", table = crate::ops)]
fn scale_rule(x: &Tensor, bdim: Option<usize>, factor: f64) -> Result<(Tensor, Option<usize>)> {
    unary_pointwise(|t| ops::scale(t, factor), x, bdim)
}

/// d(factor * x) = factor * dx: the vjp is written with ops (here the op
/// itself), so under vmap it is batched by `scale`'s rule and under grad it
/// is recorded again (second derivatives work).
#[vjp(op = "scale", table = crate::ops)]
fn scale_vjp(_x: &Tensor, factor: f64, _result: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
    Ok(Some(ops::scale(grad, factor)?))
}

/// The tangent of `factor * x` is `factor * dx`, again written with the op
/// itself. (`scale` is linear in `self`, so its table entry could say
/// `linear = true` instead, as `cumsum`'s does; this jvp is the written form
/// of the same derivative.)
#[jvp(op = "scale", table = crate::ops)]
fn scale_jvp(
    _x: &Tensor,
    factor: f64,
    _result: &Tensor,
    self_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    self_tangent.map(|t| ops::scale(t, factor)).transpose()
}

#[decompose(op = "sum_of_squares", table = crate::ops)]
fn sum_of_squares(x: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    batchrules::ops::sum(&batchrules::ops::mul(x, x)?, dim, false)
}

/// The gradient of a running sum is the running sum from the other end:
/// `sum(g) - cumsum(g) + g` along `dim`.
#[vjp(op = "cumsum", table = crate::ops)]
fn cumsum_vjp(_x: &Tensor, dim: i64, _result: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
    use batchrules::ops::{add, sub, sum};
    let total = sum(grad, Some(dim), true)?;
    Ok(Some(add(&sub(&total, &ops::cumsum(grad, dim)?)?, grad)?))
}

#[meta(op = "cumsum", table = crate::ops)]
fn cumsum_meta(x: &TensorMeta, dim: i64) -> Result<TensorMeta> {
    let rank = x.ndim() as i64;
    if rank == 0 || dim < -rank || dim >= rank {
        return Err(Error::invalid(format!(
            "dim {dim} is out of range for shape {:?}",
            x.shape()
        )));
    }
    Ok(x.clone())
}

#[kernel(op = "cumsum", table = crate::ops)]
fn cumsum_kernel(x: &Tensor, dim: i64) -> Result<Tensor> {
    let d = if dim < 0 { dim + x.ndim() as i64 } else { dim } as usize;
    match x.data()? {
        Data::F32(a) => {
            let mut out = a.to_owned();
            out.accumulate_axis_inplace(Axis(d), |&p, c| *c += p);
            Ok(Tensor::from(out))
        }
        Data::F64(a) => {
            let mut out = a.to_owned();
            out.accumulate_axis_inplace(Axis(d), |&p, c| *c += p);
            Ok(Tensor::from(out))
        }
        Data::I64(a) => {
            let mut out = a.to_owned();
            out.accumulate_axis_inplace(Axis(d), |&p, c| *c += p);
            Ok(Tensor::from(out))
        }
        Data::Bool(_) => Err(Error::invalid("cumsum of bool is not supported")),
    }
}

#[meta(op = "jitter", table = crate::ops)]
fn jitter_meta(x: &TensorMeta, _scale: f64, _seed: i64) -> Result<TensorMeta> {
    scale_meta(x, 1.0)
}

/// Draws with the seed it is given: under vmap with `Randomness::Different`
/// the fallback loop gives each example its derived seed, so example `i`
/// gets the noise `rand` gives it there.
#[kernel(op = "jitter", table = crate::ops)]
fn jitter_kernel(x: &Tensor, scale: f64, seed: i64) -> Result<Tensor> {
    let shape: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
    let noise = batchrules::ops::rand(&shape, seed, x.dtype())?;
    let factor = batchrules::ops::full(&[], scale, x.dtype())?;
    batchrules::ops::add(x, &batchrules::ops::mul(&noise, &factor)?)
}

/// The noise does not depend on `self`: the gradient passes through.
#[vjp(op = "jitter", table = crate::ops)]
fn jitter_vjp(
    _x: &Tensor,
    _scale: f64,
    _seed: i64,
    _result: &Tensor,
    grad: &Tensor,
) -> Result<Option<Tensor>> {
    Ok(Some(grad.clone()))
}

/// The noise does not depend on `self`: the tangent passes through.
#[jvp(op = "jitter", table = crate::ops)]
fn jitter_jvp(
    _x: &Tensor,
    _scale: f64,
    _seed: i64,
    _result: &Tensor,
    self_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    Ok(self_tangent.cloned())
}
