//! Building blocks for the sample inputs of the op families' modules (see
//! [`batchrules::testing::OpInfo`]).

use batchrules::{Element, Tensor};

/// Deterministic, distinct, non-integer values: no ties for argmax/amax, no
/// exact zeros for division.
fn value(i: usize) -> f64 {
    let x = i as f64;
    (x * 0.7373 + 0.2).sin() * 2.0 + 0.01 * x
}

fn build<T: Element>(shape: &[usize], f: impl Fn(usize) -> T) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_shape_vec(shape, (0..n).map(f).collect()).expect("shape and values agree")
}

/// An f64 tensor.
pub(crate) fn f64s(shape: &[usize]) -> Tensor {
    build(shape, value)
}

/// An f64 tensor whose values continue the sequence of [`f64s`] from element
/// `start` on: an operand distinct from an `f64s` one (no element equal to the
/// one it meets), where ties would be kinks of a derivative.
pub(crate) fn f64s_from(shape: &[usize], start: usize) -> Tensor {
    build(shape, |i| value(start + i))
}

/// An f32 tensor.
pub(crate) fn f32s(shape: &[usize]) -> Tensor {
    build(shape, |i| value(i) as f32)
}

/// An i64 tensor with values in `0..modulo`.
pub(crate) fn i64s(shape: &[usize], modulo: i64) -> Tensor {
    build(shape, |i| (i as i64 * 7 + 3) % modulo.max(1))
}

/// A bool tensor.
pub(crate) fn bools(shape: &[usize]) -> Tensor {
    build(shape, |i| (i * 5 + 1) % 3 == 0)
}

/// An f64 tensor of `shape` holding `values` (row-major), for edge values
/// (infinities, NaN) the generated samples avoid.
pub(crate) fn f64v(shape: &[usize], values: &[f64]) -> Tensor {
    Tensor::from_shape_vec(shape, values.to_vec()).expect("shape and values agree")
}

/// An i64 tensor of `shape` holding `values` (row-major), for edge values
/// (near the i64 limits, above 2^53).
pub(crate) fn i64v(shape: &[usize], values: &[i64]) -> Tensor {
    Tensor::from_shape_vec(shape, values.to_vec()).expect("shape and values agree")
}

/// Registers the sample inputs of several ops, one `"op" => samples, errors;`
/// line each (a [`batchrules::op_samples!`] per op).
macro_rules! register_samples {
    ($($op:literal => $samples:path, $errors:path;)*) => {
        $(batchrules::op_samples!(op = $op, samples = $samples, errors = $errors);)*
    };
}
pub(crate) use register_samples;
