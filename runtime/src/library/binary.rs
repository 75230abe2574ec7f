//! Broadcasting binary ops with dtype promotion.

use crate::batching::binary_broadcast;
use crate::library::support::{broadcast_meta, cast, zip_broadcast};
use crate::{batching_rule, kernel, meta, ops, DType, Data, Error, Result, Tensor, TensorMeta};

/// Promotes both operands to their common dtype (at least `floor`) and applies
/// the arithmetic operator `$op` elementwise.
fn arith(
    a: &Tensor,
    b: &Tensor,
    floor: DType,
    f32_op: fn(f32, f32) -> f32,
    f64_op: fn(f64, f64) -> f64,
    i64_op: fn(i64, i64) -> i64,
) -> Result<Tensor> {
    let dtype = a.dtype().promote(b.dtype()).promote(floor);
    match (cast(a, dtype)?, cast(b, dtype)?) {
        (Data::F32(x), Data::F32(y)) => zip_broadcast(&x, &y, f32_op),
        (Data::F64(x), Data::F64(y)) => zip_broadcast(&x, &y, f64_op),
        (Data::I64(x), Data::I64(y)) => zip_broadcast(&x, &y, i64_op),
        _ => Err(Error::invalid(format!(
            "arithmetic on {} is not defined",
            dtype
        ))),
    }
}

/// Meta of an arithmetic op: broadcast shapes, promoted dtype, at least i64.
fn arith_meta(a: &TensorMeta, b: &TensorMeta, floor: DType) -> Result<TensorMeta> {
    let m = broadcast_meta(a, b)?;
    let dtype = m.dtype().promote(floor);
    Ok(m.with_dtype(dtype))
}

#[meta(op = "add")]
fn add_meta(a: &TensorMeta, b: &TensorMeta) -> Result<TensorMeta> {
    arith_meta(a, b, DType::I64)
}
#[kernel(op = "add")]
fn add_kernel(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    arith(
        a,
        b,
        DType::I64,
        |x, y| x + y,
        |x, y| x + y,
        i64::wrapping_add,
    )
}
#[batching_rule(op = "add")]
fn add_rule(
    a: &Tensor,
    a_bdim: Option<usize>,
    b: &Tensor,
    b_bdim: Option<usize>,
) -> Result<(Tensor, Option<usize>)> {
    binary_broadcast(ops::add, a, a_bdim, b, b_bdim)
}

#[meta(op = "sub")]
fn sub_meta(a: &TensorMeta, b: &TensorMeta) -> Result<TensorMeta> {
    arith_meta(a, b, DType::I64)
}
#[kernel(op = "sub")]
fn sub_kernel(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    arith(
        a,
        b,
        DType::I64,
        |x, y| x - y,
        |x, y| x - y,
        i64::wrapping_sub,
    )
}
#[batching_rule(op = "sub")]
fn sub_rule(
    a: &Tensor,
    a_bdim: Option<usize>,
    b: &Tensor,
    b_bdim: Option<usize>,
) -> Result<(Tensor, Option<usize>)> {
    binary_broadcast(ops::sub, a, a_bdim, b, b_bdim)
}

#[meta(op = "mul")]
fn mul_meta(a: &TensorMeta, b: &TensorMeta) -> Result<TensorMeta> {
    arith_meta(a, b, DType::I64)
}
#[kernel(op = "mul")]
fn mul_kernel(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    arith(
        a,
        b,
        DType::I64,
        |x, y| x * y,
        |x, y| x * y,
        i64::wrapping_mul,
    )
}
#[batching_rule(op = "mul")]
fn mul_rule(
    a: &Tensor,
    a_bdim: Option<usize>,
    b: &Tensor,
    b_bdim: Option<usize>,
) -> Result<(Tensor, Option<usize>)> {
    binary_broadcast(ops::mul, a, a_bdim, b, b_bdim)
}

#[meta(op = "div")]
fn div_meta(a: &TensorMeta, b: &TensorMeta) -> Result<TensorMeta> {
    arith_meta(a, b, DType::F32)
}
#[kernel(op = "div")]
fn div_kernel(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    // True division: integers are promoted to f32 first, so this never divides i64.
    arith(a, b, DType::F32, |x, y| x / y, |x, y| x / y, |x, _| x)
}
#[batching_rule(op = "div")]
fn div_rule(
    a: &Tensor,
    a_bdim: Option<usize>,
    b: &Tensor,
    b_bdim: Option<usize>,
) -> Result<(Tensor, Option<usize>)> {
    binary_broadcast(ops::div, a, a_bdim, b, b_bdim)
}

/// Broadcasting in both directions, 0-d operands, size-1 and size-0 dims, and
/// mixed dtypes (promotion).
fn binary_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2, 3]), &f64s(&[2, 3])],
        crate::args![&f64s(&[2, 1]), &f64s(&[3])],
        crate::args![&f64s(&[3]), &f64s(&[2, 1])],
        crate::args![&f64s(&[]), &f64s(&[2, 2])],
        crate::args![&f32s(&[4]), &f64s(&[])],
        crate::args![&i64s(&[3], 5), &f64s(&[3])],
        crate::args![&bools(&[2]), &i64s(&[2], 4)],
        crate::args![&f64s(&[0, 2]), &f64s(&[2])],
    ]
}

fn binary_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2]), &f64s(&[3])],
        crate::args![&f64s(&[2, 3]), &f64s(&[3, 2])],
    ]
}

crate::op_samples!(op = "add", samples = binary_samples, errors = binary_errors);
crate::op_samples!(op = "sub", samples = binary_samples, errors = binary_errors);
crate::op_samples!(op = "mul", samples = binary_samples, errors = binary_errors);
crate::op_samples!(op = "div", samples = binary_samples, errors = binary_errors);
