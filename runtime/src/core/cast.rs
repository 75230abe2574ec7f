//! Dtype conversion of dense data.

use ndarray::{ArcArray, IxDyn};

use crate::{DType, Data, Element, Result, Tensor, TensorMeta};

fn convert<T: Element, U: Element>(a: &ArcArray<T, IxDyn>, f: impl Fn(T) -> U) -> Data {
    U::wrap(a.mapv(f).into_shared())
}

/// The dense data of `t` converted to `dtype`.
///
/// Borrows the tensor's own data when it already has that dtype.
pub(crate) fn cast(t: &Tensor, dtype: DType) -> Result<std::borrow::Cow<'_, Data>> {
    let data = t.data()?;
    if data.dtype() == dtype {
        return Ok(std::borrow::Cow::Borrowed(data));
    }
    Ok(std::borrow::Cow::Owned(match (data, dtype) {
        (Data::Bool(a), DType::I64) => convert(a, i64::from),
        (Data::Bool(a), DType::F32) => convert(a, |v| f32::from(u8::from(v))),
        (Data::Bool(a), DType::F64) => convert(a, |v| f64::from(u8::from(v))),
        (Data::I64(a), DType::Bool) => convert(a, |v| v != 0),
        (Data::I64(a), DType::F32) => convert(a, |v| v as f32),
        (Data::I64(a), DType::F64) => convert(a, |v| v as f64),
        (Data::F32(a), DType::Bool) => convert(a, |v| v != 0.0),
        (Data::F32(a), DType::I64) => convert(a, |v| v as i64),
        (Data::F32(a), DType::F64) => convert(a, f64::from),
        (Data::F64(a), DType::Bool) => convert(a, |v| v != 0.0),
        (Data::F64(a), DType::I64) => convert(a, |v| v as i64),
        (Data::F64(a), DType::F32) => convert(a, |v| v as f32),
        (d, _) => d.clone(),
    }))
}

/// A 0-d tensor holding `value` in the dtype of `like` (so it does not promote
/// `like` when combined with it).
pub(crate) fn scalar_like(like: &TensorMeta, value: f64) -> Tensor {
    match like.dtype() {
        DType::F32 => Tensor::scalar(value as f32),
        DType::F64 => Tensor::scalar(value),
        DType::I64 => Tensor::scalar(value as i64),
        DType::Bool => Tensor::scalar(value != 0.0),
    }
}
