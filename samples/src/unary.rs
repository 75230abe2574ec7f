//! Sample and error inputs of the ops of `runtime/src/library/unary.rs`.

use batchrules::args;
use batchrules::testing::Sample;
use batchrules::{DType, Tensor};

use crate::values::*;

fn float_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[3, 4])],
        args![&f32s(&[5])],
        args![&f64s(&[])],
        args![&f64s(&[2, 0])],
        args![&f64s(&[1, 3, 1])],
    ]
}

fn float_errors() -> Vec<Sample> {
    vec![args![&i64s(&[3], 5)], args![&bools(&[2, 2])]]
}

fn numeric_samples() -> Vec<Sample> {
    let mut s = float_samples();
    s.push(args![&i64s(&[4], 9)]);
    s
}

fn numeric_errors() -> Vec<Sample> {
    vec![args![&bools(&[3])]]
}

// The pointwise ops of `float_unary!` and `numeric_unary!` name these sets in
// their table entries (`samples = "float"`, `samples = "numeric"`).
batchrules::sample_set!(
    name = "float",
    samples = float_samples,
    errors = float_errors
);
batchrules::sample_set!(
    name = "numeric",
    samples = numeric_samples,
    errors = numeric_errors
);

fn detach_samples() -> Vec<Sample> {
    let mut s = float_samples();
    s.push(args![&i64s(&[4], 9)]);
    s.push(args![&bools(&[2, 3])]);
    s
}

/// Every tensor is a valid input: there is nothing to reject.
fn detach_errors() -> Vec<Sample> {
    Vec::new()
}

batchrules::op_samples!(
    op = "detach",
    samples = detach_samples,
    errors = detach_errors
);

fn to_dtype_samples() -> Vec<Sample> {
    let edges = f64v(&[5], &[f64::NAN, f64::INFINITY, -0.0, 1e300, -1e-300]);
    let big = i64v(&[3], &[i64::MAX, i64::MIN, (1 << 53) + 1]);
    let mut s = Vec::new();
    for dtype in [DType::F64, DType::F32, DType::I64, DType::Bool] {
        s.push(args![&f64s(&[2, 3]), dtype]);
        s.push(args![&f32s(&[4]), dtype]);
        s.push(args![&i64s(&[3], 7), dtype]);
        s.push(args![&bools(&[2, 2]), dtype]);
        s.push(args![&f64s(&[]), dtype]);
        s.push(args![&f64s(&[0, 2]), dtype]);
        s.push(args![&big, dtype]);
    }
    for dtype in [DType::F64, DType::F32, DType::Bool] {
        s.push(args![&edges, dtype]);
    }
    s
}

fn to_dtype_errors() -> Vec<Sample> {
    vec![
        args![&f64v(&[2], &[1.0, f64::NAN]), DType::I64],
        args![&f64v(&[1], &[f64::NEG_INFINITY]), DType::I64],
        args![&f64v(&[1], &[9.3e18]), DType::I64],
        args![&f64v(&[1], &[-1e19]), DType::I64],
        args![
            &Tensor::from_shape_vec(&[2], vec![1.5f32, f32::INFINITY]).expect("2 values"),
            DType::I64
        ],
    ]
}

batchrules::op_samples!(
    op = "to_dtype",
    samples = to_dtype_samples,
    errors = to_dtype_errors
);
