//! Pointwise unary ops.

use crate::batching::unary_pointwise;
use crate::library::support::require_float;
use crate::{batching_rule, kernel, meta, ops, Data, Error, Result, Tensor, TensorMeta};

/// Applies a float-only elementwise function to an f32 or f64 tensor.
macro_rules! map_float {
    ($x:expr, |$v:ident| $body:expr) => {
        match $x.data()? {
            Data::F32(a) => Ok(Tensor::from(a.mapv(|$v: f32| $body))),
            Data::F64(a) => Ok(Tensor::from(a.mapv(|$v: f64| $body))),
            other => Err(Error::invalid(format!(
                "needs a floating-point tensor, got {}",
                other.dtype()
            ))),
        }
    };
}

#[meta(op = "neg")]
fn neg_meta(x: &TensorMeta) -> Result<TensorMeta> {
    if x.dtype() == crate::DType::Bool {
        return Err(Error::invalid(
            "negation of a bool tensor is not defined; use a logical not instead",
        ));
    }
    Ok(x.clone())
}

#[kernel(op = "neg")]
fn neg_kernel(x: &Tensor) -> Result<Tensor> {
    match x.data()? {
        Data::I64(a) => Ok(Tensor::from(a.mapv(i64::wrapping_neg))),
        _ => map_float!(x, |v| -v),
    }
}

#[batching_rule(op = "neg")]
fn neg_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    unary_pointwise(ops::neg, x, bdim)
}

#[meta(op = "exp")]
fn exp_meta(x: &TensorMeta) -> Result<TensorMeta> {
    require_float(x)?;
    Ok(x.clone())
}

#[kernel(op = "exp")]
fn exp_kernel(x: &Tensor) -> Result<Tensor> {
    map_float!(x, |v| v.exp())
}

#[batching_rule(op = "exp")]
fn exp_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    unary_pointwise(ops::exp, x, bdim)
}
