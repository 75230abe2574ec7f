//! Factories: tensors built from a shape and scalars.
//!
//! Factories take no tensor arguments, so vmap never batches them: called inside
//! vmap they return a plain tensor, which broadcasts against batched ones. They
//! have a meta and a kernel, and no batching rule.

use ndarray::{ArrayD, IxDyn};

use crate::core::alloc::checked_numel;
use crate::{kernel, meta, DType, Element, Error, Result, Tensor, TensorMeta};

/// An element type a factory can produce from an `f64` (already checked to be
/// representable by the meta).
trait FromF64: Element {
    fn from_f64(v: f64) -> Self;
}

impl FromF64 for bool {
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
}
impl FromF64 for i64 {
    fn from_f64(v: f64) -> Self {
        v as i64
    }
}
impl FromF64 for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
impl FromF64 for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
}

/// A tensor of `dtype` and `shape` whose element at row-major index `i` is
/// `value(i)` converted to `dtype`.
fn generate(dtype: DType, shape: &[usize], value: impl Fn(usize) -> f64) -> Result<Tensor> {
    fn go<T: FromF64>(shape: &[usize], value: impl Fn(usize) -> f64) -> Result<Tensor> {
        let n = checked_numel(shape)?;
        let values = (0..n).map(|i| T::from_f64(value(i))).collect();
        ArrayD::from_shape_vec(IxDyn(shape), values)
            .map(Tensor::from)
            .map_err(|e| Error::invalid(format!("cannot build a tensor of shape {shape:?}: {e}")))
    }
    crate::each_dtype!(type dtype, T => go::<T>(shape, value))
}

/// `size` as a shape, or why it is not one (a negative size, or too many elements).
pub(super) fn shape_of(size: &[i64]) -> Result<Vec<usize>> {
    let shape = size
        .iter()
        .map(|&s| {
            usize::try_from(s)
                .map_err(|_| Error::invalid(format!("negative size {s} in size {size:?}")))
        })
        .collect::<Result<Vec<_>>>()?;
    checked_numel(&shape)?;
    Ok(shape)
}

/// Rejects a value that `dtype` cannot hold: NaN, infinities and values out of
/// range for i64 (others are truncated toward zero), finite values beyond the
/// f32 range for f32. `what` names the argument.
fn check_representable(what: &str, value: f64, dtype: DType) -> Result<()> {
    // 2^63: the first f64 above i64::MAX; -2^63 is i64::MIN exactly.
    const I64_BOUND: f64 = 9_223_372_036_854_775_808.0;
    let ok = match dtype {
        DType::Bool | DType::F64 => true,
        DType::F32 => !value.is_finite() || value.abs() <= f64::from(f32::MAX),
        DType::I64 => value.is_finite() && (-I64_BOUND..I64_BOUND).contains(&value),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{what} {value} cannot be converted to {dtype}"
        )))
    }
}

#[meta(op = "zeros")]
fn zeros_meta(size: &[i64], dtype: DType) -> Result<TensorMeta> {
    Ok(TensorMeta::new(shape_of(size)?, dtype))
}

#[kernel(op = "zeros")]
fn zeros_kernel(size: &[i64], dtype: DType) -> Result<Tensor> {
    generate(dtype, &shape_of(size)?, |_| 0.0)
}

#[meta(op = "ones")]
fn ones_meta(size: &[i64], dtype: DType) -> Result<TensorMeta> {
    Ok(TensorMeta::new(shape_of(size)?, dtype))
}

#[kernel(op = "ones")]
fn ones_kernel(size: &[i64], dtype: DType) -> Result<Tensor> {
    generate(dtype, &shape_of(size)?, |_| 1.0)
}

#[meta(op = "full")]
fn full_meta(size: &[i64], fill_value: f64, dtype: DType) -> Result<TensorMeta> {
    let shape = shape_of(size)?;
    check_representable("fill value", fill_value, dtype)?;
    Ok(TensorMeta::new(shape, dtype))
}

#[kernel(op = "full")]
fn full_kernel(size: &[i64], fill_value: f64, dtype: DType) -> Result<Tensor> {
    generate(dtype, &shape_of(size)?, |_| fill_value)
}

/// The length of `arange(start, end, step)`, or why there is none.
fn arange_len(start: f64, end: f64, step: f64) -> Result<usize> {
    let args = format!("start {start}, end {end}, step {step}");
    if !(start.is_finite() && end.is_finite() && step.is_finite()) {
        return Err(Error::invalid(format!(
            "start, end and step must be finite, got {args}"
        )));
    }
    if step == 0.0 {
        return Err(Error::invalid(format!("step must be nonzero, got {args}")));
    }
    let len = ((end - start) / step).ceil();
    if len < 0.0 {
        return Err(Error::invalid(format!(
            "the step goes away from end (its sign must be that of end - start), got {args}"
        )));
    }
    // Also rejects an infinite quotient (a tiny step over a long range); it
    // cannot be NaN, as the arguments are finite and the step is nonzero.
    if len > (isize::MAX as usize / 8) as f64 {
        return Err(Error::invalid(format!(
            "the result would have {len} elements, too many to allocate ({args})"
        )));
    }
    Ok(len as usize)
}

#[meta(op = "arange")]
fn arange_meta(start: f64, end: f64, step: f64, dtype: DType) -> Result<TensorMeta> {
    if dtype == DType::Bool {
        return Err(Error::invalid(
            "arange of bool is not defined; use i64 and compare",
        ));
    }
    let len = arange_len(start, end, step)?;
    check_representable("start", start, dtype)?;
    check_representable("end", end, dtype)?;
    Ok(TensorMeta::new(vec![len], dtype))
}

#[kernel(op = "arange")]
fn arange_kernel(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
    let len = arange_len(start, end, step)?;
    generate(dtype, &[len], |i| start + i as f64 * step)
}
