//! The built-in ops grad itself calls (to accumulate gradients, make zeros,
//! rearrange tracked tensors), found in the registry by name: the op library
//! sits above the transforms, so they are reached through the dispatcher like
//! any op a user calls.

use std::sync::OnceLock;

pub(crate) use crate::core::value::Arg;
use crate::dispatch::call_entry;
use crate::registry::{registry, OpEntry};
use crate::{DType, Error, Result, Tensor};

use super::graph::OpName;

/// The module path of the built-in op table.
const BUILTIN: &str = "batchrules::ops";

/// The registry entry of a built-in op.
pub(crate) fn entry(name: OpName) -> Result<&'static OpEntry> {
    static ENTRIES: OnceLock<Vec<Option<&'static OpEntry>>> = OnceLock::new();
    let reg = registry()?;
    let entries = ENTRIES.get_or_init(|| {
        OpName::ALL
            .iter()
            .map(|n| reg.find(BUILTIN, n.as_str()))
            .collect()
    });
    entries[name as usize].ok_or_else(|| Error::NotImplemented {
        op: name.as_str().to_string(),
        message: format!(
            "grad needs the built-in op `{}`, which is not registered",
            name.as_str()
        ),
    })
}

/// Calls a built-in op with one output.
pub(crate) fn call1(name: OpName, args: &[Arg<Tensor>]) -> Result<Tensor> {
    let mut outs = call_entry(entry(name)?, args)?;
    outs.pop()
        .filter(|_| outs.is_empty())
        .ok_or_else(|| Error::Tensor(format!("op `{}` did not return one tensor", name.as_str())))
}

/// `a + b`.
pub(crate) fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    call1(
        OpName::Add,
        &[Arg::Tensor(a.clone()), Arg::Tensor(b.clone())],
    )
}

/// `t` broadcast to `shape`.
pub(crate) fn expand_to(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let size = shape.iter().map(|&d| d as i64).collect();
    call1(
        OpName::Expand,
        &[Arg::Tensor(t.clone()), Arg::IntList(size)],
    )
}

/// A tensor of zeros (dense: it does not depend on anything).
pub(crate) fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
    let size = shape.iter().map(|&d| d as i64).collect();
    call1(OpName::Zeros, &[Arg::IntList(size), Arg::ScalarType(dtype)])
}

/// A 0-d tensor holding `value`.
pub(crate) fn full_scalar(value: f64, dtype: DType) -> Result<Tensor> {
    match dtype {
        DType::F32 => return Ok(Tensor::scalar(value as f32)),
        DType::F64 => return Ok(Tensor::scalar(value)),
        _ => {}
    }
    call1(
        OpName::Full,
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
    call1(
        OpName::Reshape,
        &[Arg::Tensor(t.clone()), Arg::IntList(size)],
    )
}

/// `ts` joined along dim 0.
pub(crate) fn cat0(ts: &[Tensor]) -> Result<Tensor> {
    call1(OpName::Cat, &[Arg::TensorList(ts.to_vec()), Arg::Int(0)])
}
