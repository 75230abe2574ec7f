//! The built-in ops vmap itself calls (to stack the fallback loop's results
//! at another transform's level, to slice and join chunks), found in the
//! registry by name: the op library sits above the transforms, so they are
//! reached through the dispatcher like any op a user calls, and work on
//! tensors of any level.

use crate::core::value::Arg;
use crate::dispatch::call_op;
use crate::registry::registry;
use crate::{Error, Result, Tensor};

/// Calls the built-in op `name`, which returns one tensor.
fn call1(name: &str, args: &[Arg<Tensor>]) -> Result<Tensor> {
    let entry = registry()?
        .find("batchrules::ops", name)
        .ok_or_else(|| Error::Tensor(format!("the built-in op `{name}` is not registered")))?;
    call_op(entry, args)?
        .pop()
        .ok_or_else(|| Error::Tensor(format!("`{name}` returned no tensor")))
}

/// `ts` stacked along a new dim `dim`.
pub(crate) fn stack(ts: &[Tensor], dim: usize) -> Result<Tensor> {
    call1(
        "stack",
        &[Arg::TensorList(ts.to_vec()), Arg::Int(dim as i64)],
    )
}

/// `ts` joined along their dim `dim`.
pub(crate) fn cat(ts: &[Tensor], dim: usize) -> Result<Tensor> {
    call1("cat", &[Arg::TensorList(ts.to_vec()), Arg::Int(dim as i64)])
}

/// `len` entries of `t` along `dim` from `start`.
pub(crate) fn narrow(t: &Tensor, dim: usize, start: usize, len: usize) -> Result<Tensor> {
    let int = |v: usize| Arg::Int(i64::try_from(v).unwrap_or(i64::MAX));
    call1(
        "narrow",
        &[Arg::Tensor(t.clone()), int(dim), int(start), int(len)],
    )
}
