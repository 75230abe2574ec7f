//! The built-in ops vmap itself calls (to stack the fallback loop's results
//! at another transform's level, to slice and join chunks), through
//! [`call_builtin`](crate::dispatch::call_builtin), so they work on tensors of
//! any level.

use crate::core::value::Arg;
use crate::dispatch::call_builtin;
use crate::{Result, Tensor};

/// `ts` stacked along a new dim `dim`.
pub(crate) fn stack(ts: &[Tensor], dim: usize) -> Result<Tensor> {
    call_builtin(
        "stack",
        &[Arg::TensorList(ts.to_vec()), Arg::Int(dim as i64)],
    )
}

/// `ts` joined along their dim `dim`.
pub(crate) fn cat(ts: &[Tensor], dim: usize) -> Result<Tensor> {
    call_builtin("cat", &[Arg::TensorList(ts.to_vec()), Arg::Int(dim as i64)])
}

/// `len` entries of `t` along `dim` from `start`.
pub(crate) fn narrow(t: &Tensor, dim: usize, start: usize, len: usize) -> Result<Tensor> {
    let int = |v: usize| Arg::Int(i64::try_from(v).unwrap_or(i64::MAX));
    call_builtin(
        "narrow",
        &[Arg::Tensor(t.clone()), int(dim), int(start), int(len)],
    )
}
