//! The built-in ops grad and jvp themselves call (to accumulate gradients,
//! make zeros, join and rearrange Jacobians), through
//! [`call_builtin`](crate::dispatch::call_builtin).

pub(crate) use crate::core::value::Arg;
use crate::dispatch::call_builtin;
use crate::{DType, Result, Tensor};

/// `a + b`.
pub(crate) fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    call_builtin("add", &[Arg::Tensor(a.clone()), Arg::Tensor(b.clone())])
}

/// `len` entries of dim 0 of `t` from `start`.
pub(crate) fn narrow0(t: &Tensor, start: usize, len: usize) -> Result<Tensor> {
    call_builtin(
        "narrow",
        &[
            Arg::Tensor(t.clone()),
            Arg::Int(0),
            Arg::Int(start as i64),
            Arg::Int(len as i64),
        ],
    )
}

/// `t` with its dims permuted by `perm`.
pub(crate) fn permute(t: &Tensor, perm: &[usize]) -> Result<Tensor> {
    crate::dispatch::views::permuted(t.clone(), perm)
}

/// A tensor of zeros (dense: it does not depend on anything).
pub(crate) fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
    let size = shape.iter().map(|&d| d as i64).collect();
    call_builtin("zeros", &[Arg::IntList(size), Arg::ScalarType(dtype)])
}

/// A 0-d tensor holding `value`.
pub(crate) fn full_scalar(value: f64, dtype: DType) -> Result<Tensor> {
    match dtype {
        DType::F32 => return Ok(Tensor::scalar(value as f32)),
        DType::F64 => return Ok(Tensor::scalar(value)),
        _ => {}
    }
    call_builtin(
        "full",
        &[
            Arg::IntList(Vec::new()),
            Arg::Float(value),
            Arg::ScalarType(dtype),
        ],
    )
}

/// `t` reshaped to `shape`.
pub(crate) fn reshape(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let size = shape.iter().map(|&d| d as i64).collect();
    call_builtin("reshape", &[Arg::Tensor(t.clone()), Arg::IntList(size)])
}
