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

fn unary_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[3, 4])],
        crate::args![&f32s(&[5])],
        crate::args![&f64s(&[])],
        crate::args![&f64s(&[2, 0])],
        crate::args![&f64s(&[1, 3, 1])],
    ]
}

fn float_only_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![crate::args![&i64s(&[3], 5)], crate::args![&bools(&[2, 2])]]
}

fn neg_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let mut s = unary_samples();
    s.push(crate::args![&i64s(&[4], 9)]);
    s
}

fn neg_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![crate::args![&bools(&[3])]]
}

crate::op_samples!(op = "neg", samples = neg_samples, errors = neg_errors);
crate::op_samples!(
    op = "exp",
    samples = unary_samples,
    errors = float_only_errors
);
